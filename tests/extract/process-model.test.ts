// The pipeline with a model configured (LLM_URL): a kgs server whose process_source job runs the
// model extractor, through the real `openai` client, against the faithful fake endpoint on
// loopback (tests/helpers/fake-openai.ts). What the model answers is what the graph gets, under
// the model's promptset_hash, with the calls and tokens in the job's answer; a model that fails
// every chunk fails the job and leaves the graph and the source as they were.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { citingReply, type FakeOpenAI, jsonReply, startFakeOpenAI, summaryRequest } from '../helpers/fake-openai.ts'
import { fixture } from '../helpers/fixture.ts'
import { dumpGraph } from '../helpers/graph-dump.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { builtinExtractor } from '../../src/extract/builtin.ts'

const KEY = 'sk-test-process-0a1b2c3d4e5f60718293a4b5c6d7e8f9'
const MARKDOWN = `# Write-ahead log

PostgreSQL writes every change to the write-ahead log (WAL) before the data files.

## Recovery

The WAL is replayed after a crash.
`
const FIRST = 'PostgreSQL writes every change to the write-ahead log before it writes the data files.'
const SECOND = 'PostgreSQL replays the write-ahead log after a crash.'
/** The model's answer to each chunk, told apart by the chunk's text in the prompt. */
const ANSWERS = [
  {
    facts: [
      {
        text: FIRST,
        concepts: [
          { name: 'PostgreSQL', context: 'database system', aliases: [] },
          { name: 'write-ahead log', context: 'databases', aliases: ['WAL'] },
        ],
      },
    ],
  },
  { facts: [{ text: SECOND, concepts: [{ name: 'write-ahead log', context: 'databases', aliases: ['WAL'] }] }] },
]

interface FactDetail {
  text: string
  promptset_hash: string
  sources: { id: string; chunk_index: number }[]
  concepts: { canonical_name: string; context: string }[]
}

describe(`processing with a model (${BACKEND})`, () => {
  let fake: FakeOpenAI
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }
  let sql: Sql

  beforeAll(async () => {
    fake = startFakeOpenAI({ apiKey: KEY })
    ;({
      server,
      http,
      users: { owner },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1', LLM_URL: fake.url, LLM_MODEL: 'fake-model', LLM_API_KEY: KEY } },
      users: { owner: 'member' },
      repositories: { repo: { by: 'owner', name: 'Model processing' } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
  })
  afterAll(async () => {
    await server.stop()
    await fake.stop()
  })

  const finish = (id: string) => waitForJob(http, `/${repo.slug}/jobs/${id}`, owner.token)
  const upload = async (name: string, text: string) => {
    const form = new FormData()
    form.append('file', new File([text], name, { type: 'text/markdown' }))
    const res = await http.call<{ jobs: { id: string; source_id: string }[] }>('POST', `/${repo.slug}/ingest`, {
      raw: form,
      token: owner.token,
    })
    expect(res.status).toBe(202)
    const ingested = await finish(res.body.jobs[0]!.id)
    const next = (ingested.result as { process_job_id: string }).process_job_id
    return { sourceId: res.body.jobs[0]!.source_id, processed: await finish(next) }
  }
  const rows = async () => {
    const { vectors: _, ...graph } = await dumpGraph(sql, repo.id, server.context)
    return graph
  }

  test("the model's facts and concepts are the graph's, under its promptset_hash, with its calls and tokens in the answer", async () => {
    fake.script((request) => {
      const asked = summaryRequest(request)
      return asked
        ? citingReply(asked)
        : jsonReply(ANSWERS[request.body.messages[1]!.content.includes('crash') ? 1 : 0])
    })
    const { sourceId, processed } = await upload('wal.md', MARKDOWN)
    expect(processed.status).toBe('succeeded')
    const result = processed.result as {
      promptset_hash: string
      facts: { added: number }
      concepts: { added: number }
      linked: number
      usage: { calls: number; inputTokens: number; outputTokens: number }
    }
    expect(result).toMatchObject({ facts: { added: 2 }, concepts: { added: 2 }, linked: 3, failed_chunks: [] })
    // A call per chunk, then per concept its summary and per concept group its synthesis.
    expect(result).toMatchObject({ summaries: 2, syntheses: 2, failed_summaries: [], failed_syntheses: [] })
    expect(result.usage.calls).toBe(2 + 2 + 2)
    expect(result.usage.inputTokens).toBeGreaterThan(0)
    expect(result.usage.outputTokens).toBeGreaterThan(0)
    expect(result.promptset_hash).not.toBe(builtinExtractor().promptsetHash)

    const listed = (await http.get<{ id: string }[]>(`/${repo.slug}/facts?source_id=${sourceId}`, owner.token)).body
    const facts = await Promise.all(
      listed.map(async (f) => (await http.get<FactDetail>(`/${repo.slug}/facts/${f.id}`, owner.token)).body),
    )
    expect(
      facts
        .map((f) => ({
          text: f.text,
          promptset_hash: f.promptset_hash,
          chunks: f.sources.map((s) => s.chunk_index),
          concepts: f.concepts.map((c) => [c.canonical_name, c.context]).sort(),
        }))
        .sort((a, b) => a.chunks[0]! - b.chunks[0]!),
    ).toEqual([
      {
        text: FIRST,
        promptset_hash: result.promptset_hash,
        chunks: [0],
        concepts: [
          ['PostgreSQL', 'database system'],
          ['write-ahead log', 'databases'],
        ],
      },
      {
        text: SECOND,
        promptset_hash: result.promptset_hash,
        chunks: [1],
        concepts: [['write-ahead log', 'databases']],
      },
    ])
    expect((await http.get(`/${repo.slug}/sources/${sourceId}`, owner.token)).body.status).toBe('processed')
  })

  test('a model that fails every chunk fails the job with its error: the source stays parsed, the graph as it was', async () => {
    const before = await rows()
    fake.script(() => ({
      status: 401,
      error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' },
    }))
    const { sourceId, processed } = await upload('other.md', '# Other\n\nThe checkpointer flushes dirty pages.\n')
    expect(processed.status).toBe('failed')
    expect(processed.error).toBe(
      `every chunk of source ${sourceId} failed; the first: the model endpoint answered 401 unauthorized (invalid_api_key)`,
    )
    expect(processed.error).not.toContain(KEY)
    expect((await http.get(`/${repo.slug}/sources/${sourceId}`, owner.token)).body.status).toBe('parsed')
    const after = await rows()
    // The new source and its body are the ingest's; nothing of the failed processing is left.
    expect({ ...after, sources: before.sources, sourceBodies: before.sourceBodies }).toEqual(before)

    // The model answers again: processing on demand draws the facts.
    fake.script(() => jsonReply({ facts: [{ text: 'The checkpointer flushes dirty pages to disk.', concepts: [] }] }))
    const again = await http.post<Job>(`/${repo.slug}/sources/${sourceId}/process`, undefined, owner.token)
    expect(again.status).toBe(202)
    expect(await finish(again.body.id)).toMatchObject({ status: 'succeeded', result: { facts: { added: 1 } } })
  })
})
