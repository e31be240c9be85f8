// The knowledge-graph read API over HTTP, on the selected backend: every route at /{slug}/... and
// at /api/v1/... with X-Repository-ID, with exact bodies, pagination through Link headers,
// filters, 404s across repositories, authentication and malformed input. Graph rows are written
// straight into the repositories' databases through the server's own pools.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { type api, expectError, registerAccount, type Account } from '../helpers/api.ts'
import { conceptsByIds, factsByIds } from '../../src/graph/store.ts'

interface Repo {
  id: string
  slug: string
}

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let owner: Account
let viewer: Account
let stranger: Account
let a: Repo
let b: Repo

const uuid = () => crypto.randomUUID()
const hash = (n: number) => n.toString(16).padStart(64, '0')
/** A created_at with microseconds; the API shows milliseconds. */
const at = (second: number, micros = '000000') => `2026-01-02T03:04:${String(second).padStart(2, '0')}.${micros}Z`
const iso = (timestamp: string) => `${timestamp.slice(0, 23)}Z`
const pick = <T extends object, K extends keyof T>(row: T, keys: readonly K[]) =>
  Object.fromEntries(keys.map((k) => [k, row[k]])) as Pick<T, K>
/** Rows in the API's list order: (created_at, id). UUIDs compare as PostgreSQL does, byte by byte. */
const inListOrder = <T extends { id: string; created_at: string }>(rows: T[]) =>
  [...rows].sort((x, y) =>
    x.created_at === y.created_at ? (x.id < y.id ? -1 : 1) : x.created_at < y.created_at ? -1 : 1,
  )

// ---- the graph of repository A

const s1 = {
  id: uuid(),
  url: 'https://example.org/boiling.pdf',
  doi: '10.1000/boil',
  kind: 'pdf',
  status: 'processed',
  parsed_title: 'Boiling',
  parsed_text: 'Water boils at 100 °C.',
  parsed_markdown: '# Boiling\n\nWater boils at 100 °C.',
  published_at: '2025-03-04',
  has_stored_body: true,
  created_at: at(1),
}
const s2 = {
  id: uuid(),
  url: 'https://example.org/freezing',
  doi: '',
  kind: 'html',
  status: 'processed',
  parsed_title: 'Freezing',
  parsed_text: 'Ice melts at 0 °C.',
  parsed_markdown: '',
  published_at: null,
  has_stored_body: false,
  created_at: at(2),
}
const s3 = {
  id: uuid(),
  url: 'https://example.org/pending',
  doi: '',
  kind: 'pdf',
  status: 'pending',
  parsed_title: '',
  parsed_text: '',
  parsed_markdown: '',
  published_at: null,
  has_stored_body: false,
  created_at: at(2),
}
const sources = [s1, s2, s3]

const pageImage = {
  id: uuid(),
  source_id: s1.id,
  kind: 'page',
  page_number: 1,
  position: 0,
  url: 'https://example.org/p1.png',
  width: 800,
  height: 600,
  bytes: 1234,
  alt_text: '',
  content_type: 'image/png',
  storage_key: 'images/p1',
  created_at: at(1),
}
const inlineImage = {
  id: uuid(),
  source_id: s1.id,
  kind: 'inline',
  page_number: null,
  position: 0,
  url: '',
  width: null,
  height: null,
  bytes: null,
  alt_text: 'a kettle',
  content_type: 'image/jpeg',
  storage_key: null,
  created_at: at(1),
}
// Larger than 2^32: bigint columns must still come out as JSON numbers.
const body = { source_id: s1.id, content_type: 'application/pdf', storage_key: 'bodies/s1', bytes: 5_000_000_000 }

const fact = (n: number, overrides: Partial<FactRow>): FactRow => ({
  id: uuid(),
  text: `Fact ${n}.`,
  fact_kind: 'text',
  image_url: '',
  content_hash: hash(n),
  promptset_hash: '',
  status: 'stable',
  source_image_id: null,
  created_at: at(n),
  ...overrides,
})
interface FactRow {
  id: string
  text: string
  fact_kind: string
  image_url: string
  content_hash: string
  promptset_hash: string
  status: string
  source_image_id: string | null
  created_at: string
}
const f1 = fact(1, { text: 'Water boils at 100 °C at sea level.', promptset_hash: 'ps1' })
// f2 and f3 differ by one microsecond, and their ids sort the other way: only a full-precision
// order (and cursor) puts f2 first and neither repeats nor skips one across a page boundary.
const f2 = fact(2, {
  id: `f${uuid().slice(1)}`,
  text: 'A kettle on page 1.',
  fact_kind: 'image',
  image_url: 'https://example.org/p1.png',
  status: 'new',
  source_image_id: pageImage.id,
  created_at: at(2, '123456'),
})
const f3 = fact(3, { id: `0${uuid().slice(1)}`, text: 'Ice melts at 0 °C.', created_at: at(2, '123457') })
const f4 = fact(4, { status: 'to_delete', created_at: at(4) })
const f5 = fact(5, { created_at: at(4) })
const facts = [f1, f2, f3, f4, f5]
const factSources = [
  { fact_id: f1.id, source_id: s1.id, chunk_index: 2 },
  { fact_id: f1.id, source_id: s1.id, chunk_index: 0 },
  { fact_id: f1.id, source_id: s2.id, chunk_index: 1 },
  { fact_id: f2.id, source_id: s1.id, chunk_index: 0 },
  { fact_id: f3.id, source_id: s2.id, chunk_index: 0 },
]

const concept = (
  n: number,
  canonical_name: string,
  more: { context?: string; description?: string; promptset_hash?: string } = {},
) => ({
  id: uuid(),
  canonical_name,
  context: '',
  description: '',
  promptset_hash: '',
  created_at: at(n),
  ...more,
})
const c1 = concept(1, 'Boiling point', {
  context: 'physics',
  description: 'The temperature at which a liquid boils.',
  promptset_hash: 'ps1',
})
const c2 = concept(2, 'BOILER design', { context: 'engineering' })
const c3 = concept(3, '100%_pure')
const c4 = concept(4, '1000 things')
const c5 = concept(5, 'ab initio')
const c6 = concept(6, 'a_b')
const c7 = concept(7, 'back\\slash')
const c8 = concept(8, 'Ice')
const concepts = [c1, c2, c3, c4, c5, c6, c7, c8]
const aliases = [
  { concept_id: c1.id, alias_text: 'bp' },
  { concept_id: c1.id, alias_text: 'boiling temperature' },
]
const factConcepts = [
  { fact_id: f1.id, concept_id: c1.id },
  { fact_id: f2.id, concept_id: c1.id },
  { fact_id: f3.id, concept_id: c8.id },
]
const summaryLater = {
  id: uuid(),
  concept_id: c1.id,
  sequence_num: 1,
  is_complete: false,
  fact_count: 1,
  content: 'And more.',
  covered_fact_ids: [f2.id],
  model: 'm1',
  created_at: at(5),
}
const summaryFirst = {
  id: uuid(),
  concept_id: c1.id,
  sequence_num: 0,
  is_complete: true,
  fact_count: 1,
  content: `Water boils [here](<fact:${f1.id}>).`,
  covered_fact_ids: [f1.id],
  model: 'm1',
  created_at: at(6),
}
// c1's own synthesis (its name, in another case) wins over an older one that also covers c1.
const ownSynthesis = {
  id: uuid(),
  canonical_name: 'boiling POINT',
  content: 'Boiling, synthesised.',
  covered_summary_ids: [summaryFirst.id, summaryLater.id],
  covered_concept_ids: [c1.id],
  embedded_image_fact_ids: [f2.id],
  model: 'm2',
  created_at: at(9),
}
const groupSynthesis = {
  id: uuid(),
  canonical_name: 'Phase changes',
  content: 'Water changes phase.',
  covered_summary_ids: [],
  covered_concept_ids: [c1.id, c2.id],
  embedded_image_fact_ids: [],
  model: 'm2',
  created_at: at(1),
}

const i1 = { id: uuid(), title: 'Phase changes', topic: 'water', created_at: at(1) }
const i2 = { id: uuid(), title: 'Empty', topic: '', created_at: at(2) }
const i3 = { id: uuid(), title: 'Third', topic: 'more', created_at: at(3) }
const investigations = [i1, i2, i3]
const investigationSources = [s3, s2, s1].map((s) => ({ investigation_id: i1.id, source_id: s.id }))

const report = (n: number, title: string, more: Partial<ReportRow>): ReportRow => ({
  id: uuid(),
  title,
  topic: '',
  body_md: '',
  status: 'pending',
  parent_id: null,
  similarity_threshold: null,
  embedded_model: '',
  sentence_count: null,
  created_at: at(n),
  ...more,
})
interface ReportRow {
  id: string
  title: string
  topic: string
  body_md: string
  status: string
  parent_id: string | null
  similarity_threshold: number | null
  embedded_model: string
  sentence_count: number | null
  created_at: string
}
const r1 = report(1, 'Water report', {
  topic: 'water',
  body_md: 'Water boils. Ice melts.',
  status: 'annotated',
  similarity_threshold: 0.75,
  embedded_model: 'kgs-hash-v1',
  sentence_count: 2,
})
const r2 = report(2, 'Child one', { parent_id: r1.id })
const r3 = report(3, 'Child two', { status: 'processing', parent_id: r1.id })
const r4 = report(4, 'Other', { status: 'failed' })
const reports = [r1, r2, r3, r4]
const annotations = [
  { report_id: r1.id, sentence_index: 1, sentence_text: 'Ice melts.', fact_id: f3.id, score: 0.5, posture: '' },
  {
    report_id: r1.id,
    sentence_index: 0,
    sentence_text: 'Water boils.',
    fact_id: f1.id,
    score: 0.8,
    posture: 'supports',
  },
  {
    report_id: r1.id,
    sentence_index: 0,
    sentence_text: 'Water boils.',
    fact_id: f2.id,
    score: 0.93,
    posture: 'related',
  },
]

// ---- one row of each kind in repository B, whose ids must not be found through A

const other = { source: uuid(), fact: uuid(), concept: uuid(), investigation: uuid(), report: uuid() }

async function seedA(sql: Sql) {
  await sql.begin(async (tx) => {
    await tx`INSERT INTO sources ${tx(sources)}`
    await tx`INSERT INTO source_images ${tx([pageImage, inlineImage])}`
    await tx`INSERT INTO source_bodies ${tx(body)}`
    await tx`INSERT INTO facts ${tx(facts)}`
    // postgres.js passes timestamptz parameters through a Date, which keeps milliseconds only.
    await tx`UPDATE facts SET created_at = wanted.at::timestamptz FROM unnest(${facts.map((f) => f.id)}::uuid[], ${facts.map((f) => f.created_at)}::text[]) AS wanted (id, at) WHERE facts.id = wanted.id`
    await tx`INSERT INTO fact_sources ${tx(factSources)}`
    await tx`INSERT INTO concepts ${tx(concepts)}`
    await tx`INSERT INTO concept_aliases ${tx(aliases)}`
    await tx`INSERT INTO fact_concepts ${tx(factConcepts)}`
    await tx`INSERT INTO concept_summaries ${tx([summaryLater, summaryFirst])}`
    await tx`INSERT INTO concept_syntheses ${tx([ownSynthesis, groupSynthesis])}`
    await tx`INSERT INTO investigations ${tx(investigations)}`
    await tx`INSERT INTO investigation_sources ${tx(investigationSources)}`
    await tx`INSERT INTO reports ${tx(reports)}`
    await tx`INSERT INTO report_annotations ${tx(annotations)}`
  })
}

async function seedB(sql: Sql) {
  await sql.begin(async (tx) => {
    await tx`INSERT INTO sources (id, url, kind, status) VALUES (${other.source}, 'https://example.org/b', 'pdf', 'processed')`
    await tx`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${other.fact}, 'Only in B.', 'text', ${hash(99)}, 'stable')`
    await tx`INSERT INTO concepts (id, canonical_name) VALUES (${other.concept}, 'Only in B')`
    await tx`INSERT INTO investigations (id, title) VALUES (${other.investigation}, 'Only in B')`
    await tx`INSERT INTO reports (id, title, status) VALUES (${other.report}, 'Only in B', 'pending')`
  })
}

// ---- expected bodies

const sourceItem = (s: (typeof sources)[number]) => ({
  ...pick(s, ['id', 'url', 'doi', 'kind', 'status', 'parsed_title', 'published_at', 'has_stored_body']),
  created_at: iso(s.created_at),
})
const factItem = (f: FactRow) => ({ ...f, created_at: iso(f.created_at) })
const conceptItem = (c: (typeof concepts)[number]) => ({ ...c, created_at: iso(c.created_at) })
const investigationItem = (i: (typeof investigations)[number]) => ({ ...i, created_at: iso(i.created_at) })
const reportItem = (r: ReportRow) => ({
  ...pick(r, [
    'id',
    'title',
    'topic',
    'status',
    'parent_id',
    'similarity_threshold',
    'embedded_model',
    'sentence_count',
  ]),
  created_at: iso(r.created_at),
})
const imageBody = (i: typeof pageImage | typeof inlineImage) =>
  pick(i, ['id', 'kind', 'page_number', 'position', 'url', 'width', 'height', 'bytes', 'alt_text', 'content_type'])
const summaryBody = (s: typeof summaryFirst) => ({
  ...pick(s, ['id', 'sequence_num', 'is_complete', 'fact_count', 'content', 'covered_fact_ids', 'model']),
  created_at: iso(s.created_at),
})
const synthesisBody = (s: typeof ownSynthesis) => ({ ...s, created_at: iso(s.created_at) })

// ---- helpers

const withHeader = (token: string | undefined, repository: string) => ({
  token,
  headers: { 'x-repository-id': repository },
})

/** GET `path` in repository A at /{slug}/path and at /api/v1/path + X-Repository-ID; both must answer alike. */
async function getBoth(path: string, token: string | undefined) {
  const byPath = await http.get(`/${a.slug}${path}`, token)
  const byHeader = await http.call('GET', `/api/v1${path}`, withHeader(token, a.id))
  expect(byHeader.status).toBe(byPath.status)
  expect(byHeader.body).toEqual(byPath.body)
  return byPath
}

async function readBoth(path: string, token = viewer.token) {
  const res = await getBoth(path, token)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
  return res.body
}

/** The target of a `Link: <...>; rel="next"` header, or null when there is no next page. */
function nextPage(link: string | null): string | null {
  if (link === null) return null
  return /^<([^>]+)>; rel="next"$/.exec(link)![1]!
}

/** Follows the Link headers from `first` to the end; returns the ids of every page, in order. */
async function walk(first: string, options: { token?: string; headers?: Record<string, string> }): Promise<string[][]> {
  const pages: string[][] = []
  for (let next: string | null = first; next !== null; ) {
    const res = await http.call<{ id: string }[]>('GET', next, options)
    expect(res.status).toBe(200)
    pages.push(res.body.map((row) => row.id))
    next = nextPage(res.headers.get('link'))
    // The next page keeps the path, the limit and every filter of the first.
    if (next !== null) expect(new URL(next, server.url).pathname).toBe(new URL(first, server.url).pathname)
  }
  return pages
}

const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size))

const register = () => registerAccount(http)

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, owner, viewer, stranger },
    repositories: { a, b },
  } = await fixture({
    users: { admin: 'sysadmin', owner: 'member', viewer: 'member', stranger: 'member' },
    repositories: {
      a: { by: 'owner', name: 'Graph A', roles: { viewer: 'viewer' } },
      b: { by: 'owner', name: 'Graph B' },
    },
  }))
  await seedA(await server.context.pools.forRepository(a.id))
  await seedB(await server.context.pools.forRepository(b.id))
})
afterAll(() => server.stop())

/** Every route of the API, with an id of repository A where it takes one. */
const routes = () => [
  '/sources',
  `/sources/${s1.id}`,
  '/facts',
  `/facts/${f1.id}`,
  `/facts/${f1.id}/citations`,
  '/concepts',
  `/concepts/${c1.id}`,
  `/concepts/${c1.id}/related`,
  '/investigations',
  `/investigations/${i1.id}`,
  '/reports',
  `/reports/${r1.id}`,
  '/search?q=water',
  '/search?q=water&kind=concepts',
]

describe(`graph read API (${BACKEND})`, () => {
  test('sources: the list without parsed text; details with images, body and fact count', async () => {
    expect(await readBoth('/sources')).toEqual(inListOrder(sources).map(sourceItem))
    expect(await readBoth(`/sources/${s1.id}`)).toEqual({
      ...sourceItem(s1),
      status_reason: '',
      parsed_text: s1.parsed_text,
      parsed_markdown: s1.parsed_markdown,
      images: [imageBody(inlineImage), imageBody(pageImage)],
      body: { content_type: 'application/pdf', bytes: 5_000_000_000 },
      fact_count: 2,
      concepts: [{ id: c1.id, canonical_name: 'Boiling point', context: 'physics', facts: 2 }],
    })
    expect(await readBoth(`/sources/${s3.id.toUpperCase()}`)).toEqual({
      ...sourceItem(s3),
      status_reason: '',
      parsed_text: '',
      parsed_markdown: '',
      images: [],
      body: null,
      fact_count: 0,
      concepts: [],
    })
  })

  test("a source's facts by chunk (one row per chunk cited), and a concept's facts with their sources", async () => {
    const cited = (f: FactRow, chunk_index: number) => ({
      chunk_index,
      ...pick(f, ['id', 'text', 'fact_kind', 'status']),
    })
    const all = await getBoth(`/sources/${s1.id}/facts`, viewer.token)
    expect(all.body).toEqual([cited(f1, 0), cited(f2, 0), cited(f1, 2)])
    expect(all.headers.get('x-total-count')).toBe('3')
    expect(await readBoth(`/sources/${s1.id}/facts?chunk_from=1`)).toEqual([cited(f1, 2)])
    expect(await readBoth(`/sources/${s1.id}/facts?chunk_to=0&limit=1`)).toEqual([cited(f1, 0)])
    expect(await readBoth(`/sources/${s3.id}/facts`)).toEqual([])
    expectError(await getBoth(`/sources/${uuid()}/facts`, viewer.token), 404, 'source not found')
    expectError(await getBoth(`/sources/${s1.id}/facts?chunk_from=-1`, viewer.token), 400)

    expect(await readBoth(`/concepts/${c1.id}/facts`)).toEqual([
      await readBoth(`/facts/${f1.id}`),
      await readBoth(`/facts/${f2.id}`),
    ])
    expect(await readBoth(`/concepts/${c2.id}/facts`)).toEqual([])
    expectError(await getBoth(`/concepts/${uuid()}/facts`, viewer.token), 404, 'concept not found')
  })

  test('facts: the list, by status and by source; details with sources per chunk and concepts', async () => {
    expect(await readBoth('/facts')).toEqual(inListOrder(facts).map(factItem))
    expect(await readBoth('/facts?status=stable')).toEqual(inListOrder([f1, f3, f5]).map(factItem))
    expect(await readBoth('/facts?status=new')).toEqual([factItem(f2)])
    expect(await readBoth(`/facts?source_id=${s1.id}`)).toEqual([factItem(f1), factItem(f2)])
    expect(await readBoth(`/facts?source_id=${s2.id}&status=stable`)).toEqual([factItem(f1), factItem(f3)])
    expect(await readBoth(`/facts?source_id=${s3.id}`)).toEqual([])
    expect(await readBoth(`/facts?source_id=${uuid()}`)).toEqual([])
    expect(await readBoth(`/facts/${f1.id}`)).toEqual({
      ...factItem(f1),
      sources: [
        { id: s1.id, url: s1.url, parsed_title: 'Boiling', chunk_index: 0 },
        { id: s1.id, url: s1.url, parsed_title: 'Boiling', chunk_index: 2 },
        { id: s2.id, url: s2.url, parsed_title: 'Freezing', chunk_index: 1 },
      ],
      concepts: [{ id: c1.id, canonical_name: 'Boiling point', context: 'physics' }],
    })
    expect(await readBoth(`/facts/${f2.id}`)).toEqual({
      ...factItem(f2),
      sources: [{ id: s1.id, url: s1.url, parsed_title: 'Boiling', chunk_index: 0 }],
      concepts: [{ id: c1.id, canonical_name: 'Boiling point', context: 'physics' }],
    })
    expect(await readBoth(`/facts/${f4.id}`)).toEqual({ ...factItem(f4), sources: [], concepts: [] })
  })

  test('concepts: the list; a case-insensitive name prefix, LIKE metacharacters taken literally', async () => {
    expect(await readBoth('/concepts')).toEqual(concepts.map(conceptItem))
    const named = async (prefix: string) =>
      ((await readBoth(`/concepts?prefix=${encodeURIComponent(prefix)}`)) as { canonical_name: string }[]).map(
        (c) => c.canonical_name,
      )
    expect(await named('boil')).toEqual(['Boiling point', 'BOILER design'])
    expect(await named('BOILING')).toEqual(['Boiling point'])
    expect(await named('100%')).toEqual(['100%_pure'])
    expect(await named('100')).toEqual(['100%_pure', '1000 things'])
    expect(await named('a_')).toEqual(['a_b'])
    expect(await named('back\\')).toEqual(['back\\slash'])
    expect(await named('%')).toEqual([])
    expect(await named('zzz')).toEqual([])
    expect(await named('')).toEqual(concepts.map((c) => c.canonical_name))
  })

  test('concepts: details with sorted aliases, summaries by sequence, the synthesis and the fact count', async () => {
    expect(await readBoth(`/concepts/${c1.id}`)).toEqual({
      ...conceptItem(c1),
      aliases: ['boiling temperature', 'bp'],
      summaries: [summaryBody(summaryFirst), summaryBody(summaryLater)],
      synthesis: synthesisBody(ownSynthesis),
      fact_count: 2,
    })
    // No synthesis of its own name: the one covering it.
    expect(await readBoth(`/concepts/${c2.id}`)).toEqual({
      ...conceptItem(c2),
      aliases: [],
      summaries: [],
      synthesis: synthesisBody(groupSynthesis),
      fact_count: 0,
    })
    expect(await readBoth(`/concepts/${c8.id}`)).toEqual({
      ...conceptItem(c8),
      aliases: [],
      summaries: [],
      synthesis: null,
      fact_count: 1,
    })
  })

  test("a fact's citations: the summaries that cover it, then the reports whose sentences it annotates; paged by position", async () => {
    const summary = (s: typeof summaryFirst) => ({
      kind: 'summary',
      id: s.id,
      title: c1.canonical_name,
      concept_id: c1.id,
      sequence_num: s.sequence_num,
      sentences: 0,
    })
    const inR1 = { kind: 'report', id: r1.id, title: r1.title, concept_id: null, sequence_num: null, sentences: 1 }
    expect(await readBoth(`/facts/${f1.id}/citations`)).toEqual([summary(summaryFirst), inR1])
    expect(await readBoth(`/facts/${f2.id}/citations`)).toEqual([summary(summaryLater), inR1])
    expect(await readBoth(`/facts/${f3.id}/citations`)).toEqual([inR1])
    expect(await readBoth(`/facts/${f5.id}/citations`)).toEqual([])
    const first = await getBoth(`/facts/${f1.id}/citations?limit=1`, viewer.token)
    expect(first.headers.get('x-total-count')).toBe('2')
    expect(first.body).toEqual([summary(summaryFirst)])
    const second = await http.get(nextPage(first.headers.get('link'))!, viewer.token)
    expect(second.body).toEqual([inR1])
    expect(second.headers.get('link')).toBeNull()
    expectError(await getBoth(`/facts/${other.fact}/citations`, owner.token), 404, 'fact not found')
    expectError(await getBoth(`/facts/${uuid()}/citations`, viewer.token), 404, 'fact not found')
    expectError(
      await getBoth('/facts/x/citations', viewer.token),
      400,
      /^invalid path parameter: factID: expected a UUID/,
    )
    expectError(await getBoth(`/facts/${f1.id}/citations?limit=101`, viewer.token), 400, /limit/)
    expectError(await getBoth(`/facts/${f1.id}/citations?cursor=bogus`, viewer.token), 400, /cursor/)
  })

  test('investigations: the list; details with their sources', async () => {
    expect(await readBoth('/investigations')).toEqual(investigations.map(investigationItem))
    expect(await readBoth(`/investigations/${i1.id}`)).toEqual({
      ...investigationItem(i1),
      sources: inListOrder(sources).map((s) => pick(s, ['id', 'url', 'parsed_title'])),
    })
    expect(await readBoth(`/investigations/${i2.id}`)).toEqual({ ...investigationItem(i2), sources: [] })
  })

  test('reports: the list without bodies, by parent or top-level only; details with annotations and children', async () => {
    expect(await readBoth('/reports')).toEqual(reports.map(reportItem))
    expect(await readBoth('/reports?parent_id=none')).toEqual([reportItem(r1), reportItem(r4)])
    expect(await readBoth(`/reports?parent_id=${r1.id}`)).toEqual([reportItem(r2), reportItem(r3)])
    expect(await readBoth(`/reports?parent_id=${r4.id}`)).toEqual([])
    expect(await readBoth(`/reports/${r1.id}`)).toEqual({
      ...reportItem(r1),
      body_md: 'Water boils. Ice melts.',
      annotations: [
        { sentence_index: 0, sentence_text: 'Water boils.', fact_id: f2.id, score: 0.93, posture: 'related' },
        { sentence_index: 0, sentence_text: 'Water boils.', fact_id: f1.id, score: 0.8, posture: 'supports' },
        { sentence_index: 1, sentence_text: 'Ice melts.', fact_id: f3.id, score: 0.5, posture: '' },
      ],
      children: [r2, r3].map((r) => ({ id: r.id, title: r.title, status: r.status, created_at: iso(r.created_at) })),
    })
    expect(await readBoth(`/reports/${r2.id}`)).toEqual({
      ...reportItem(r2),
      body_md: '',
      annotations: [],
      children: [],
    })
  })

  test('pagination: every list walked with limit=2 along its Link headers sees each row once, in (created_at, id) order', async () => {
    const lists: [string, { id: string; created_at: string }[]][] = [
      ['/sources', sources],
      ['/facts', facts],
      ['/facts?status=stable', [f1, f3, f5]],
      ['/concepts', concepts],
      ['/concepts?prefix=b', [c1, c2, c7]],
      ['/investigations', investigations],
      ['/reports', reports],
      ['/reports?parent_id=none', [r1, r4]],
    ]
    for (const [path, rows] of lists) {
      const expected = chunks(
        inListOrder(rows).map((r) => r.id),
        2,
      )
      const query = `${path.includes('?') ? '&' : '?'}limit=2`
      expect(await walk(`/${a.slug}${path}${query}`, { token: viewer.token })).toEqual(expected)
      expect(await walk(`/api/v1${path}${query}`, withHeader(viewer.token, a.slug))).toEqual(expected)
    }
    // The Link of a first page: same path and filters, the limit, and an opaque cursor.
    const first = await http.get(`/${a.slug}/facts?status=stable&limit=2`, viewer.token)
    expect(first.headers.get('link')).toMatch(
      new RegExp(`^</${a.slug}/facts\\?status=stable&limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$`),
    )
    // A page that holds the rest has no Link.
    expect((await http.get(`/${a.slug}/facts?limit=5`, viewer.token)).headers.get('link')).toBeNull()
  })

  test('an unknown id, or one of another repository, is 404', async () => {
    const cases: [string, string, string][] = [
      ['sources', other.source, 'source not found'],
      ['facts', other.fact, 'fact not found'],
      ['concepts', other.concept, 'concept not found'],
      ['investigations', other.investigation, 'investigation not found'],
      ['reports', other.report, 'report not found'],
    ]
    for (const [path, idInB, message] of cases) {
      // The id is real, in B.
      expect((await http.get(`/${b.slug}/${path}/${idInB}`, owner.token)).status).toBe(200)
      expectError(await getBoth(`/${path}/${idInB}`, owner.token), 404, message)
      expectError(await getBoth(`/${path}/${uuid()}`, viewer.token), 404, message)
    }
  })

  test('a repository the caller holds no role in is 404, like one that does not exist; without a token 401', async () => {
    for (const path of routes()) {
      expectError(await getBoth(path, stranger.token), 404, 'repository not found')
      // The viewer of A holds no role in B.
      expectError(await http.get(`/${b.slug}${path}`, viewer.token), 404, 'repository not found')
      expectError(await http.get(`/${uuid()}${path}`, viewer.token), 404, 'repository not found')
      const anonymous = await getBoth(path, undefined)
      expectError(anonymous, 401, 'authentication required')
      expect(anonymous.headers.get('www-authenticate')).toStartWith('Bearer')
    }
  })

  test('the repository must be named once: no header on /api/v1 or two that disagree is 400; other methods 405', async () => {
    expectError(
      await http.get('/api/v1/facts', viewer.token),
      400,
      'no repository named: put it in the path or the X-Repository-ID header',
    )
    expectError(
      await http.call('GET', `/${a.slug}/facts`, withHeader(owner.token, b.slug)),
      400,
      'the path and X-Repository-ID name different repositories',
    )
    const post = await http.call('POST', `/${a.slug}/facts/${f1.id}`, { token: viewer.token, body: {} })
    expectError(post, 405)
    // A fact is read, edited and deleted (the write API), never posted to.
    expect(post.headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH')
  })

  test('every role in the repository reads, and so does a sysadmin without one', async () => {
    const curator = await register()
    expect(
      (await http.put('/api/v1/admin/users/roles', { user_id: curator.id, role: 'curator', domain: a.id }, admin.token))
        .status,
    ).toBe(200)
    for (const account of [viewer, curator, owner, admin]) {
      for (const path of routes()) expect((await getBoth(path, account.token)).status).toBe(200)
    }
  })

  test('malformed ids, limits, cursors and filters are 400 naming the field', async () => {
    for (const [path, field] of [
      ['sources/not-a-uuid', 'sourceID'],
      ['facts/1234', 'factID'],
      ['concepts/x', 'conceptID'],
      ['investigations/00000000-0000-0000-0000-00000000000g', 'investigationID'],
      ['reports/none', 'reportID'],
    ]) {
      expectError(
        await getBoth(`/${path}`, viewer.token),
        400,
        new RegExp(`^invalid path parameter: ${field}: expected a UUID \\(got "`),
      )
    }
    for (const list of ['/sources', '/facts', '/concepts', '/investigations', '/reports']) {
      for (const limit of ['0', '501', '-1', 'ten', '2.5']) {
        expectError(
          await getBoth(`${list}?limit=${limit}`, viewer.token),
          400,
          `invalid query: limit: expected an integer from 1 to 500 (got ${JSON.stringify(limit)})`,
        )
      }
      expectError(
        await getBoth(`${list}?cursor=bogus`, viewer.token),
        400,
        'invalid query: cursor: expected a cursor from a Link header',
      )
    }
    expectError(
      await getBoth('/facts?status=done', viewer.token),
      400,
      'invalid query: status: expected new, stable, to_delete or stale (got "done")',
    )
    expectError(
      await getBoth('/facts?source_id=s1', viewer.token),
      400,
      'invalid query: source_id: expected a source UUID (got "s1")',
    )
    expectError(
      await getBoth('/reports?parent_id=top', viewer.token),
      400,
      'invalid query: parent_id: expected a report UUID or none (got "top")',
    )
    expectError(
      await getBoth(`/concepts?prefix=${'x'.repeat(201)}`, viewer.token),
      400,
      'invalid query: prefix: expected at most 200 characters (got 201 characters)',
    )
  })

  test('factsByIds and conceptsByIds hydrate ids in the order given, skipping unknown ones', async () => {
    const sql = await server.context.pools.forRepository(a.id)
    expect(await factsByIds(sql, [f3.id, uuid(), f1.id, f5.id])).toEqual([f3, f1, f5].map(factItem))
    expect(await conceptsByIds(sql, [c8.id, c1.id, other.concept])).toEqual([c8, c1].map(conceptItem))
    expect(await factsByIds(sql, [])).toEqual([])
  })

  test('OpenAPI lists each operation once, at /{repoID}/…, under the graph tag, and names the X-Repository-ID form there', async () => {
    const spec = (await (await server.request('/swagger/json')).json()) as {
      paths: Record<
        string,
        { get?: { tags?: string[]; description?: string; parameters?: { name: string; in: string }[] } }
      >
    }
    for (const path of [
      '/sources',
      '/sources/{sourceID}',
      '/facts',
      '/facts/{factID}',
      '/concepts',
      '/concepts/{conceptID}',
      '/investigations',
      '/investigations/{investigationID}',
      '/reports',
      '/reports/{reportID}',
    ]) {
      expect(spec.paths[`/{repoID}${path}`]?.get?.tags).toEqual(['graph'])
      expect(spec.paths[`/api/v1${path}`]).toBeUndefined()
      expect(spec.paths[`/{repoID}${path}`]!.get!.description).toContain(
        `\`/api/v1${path}\` with the repository UUID or slug in the \`X-Repository-ID\` header`,
      )
      expect(spec.paths[`/{repoID}${path}`]!.get!.parameters).toContainEqual(
        expect.objectContaining({ in: 'path', name: 'repoID' }),
      )
    }
  })
})
