// Search end to end: a synthetic graph (scripts/gen-graph.ts) in a repository, its vectors made
// by the embed_facts / embed_concepts jobs on the worker threads, then GET /{repoID}/search.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { generateGraph } from '../../scripts/gen-graph.ts'
import { hashEmbedding } from '../../src/vectors/embedder.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: { token: string }
let stranger: { token: string }
let repo: { id: string; slug: string }
let empty: { id: string; slug: string }
const target = { id: crypto.randomUUID(), text: 'Sea ice reflects most incoming sunlight back into space.' }

async function runJob(slug: string, kind: string): Promise<{ status: string; result: { embedded: number } }> {
  const started = await http.post(`/${slug}/jobs`, { kind }, owner.token)
  expect(started.status).toBe(202)
  return (await waitForJob(http, `/${slug}/jobs/${started.body.id}`, owner.token)) as never
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
  const sql = await server.context.pools.forRepository(repo.id)
  await generateGraph(sql, repo.id, { facts: 300, seed: 7 })
  await sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${target.id}, ${target.text}, 'text', ${'f'.repeat(64)}, 'stable')`
  expect(await runJob(repo.slug, 'embed_facts')).toMatchObject({ status: 'succeeded', result: { embedded: 301 } })
  expect(await runJob(repo.slug, 'embed_concepts')).toMatchObject({ status: 'succeeded', result: { embedded: 30 } })
})
afterAll(() => server.stop())

describe(`after the embedding jobs (${BACKEND})`, () => {
  test('each queued an optimize_vectors job for its kind, which compacted the table (too small for an index)', async () => {
    const jobs = await settleJobs(http, repo.slug, owner.token)
    const optimized = jobs.filter((job) => job.kind === 'optimize_vectors').map((job) => ({ status: job.status, result: job.result as { kind: string; indexed: boolean } }))
    expect(optimized.sort((a, b) => a.result.kind.localeCompare(b.result.kind))).toEqual([
      { status: 'succeeded', result: { kind: 'concepts', indexed: false } },
      { status: 'succeeded', result: { kind: 'facts', indexed: false } },
    ])
    // Nothing embedded, nothing to optimize.
    expect(await runJob(empty.slug, 'embed_facts')).toMatchObject({ status: 'succeeded', result: { embedded: 0 } })
    expect((await settleJobs(http, empty.slug, owner.token)).map((job) => job.kind)).toEqual(['embed_facts'])
  })
})

describe(`search (${BACKEND})`, () => {
  test('the verbatim text finds its fact first, at distance 0; k bounds the list; nearest first', async () => {
    const res = await http.get(`/${repo.slug}/search?q=${encodeURIComponent(target.text)}&k=5`, owner.token)
    expect(res.status).toBe(200)
    expect(res.body).toHaveLength(5)
    expect(res.body[0]).toMatchObject({ id: target.id, fact: { id: target.id, text: target.text, fact_kind: 'text' } })
    expect(res.body[0].distance).toBeCloseTo(0, 5)
    const distances = res.body.map((h: { distance: number }) => h.distance)
    expect(distances).toEqual([...distances].sort((a, b) => a - b))
  })

  test('a query sharing words (not the sentence) still finds the fact first', async () => {
    const res = await http.get(`/${repo.slug}/search?q=${encodeURIComponent('how much sunlight does sea ice reflect?')}`, owner.token)
    expect(res.body).toHaveLength(10)
    expect(res.body[0].id).toBe(target.id)
    expect(res.body[0].distance).toBeGreaterThan(0)
  })

  test('the ranking is the exact cosine ranking of the stored vectors', async () => {
    const q = 'carbon dioxide absorbs heat'
    const res = await http.get(`/${repo.slug}/search?q=${encodeURIComponent(q)}&k=3`, owner.token)
    const sql = await server.context.pools.forRepository(repo.id)
    const query = hashEmbedding(q)
    const all = await sql<{ id: string; text: string }[]>`SELECT id, text FROM facts`
    const cosine = (v: Float32Array) => 1 - v.reduce((sum, x, i) => sum + x * query[i]!, 0)
    const expected = all
      .map((f) => ({ id: f.id, d: cosine(hashEmbedding(f.text)) }))
      .sort((a, b) => a.d - b.d)
      .slice(0, 3)
    expect(res.body.map((h: { id: string }) => h.id)).toEqual(expected.map((e) => e.id))
    res.body.forEach((h: { distance: number }, i: number) => expect(h.distance).toBeCloseTo(expected[i]!.d, 4))
  })

  test('concepts are searched by name and description', async () => {
    const sql = await server.context.pools.forRepository(repo.id)
    const [concept] = await sql<{ id: string; canonical_name: string }[]>`SELECT id, canonical_name FROM concepts ORDER BY created_at LIMIT 1 OFFSET 4`
    const res = await http.call('GET', `/api/v1/search?kind=concepts&k=1&q=${encodeURIComponent(concept!.canonical_name)}`, { token: owner.token, headers: { 'x-repository-id': repo.id } })
    expect(res.status).toBe(200)
    expect(res.body).toEqual([{ id: concept!.id, distance: expect.any(Number), concept: expect.objectContaining({ id: concept!.id, canonical_name: concept!.canonical_name }) }])
  })

  test('a repository without vectors answers an empty list', async () => {
    expect((await http.get(`/${empty.slug}/search?q=ice`, owner.token)).body).toEqual([])
  })

  test('vectors of another dimension: 409 asking for a re-embedding', async () => {
    await server.context.vectors.upsert(empty.id, 'concepts', [{ id: crypto.randomUUID(), vector: new Float32Array([1, 0, 0]) }])
    expectError(await http.get(`/${empty.slug}/search?q=ice&kind=concepts`, owner.token), 409, /re-embed them \(POST jobs with kind embed_concepts\)/)
  })

  test('bad queries, no token, no role', async () => {
    expectError(await http.get(`/${repo.slug}/search`, owner.token), 400, /q/)
    expectError(await http.get(`/${repo.slug}/search?q=`, owner.token), 400, /q/)
    expectError(await http.get(`/${repo.slug}/search?q=ice&kind=sources`, owner.token), 400, /kind/)
    expectError(await http.get(`/${repo.slug}/search?q=ice&k=0`, owner.token), 400, 'invalid query: k: expected an integer from 1 to 100 (got "0")')
    expectError(await http.get(`/${repo.slug}/search?q=ice&k=101`, owner.token), 400, /k: expected an integer from 1 to 100/)
    expectError(await http.get(`/${repo.slug}/search?q=ice`), 401, 'authentication required')
    expectError(await http.get(`/${repo.slug}/search?q=ice`, stranger.token), 404, 'repository not found')
  })
})

describe(`search with an unreachable embedding provider (${BACKEND})`, () => {
  test('502 naming the provider failure', async () => {
    const broken = await startTestServer({ env: { EMBEDDING_URL: 'http://127.0.0.1:9/v1', EMBEDDING_MODEL: 'm' } })
    try {
      const b = api(broken.url)
      const user = (await b.post('/api/v1/auth/register', { email: uniqueEmail(), password: 'correct horse battery' })).body
      const r = (await b.post('/api/v1/repositories', { name: 'R' }, user.token)).body
      expectError(await b.get(`/${r.slug}/search?q=ice`, user.token), 502, /^the embedding provider failed: embedding request to http:\/\/127\.0\.0\.1:9\/v1\/embeddings failed/)
    } finally {
      await broken.stop()
    }
  })
})
