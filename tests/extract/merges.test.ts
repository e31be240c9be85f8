// Near-duplicate facts and stale facts, end to end on the selected backend with the built-in
// embedder (kgs-hash-v1): two sources saying the same thing in nearly the same words give one
// fact citing both, the merge is listed and can be undone (into two facts, each citing its own
// source), a viewer may not undo it and bad requests write nothing; processing again adds
// nothing; a source whose document changed marks the facts only it said and no longer says
// `stale`, which the status filter (of the facts list and of search) finds, and they are `stable`
// again once it says them again; a bundle carries them as they are.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { finished, jobsWhen, waitForJob } from '../helpers/jobs.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { dumpGraph } from '../helpers/graph-dump.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Job } from '../../src/jobs/queue.ts'
import type { FactDetail, FactMerge } from '../../src/graph/schemas.ts'
import { hashEmbedding } from '../../src/vectors/embedder.ts'
import { MERGE_SIMILARITY } from '../../src/vectors/near-facts.ts'

const FLUSHES = 'A checkpoint flushes dirty pages to the data files.'
const REPLAYS = 'PostgreSQL replays the WAL after a crash.'
/** FLUSHES in nearly the same words (an article more): merged into it. */
const FLUSHES_AGAIN = 'A checkpoint flushes the dirty pages to the data files.'
const WRITER = 'The background writer runs between checkpoints.'
const FIRST = `# Checkpoints\n\n${FLUSHES} ${REPLAYS}\n`
const SECOND = `# The background writer\n\n${FLUSHES_AGAIN} ${WRITER}\n`

const BOILS = 'The kettle boils water in about three minutes.'
const DESCALED = 'A descaled kettle uses less power than a furred one.'
const SWITCHES = 'The kettle switches itself off when the water boils.'
const WARM = 'The kettle keeps the water warm for an hour.'
const KETTLE_V1 = `# Kettles\n\n${BOILS} ${DESCALED} ${SWITCHES}\n`
const KETTLE_V2 = `# Kettles\n\n${BOILS} ${WARM}\n`
/** Another source saying DESCALED too: it stays stable when the kettle page stops saying it. */
const DESCALING = `# Descaling\n\n${DESCALED} Vinegar removes the scale from the element.\n`

interface ProcessFacts {
  added: number
  merged: number
  near_merged: number
  unchanged: number
  stale: number
  restored: number
}

type Ingested = { status: number; body: { jobs: { id: string; source_id: string }[] } }

/** Follows an ingest job to the process_source job it queued, and answers the source and that job's fact counts. */
async function processedSource(http: ReturnType<typeof api>, slug: string, token: string, res: Ingested) {
  expect(res.status).toBe(202)
  const ingested = await waitForJob(http, `/${slug}/jobs/${res.body.jobs[0]!.id}`, token)
  const next = (ingested.result as { process_job_id: string }).process_job_id
  const job = await waitForJob(http, `/${slug}/jobs/${next}`, token)
  expect(job).toMatchObject({ status: 'succeeded' })
  return { sourceId: res.body.jobs[0]!.source_id, facts: (job.result as { facts: ProcessFacts }).facts }
}

/** Adds a Markdown file and follows its jobs (processedSource). */
function uploaded(http: ReturnType<typeof api>, slug: string, token: string, name: string, text: string) {
  const form = new FormData()
  form.append('file', new File([text], name, { type: 'text/markdown' }))
  return http
    .call('POST', `/${slug}/ingest`, { raw: form, token })
    .then((res) => processedSource(http, slug, token, res))
}

const cosine = (a: string, b: string) => {
  const x = hashEmbedding(a)
  const y = hashEmbedding(b)
  return x.reduce((sum, value, i) => sum + value * y[i]!, 0)
}

describe(`near-duplicate and stale facts (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let viewer: Account
  let repo: { id: string; slug: string }
  let sql: Sql
  let page = KETTLE_V1
  let docs: ReturnType<typeof Bun.serve>

  beforeAll(async () => {
    docs = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response(page, { headers: { 'content-type': 'text/markdown' } }),
    })
    ;({
      server,
      http,
      users: { owner, viewer },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1', INGEST_FETCH_ALLOW_PRIVATE: 'true' } },
      users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
      repositories: { repo: { by: 'owner', name: 'Merges', roles: { viewer: 'viewer' } } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
  })
  afterAll(async () => {
    await server.stop()
    await docs.stop(true)
  })

  const finish = (id: string) => waitForJob(http, `/${repo.slug}/jobs/${id}`, owner.token)
  const processed = (res: Ingested) => processedSource(http, repo.slug, owner.token, res)
  const upload = (name: string, text: string) => uploaded(http, repo.slug, owner.token, name, text)
  const get = async <T>(path: string) => {
    const res = await http.get<T>(`/${repo.slug}${path}`, owner.token)
    expect(res.status).toBe(200)
    return res.body
  }
  const fact = (id: string) => get<FactDetail>(`/facts/${id}`)
  const factNamed = async (text: string) => {
    const [row] = await sql<{ id: string }[]>`SELECT id FROM facts WHERE text = ${text}`
    return row && fact(row.id)
  }
  const processAgain = async (sourceId: string) => {
    const res = await http.post<Job>(`/${repo.slug}/sources/${sourceId}/process`, undefined, owner.token)
    expect(res.status).toBe(202)
    return ((await finish(res.body.id)).result as { facts: ProcessFacts }).facts
  }
  /** Everything a write could touch: the graph's rows and the merges. */
  const state = async () => {
    const { vectors: _, ...rows } = await dumpGraph(sql, repo.id, server.context)
    const merges = await sql`SELECT * FROM fact_merges ORDER BY id`
    return { rows, merges }
  }

  let first: string
  let second: string
  let kept: FactDetail
  let merge: FactMerge

  test('the pair measures above the threshold of kgs-hash-v1, and sentences differing in a word of meaning below it', () => {
    expect(cosine(FLUSHES, FLUSHES_AGAIN)).toBeGreaterThanOrEqual(MERGE_SIMILARITY['kgs-hash-v1'])
    expect(cosine(FLUSHES, WRITER)).toBeLessThan(MERGE_SIMILARITY['kgs-hash-v1'])
    expect(
      cosine(
        'The pump sends steam past the north hall every morning.',
        'The pump sends steam past the south hall every morning.',
      ),
    ).toBeLessThan(MERGE_SIMILARITY['kgs-hash-v1'])
  })

  test('two sources saying one thing in nearly the same words: one fact citing both, its merge listed', async () => {
    ;({ sourceId: first } = await upload('first.md', FIRST))
    // Its facts in the vector store (not only marked): the stored side of the comparison is what finds them.
    await jobsWhen(http, repo.slug, owner.token, (jobs) => {
      const embedding = jobs.filter((job) => job.kind === 'embed_changes')
      const facts = embedding.filter((job) => (job.result as { kind?: string } | null)?.kind === 'facts')
      return facts.some((job) => job.status === 'succeeded') && embedding.every((job) => finished(job))
    })
    expect(await server.context.vectors.count(repo.id, 'facts')).toBe(2)
    const { sourceId, facts } = await upload('second.md', SECOND)
    second = sourceId
    expect(facts).toMatchObject({ added: 1, merged: 0, near_merged: 1, unchanged: 0, stale: 0 })
    expect(await factNamed(FLUSHES_AGAIN)).toBeUndefined()
    kept = (await factNamed(FLUSHES))!
    expect(kept.sources.map((s) => [s.id, s.chunk_index]).sort()).toEqual(
      [
        [first, 0],
        [second, 0],
      ].sort(),
    )
    // The second source's facts are the kept one and its own.
    const listed = await get<{ text: string }[]>(`/facts?source_id=${second}`)
    expect(listed.map((f) => f.text).sort()).toEqual([FLUSHES, WRITER].sort())

    const merges = await get<FactMerge[]>(`/facts/${kept.id}/merges`)
    expect(merges).toHaveLength(1)
    merge = merges[0]!
    expect(merge).toMatchObject({
      fact_id: kept.id,
      text: FLUSHES_AGAIN,
      source_id: second,
      chunk_index: 0,
      embedder: 'kgs-hash-v1',
    })
    expect(merge.similarity).toBeCloseTo(cosine(FLUSHES, FLUSHES_AGAIN), 5)
    // The merged text's concepts are the kept fact's now: the second source's "checkpoint", which the first never made.
    expect(kept.concepts.map((c) => c.canonical_name)).toContain('checkpoint')
    for (const id of merge.concept_ids) expect(kept.concepts.map((c) => c.id)).toContain(id)
    // The repository's list, at both prefixes.
    expect((await get<FactMerge[]>('/fact-merges')).map((m) => m.id)).toEqual([merge.id])
    const header = await http.call<FactMerge[]>('GET', '/api/v1/fact-merges', {
      token: owner.token,
      headers: { 'x-repository-id': repo.id },
    })
    expect(header.status).toBe(200)
    expect(header.body.map((m) => m.id)).toEqual([merge.id])
    expect((await get<FactMerge[]>(`/facts/${(await factNamed(WRITER))!.id}/merges`)).length).toBe(0)
  })

  test('processing either source again adds nothing', async () => {
    const before = await state()
    expect(await processAgain(second)).toMatchObject({ added: 0, merged: 0, near_merged: 0, unchanged: 2 })
    expect(await processAgain(first)).toMatchObject({ added: 0, merged: 0, near_merged: 0, unchanged: 2 })
    expect(await state()).toEqual(before)
  })

  test('an unmerge a viewer asks for, or of no such fact or merge, or on a stale ETag, is refused and writes nothing', async () => {
    const before = await state()
    const unmerge = (factId: string, body: unknown, token = owner.token, headers: Record<string, string> = {}) =>
      http.call('POST', `/${repo.slug}/facts/${factId}/unmerge`, { body, token, headers })
    expectError(await unmerge(kept.id, { merge_id: merge.id }, viewer.token), 403, /fact:write/)
    expectError(await unmerge(crypto.randomUUID(), { merge_id: merge.id }), 404, 'fact not found')
    expectError(await unmerge('not-a-uuid', { merge_id: merge.id }), 400, /expected a UUID/)
    expectError(await unmerge(kept.id, { merge_id: 'nope' }), 400, /merge_id/)
    expectError(await unmerge(kept.id, {}), 400, /merge_id/)
    expectError(await unmerge(kept.id, { merge_id: merge.id, more: 1 }), 400)
    const writer = (await factNamed(WRITER))!
    expectError(
      await unmerge(writer.id, { merge_id: merge.id }),
      404,
      'merge not found: the fact has no merge of that id',
    )
    expectError(await unmerge(kept.id, { merge_id: merge.id }, owner.token, { 'if-match': '"stale"' }), 412)
    expectError(await http.get(`/${repo.slug}/facts/${crypto.randomUUID()}/merges`, owner.token), 404, 'fact not found')
    expect(await state()).toEqual(before)
  })

  test('an unmerge makes the text its own fact again, citing its source, and the kept fact loses what only the merge gave it', async () => {
    const etag = (await http.get(`/${repo.slug}/facts/${kept.id}`, owner.token)).headers.get('etag')!
    const res = await http.call<{ fact: FactDetail; kept: FactDetail }>('POST', `/api/v1/facts/${kept.id}/unmerge`, {
      body: { merge_id: merge.id },
      token: owner.token,
      headers: { 'x-repository-id': repo.id, 'if-match': etag },
    })
    expect(res.status).toBe(201)
    const { fact: restored, kept: after } = res.body
    expect(res.headers.get('location')).toBe(`/${repo.id}/facts/${restored.id}`)
    expect(restored).toMatchObject({ text: FLUSHES_AGAIN, status: 'stable' })
    expect(restored.sources.map((s) => [s.id, s.chunk_index])).toEqual([[second, 0]])
    expect(restored.concepts.map((c) => c.id).sort()).toEqual([...merge.concept_ids].sort())
    expect(after.sources.map((s) => [s.id, s.chunk_index])).toEqual([[first, 0]])
    expect(restored.concepts.map((c) => c.canonical_name)).toContain('checkpoint')
    expect(after.concepts.map((c) => c.canonical_name)).not.toContain('checkpoint')
    // The first source's own links stay; those the merge brought are gone.
    const [own] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM fact_concepts WHERE fact_id = ${kept.id} AND concept_id = ANY(${merge.concept_ids}::uuid[])`
    expect(after.concepts.length).toBe(kept.concepts.length - merge.concept_ids.length + own!.n)
    expect(await fact(restored.id)).toEqual(restored)
    expect(await get<FactMerge[]>(`/facts/${kept.id}/merges`)).toEqual([])
    expect((await get<{ text: string }[]>(`/facts?source_id=${second}`)).map((f) => f.text).sort()).toEqual(
      [FLUSHES_AGAIN, WRITER].sort(),
    )
    // Twice is no merge any more; processing again finds the text as a fact of its own and adds nothing.
    expectError(
      await http.post(`/${repo.slug}/facts/${kept.id}/unmerge`, { merge_id: merge.id }, owner.token),
      404,
      'merge not found: the fact has no merge of that id',
    )
    // The first time, its summaries are rewritten to cover the restored fact too (the unmerge left
    // them as they were, citing the kept fact); the second time nothing changes at all.
    expect(await processAgain(second)).toMatchObject({ added: 0, near_merged: 0, unchanged: 2 })
    const before = await state()
    expect(await processAgain(second)).toMatchObject({ added: 0, near_merged: 0, unchanged: 2 })
    expect(await state()).toEqual(before)
  })

  test('a changed source marks the facts only it said and no longer says stale; the status filter finds them; said again, they are stable', async () => {
    const url = `http://127.0.0.1:${docs.port}/kettles.md`
    const add = () => http.post(`/${repo.slug}/ingest`, { url }, owner.token).then(processed)
    const { sourceId: kettles, facts: v1 } = await add()
    expect(v1).toMatchObject({ added: 3, stale: 0 })
    const { sourceId: descaling } = await upload('descaling.md', DESCALING)

    page = KETTLE_V2
    const { sourceId: again, facts: v2 } = await add()
    expect(again).toBe(kettles)
    // DESCALED is cited by the descaling page too: it stays stable.
    expect(v2).toMatchObject({ added: 1, unchanged: 1, stale: 1, restored: 0 })
    const stale = await get<FactDetail[]>(`/facts?status=stale&source_id=${kettles}`)
    expect(stale.map((f) => f.text)).toEqual([SWITCHES])
    expect(stale[0]!.status).toBe('stale')
    // Kept, with its citation.
    expect((await fact(stale[0]!.id)).sources.map((s) => s.id)).toEqual([kettles])
    expect((await factNamed(DESCALED))!.status).toBe('stable')
    expect((await factNamed(DESCALED))!.sources.map((s) => s.id).sort()).toEqual([kettles, descaling].sort())
    expect((await get<FactDetail[]>(`/facts?status=stable&source_id=${kettles}`)).map((f) => f.text).sort()).toEqual(
      [BOILS, DESCALED, WARM].sort(),
    )
    expectError(
      await http.get(`/${repo.slug}/facts?status=gone`, owner.token),
      400,
      /expected new, stable, to_delete or stale/,
    )
    // Search finds them with the same filter, in every mode that can answer.
    for (const mode of ['keyword', 'hybrid']) {
      const hits = await get<{ fact: { text: string } }[]>(`/search?q=kettle&status=stale&mode=${mode}`)
      expect(hits.map((hit) => hit.fact.text)).toEqual([SWITCHES])
    }
    expect((await get<unknown[]>('/search?q=kettle&status=stable&mode=keyword')).length).toBe(3)
    expectError(
      await http.get(`/${repo.slug}/search?q=kettle&kind=concepts&status=stale`, owner.token),
      400,
      'invalid query: status: only facts have a status (kind=facts)',
    )
    // Processing the changed source again marks nothing more.
    expect(await processAgain(kettles)).toMatchObject({ added: 0, stale: 0, restored: 0 })

    page = KETTLE_V1
    const { facts: v3 } = await add()
    expect(v3).toMatchObject({ added: 0, stale: 1, restored: 1 })
    expect((await factNamed(SWITCHES))!.status).toBe('stable')
    expect((await factNamed(WARM))!.status).toBe('stale')
  })

  test('texts stating other numbers are not merged, however close the embedder puts them', async () => {
    const twelve = 'The cooling loop of plant 3 carries river water past turbine 12.'
    const thirteen = 'The cooling loop of plant 3 carries river water past turbine 13.'
    expect(cosine(twelve, thirteen)).toBeGreaterThanOrEqual(MERGE_SIMILARITY['kgs-hash-v1'])
    await upload('twelve.md', `# Turbines\n\n${twelve}\n`)
    const { facts } = await upload('thirteen.md', `# Turbines\n\n${thirteen}\n`)
    expect(facts).toMatchObject({ added: 1, near_merged: 0 })
    expect((await factNamed(thirteen))!.text).toBe(thirteen)
  })

  test('a bundle carries a stale fact as it is, and its import keeps it stale', async () => {
    const exported = await http.post<Job>(`/${repo.slug}/export-graph`, {}, owner.token)
    expect(exported.status).toBe(202)
    expect((await finish(exported.body.id)).status).toBe('succeeded')
    const bytes = await fetch(`${server.url}/${repo.slug}/export-graph/download`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect(bytes.status).toBe(200)
    const copy = (await http.post<{ slug: string }>('/api/v1/repositories', { name: 'Merges copy' }, owner.token)).body
    const started = await uploadBundle(http, copy.slug, owner.token, new Uint8Array(await bytes.arrayBuffer()))
    expect(started.status).toBe(202)
    const imported = await waitForJob(http, `/${copy.slug}/jobs/${started.body.id}`, owner.token)
    expect({ status: imported.status, error: imported.error }).toEqual({ status: 'succeeded', error: null })
    const stale = await http.get<{ text: string }[]>(`/${copy.slug}/facts?status=stale`, owner.token)
    expect(stale.body.map((f) => f.text)).toEqual([WARM])
  })
})

describe(`near-duplicate facts with an embedding model at EMBEDDING_URL (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }
  /** An OpenAI-compatible /embeddings answering kgs-hash-v1's vectors: the similarities are known, the threshold is the model's. */
  const model = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (request) => {
      const { input } = (await request.json()) as { input: string[] }
      return Response.json({
        object: 'list',
        data: input.map((text, index) => ({ object: 'embedding', index, embedding: Array.from(hashEmbedding(text)) })),
      })
    },
  })

  beforeAll(async () => {
    ;({
      server,
      http,
      users: { owner },
      repositories: { repo },
    } = await fixture({
      server: {
        env: {
          WORKERS: '1',
          EMBEDDING_URL: `http://127.0.0.1:${model.port}/v1`,
          EMBEDDING_MODEL: 'fake-embedder',
          FACT_MERGE_SIMILARITY: '0.99',
        },
      },
      users: { owner: 'member' },
      repositories: { repo: { by: 'owner', name: 'Model merges' } },
    }))
  })
  afterAll(async () => {
    await server.stop()
    await model.stop(true)
  })

  const upload = async (name: string, text: string) => (await uploaded(http, repo.slug, owner.token, name, text)).facts

  test('FACT_MERGE_SIMILARITY sets the threshold: below it two facts, at it one, the merge naming the model', async () => {
    await upload('first.md', FIRST)
    // 0.94 for kgs-hash-v1's vectors: merged at 0.93, not at 0.99.
    expect(await upload('second.md', SECOND)).toMatchObject({ added: 2, near_merged: 0 })
    // Only the case differs: the same vector, similarity 1.
    const shouted = 'A checkpoint flushes dirty pages to the DATA files.'
    expect(await upload('third.md', `# Again\n\n${shouted}\n`)).toMatchObject({ added: 0, near_merged: 1 })
    const merges = (await http.get<FactMerge[]>(`/${repo.slug}/fact-merges`, owner.token)).body
    expect(merges.map((m) => [m.text, m.embedder])).toEqual([[shouted, 'fake-embedder']])
    expect(merges[0]!.similarity).toBeCloseTo(1, 5)
  })
})
