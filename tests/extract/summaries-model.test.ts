// Summaries written by a model (LLM_URL), through the real `openai` client against the fake
// endpoint on loopback: a summary citing a fact it was not given is refused and asked again,
// quoting why; refused twice, that concept's summary fails on its own, named in the job's
// answer, while the other concepts get theirs, their syntheses naming the model that wrote them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { citingReply, type FakeOpenAI, jsonReply, startFakeOpenAI, summaryRequest } from '../helpers/fake-openai.ts'
import { fixture } from '../helpers/fixture.ts'
import { addProcessed } from '../helpers/processing.ts'
import type { TestServer } from '../helpers/server.ts'
import { citedIds } from '../../src/graph/rules.ts'

const MARKDOWN = `# Write-ahead log

PostgreSQL writes every change to the write-ahead log before the data files.

## Recovery

The write-ahead log is replayed after a crash.
`
const FIRST = 'PostgreSQL writes every change to the write-ahead log before it writes the data files.'
const SECOND = 'PostgreSQL replays the write-ahead log after a crash.'
const POSTGRES = { name: 'PostgreSQL', context: 'database system', aliases: [] }
const WAL = { name: 'write-ahead log', context: 'databases', aliases: ['WAL'] }
const ANSWERS = [
  { facts: [{ text: FIRST, concepts: [POSTGRES, WAL] }] },
  { facts: [{ text: SECOND, concepts: [POSTGRES, WAL] }] },
]
/** What the model cites in PostgreSQL's summary: no fact it was given. */
const STRANGER = '0b5e2d8a-7c41-4f3e-9a6b-1d2c3e4f5a6b'

describe(`summaries written by a model (${BACKEND})`, () => {
  let fake: FakeOpenAI
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }
  let sql: Sql

  beforeAll(async () => {
    fake = startFakeOpenAI()
    ;({
      server,
      http,
      users: { owner },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1', LLM_URL: fake.url, LLM_MODEL: 'fake-model' } },
      users: { owner: 'member' },
      repositories: { repo: { by: 'owner', name: 'Model summaries' } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
  })
  afterAll(async () => {
    await server.stop()
    await fake.stop()
  })

  test('a summary citing a fact not given is refused and asked again; refused twice, that summary fails alone', async () => {
    fake.script((request) => {
      const asked = summaryRequest(request)
      if (!asked) return jsonReply(ANSWERS[request.body.messages[1]!.content.includes('crash') ? 1 : 0])
      if (asked.kind === 'summary' && asked.name === 'PostgreSQL')
        return jsonReply({ summary: `PostgreSQL is a database [it says so](<fact:${STRANGER}>).` })
      return citingReply(asked)
    })
    const { processed } = await addProcessed(http, repo.slug, owner.token, 'wal.md', MARKDOWN)

    const [postgres] = await sql<{ id: string }[]>`SELECT id::text FROM concepts WHERE canonical_name = 'PostgreSQL'`
    const [wal] = await sql<{ id: string }[]>`SELECT id::text FROM concepts WHERE canonical_name = 'write-ahead log'`
    const refusal = `it cites fact ${STRANGER}, which is not one of the facts given: cite only those`
    // The job stands; PostgreSQL's summary, and so its group's synthesis, is not written.
    expect(processed).toMatchObject({
      status: 'succeeded',
      result: {
        facts: { added: 2 },
        summaries: 1,
        syntheses: 1,
        failed_summaries: [
          { concept_id: postgres!.id, error: `summary 0: the model's answer was refused twice: ${refusal}` },
        ],
        failed_syntheses: [],
        // Two chunks, PostgreSQL's summary twice, the log's summary, the log's synthesis.
        usage: { calls: 6 },
      },
    })
    const asked = fake.requests.filter(
      (r) => summaryRequest(r)?.name === 'PostgreSQL' && summaryRequest(r)?.kind === 'summary',
    )
    expect(asked).toHaveLength(2)
    // The second ask quotes the first answer and why it was refused.
    const retry = asked[1]!.body.messages
    expect(retry.at(-2)).toMatchObject({ role: 'assistant' })
    expect(retry.at(-1)!.content).toContain(refusal)
    // What the model was given: the concept's own facts, as data inside the delimiters.
    const given = summaryRequest(asked[0]!)!
    expect(given.facts.map((f) => f.text).sort()).toEqual([FIRST, SECOND].sort())
    expect(given.concepts).toEqual([{ id: postgres!.id, canonical_name: 'PostgreSQL', context: 'database system' }])

    const { body: detail } = await http.get<{
      summaries: { content: string; model: string; covered_fact_ids: string[] }[]
      synthesis: { model: string; content: string; covered_summary_ids: string[] } | null
    }>(`/${repo.slug}/concepts/${wal!.id}`, owner.token)
    expect(detail.summaries).toHaveLength(1)
    expect(detail.summaries[0]!.model).toBe('fake-model')
    const factIds = (await sql<{ id: string }[]>`SELECT id::text FROM facts ORDER BY id`).map((r) => r.id)
    expect(citedIds(detail.summaries[0]!.content).fact.sort()).toEqual(factIds)
    expect(detail.synthesis).toMatchObject({ model: 'fake-model' })
    expect(citedIds(detail.synthesis!.content).fact.sort()).toEqual(factIds)
    const { body: failed } = await http.get<{ summaries: unknown[]; synthesis: unknown }>(
      `/${repo.slug}/concepts/${postgres!.id}`,
      owner.token,
    )
    expect(failed.summaries).toEqual([])
    expect(failed.synthesis).toBeNull()
  })
})
