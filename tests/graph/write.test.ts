// The write API over HTTP, on the selected backend: a repository built from nothing through the
// routes (every kind a bundle carries), the import's rules (content hash from the text, 409 with
// the existing id or merge, concept identity case-insensitive, citations that must exist, no
// reference to another repository's rows), deletes that report what they break or refuse while
// cited, ETags and If-Match, and the vectors following the writes without a manual job.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type api, type Account } from '../helpers/api.ts'
import { factContentHash } from '../../src/graph/rules.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let a: { id: string; slug: string }
let b: { id: string; slug: string }

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner },
    repositories: { a, b },
  } = await fixture({
    server: { env: { WORKERS: '1' } },
    users: { owner: 'member' },
    repositories: { a: { by: 'owner', name: 'Write A' }, b: { by: 'owner', name: 'Write B' } },
  }))
})
afterAll(() => server.stop())

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  http.call(method, path, { body, token: owner.token, headers })
const create = async (path: string, body: unknown) => {
  const res = await call('POST', path, body)
  expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 201, body: expect.anything() })
  return res.body
}
/** Polls `value` until it gives `expected` (the jobs run in the background), for at most 30 s; the last value. */
const until = async (value: () => Promise<number>, expected: number) => {
  const deadline = Date.now() + 30_000
  let last = await value()
  while (last !== expected && Date.now() < deadline) {
    await Bun.sleep(50)
    last = await value()
  }
  return last
}
const count = async (repo: { id: string }, table: string) => {
  const sql = await server.context.pools.forRepository(repo.id)
  const [row] = await sql`SELECT count(*)::int AS n FROM ${sql(table)}`
  return row!.n as number
}

describe(`the write API (${BACKEND})`, () => {
  test('a repository built through the routes reads back through the read API, at both prefixes', async () => {
    const r = `/${a.slug}`
    const source = await create(`${r}/sources`, {
      url: 'https://example.org/tea',
      kind: 'web',
      status: 'parsed',
      parsed_title: 'Tea',
      published_at: '2024-05-01',
    })
    expect(source).toMatchObject({
      url: 'https://example.org/tea',
      parsed_title: 'Tea',
      published_at: '2024-05-01',
      fact_count: 0,
      images: [],
      body: null,
    })
    const second = await create(`${r}/sources`, { url: 'https://example.org/kettles', kind: 'pdf', status: 'parsed' })
    const tea = await create(`${r}/concepts`, {
      canonical_name: 'Tea',
      context: 'drinks',
      description: 'an infusion',
      aliases: ['cha', 'chai'],
    })
    expect(tea).toMatchObject({ canonical_name: 'Tea', context: 'drinks', aliases: ['cha', 'chai'], fact_count: 0 })
    const water = (await call('POST', '/api/v1/concepts', { canonical_name: 'Water' }, { 'x-repository-id': a.id }))
      .body
    const created = await call('POST', `${r}/facts`, {
      text: '  Tea   is brewed with\nhot water. ',
      sources: [
        { source_id: second.id, chunk_index: 0 },
        { source_id: source.id, chunk_index: 3 },
        { source_id: source.id, chunk_index: 3 },
      ],
      concepts: [{ concept_id: water.id }, { concept_id: tea.id }, { concept_id: water.id, promptset_hash: 'p1' }],
    })
    expect(created.status).toBe(201)
    const fact = created.body
    // The creation answers the fact as a read of it does, links in their order, each once.
    const readBack = await call('GET', `${r}/facts/${fact.id}`)
    expect([JSON.stringify(fact), created.headers.get('etag')]).toEqual([
      JSON.stringify(readBack.body),
      readBack.headers.get('etag'),
    ])
    // The content hash is the normalized text's, computed here, never sent.
    expect(fact).toMatchObject({
      text: '  Tea   is brewed with\nhot water. ',
      content_hash: factContentHash('Tea is brewed with hot water.'),
      status: 'new',
      fact_kind: 'text',
    })
    expect(fact.sources.map((s: { chunk_index: number }) => s.chunk_index).sort()).toEqual([0, 3])
    expect(fact.concepts.map((c: { id: string }) => c.id).sort()).toEqual([tea.id, water.id].sort())
    const other = await create(`${r}/facts`, {
      text: 'Green tea is not fermented.',
      sources: [{ source_id: source.id }],
    })
    // Links by their own routes.
    const linked = await call('PUT', `${r}/facts/${other.id}/concepts/${tea.id}`)
    expect(linked.status).toBe(200)
    expect(linked.body.concepts.map((c: { id: string }) => c.id)).toEqual([tea.id])
    expect((await call('DELETE', `${r}/facts/${other.id}/concepts/${tea.id}`)).body.concepts).toEqual([])
    expectError(
      await call('DELETE', `${r}/facts/${other.id}/concepts/${tea.id}`),
      404,
      `the fact is not linked to concept ${tea.id}`,
    )
    expect((await call('PUT', `${r}/facts/${other.id}/concepts/${tea.id}?promptset_hash=p2`)).status).toBe(200)

    const summary = await create(`${r}/concepts/${tea.id}/summaries`, {
      sequence_num: 0,
      is_complete: true,
      fact_count: 2,
      content: `Tea is [brewed](<fact:${fact.id}>) from [tea](<concept:${tea.id}>).`,
      covered_fact_ids: [fact.id, other.id],
      model: 'm',
    })
    expect(summary).toMatchObject({ concept_id: tea.id, sequence_num: 0, covered_fact_ids: [fact.id, other.id] })
    const synthesis = await create(`${r}/syntheses`, {
      canonical_name: 'Tea',
      content: `All about [tea](<concept:${tea.id}>).`,
      covered_summary_ids: [summary.id],
      covered_concept_ids: [tea.id],
    })
    const investigation = await create(`${r}/investigations`, {
      title: 'Brewing',
      topic: 'how tea is made',
      source_ids: [source.id],
    })
    expect(investigation.sources.map((s: { id: string }) => s.id)).toEqual([source.id])
    expect(
      (await call('PUT', `${r}/investigations/${investigation.id}/sources/${second.id}`)).body.sources,
    ).toHaveLength(2)
    const report = await create(`${r}/reports`, {
      title: 'On tea',
      body_md: `Tea [is brewed](<fact:${fact.id}>).`,
      status: 'annotated',
      similarity_threshold: 0.75,
      sentence_count: 1,
      annotations: [
        { sentence_index: 0, sentence_text: 'Tea is brewed.', fact_id: fact.id, score: 0.9, posture: 'supports' },
      ],
    })
    const child = await create(`${r}/reports`, { title: 'On green tea', parent_id: report.id })
    expect(child).toMatchObject({ parent_id: report.id, status: 'pending', annotations: [] })

    const read = await http.get(`${r}/concepts/${tea.id}`, owner.token)
    expect(read.body).toMatchObject({
      aliases: ['cha', 'chai'],
      fact_count: 2,
      summaries: [{ id: summary.id }],
      synthesis: { id: synthesis.id },
    })
    const readReport = await http.get(`${r}/reports/${report.id}`, owner.token)
    expect(readReport.body).toMatchObject({
      similarity_threshold: 0.75,
      children: [{ id: child.id }],
      annotations: [{ fact_id: fact.id, posture: 'supports', score: 0.9 }],
    })
    // A report cannot become its own ancestor.
    expectError(
      await call('PATCH', `${r}/reports/${report.id}`, { parent_id: child.id }),
      400,
      'parent_id: a report cannot be its own ancestor',
    )
    expectError(
      await call('PATCH', `${r}/reports/${report.id}`, { parent_id: report.id }),
      400,
      'parent_id: a report cannot be its own ancestor',
    )
  })

  test('a fact whose normalized text exists is a 409 with its id, or merged with merge=true', async () => {
    const r = `/${a.slug}`
    const source = await create(`${r}/sources`, { url: 'https://example.org/dup', kind: 'web', status: 'parsed' })
    const concept = await create(`${r}/concepts`, { canonical_name: 'Duplicates' })
    const fact = await create(`${r}/facts`, { text: 'Café au lait is coffee with milk.' })
    const facts = await count(a, 'facts')
    const twin = await call('POST', `${r}/facts`, {
      text: ' Cafe\u0301  au lait is coffee with milk.\n',
      sources: [{ source_id: source.id }],
    })
    expect(twin.status).toBe(409)
    expect(twin.body).toEqual({ error: expect.stringContaining('exists already'), existing_id: fact.id })
    expect(await count(a, 'facts')).toBe(facts)
    expect((await http.get(`${r}/facts/${fact.id}`, owner.token)).body.sources).toEqual([])
    const merged = await call('POST', `${r}/facts?merge=true`, {
      text: 'Café au lait is coffee with milk.',
      sources: [{ source_id: source.id }],
      concepts: [{ concept_id: concept.id }],
    })
    expect(merged.status).toBe(200)
    expect(merged.body).toMatchObject({ id: fact.id, sources: [{ id: source.id }], concepts: [{ id: concept.id }] })
    // An edit onto another fact's text is refused the same way.
    const other = await create(`${r}/facts`, { text: 'Espresso is coffee.' })
    const edit = await call('PATCH', `${r}/facts/${other.id}`, { text: 'Café au lait  is coffee with milk.' })
    expect(edit.status).toBe(409)
    expect(edit.body.existing_id).toBe(fact.id)
    expect((await http.get(`${r}/facts/${other.id}`, owner.token)).body.text).toBe('Espresso is coffee.')
  })

  test('concept identity is (lower(name), lower(context)); syntheses and summaries have their keys', async () => {
    const r = `/${a.slug}`
    const concept = await create(`${r}/concepts`, { canonical_name: 'Kettle', context: 'Kitchen' })
    const again = await call('POST', `${r}/concepts`, { canonical_name: 'KETTLE', context: 'kitchen' })
    expect(again.status).toBe(409)
    expect(again.body.existing_id).toBe(concept.id)
    // Another context is another concept.
    const other = await create(`${r}/concepts`, { canonical_name: 'kettle', context: 'music' })
    expect((await call('PATCH', `${r}/concepts/${other.id}`, { context: 'KITCHEN' })).body.existing_id).toBe(concept.id)
    await create(`${r}/concepts/${concept.id}/summaries`, { sequence_num: 0 })
    expect((await call('POST', `${r}/concepts/${concept.id}/summaries`, { sequence_num: 0 })).status).toBe(409)
    const synthesis = await create(`${r}/syntheses`, { canonical_name: 'Kettles' })
    expect((await call('POST', `${r}/syntheses`, { canonical_name: 'kettles' })).body.existing_id).toBe(synthesis.id)
  })

  test('citations and references must name rows of this repository: a 400 naming the first, nothing written', async () => {
    const r = `/${a.slug}`
    const concept = await create(`${r}/concepts`, { canonical_name: 'Citations' })
    const missing = crypto.randomUUID()
    // A row of repository b is not a row of a.
    const foreignSource = await create(`/${b.slug}/sources`, {
      url: 'https://example.org/b',
      kind: 'web',
      status: 'parsed',
    })
    const foreignFact = await create(`/${b.slug}/facts`, { text: 'A fact of repository b.' })
    const tables = [
      'facts',
      'fact_sources',
      'fact_concepts',
      'concept_summaries',
      'concept_syntheses',
      'reports',
      'investigations',
    ]
    const before = await Promise.all(tables.map((table) => count(a, table)))
    const cases: [string, string, unknown, string][] = [
      [
        'POST',
        `${r}/facts`,
        { text: 'Cites a foreign source.', sources: [{ source_id: foreignSource.id }] },
        `sources: source ${foreignSource.id} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/facts`,
        { text: 'Cites a missing concept.', concepts: [{ concept_id: missing }] },
        `concepts: concept ${missing} does not exist in this repository`,
      ],
      // The first missing reference in the order sources, concepts, image, whichever the database met first.
      [
        'POST',
        `${r}/facts`,
        {
          text: 'Cites a missing image, concept and source.',
          fact_kind: 'image',
          source_image_id: missing,
          concepts: [{ concept_id: missing }],
          sources: [{ source_id: foreignSource.id }],
        },
        `sources: source ${foreignSource.id} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/facts`,
        { text: 'Of a missing image.', fact_kind: 'image', source_image_id: missing },
        `source_image_id: source image ${missing} does not exist in this repository`,
      ],
      // Merged into an existing fact: the new links are checked as a new fact's are.
      [
        'POST',
        `${r}/facts?merge=true`,
        { text: 'Green tea is not fermented.', concepts: [{ concept_id: missing }] },
        `concepts: concept ${missing} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/concepts/${concept.id}/summaries`,
        { sequence_num: 0, content: `See [this](<fact:${foreignFact.id}>).` },
        `content cites a fact that does not exist: fact ${foreignFact.id} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/concepts/${concept.id}/summaries`,
        { sequence_num: 1, covered_fact_ids: [missing] },
        `covered_fact_ids: fact ${missing} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/syntheses`,
        { canonical_name: 'X', content: `[c](<concept:${missing}>)` },
        `content cites a concept that does not exist: concept ${missing} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/syntheses`,
        { canonical_name: 'Y', covered_summary_ids: [missing] },
        `covered_summary_ids: summary ${missing} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/reports`,
        { title: 'R', body_md: `[f](<fact:${missing}>)` },
        `body_md cites a fact that does not exist: fact ${missing} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/reports`,
        { title: 'R', parent_id: missing },
        `parent_id: report ${missing} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/reports`,
        { title: 'R', annotations: [{ sentence_index: 0, fact_id: foreignFact.id, score: 1 }] },
        `annotations: fact ${foreignFact.id} does not exist in this repository`,
      ],
      [
        'POST',
        `${r}/investigations`,
        { title: 'I', source_ids: [foreignSource.id] },
        `source_ids: source ${foreignSource.id} does not exist in this repository`,
      ],
      ['PUT', `${r}/investigations/${missing}/sources/${foreignSource.id}`, undefined, 'investigation not found'],
    ]
    for (const [method, path, body, message] of cases) {
      const res = await call(method, path, body)
      expectError(res, message.endsWith('not found') ? 404 : 400, message)
    }
    expect(await Promise.all(tables.map((table) => count(a, table)))).toEqual(before)
  })

  test('every row answers with an ETag; a stale If-Match is 412 and changes nothing, none or the current one applies', async () => {
    const r = `/${a.slug}`
    const created = await call('POST', `${r}/concepts`, { canonical_name: 'Versioned', description: 'one' })
    const first = created.headers.get('etag')!
    expect(first).toMatch(/^"[0-9a-f]{32}"$/)
    const read = await http.get(`${r}/concepts/${created.body.id}`, owner.token)
    expect(read.headers.get('etag')).toBe(first)
    const edited = await call(
      'PATCH',
      `${r}/concepts/${created.body.id}`,
      { description: 'two' },
      { 'if-match': first },
    )
    expect(edited.status).toBe(200)
    const second = edited.headers.get('etag')!
    expect(second).not.toBe(first)
    // A second editor still holding the first version is refused, and nothing changes.
    expectError(
      await call('PATCH', `${r}/concepts/${created.body.id}`, { description: 'three' }, { 'if-match': first }),
      412,
    )
    expectError(await call('DELETE', `${r}/concepts/${created.body.id}`, undefined, { 'if-match': first }), 412)
    expect((await http.get(`${r}/concepts/${created.body.id}`, owner.token)).body.description).toBe('two')
    // Without If-Match the change applies; * matches any version.
    expect((await call('PATCH', `${r}/concepts/${created.body.id}`, { description: 'four' })).status).toBe(200)
    expect((await call('DELETE', `${r}/concepts/${created.body.id}`, undefined, { 'if-match': '*' })).status).toBe(200)
    expectError(
      await call('PATCH', `${r}/concepts/${created.body.id}`, { description: 'five' }),
      404,
      'concept not found',
    )
    // The document lists these answers, and If-Match, on every update and delete.
    const paths = (await http.get('/swagger/json')).body.paths
    for (const [path, method] of [
      ['/{repoID}/concepts/{conceptID}', 'patch'],
      ['/{repoID}/facts/{factID}', 'patch'],
      ['/{repoID}/reports/{reportID}', 'delete'],
    ] as const) {
      expect(Object.keys(paths[path][method].responses)).toContain('412')
      expect(paths[path][method].parameters.map((p: { name: string }) => p.name)).toContain('If-Match')
    }
    expect(Object.keys(paths['/{repoID}/facts'].post.responses)).toEqual(
      expect.arrayContaining(['200', '201', '409', '413', '415']),
    )
  })

  test('deleting a fact removes its links and names the citations it breaks; a cited source goes only with cascade=true', async () => {
    const r = `/${a.slug}`
    const source = await create(`${r}/sources`, { url: 'https://example.org/cascade', kind: 'web', status: 'parsed' })
    const concept = await create(`${r}/concepts`, { canonical_name: 'Deletion' })
    const fact = await create(`${r}/facts`, {
      text: 'This fact will go.',
      sources: [{ source_id: source.id }],
      concepts: [{ concept_id: concept.id }],
    })
    const keeper = await create(`${r}/facts`, { text: 'This fact stays.', sources: [{ source_id: source.id }] })
    const summary = await create(`${r}/concepts/${concept.id}/summaries`, {
      sequence_num: 0,
      content: `[gone](<fact:${fact.id}>)`,
    })
    const report = await create(`${r}/reports`, {
      title: 'Cites it',
      body_md: `[gone](<fact:${fact.id}>)`,
      annotations: [{ sentence_index: 0, fact_id: fact.id, score: 0.5 }],
    })
    const deleted = await call('DELETE', `${r}/facts/${fact.id}`)
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({
      id: fact.id,
      removed: { sources: 1, concepts: 1, annotations: 1 },
      broken_citations: [
        { kind: 'report', id: report.id },
        { kind: 'summary', id: summary.id },
      ],
    })
    expect((await http.get(`${r}/reports/${report.id}`, owner.token)).body.annotations).toEqual([])
    expect((await http.get(`${r}/concepts/${concept.id}`, owner.token)).body.fact_count).toBe(0)

    const refused = await call('DELETE', `${r}/sources/${source.id}`)
    expectError(
      refused,
      409,
      'facts cite this source (1 links); cascade=true deletes it with those links (the facts stay)',
    )
    expect((await http.get(`${r}/sources/${source.id}`, owner.token)).status).toBe(200)
    const cascaded = await call('DELETE', `${r}/sources/${source.id}?cascade=true`)
    expect(cascaded.body).toEqual({
      id: source.id,
      removed: { fact_links: 1, investigation_links: 0, images: 0, body: 0 },
    })
    expect((await http.get(`${r}/facts/${keeper.id}`, owner.token)).body.sources).toEqual([])
  })

  test('written facts and concepts are embedded by coalesced jobs, and a deleted one leaves the vector table', async () => {
    const r = `/${b.slug}`
    const jobsBefore = (await http.get(`${r}/jobs?limit=100`, owner.token)).body.length
    const texts = Array.from({ length: 20 }, (_, i) => `Embedded fact number ${i} about lighthouses.`)
    const facts = []
    for (const text of texts) facts.push(await create(`${r}/facts`, { text }))
    await create(`${r}/concepts`, { canonical_name: 'Lighthouse' })
    const vectors = server.context.vectors
    // Every fact of repository b: the 20, and any an earlier test wrote there.
    const all = await count(b, 'facts')
    expect(await until(() => vectors.count(b.id, 'facts'), all)).toBe(all)
    expect(await until(() => vectors.count(b.id, 'concepts'), 1)).toBe(1)
    const jobs = (await http.get(`${r}/jobs?limit=100`, owner.token)).body.slice(jobsBefore) as { kind: string }[]
    // Far fewer jobs than writes: coalesced per kind.
    expect(jobs.filter((job) => job.kind === 'embed_changes').length).toBeLessThan(8)
    const hits = (await http.get(`${r}/search?q=${encodeURIComponent(texts[7]!)}&kind=facts&k=1`, owner.token)).body
    expect(JSON.stringify(hits)).toContain(facts[7].id)
    expect((await call('DELETE', `${r}/facts/${facts[7].id}`)).status).toBe(200)
    expect(await until(() => vectors.count(b.id, 'facts'), all - 1)).toBe(all - 1)
    expect(await until(() => count(b, 'embedding_changes'), 0)).toBe(0)
  })
})
