// Processing sources end to end on the selected backend: a Markdown file added by the ingest
// route, its ingest_source job followed by process_source (a worker thread runs both), and the
// facts and concepts it drew read back through the API with their citations; processing again
// (one source, or the repository) adds nothing; what cannot be processed is refused and queues
// nothing; a viewer may not ask.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { dumpGraph } from '../helpers/graph-dump.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { builtinExtractor } from '../../src/extract/builtin.ts'
import { chunkMarkdown } from '../../src/ingest/chunks.ts'

const MARKDOWN = `# The Write-Ahead Log

The Write-Ahead Log (WAL) records every change before it reaches the data files. PostgreSQL writes WAL records to disk before it changes the data files.

## Recovery

After a crash, PostgreSQL replays the WAL from the last checkpoint. A checkpoint flushes dirty pages to the data files. Checkpoints happen every five minutes by default.
`
/** What MARKDOWN must yield: each fact with the chunk it cites, each concept with its aliases and the facts it is linked to. */
const WAL = 'The Write-Ahead Log (WAL) records every change before it reaches the data files.'
const WRITES = 'PostgreSQL writes WAL records to disk before it changes the data files.'
const REPLAYS = 'After a crash, PostgreSQL replays the WAL from the last checkpoint.'
const FLUSHES = 'A checkpoint flushes dirty pages to the data files.'
const OFTEN = 'Checkpoints happen every five minutes by default.'
const FACTS: [string, number][] = [
  [WAL, 0],
  [WRITES, 0],
  [REPLAYS, 1],
  [FLUSHES, 1],
  [OFTEN, 1],
]
const CONCEPTS = [
  { name: 'checkpoint', aliases: ['Checkpoints'], facts: [REPLAYS, FLUSHES, OFTEN] },
  { name: 'data file', aliases: ['data files'], facts: [WAL, WRITES, FLUSHES] },
  { name: 'PostgreSQL', aliases: [], facts: [WRITES, REPLAYS] },
  { name: 'Write-Ahead Log', aliases: ['WAL'], facts: [WAL, WRITES, REPLAYS] },
].map((concept) => ({ ...concept, facts: concept.facts.sort() }))
/** A second document saying one of MARKDOWN's sentences again: that fact is merged, citing both. */
const SECOND = `# Checkpoints

A checkpoint flushes dirty pages to the data files. The background writer also flushes dirty pages between checkpoints.
`

interface FactDetail {
  id: string
  text: string
  status: string
  promptset_hash: string
  sources: { id: string; chunk_index: number }[]
  concepts: { id: string; canonical_name: string }[]
}
interface ConceptDetail {
  id: string
  canonical_name: string
  aliases: string[]
  promptset_hash: string
  fact_count: number
}
interface ProcessResult {
  sources: number
  facts: { added: number; merged: number; unchanged: number }
  concepts: { added: number; existing: number }
  linked: number
  promptset_hash: string
}

describe(`processing sources (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let viewer: Account
  let repo: { id: string; slug: string }
  let sql: Sql
  const promptset = builtinExtractor().promptsetHash

  beforeAll(async () => {
    ;({
      server,
      http,
      users: { owner, viewer },
      repositories: { repo },
    } = await fixture({
      // Two workers: sources added together are processed at the same time.
      server: { env: { WORKERS: '2' } },
      users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
      repositories: { repo: { by: 'owner', name: 'Processing', roles: { viewer: 'viewer' } } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
  })
  afterAll(() => server.stop())

  const upload = (name: string, text: string, fields: Record<string, string> = {}) => {
    const form = new FormData()
    for (const [field, value] of Object.entries(fields)) form.append(field, value)
    form.append('file', new File([text], name, { type: 'text/markdown' }))
    return http.call<{ jobs: { id: string; source_id: string }[] }>('POST', `/${repo.slug}/ingest`, {
      raw: form,
      token: owner.token,
    })
  }
  const finish = (id: string) => waitForJob(http, `/${repo.slug}/jobs/${id}`, owner.token)
  /** Adds the file and follows its job chain: the ingest job, then the process_source job it queued. */
  const added = async (name: string, text: string): Promise<{ sourceId: string; processed: Job }> => {
    const res = await upload(name, text)
    expect(res.status).toBe(202)
    const ingested = await finish(res.body.jobs[0]!.id)
    expect(ingested).toMatchObject({ status: 'succeeded', result: { status: 'parsed' } })
    const next = (ingested.result as { process_job_id: string }).process_job_id
    expect(next).toMatch(/^[0-9a-f-]{36}$/)
    return { sourceId: res.body.jobs[0]!.source_id, processed: await finish(next) }
  }
  const get = async <T>(path: string) => {
    const res = await http.get<T>(`/${repo.slug}${path}`, owner.token)
    expect(res.status).toBe(200)
    return res.body
  }
  /** The source's facts as the API gives them, each with its detail. */
  const factsOf = async (sourceId: string) =>
    Promise.all(
      (await get<{ id: string }[]>(`/facts?source_id=${sourceId}&limit=100`)).map((fact) =>
        get<FactDetail>(`/facts/${fact.id}`),
      ),
    )
  const conceptsNamed = async (names: readonly string[]) => {
    const all = await get<{ id: string; canonical_name: string }[]>('/concepts?limit=100')
    return Promise.all(
      names.map((name) => get<ConceptDetail>(`/concepts/${all.find((c) => c.canonical_name === name)!.id}`)),
    )
  }
  /** The repository's rows by their natural keys (the vectors follow in jobs of their own): what processing again must leave as it is. */
  const graph = async () => {
    const { vectors: _, ...rows } = await dumpGraph(sql, repo.id, server.context)
    return rows
  }
  const processJobs = async () =>
    (await server.context.pools.system`SELECT count(*)::int AS n FROM jobs WHERE kind = 'process_source'`)[0]!
      .n as number

  let walSource: string

  test('adding a Markdown source processes it: its facts cite it at their chunk, its concepts are linked to the facts that mention them', async () => {
    const { sourceId, processed } = await added('wal.md', MARKDOWN)
    walSource = sourceId
    expect(processed).toMatchObject({
      kind: 'process_source',
      status: 'succeeded',
      result: {
        sources: 1,
        promptset_hash: promptset,
        facts: { added: FACTS.length, merged: 0, unchanged: 0, refused: 0 },
        concepts: { added: CONCEPTS.length, existing: 0, refused: 0 },
        linked: CONCEPTS.reduce((n, concept) => n + concept.facts.length, 0),
        failed_chunks: [],
      },
    })
    expect((await get<{ status: string }>(`/sources/${sourceId}`)).status).toBe('processed')

    const facts = await factsOf(sourceId)
    expect(facts.map((fact) => [fact.text, fact.sources.map((s) => [s.id, s.chunk_index])]).sort()).toEqual(
      FACTS.map(([text, chunk]) => [text, [[sourceId, chunk]]]).sort(),
    )
    for (const fact of facts) expect(fact).toMatchObject({ status: 'stable', promptset_hash: promptset })
    const concepts = await conceptsNamed(CONCEPTS.map((c) => c.name))
    expect(
      concepts.map((concept) => ({
        name: concept.canonical_name,
        aliases: concept.aliases,
        facts: facts
          .filter((fact) => fact.concepts.some((c) => c.id === concept.id))
          .map((fact) => fact.text)
          .sort(),
      })),
    ).toEqual(CONCEPTS)
    for (const concept of concepts) expect(concept.promptset_hash).toBe(promptset)
    // The chunk a fact cites is the chunk that says it.
    const chunks = await get<{ chunk_index: number; text: string }[]>(`/sources/${sourceId}/chunks`)
    for (const fact of facts) expect(chunks[fact.sources[0]!.chunk_index]!.text).toContain(fact.text.slice(0, 30))
  })

  test('processing the source again, or the whole repository, adds nothing and loses nothing', async () => {
    const before = await graph()
    const again = await http.post<Job>(`/${repo.slug}/sources/${walSource}/process`, undefined, owner.token)
    expect(again.status).toBe(202)
    expect(again.headers.get('location')).toBe(`/${repo.id}/jobs/${again.body.id}`)
    expect(again.body).toMatchObject({ kind: 'process_source', status: 'queued' })
    expect((await finish(again.body.id)).result).toMatchObject({
      facts: { added: 0, merged: 0, unchanged: FACTS.length },
      concepts: { added: 0, existing: CONCEPTS.length },
      linked: 0,
    })
    expect(await graph()).toEqual(before)
    // The header form, every source of the repository.
    const all = await http.call<Job>('POST', '/api/v1/process', {
      token: owner.token,
      headers: { 'x-repository-id': repo.id },
    })
    expect(all.status).toBe(202)
    expect((await finish(all.body.id)).result).toMatchObject({ sources: 1, facts: { added: 0 }, linked: 0 })
    expect(await graph()).toEqual(before)
  })

  test('a fact another source says too is merged: one fact citing both sources; a concept of the same name is the same concept', async () => {
    const { sourceId, processed } = await added('checkpoints.md', SECOND)
    const result = processed.result as ProcessResult
    expect(result.facts).toMatchObject({ merged: 1, unchanged: 0 })
    expect(result.facts.added).toBeGreaterThan(0)
    expect(result.concepts.existing).toBeGreaterThan(0)
    const flushes = (await factsOf(sourceId)).find((fact) => fact.text === FLUSHES)!
    expect(flushes.sources.map((s) => [s.id, s.chunk_index]).sort()).toEqual(
      [
        [walSource, 1],
        [sourceId, 0],
      ].sort(),
    )
    const checkpoints = await sql`SELECT id FROM concepts WHERE lower(canonical_name) = 'checkpoint'`
    expect(checkpoints).toHaveLength(1)
  })

  test('sources saying the same things, processed at the same time: one fact each, citing every source', async () => {
    const things = ['pump', 'condenser', 'turbine', 'valve', 'generator', 'boiler']
    const halls = ['north', 'south', 'east', 'west']
    const shared = things.flatMap((thing) =>
      halls.map((hall) => `The ${thing} sends steam past the ${hall} hall every morning.`),
    )
    const docs = ['east', 'west'].map((side) => ({
      name: `${side}.md`,
      text: `# The ${side} plant\n\n${shared.join(' ')} The ${side} plant runs a cooling tower of its own.\n`,
    }))
    // What the extractor draws of each: the facts both say are merged, whichever job writes first.
    const drawn = await Promise.all(
      docs.map(async (doc) => (await builtinExtractor().extract(chunkMarkdown(doc.text))).facts.map((f) => f.text)),
    )
    const both = drawn[0]!.filter((text) => drawn[1]!.includes(text))
    expect(both.length).toBeGreaterThan(10)
    const form = new FormData()
    for (const doc of docs) form.append('file', new File([doc.text], doc.name, { type: 'text/markdown' }))
    const res = await http.call<{ jobs: { id: string; source_id: string }[] }>('POST', `/${repo.slug}/ingest`, {
      raw: form,
      token: owner.token,
    })
    expect(res.status).toBe(202)
    const processed = await Promise.all(
      res.body.jobs.map(async (job) => {
        const next = ((await finish(job.id)).result as { process_job_id: string }).process_job_id
        return finish(next)
      }),
    )
    expect(processed.map((job) => job.status)).toEqual(['succeeded', 'succeeded'])
    const results = processed.map((job) => job.result as ProcessResult)
    expect(results.reduce((n, r) => n + r.facts.added, 0)).toBe(new Set(drawn.flat()).size)
    expect(results.reduce((n, r) => n + r.facts.merged, 0)).toBe(both.length)
    const sources = res.body.jobs.map((job) => job.source_id).sort()
    for (const text of both) {
      const [fact] = await sql`SELECT id FROM facts WHERE text = ${text}`
      const cited = await get<FactDetail>(`/facts/${fact!.id}`)
      expect(cited.sources.map((s) => s.id).sort()).toEqual(sources)
    }
  })

  test('processing is not added when the request says so, and is refused with nothing queued for what cannot be processed', async () => {
    const res = await upload('unprocessed.md', '# Kept\n\nThis document is parsed but nobody drew facts from it.\n', {
      process: 'false',
    })
    const ingested = await finish(res.body.jobs[0]!.id)
    expect(ingested.result).toMatchObject({ status: 'parsed' })
    expect(ingested.result).not.toHaveProperty('process_job_id')
    const sourceId = res.body.jobs[0]!.source_id
    expect((await get<{ status: string }>(`/sources/${sourceId}`)).status).toBe('parsed')
    expect(await factsOf(sourceId)).toEqual([])

    const [failed] = await sql`
      INSERT INTO sources (id, url, kind, status, status_reason) VALUES (${crypto.randomUUID()}, 'https://example.com/gone', 'web', 'failed', 'the server answered 404')
      RETURNING id`
    const [pending] = await sql`
      INSERT INTO sources (id, url, kind, status) VALUES (${crypto.randomUUID()}, 'https://example.com/later', 'web', 'pending')
      RETURNING id`
    const jobs = await processJobs()
    const process = (id: string, token = owner.token) =>
      http.post(`/${repo.slug}/sources/${id}/process`, undefined, token)
    expectError(await process(crypto.randomUUID()), 404, 'source not found')
    expectError(await process('not-a-uuid'), 400, /expected a UUID/)
    expectError(
      await process(pending!.id),
      409,
      'the source is not parsed yet (its status is pending); its ingest job processes it once it is, unless told not to',
    )
    expectError(
      await process(failed!.id),
      409,
      'the source failed and has nothing to process: the server answered 404; add it again',
    )
    // A viewer reads the graph but may not write facts.
    expectError(await process(sourceId, viewer.token), 403, /fact:write/)
    expectError(await http.post(`/${repo.slug}/process`, undefined, viewer.token), 403, /fact:write/)
    expect(await processJobs()).toBe(jobs)
    await sql`DELETE FROM sources WHERE id IN (${failed!.id}, ${pending!.id})`

    // On demand, it is processed.
    const asked = await process(sourceId)
    expect(asked.status).toBe(202)
    expect(await finish((asked.body as Job).id)).toMatchObject({ status: 'succeeded', result: { sources: 1 } })
    expect((await get<{ status: string }>(`/sources/${sourceId}`)).status).toBe('processed')
  })

  test('a repository with no parsed source has nothing to process', async () => {
    const empty = (await http.post<{ slug: string }>('/api/v1/repositories', { name: 'Empty' }, owner.token)).body
    const jobs = await processJobs()
    expectError(
      await http.post(`/${empty.slug}/process`, undefined, owner.token),
      409,
      'nothing to process: no source of the repository is parsed',
    )
    expect(await processJobs()).toBe(jobs)
  })
})
