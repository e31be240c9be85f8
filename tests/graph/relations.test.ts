// The graph's relations through the read API: facts of a concept and of several at once
// (GET /{repoID}/facts?concept=…&concept=…), with the other filters (status, kind, source), and
// the concepts related to a concept by the facts they share (GET /{repoID}/concepts/{id}/related).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { type api, expectError } from '../helpers/api.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { factContentHash } from '../../src/bundle/format/hashes.ts'

let server: TestServer
let http: ReturnType<typeof api>
let viewer: { token: string }
let stranger: { token: string }
let repo: { id: string; slug: string }

const uuid = () => crypto.randomUUID()
// Concepts c0..c4; facts f0..f7, each linked to the concepts listed (c0 is in most).
const concepts = Array.from({ length: 5 }, (_, i) => ({ id: uuid(), canonical_name: `Concept ${i}` }))
const links: number[][] = [[0, 1], [0, 1, 2], [0, 1, 2], [0, 2], [0, 3], [1], [4], [0, 1]]
const facts = links.map((_, i) => ({
  id: uuid(),
  text: `Fact number ${i}.`,
  fact_kind: i === 2 || i === 7 ? 'image' : 'text',
  status: i === 1 ? 'new' : 'stable',
}))
const source = { id: uuid(), url: 'https://example.org/paper' }
const withSource = [facts[1]!, facts[2]!, facts[4]!]

/** The same request at /{repoID}/… and at /api/v1/… with X-Repository-ID: both answers, checked equal. */
async function getBoth(path: string, token = viewer.token) {
  const inPath = await http.get(`/${repo.slug}${path}`, token)
  const inHeader = await http.call('GET', `/api/v1${path}`, { token, headers: { 'x-repository-id': repo.slug } })
  expect(inHeader.status).toBe(inPath.status)
  expect(inHeader.body).toEqual(inPath.body)
  expect(inHeader.headers.get('x-total-count')).toBe(inPath.headers.get('x-total-count'))
  return inPath
}

const factIds = async (query: string) => {
  const res = await getBoth(`/facts?${query}`)
  expect(res.status).toBe(200)
  return (res.body as { id: string }[]).map((f) => f.id)
}
/** Facts in list order ((created_at, id): they were created in index order). */
const factsOf = (...indexes: number[]) => indexes.map((i) => facts[i]!.id)

beforeAll(async () => {
  ;({
    server,
    http,
    users: { viewer, stranger },
    repositories: { repo },
  } = await fixture({
    users: { admin: 'sysadmin', owner: 'member', viewer: 'member', stranger: 'member' },
    repositories: { repo: { by: 'owner', name: 'Relations', roles: { viewer: 'viewer' } } },
  }))
  const sql = await server.context.pools.forRepository(repo.id)
  const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i))
  await sql`INSERT INTO concepts ${sql(concepts.map((c, i) => ({ ...c, created_at: at(i) })))}`
  await sql`INSERT INTO facts ${sql(facts.map((f, i) => ({ ...f, content_hash: factContentHash(f.text), created_at: at(i) })))}`
  await sql`INSERT INTO fact_concepts ${sql(links.flatMap((cs, i) => cs.map((c) => ({ fact_id: facts[i]!.id, concept_id: concepts[c]!.id }))))}`
  await sql`INSERT INTO sources (id, url, kind, status) VALUES (${source.id}, ${source.url}, 'html', 'processed')`
  await sql`INSERT INTO fact_sources ${sql(withSource.map((f) => ({ fact_id: f.id, source_id: source.id })))}`
})
afterAll(() => server.stop())

describe(`facts of concepts (${BACKEND})`, () => {
  test('one concept: its facts; several: the facts linked to all of them', async () => {
    const [c0, c1, c2, c3, c4] = concepts.map((c) => c.id)
    expect(await factIds(`concept=${c0}`)).toEqual(factsOf(0, 1, 2, 3, 4, 7))
    expect(await factIds(`concept=${c0}&concept=${c1}`)).toEqual(factsOf(0, 1, 2, 7))
    expect(await factIds(`concept=${c0}&concept=${c1}&concept=${c2}`)).toEqual(factsOf(1, 2))
    expect(await factIds(`concept=${c1}&concept=${c0}&concept=${c1}`)).toEqual(factsOf(0, 1, 2, 7))
    expect(await factIds(`concept=${c3}&concept=${c4}`)).toEqual([])
    expect(await factIds(`concept=${uuid()}`)).toEqual([])
  })

  test('with the other filters, and paged', async () => {
    const [c0, c1] = concepts.map((c) => c.id)
    expect(await factIds(`concept=${c0}&kind=image`)).toEqual(factsOf(2, 7))
    expect(await factIds(`concept=${c0}&kind=text&status=stable`)).toEqual(factsOf(0, 3, 4))
    expect(await factIds(`concept=${c0}&concept=${c1}&source_id=${source.id}`)).toEqual(factsOf(1, 2))
    expect(await factIds('kind=image')).toEqual(factsOf(2, 7))
    const first = await http.get(`/${repo.slug}/facts?concept=${c0}&concept=${c1}&limit=3`, viewer.token)
    expect(first.body.map((f: { id: string }) => f.id)).toEqual(factsOf(0, 1, 2))
    const next = first.headers.get('link')!.match(/^<([^>]+)>; rel="next"$/)![1]!
    const second = await http.get(next, viewer.token)
    expect(second.body.map((f: { id: string }) => f.id)).toEqual(factsOf(7))
    expect(second.headers.get('link')).toBeNull()
  })

  test('bad filters: 400 naming the parameter', async () => {
    expectError(
      await getBoth('/facts?concept=nope'),
      400,
      'invalid query: concept: expected 1 to 20 concept UUIDs (got "nope")',
    )
    expectError(
      await getBoth(`/facts?concept=${concepts[0]!.id}&concept=nope`),
      400,
      'invalid query: concept: expected 1 to 20 concept UUIDs (got "nope")',
    )
    expectError(
      await getBoth(`/facts?${Array.from({ length: 21 }, () => `concept=${uuid()}`).join('&')}`),
      400,
      'invalid query: concept: expected 1 to 20 concept UUIDs (got 21)',
    )
    expectError(await getBoth('/facts?kind=video'), 400, /kind/)
  })
})

describe(`related concepts (${BACKEND})`, () => {
  test('ranked by the number of shared facts, ties by id, with the count', async () => {
    const res = await getBoth(`/concepts/${concepts[0]!.id}/related`)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-total-count')).toBe('3')
    // c0 shares f0, f1, f2, f7 with c1; f1, f2, f3 with c2; f4 with c3; none with c4.
    expect(res.body).toEqual([
      expect.objectContaining({ id: concepts[1]!.id, canonical_name: 'Concept 1', shared_facts: 4 }),
      expect.objectContaining({ id: concepts[2]!.id, shared_facts: 3 }),
      expect.objectContaining({ id: concepts[3]!.id, shared_facts: 1 }),
    ])
    expect((await getBoth(`/concepts/${concepts[4]!.id}/related`)).body).toEqual([])
  })

  test('paged by limit and cursor', async () => {
    const first = await http.get(`/${repo.slug}/concepts/${concepts[0]!.id}/related?limit=2`, viewer.token)
    expect(first.body.map((c: { id: string }) => c.id)).toEqual([concepts[1]!.id, concepts[2]!.id])
    const second = await http.get(first.headers.get('link')!.match(/^<([^>]+)>; rel="next"$/)![1]!, viewer.token)
    expect(second.body.map((c: { id: string }) => c.id)).toEqual([concepts[3]!.id])
    expect(second.headers.get('x-total-count')).toBe('3')
    expect(second.headers.get('link')).toBeNull()
  })

  test('an unknown concept: 404; bad id, limit or cursor: 400; no token: 401; no role: 404', async () => {
    expectError(await getBoth(`/concepts/${uuid()}/related`), 404, 'concept not found')
    expectError(await getBoth('/concepts/nope/related'), 400, /conceptID: expected a UUID/)
    expectError(
      await getBoth(`/concepts/${concepts[0]!.id}/related?limit=0`),
      400,
      'invalid query: limit: expected an integer from 1 to 100 (got "0")',
    )
    expectError(
      await getBoth(`/concepts/${concepts[0]!.id}/related?cursor=x`),
      400,
      'invalid query: cursor: expected a cursor from a Link header',
    )
    expectError(await http.get(`/${repo.slug}/concepts/${concepts[0]!.id}/related`), 401, 'authentication required')
    expectError(await getBoth(`/concepts/${concepts[0]!.id}/related`, stranger.token), 404, 'repository not found')
  })
})

describe(`a concept's neighbourhood (${BACKEND})`, () => {
  test('the related list, its rows and counts, and the facts each pair of them shares', async () => {
    const [c0, c1, c2] = concepts.map((c) => c.id)
    for (const concept of concepts) {
      const related = await getBoth(`/concepts/${concept.id}/related?limit=100`)
      const res = await getBoth(`/concepts/${concept.id}/neighbourhood`)
      expect(res.status).toBe(200)
      expect(res.body.concepts).toEqual(related.body)
      expect(res.body.total).toBe(Number(related.headers.get('x-total-count')))
    }
    // c0's neighbours are c1, c2, c3; of them only c1 and c2 share facts (f1, f2).
    const res = await getBoth(`/concepts/${c0}/neighbourhood`)
    const [source, target] = [c1!, c2!].sort()
    expect(res.body.edges).toEqual([{ source, target, shared_facts: 2 }])
  })

  test('an unknown concept: 404; a bad id: 400; no token: 401; no role: 404', async () => {
    expectError(await getBoth(`/concepts/${uuid()}/neighbourhood`), 404, 'concept not found')
    expectError(await getBoth('/concepts/nope/neighbourhood'), 400, /conceptID: expected a UUID/)
    expectError(
      await http.get(`/${repo.slug}/concepts/${concepts[0]!.id}/neighbourhood`),
      401,
      'authentication required',
    )
    expectError(
      await getBoth(`/concepts/${concepts[0]!.id}/neighbourhood`, stranger.token),
      404,
      'repository not found',
    )
  })
})
