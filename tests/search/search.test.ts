// Search end to end: a synthetic graph (scripts/gen-graph.ts) in a repository, its vectors made
// by the embed_facts / embed_concepts jobs on the worker threads, then GET /{repoID}/search in
// its three modes: keyword (full text), vector, and hybrid (the two fused by reciprocal rank).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, uniqueEmail, type ApiResponse } from '../helpers/api.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { generateGraph } from '../../scripts/gen-graph.ts'
import { hashEmbedding } from '../../src/vectors/embedder.ts'
import { factContentHash } from '../../src/bundle/format/hashes.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'
import { RANKED_MATCHES } from '../../src/search/store.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: { token: string }
let stranger: { token: string }
let repo: { id: string; slug: string }
let empty: { id: string; slug: string }
let sql: Sql
const target = { id: crypto.randomUUID(), text: 'Sea ice reflects most incoming sunlight back into space.' }
// Words the generator never writes, for websearch's syntax.
const animals = ['A quokka eats leaves.', 'A quokka sleeps at night.', 'The wombat sleeps at night.'] as const
const FACTS = 300 + 1 + animals.length
// Words the generator never writes, so these rows alone match them.
const concepts = {
  byName: { id: crypto.randomUUID(), canonical_name: 'Zorblax albedo', description: 'how bright a surface is' },
  byAlias: {
    id: crypto.randomUUID(),
    canonical_name: 'Reflectivity',
    description: 'the share of light sent back',
    alias: 'zorblax index',
  },
  byDescription: {
    id: crypto.randomUUID(),
    canonical_name: 'Snow cover',
    description: 'a zorblax-rich layer of snow on the ground',
  },
}

async function runJob(slug: string, kind: string): Promise<{ status: string; result: { embedded: number } }> {
  const started = await http.post(`/${slug}/jobs`, { kind }, owner.token)
  expect(started.status).toBe(202)
  return (await waitForJob(http, `/${slug}/jobs/${started.body.id}`, owner.token)) as never
}

type Hit = {
  id: string
  score: number
  distance?: number
  fact?: { id: string; text: string }
  concept?: { id: string; canonical_name: string }
}

const searchOf = (slug: string, query: string, token = owner.token) =>
  http.get<Hit[]>(`/${slug}/search?${query}`, token)

/** Every hit of a search, page by page through the Link headers, and the pages' headers. */
async function allHits(path: string): Promise<{ hits: Hit[]; pages: ApiResponse<Hit[]>[] }> {
  const pages: ApiResponse<Hit[]>[] = []
  let next: string | null = path
  while (next) {
    const res: ApiResponse<Hit[]> = await http.get<Hit[]>(next, owner.token)
    expect(res.status).toBe(200)
    pages.push(res)
    next = res.headers.get('link')?.match(/^<([^>]+)>; rel="next"$/)?.[1] ?? null
  }
  return { hits: pages.flatMap((page) => page.body), pages }
}

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner, stranger },
    repositories: { repo, empty },
  } = await fixture({
    server: { env: { WORKERS: '1' } },
    users: { owner: 'member', stranger: 'member' },
    repositories: { repo: { by: 'owner', name: 'Search' }, empty: { by: 'owner', name: 'Empty' } },
  }))
  sql = await server.context.pools.forRepository(repo.id)
  await generateGraph(sql, repo.id, { facts: 300, seed: 7 })
  for (const [id, text] of [[target.id, target.text], ...animals.map((text) => [crypto.randomUUID(), text])] as const)
    await sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${id}, ${text}, 'text', ${factContentHash(text)}, 'stable')`
  for (const c of Object.values(concepts))
    await sql`INSERT INTO concepts (id, canonical_name, description) VALUES (${c.id}, ${c.canonical_name}, ${c.description})`
  await sql`INSERT INTO concept_aliases (concept_id, alias_text) VALUES (${concepts.byAlias.id}, ${concepts.byAlias.alias}), (${concepts.byAlias.id}, 'albedo ratio')`
  expect(await runJob(repo.slug, 'embed_facts')).toMatchObject({ status: 'succeeded', result: { embedded: FACTS } })
  expect(await runJob(repo.slug, 'embed_concepts')).toMatchObject({ status: 'succeeded', result: { embedded: 33 } })
})
afterAll(() => server.stop())

describe(`after the embedding jobs (${BACKEND})`, () => {
  test('each queued an optimize_vectors job for its kind, which compacted the table (too small for an index)', async () => {
    const jobs = await settleJobs(http, repo.slug, owner.token)
    const optimized = jobs
      .filter((job) => job.kind === 'optimize_vectors')
      .map((job) => ({ status: job.status, result: job.result as { kind: string; indexed: boolean } }))
    expect(optimized.sort((a, b) => a.result.kind.localeCompare(b.result.kind))).toEqual([
      { status: 'succeeded', result: { kind: 'concepts', indexed: false } },
      { status: 'succeeded', result: { kind: 'facts', indexed: false } },
    ])
    // Nothing embedded, nothing to optimize.
    expect(await runJob(empty.slug, 'embed_facts')).toMatchObject({ status: 'succeeded', result: { embedded: 0 } })
    expect((await settleJobs(http, empty.slug, owner.token)).map((job) => job.kind)).toEqual(['embed_facts'])
  })
})

describe(`keyword search (${BACKEND})`, () => {
  test('words of a fact find it, stemmed (reflecting ~ reflects), ranked, with the count of matches', async () => {
    const res = await searchOf(repo.slug, `mode=keyword&q=${encodeURIComponent('sunlight reflecting')}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-search-mode')).toBe('keyword')
    expect(res.headers.get('x-search-fallback')).toBeNull()
    expect(res.headers.get('x-total-count')).toBe('1')
    expect(res.headers.get('x-total-count-estimated')).toBeNull()
    expect(res.body).toEqual([
      { id: target.id, score: expect.any(Number), fact: expect.objectContaining({ id: target.id, text: target.text }) },
    ])
    expect(res.body[0]!.score).toBeGreaterThan(0)
    expect(res.body[0]!.score).toBeLessThan(1)
  })

  test('websearch syntax: a quoted phrase, or, -word; plurals and tenses stemmed', async () => {
    const found = async (q: string) =>
      (await allHits(`/${repo.slug}/search?mode=keyword&q=${encodeURIComponent(q)}`)).hits
        .map((h) => h.fact!.text)
        .sort()
    const [eats, sleeps, wombat] = animals
    expect(await found('quokka')).toEqual([eats, sleeps])
    expect(await found('quokkas sleeping')).toEqual([sleeps])
    expect(await found('quokka -night')).toEqual([eats])
    expect(await found('quokka or wombat')).toEqual([eats, sleeps, wombat])
    expect(await found('"sleeps at night"')).toEqual([sleeps, wombat])
    expect(await found('"night at sleeps"')).toEqual([])
  })

  test('the ranking is ts_rank of the stored document, best first, ties by id', async () => {
    const q = 'water or cold or pressure'
    const { hits } = await allHits(`/${repo.slug}/search?mode=keyword&limit=7&q=${encodeURIComponent(q)}`)
    const expected = await sql<{ id: string }[]>`
      SELECT id FROM fact_documents WHERE fulltext @@ websearch_to_tsquery('english', ${q})
      ORDER BY ts_rank(fulltext, websearch_to_tsquery('english', ${q})) DESC, id`
    expect(expected.length).toBeGreaterThan(7)
    expect(hits.map((h) => h.id)).toEqual(expected.map((r) => r.id))
    const scores = hits.map((h) => h.score)
    expect(scores).toEqual([...scores].sort((a, b) => b - a))
  })

  test('concepts by name (A) over aliases (B) over description (C); aliases follow their table', async () => {
    const res = await searchOf(repo.slug, 'kind=concepts&mode=keyword&q=zorblax')
    expect(res.body.map((h) => h.concept!.canonical_name)).toEqual(['Zorblax albedo', 'Reflectivity', 'Snow cover'])
    // Name and alias together ("albedo ratio" is Reflectivity's other alias).
    expect(
      (await searchOf(repo.slug, `kind=concepts&mode=keyword&q=${encodeURIComponent('reflectivity ratio')}`)).body.map(
        (h) => h.id,
      ),
    ).toEqual([concepts.byAlias.id])
    await sql`DELETE FROM concept_aliases WHERE concept_id = ${concepts.byAlias.id} AND alias_text = ${concepts.byAlias.alias}`
    expect((await searchOf(repo.slug, 'kind=concepts&mode=keyword&q=zorblax')).body.map((h) => h.id)).toEqual([
      concepts.byName.id,
      concepts.byDescription.id,
    ])
    await sql`UPDATE concept_aliases SET alias_text = 'zorblax index' WHERE concept_id = ${concepts.byAlias.id}`
    expect((await searchOf(repo.slug, 'kind=concepts&mode=keyword&q=zorblax')).body.map((h) => h.id)).toEqual([
      concepts.byName.id,
      concepts.byAlias.id,
      concepts.byDescription.id,
    ])
    // An edited description is searchable at once.
    await sql`UPDATE concepts SET description = 'plain' WHERE id = ${concepts.byDescription.id}`
    expect((await searchOf(repo.slug, 'kind=concepts&mode=keyword&q=zorblax')).body.map((h) => h.id)).toEqual([
      concepts.byName.id,
      concepts.byAlias.id,
    ])
  })

  test('stop words or punctuation alone match nothing', async () => {
    for (const q of ['the of and', '!!! ---']) {
      const res = await searchOf(repo.slug, `mode=keyword&q=${encodeURIComponent(q)}`)
      expect(res.status).toBe(200)
      expect(res.body).toEqual([])
      expect(res.headers.get('x-total-count')).toBe('0')
    }
  })
})

describe(`vector search (${BACKEND})`, () => {
  test('the verbatim text finds its fact first, at distance 0 (score 1); nearest first', async () => {
    const res = await searchOf(repo.slug, `mode=vector&limit=5&q=${encodeURIComponent(target.text)}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-search-mode')).toBe('vector')
    expect(res.headers.get('x-total-count')).toBe(String(FACTS))
    expect(res.body).toHaveLength(5)
    expect(res.body[0]).toMatchObject({ id: target.id, fact: { id: target.id, text: target.text, fact_kind: 'text' } })
    expect(res.body[0]!.distance).toBeCloseTo(0, 5)
    expect(res.body[0]!.score).toBeCloseTo(1, 5)
    const distances = res.body.map((h) => h.distance!)
    expect(distances).toEqual([...distances].sort((a, b) => a - b))
  })

  test('the ranking is the exact cosine ranking of the stored vectors', async () => {
    const q = 'carbon dioxide absorbs heat'
    const res = await searchOf(repo.slug, `mode=vector&limit=3&q=${encodeURIComponent(q)}`)
    const query = hashEmbedding(q)
    const all = await sql<{ id: string; text: string }[]>`SELECT id, text FROM facts`
    const cosine = (v: Float32Array) => 1 - v.reduce((sum, x, i) => sum + x * query[i]!, 0)
    const expected = all
      .map((f) => ({ id: f.id, d: cosine(hashEmbedding(f.text)) }))
      .sort((a, b) => a.d - b.d)
      .slice(0, 3)
    expect(res.body.map((h) => h.id)).toEqual(expected.map((e) => e.id))
    res.body.forEach((h, i) => expect(h.distance!).toBeCloseTo(expected[i]!.d, 4))
  })

  test('concepts are searched by name and description, also at /api/v1 with X-Repository-ID', async () => {
    const [concept] = await sql<
      { id: string; canonical_name: string }[]
    >`SELECT id, canonical_name FROM concepts ORDER BY created_at LIMIT 1 OFFSET 4`
    const res = await http.call<Hit[]>(
      'GET',
      `/api/v1/search?mode=vector&kind=concepts&limit=1&q=${encodeURIComponent(concept!.canonical_name)}`,
      {
        token: owner.token,
        headers: { 'x-repository-id': repo.id },
      },
    )
    expect(res.status).toBe(200)
    expect(res.body).toEqual([
      {
        id: concept!.id,
        score: expect.any(Number),
        distance: expect.any(Number),
        concept: expect.objectContaining({ id: concept!.id, canonical_name: concept!.canonical_name }),
      },
    ])
  })

  test('a repository without vectors answers an empty list', async () => {
    const res = await searchOf(empty.slug, 'mode=vector&q=ice')
    expect(res.body).toEqual([])
    expect(res.headers.get('x-total-count')).toBe('0')
  })
})

describe(`hybrid search, the default (${BACKEND})`, () => {
  test('is the reciprocal rank fusion (k = 60) of the first 100 of the keyword and vector lists, paged after fusion', async () => {
    const q = 'ice or water or heat'
    const keyword = (
      await allHits(`/${repo.slug}/search?mode=keyword&limit=100&q=${encodeURIComponent(q)}`)
    ).hits.slice(0, 100)
    const vector = (await allHits(`/${repo.slug}/search?mode=vector&limit=100&q=${encodeURIComponent(q)}`)).hits.slice(
      0,
      100,
    )
    expect(vector).toHaveLength(100)
    const scores = new Map<string, number>()
    for (const list of [keyword, vector])
      list.forEach((hit, i) => scores.set(hit.id, (scores.get(hit.id) ?? 0) + 1 / (60 + i + 1)))
    const expected = [...scores].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
    expect(expected.length).toBeGreaterThan(keyword.length)
    const { hits, pages } = await allHits(`/${repo.slug}/search?limit=100&q=${encodeURIComponent(q)}`)
    expect(pages.map((page) => page.body.length)).toEqual(
      Array.from({ length: Math.ceil(expected.length / 100) }, (_, i) => Math.min(100, expected.length - i * 100)),
    )
    for (const page of pages) {
      expect(page.headers.get('x-search-mode')).toBe('hybrid')
      expect(page.headers.get('x-total-count')).toBe(String(expected.length))
    }
    expect(hits.map((h) => h.id)).toEqual(expected.map(([id]) => id))
    hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(expected[i]![1], 10))
    // A hit the vector side ranked carries its distance; each carries its fact.
    const fromVector = new Set(vector.map((h) => h.id))
    expect(
      hits.every((hit) => (hit.distance !== undefined) === fromVector.has(hit.id) && hit.fact?.id === hit.id),
    ).toBe(true)
  })

  test('the words of a fact find it first', async () => {
    const res = await searchOf(repo.slug, `q=${encodeURIComponent('how much sunlight does sea ice reflect?')}`)
    expect(res.headers.get('x-search-mode')).toBe('hybrid')
    expect(res.body).toHaveLength(10)
    expect(res.body[0]!.id).toBe(target.id)
  })

  test('without vectors: keyword, saying why', async () => {
    const res = await searchOf(repo.slug, 'kind=concepts&q=zorblax')
    expect(res.headers.get('x-search-mode')).toBe('hybrid')
    const none = await searchOf(empty.slug, 'q=ice')
    expect(none.status).toBe(200)
    expect(none.headers.get('x-search-mode')).toBe('keyword')
    expect(none.headers.get('x-search-fallback')).toBe('the repository has no fact vectors')
  })

  test('vectors of another dimension: keyword, saying why (vector mode: 409 asking for a re-embedding)', async () => {
    await server.context.vectors.upsert(empty.id, 'concepts', [
      { id: crypto.randomUUID(), vector: new Float32Array([1, 0, 0]) },
    ])
    const res = await searchOf(empty.slug, 'q=ice&kind=concepts')
    expect(res.status).toBe(200)
    expect(res.headers.get('x-search-mode')).toBe('keyword')
    expect(res.headers.get('x-search-fallback')).toBe('the stored vectors were made by another embedding model')
    expectError(
      await searchOf(empty.slug, 'q=ice&kind=concepts&mode=vector'),
      409,
      /re-embed them \(POST jobs with kind embed_concepts\)/,
    )
  })
})

describe(`paging (${BACKEND})`, () => {
  test('limit, Link and X-Total-Count; the pages make up the list', async () => {
    const whole = await searchOf(repo.slug, 'mode=keyword&limit=100&q=water')
    const total = Number(whole.headers.get('x-total-count'))
    expect(total).toBeGreaterThan(10)
    const { hits, pages } = await allHits(`/${repo.slug}/search?mode=keyword&limit=4&q=water`)
    expect(pages.every((page) => page.headers.get('x-total-count') === String(total))).toBe(true)
    expect(hits.map((h) => h.id)).toEqual(whole.body.map((h) => h.id).slice(0, total))
    expect(pages.at(-1)!.headers.get('link')).toBeNull()
  })

  test(`a query matching ${RANKED_MATCHES} rows or more: ranked among the first ${RANKED_MATCHES}, its total estimated and flagged`, async () => {
    const many = (
      await http.post<{ id: string; slug: string }>('/api/v1/repositories', { name: 'Many matches' }, owner.token)
    ).body
    const manySql = await server.context.pools.forRepository(many.id)
    const matching = RANKED_MATCHES + 500
    await manySql`
      INSERT INTO facts (id, text, fact_kind, content_hash, status)
      SELECT gen_random_uuid(), text, 'text', encode(sha256(convert_to(text, 'UTF8')), 'hex'), 'new'
      FROM (SELECT CASE WHEN n <= ${matching} THEN 'A quasar shines ' ELSE 'A comet passes ' END || repeat('very ', n % 3) || 'far away, number ' || n AS text FROM generate_series(1, ${matching + 300}) n) t`
    await manySql`ANALYZE fact_documents`
    for (const mode of ['keyword', 'hybrid']) {
      const res = await searchOf(many.slug, `mode=${mode}&limit=50&q=quasar`)
      expect(res.status).toBe(200)
      expect(res.headers.get('x-search-mode')).toBe('keyword')
      expect(res.headers.get('x-total-count-estimated')).toBe('true')
      // The planner's estimate, from the statistics ANALYZE took.
      expect(Number(res.headers.get('x-total-count'))).toBeGreaterThanOrEqual(RANKED_MATCHES)
      expect(Number(res.headers.get('x-total-count'))).toBeLessThan(2 * matching)
      expect(res.body).toHaveLength(50)
      expect(res.body.every((hit) => hit.fact!.text.startsWith('A quasar'))).toBe(true)
      const scores = res.body.map((hit) => hit.score)
      expect(scores).toEqual([...scores].sort((a, b) => b - a))
    }
    const few = await searchOf(many.slug, 'mode=keyword&q=comet')
    expect(few.headers.get('x-total-count')).toBe('300')
    expect(few.headers.get('x-total-count-estimated')).toBeNull()
  })
})

describe(`bad input, no token, no role (${BACKEND})`, () => {
  test('each a 400 naming the field', async () => {
    expectError(await searchOf(repo.slug, ''), 400, /q/)
    expectError(await searchOf(repo.slug, 'q='), 400, /q/)
    expectError(await searchOf(repo.slug, `q=${'a'.repeat(2001)}`), 400, /q/)
    expectError(
      await searchOf(repo.slug, 'q=ice%00'),
      400,
      'the URL contains an encoded NUL character (%00), which no parameter accepts',
    )
    expectError(await searchOf(repo.slug, 'q=ice&kind=sources'), 400, /kind/)
    expectError(await searchOf(repo.slug, 'q=ice&mode=semantic'), 400, /mode/)
    expectError(
      await searchOf(repo.slug, 'q=ice&limit=0'),
      400,
      'invalid query: limit: expected an integer from 1 to 100 (got "0")',
    )
    expectError(await searchOf(repo.slug, 'q=ice&limit=101'), 400, /limit: expected an integer from 1 to 100/)
    expectError(await searchOf(repo.slug, 'q=ice&limit=ten'), 400, /limit/)
    const cursor = (offset: unknown) => Buffer.from(JSON.stringify({ offset })).toString('base64url')
    for (const bad of ['nonsense', cursor(-1), cursor(0), cursor(1.5), cursor('10'), cursor(1000)])
      expectError(
        await searchOf(repo.slug, `q=ice&cursor=${bad}`),
        400,
        'invalid query: cursor: expected a cursor from a Link header',
      )
  })

  test('no token: 401; no role in the repository: 404', async () => {
    expectError(await http.get(`/${repo.slug}/search?q=ice`), 401, 'authentication required')
    expectError(await searchOf(repo.slug, 'q=ice', stranger.token), 404, 'repository not found')
    expectError(await searchOf(repo.slug, 'q=ice&kind=concepts', stranger.token), 404, 'repository not found')
  })
})

describe(`search with an unreachable embedding provider (${BACKEND})`, () => {
  test('hybrid answers keyword, saying why; vector mode is a 502 naming the provider failure', async () => {
    const broken = await startTestServer({ env: { EMBEDDING_URL: 'http://127.0.0.1:9/v1', EMBEDDING_MODEL: 'm' } })
    try {
      const b = api(broken.url)
      const user = (await b.post('/api/v1/auth/register', { email: uniqueEmail(), password: 'correct horse battery' }))
        .body
      const r = (await b.post('/api/v1/repositories', { name: 'R' }, user.token)).body
      const res = await b.get(`/${r.slug}/search?q=ice`, user.token)
      expect(res.status).toBe(200)
      expect(res.headers.get('x-search-mode')).toBe('keyword')
      expect(res.headers.get('x-search-fallback')).toBe('the embedding provider failed')
      expectError(
        await b.get(`/${r.slug}/search?q=ice&mode=vector`, user.token),
        502,
        /^the embedding provider failed: embedding request to http:\/\/127\.0\.0\.1:9\/v1\/embeddings failed/,
      )
    } finally {
      await broken.stop()
    }
  })
})
