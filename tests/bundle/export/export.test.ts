// Export end to end (docs/spec/bundle.md §4), on the selected backend: a repository filled by gen-graph
// (blobs, bodies, vectors) plus the cases it does not make, exported by the export_graph job on
// a worker thread through POST /{repoID}/export-graph, pushed to this server's registry, and
// read back with the reader and compared with the database, LanceDB and blob storage.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { gunzipSync, inflateRawSync } from 'node:zlib'
import { BACKEND, tempDir } from '../../helpers/backend.ts'
import { api, expectError, registerAccount, type Account } from '../../helpers/api.ts'
import { jobWrites, waitForJob } from '../../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../../helpers/server.ts'
import { generateGraph } from '../../../scripts/gen-graph.ts'
import { portableConceptId, portableFactId } from '../../../src/bundle/format/citations.ts'
import { exportRepository } from '../../../src/bundle/export/export-file.ts'
import type { ExportProgress } from '../../../src/bundle/export/export-snapshot.ts'
import { sourceSha256 } from '../../../src/bundle/format/hashes.ts'
import { ROW_CODECS } from '../../../src/bundle/format/codecs.ts'
import { readBundle } from '../../../src/bundle/format/reader.ts'
import { ROW_SECTIONS, type Metadata, type Row, type RowSection } from '../../../src/bundle/format/schema.ts'
import { bundleProblems, summarizeBundle } from '../../../src/bundle/format/tools.ts'
import type { Job } from '../../../src/jobs/queue.ts'
import type { JobServices, RunningJob } from '../../../src/jobs/kinds.ts'
import { CANCELLED } from '../../../src/jobs/worker.ts'
import { exportGraphJob } from '../../../src/bundle/export/export-job.ts'
import type { ExportParams } from '../../../src/bundle/export/export-params.ts'
import { scratchDir, scratchFile } from '../../../src/bundle/scratch.ts'
import { VERSION } from '../../../src/version.ts'
import { rejected, rejectionOf } from '../../helpers/promises.ts'

const EXPORTED_AT = '2026-01-02T03:04:05Z'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let owner: Account
let viewer: Account
let curator: Account
let stranger: Account
let full: { id: string; slug: string }
let empty: { id: string; slug: string }
/** The edge cases added to the generated graph. */
const added = {
  childReport: crypto.randomUUID(),
  unknownFact: crypto.randomUUID(),
  citingSummary: '',
  citedFact: '',
  citedConcept: '',
  lostImageKey: '',
}

interface ReadBack {
  metadata: Metadata
  rows: { [S in RowSection]: Row<S>[] }
  media: { images: Map<string, Buffer>; bodies: Map<string, Buffer> }
  embeddings?: { model: string; dimensions: number }
  vectors: { facts: { index: number; vector: number[] }[]; concepts: { index: number; vector: number[] }[] }
}

async function* chunks(bytes: Uint8Array) {
  yield bytes
}

async function readBack(bytes: Uint8Array): Promise<ReadBack> {
  const out: ReadBack = {
    metadata: undefined as never,
    rows: Object.fromEntries(ROW_SECTIONS.map((s) => [s, []])) as never,
    media: { images: new Map(), bodies: new Map() },
    vectors: { facts: [], concepts: [] },
  }
  for await (const item of readBundle(chunks(bytes))) {
    if (item.type === 'metadata') out.metadata = item.metadata
    else if (item.type === 'row') (out.rows[item.section] as unknown[]).push(item.row)
    else if (item.type === 'media') {
      const parts: Uint8Array[] = []
      for await (const part of item.data ?? []) parts.push(part)
      out.media[item.section].set(item.ref, Buffer.concat(parts))
    } else if (item.type === 'embeddings') out.embeddings = { model: item.model, dimensions: item.dimensions }
    else if (item.type === 'vector') out.vectors[item.target].push({ index: item.index, vector: item.vector })
  }
  return out
}

async function download(path: string, token: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(server.url + path, { headers: { authorization: `Bearer ${token}`, ...headers } })
}

async function exportAndWait(slug: string, body: unknown, token = owner.token): Promise<Job & { result: any }> {
  const started = await http.post(`/${slug}/export-graph`, body, token)
  expect(started.status).toBe(202)
  return (await waitForJob(http, `/${slug}/jobs/${started.body.id}`, token)) as never
}

/** Ids of a table in bundle order (docs/bundles.md, "Export"), as the test computes it independently. */
async function idsInOrder(table: string): Promise<string[]> {
  const sql = await server.context.pools.forRepository(full.id)
  return (await sql<{ id: string }[]>`SELECT id FROM ${sql(table)} ORDER BY created_at, id`).map((r) => r.id)
}

async function grant(account: Account, role: string, repositoryId: string) {
  expect(
    (await http.put('/api/v1/admin/users/roles', { user_id: account.id, role, domain: repositoryId }, admin.token))
      .status,
  ).toBe(200)
}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  http = api(server.url)
  ;[admin, owner, viewer, curator, stranger] = await Promise.all([
    registerAccount(http),
    registerAccount(http),
    registerAccount(http),
    registerAccount(http),
    registerAccount(http),
  ])
  expect((await server.promote(admin.email)).code).toBe(0)
  full = (
    await http.post('/api/v1/repositories', { name: 'Export Full', description: 'A generated graph' }, owner.token)
  ).body
  empty = (await http.post('/api/v1/repositories', { name: 'Export Empty' }, owner.token)).body
  await grant(viewer, 'viewer', empty.id)
  await grant(curator, 'curator', empty.id)

  const { blobs, vectors, embedder } = server.context
  const sql = await server.context.pools.forRepository(full.id)
  await generateGraph(sql, full.id, { facts: 300, seed: 11, blobs, vectors: { store: vectors, embedder } })

  // A child report created before every root: depth order must still put it after its parent.
  const [root] = await sql<
    { id: string }[]
  >`SELECT id FROM reports WHERE parent_id IS NULL ORDER BY created_at, id LIMIT 1`
  await sql`INSERT INTO reports (id, title, body_md, status, parent_id, created_at) VALUES (${added.childReport}, 'Follow-up', 'More.', 'pending', ${root!.id}, '2025-01-01T00:00:00Z')`
  // A summary citing a concept and a fact that does not exist, next to its fact citations.
  const [summary] = await sql<{ id: string; covered_fact_ids: string[]; concept_id: string }[]>`
    SELECT id, covered_fact_ids, concept_id FROM concept_summaries ORDER BY created_at, id LIMIT 1`
  added.citingSummary = summary!.id
  added.citedFact = summary!.covered_fact_ids[0]!
  added.citedConcept = summary!.concept_id
  await sql`UPDATE concept_summaries SET content = content || ${` See [the concept](<concept:${summary!.concept_id.toUpperCase()}>) and [a lost fact](<fact:${added.unknownFact}>).`} WHERE id = ${summary!.id}`
  // An image fact whose stored image_url is a local copy's: the bundle carries the image's original URL.
  await sql`UPDATE facts SET image_url = 'http://localhost:8080/media/copy.png' WHERE id = (SELECT id FROM facts WHERE source_image_id IS NOT NULL ORDER BY created_at, id LIMIT 1)`
  // A stored image whose blob is gone: written without image_ref, its bytes not embedded.
  const [image] = await sql<
    { storage_key: string }[]
  >`SELECT storage_key FROM source_images WHERE storage_key IS NOT NULL ORDER BY created_at, id LIMIT 1 OFFSET 2`
  added.lostImageKey = image!.storage_key
  await blobs.delete(image!.storage_key)
})

afterAll(() => server.stop())

describe(`export routes (${BACKEND})`, () => {
  test('without a token 401; a viewer lacks graph:export (403); a repository one has no role in, or none at all, is 404', async () => {
    expectError(await http.post(`/${empty.slug}/export-graph`, {}), 401)
    expectError(await http.call('GET', `/${empty.slug}/export-graph/download`), 401)
    expectError(
      await http.post(`/${empty.slug}/export-graph`, {}, viewer.token),
      403,
      'permission denied: graph:export needs the curator, editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
    expectError(
      await http.get(`/${empty.slug}/export-graph/download`, viewer.token),
      403,
      'permission denied: graph:export needs the curator, editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
    expectError(await http.post(`/${empty.slug}/export-graph`, {}, stranger.token), 404, 'repository not found')
    expectError(await http.post('/no-such-repository/export-graph', {}, owner.token), 404, 'repository not found')
    expectError(
      await http.get(`/${crypto.randomUUID()}/export-graph/download`, owner.token),
      404,
      'repository not found',
    )
    expectError(
      await http.call('POST', '/api/v1/export-graph', { body: {}, token: owner.token }),
      400,
      'no repository named: put it in the path or the X-Repository-ID header',
    )
  })

  test('a malformed body, wrong types, an unknown field or a bad exported_at is 400, and queues nothing', async () => {
    const path = `/${empty.slug}/export-graph`
    const before = await http.get(`/${empty.slug}/jobs`, owner.token)
    expectError(
      await http.call('POST', path, {
        raw: '{"name":',
        headers: { 'content-type': 'application/json' },
        token: owner.token,
      }),
      400,
      /^malformed JSON body/,
    )
    expectError(await http.post(path, [], owner.token), 400, /^invalid body: expected an object \(got array\)$/)
    expectError(
      await http.post(path, { include_images: 'yes' }, owner.token),
      400,
      'invalid body: include_images: expected a boolean (got "yes")',
    )
    expectError(
      await http.post(path, { include_bodies: 1 }, owner.token),
      400,
      'invalid body: include_bodies: expected a boolean (got number)',
    )
    expectError(
      await http.post(path, { tags: 'physics' }, owner.token),
      400,
      /^invalid body: tags: expected an array of at most 64 strings/,
    )
    expectError(await http.post(path, { tags: [''] }, owner.token), 400, /^invalid body: tags\.0: /)
    expectError(await http.post(path, { name: '' }, owner.token), 400, /^invalid body: name: expected 1-200 characters/)
    expectError(
      await http.post(path, { name: '   ' }, owner.token),
      400,
      /^invalid body: name: expected 1-200 characters, not all blank/,
    )
    expectError(await http.post(path, { name: 'x'.repeat(201) }, owner.token), 400, /^invalid body: name: /)
    expectError(await http.post(path, { description: 3 }, owner.token), 400, /^invalid body: description: /)
    expectError(await http.post(path, { owner: 'me' }, owner.token), 400, /^invalid body: owner: /)
    expectError(
      await http.post(path, { exported_at: 'yesterday' }, owner.token),
      400,
      /^invalid body: exported_at: expected an RFC 3339 date-time/,
    )
    expectError(
      await http.post(path, { exported_at: '2026-01-02 03:04:05Z' }, owner.token),
      400,
      /^invalid body: exported_at: expected an RFC 3339 date-time/,
    )
    expectError(
      await http.post(path, { exported_at: '2026-02-30T00:00:00Z' }, owner.token),
      400,
      /^invalid body: exported_at: expected an RFC 3339 date-time .*\(got "2026-02-30T00:00:00Z"\)$/,
    )
    expect((await http.get(`/${empty.slug}/jobs`, owner.token)).body).toEqual(before.body)
  })

  test('the download is 404 before any export; a bodiless POST exports with the defaults', async () => {
    expectError(
      await http.get(`/${empty.slug}/export-graph/download`, owner.token),
      404,
      `no export yet: POST /${empty.slug}/export-graph starts one`,
    )
    const started = await http.call('POST', `/${empty.slug}/export-graph`, { token: owner.token })
    expect(started.status).toBe(202)
    expect(started.body).toMatchObject({ kind: 'export_graph', repository_id: empty.id, status: 'queued' })
    const job = await waitForJob(http, `/${empty.slug}/jobs/${started.body.id}`, owner.token)
    expect(job).toMatchObject({ status: 'succeeded', result: { name: 'Export Empty', new: true } })
  })
})

describe(`export of a generated graph (${BACKEND})`, () => {
  let job: Job & { result: any }
  let bytes: Buffer
  let bundle: ReadBack

  beforeAll(async () => {
    job = await exportAndWait(full.slug, { exported_at: EXPORTED_AT, tags: ['physics', 'test'] })
    expect(job.error).toBeNull()
    bytes = Buffer.from(await (await download(`/${full.slug}/export-graph/download`, owner.token)).arrayBuffer())
    bundle = await readBack(bytes)
  })

  test('the job succeeds with the graph, its sha256, size and real counts; its progress ends with the whole file pushed', async () => {
    const sql = await server.context.pools.forRepository(full.id)
    const [counts] = await sql`
      SELECT (SELECT count(*) FROM sources)::int AS sources, (SELECT count(*) FROM facts)::int AS facts, (SELECT count(*) FROM concepts)::int AS concepts,
             (SELECT count(*) FROM concept_summaries)::int AS summaries, (SELECT count(*) FROM concept_syntheses)::int AS syntheses,
             (SELECT count(*) FROM reports)::int AS reports, (SELECT count(*) FROM investigations)::int AS investigations`
    expect(counts).toEqual({
      sources: 15,
      facts: 300,
      concepts: 30,
      summaries: 30,
      syntheses: 3,
      reports: 3,
      investigations: 2,
    })
    expect(job.status).toBe('succeeded')
    expect(job.result).toEqual({
      graph_id: expect.any(String),
      name: 'Export Full',
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      exported_at: EXPORTED_AT,
      bytes: bytes.byteLength,
      counts: { ...counts },
      new: true,
    })
    // The figures of the last phase, pushing (bytes sent of the file's), stay; the phase becomes the status.
    expect(job.progress).toEqual({
      phase: 'succeeded',
      done: bytes.byteLength,
      total: bytes.byteLength,
      bytes: bytes.byteLength,
      percent: 100,
    })
  })

  test("the registry holds the graph with the seven counts, and its download is the export's, byte for byte", async () => {
    const record = await http.get(`/api/v1/graphs/${job.result.graph_id}`, admin.token)
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({
      name: 'Export Full',
      description: 'A generated graph',
      // Pushed on behalf of the user who asked for the export, who owns it (docs/spec/bundle.md §7).
      owner: owner.email,
      owner_id: owner.id,
      tags: ['physics', 'test'],
      sha256: job.result.sha256,
      schema_version: 2,
      bytes: bytes.byteLength,
      source_count: 15,
      fact_count: 300,
      concept_count: 30,
      summary_count: 30,
      synthesis_count: 3,
      report_count: 3,
      investigation_count: 2,
    })
    const fromRegistry = Buffer.from(
      await (await download(`/api/v1/graphs/${job.result.graph_id}/bundle`, admin.token)).arrayBuffer(),
    )
    expect(fromRegistry.equals(bytes)).toBe(true)

    const res = await download('/api/v1/export-graph/download', owner.token, { 'x-repository-id': full.id })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/gzip')
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${full.slug}.json.gz"`)
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true)
  })

  test('kgs bundle verify finds nothing wrong: the rows read cleanly, the hash and the counts hold', async () => {
    const summary = await summarizeBundle(chunks(bytes))
    expect(bundleProblems(summary)).toEqual([])
    expect(summary.canonicalSha256).toBe(job.result.sha256)
  })

  test('the metadata', () => {
    expect(bundle.metadata).toEqual({
      name: 'Export Full',
      description: 'A generated graph',
      tags: ['physics', 'test'],
      okt_version: `kgs/${VERSION}`,
      promptset_hashes: ['ps-1'],
      embedding_model: server.context.embedder.model,
      embedding_dimensions: server.context.embedder.dimensions,
      source_count: 15,
      fact_count: 300,
      concept_count: 30,
      summary_count: 30,
      synthesis_count: 3,
      report_count: 3,
      investigation_count: 2,
      sha256: job.result.sha256,
      exported_at: EXPORTED_AT,
    })
  })

  test('every section holds every row of its table', async () => {
    const sql = await server.context.pools.forRepository(full.id)
    for (const section of ROW_SECTIONS) {
      const [{ count }] = (await sql`SELECT count(*)::int AS count FROM ${sql(section)}`) as unknown as [
        { count: number },
      ]
      expect({ section, rows: bundle.rows[section].length }).toEqual({ section, rows: count })
    }
  })

  test('sources, source images, bodies and facts, field by field, with references as positions', async () => {
    const sql = await server.context.pools.forRepository(full.id)
    const sources = await idsInOrder('sources')
    const images = await idsInOrder('source_images')
    const facts = await idsInOrder('facts')

    const [source] = await sql`SELECT *, published_at::text AS published_on FROM sources WHERE id = ${sources[0]!}`
    expect(source!.has_stored_body).toBe(true)
    expect(bundle.rows.sources[0]).toEqual({
      idx: 0,
      url: source!.url,
      doi: source!.doi,
      kind: source!.kind,
      status: source!.status,
      parsed_title: source!.parsed_title,
      parsed_text: source!.parsed_text,
      published_at: source!.published_on,
      sha256: sourceSha256(source as never),
      has_stored_body: true,
    })
    // Without include_bodies the body is not embedded, but the row says there is one to fetch.
    expect(bundle.rows.source_bodies).toEqual([{ source_idx: 0, content_type: 'text/html' }])
    expect(bundle.media.bodies.size).toBe(0)

    const [imageFact] = await sql`SELECT * FROM facts WHERE source_image_id IS NOT NULL ORDER BY created_at, id LIMIT 1`
    const [image] = await sql`SELECT * FROM source_images WHERE id = ${imageFact!.source_image_id}`
    const factIdx = facts.indexOf(imageFact!.id)
    const imageIdx = images.indexOf(image!.id)
    expect(bundle.rows.facts[factIdx]).toEqual({
      idx: factIdx,
      text: imageFact!.text,
      fact_kind: 'image',
      image_url: image!.url,
      content_hash: imageFact!.content_hash,
      promptset_hash: 'ps-1',
      status: imageFact!.status,
      source_image_idx: imageIdx,
    })
    expect(bundle.rows.source_images[imageIdx]).toEqual({
      idx: imageIdx,
      source_idx: sources.indexOf(image!.source_id),
      kind: image!.kind,
      ...(image!.page_number ? { page_number: image!.page_number } : {}),
      position: image!.position,
      url: image!.url,
      width: 640,
      height: 480,
      bytes: Number(image!.bytes),
      alt_text: image!.alt_text,
      content_type: 'image/png',
      image_ref: `img-${imageIdx}`,
    })
    expect(bundle.rows.facts.filter((f) => f.source_image_idx === -1).every((f) => f.fact_kind === 'text')).toBe(true)

    const links = await sql`SELECT fact_id, source_id, chunk_index FROM fact_sources`
    const expected = links.map((l) => ({
      fact_idx: facts.indexOf(l.fact_id),
      source_idx: sources.indexOf(l.source_id),
      chunk_index: l.chunk_index,
    }))
    expected.sort((a, b) => a.fact_idx - b.fact_idx || a.source_idx - b.source_idx || a.chunk_index - b.chunk_index)
    expect(bundle.rows.fact_sources).toEqual(expected)
  })

  test('summaries, syntheses and reports: covered ids and parents as positions, reports in created_at order with parents first', async () => {
    const sql = await server.context.pools.forRepository(full.id)
    const facts = await idsInOrder('facts')
    const concepts = await idsInOrder('concepts')
    const summaries = await idsInOrder('concept_summaries')
    const [summary] = await sql`SELECT * FROM concept_summaries WHERE id = ${summaries[5]!}`
    expect(bundle.rows.concept_summaries[5]).toMatchObject({
      concept_idx: concepts.indexOf(summary!.concept_id),
      sequence_num: 0,
      is_complete: true,
      fact_count: summary!.fact_count,
      covered_fact_idxs: summary!.covered_fact_ids.map((id: string) => facts.indexOf(id)),
      model: 'gen-graph',
    })
    const [synthesis] = await sql`SELECT * FROM concept_syntheses ORDER BY created_at, id LIMIT 1`
    expect(bundle.rows.concept_syntheses[0]).toMatchObject({
      canonical_name: synthesis!.canonical_name,
      covered_summary_idxs: synthesis!.covered_summary_ids.map((id: string) => summaries.indexOf(id)),
      covered_concept_idxs: synthesis!.covered_concept_ids.map((id: string) => concepts.indexOf(id)),
      embedded_image_idxs: synthesis!.embedded_image_fact_ids.map((id: string) => facts.indexOf(id)),
    })
    expect(bundle.rows.concept_syntheses[0]!.embedded_image_idxs).toHaveLength(1)

    // Two roots; the child, created before both of them, comes right after its parent.
    expect(bundle.rows.reports.map((r) => [r.title.split(' ')[0], r.parent_idx])).toEqual([
      ['Report', -1],
      ['Follow-up', 0],
      ['Report', -1],
    ])
    expect(bundle.rows.reports[1]).toEqual({
      idx: 1,
      title: 'Follow-up',
      body_md: 'More.',
      status: 'pending',
      parent_idx: 0,
    })
    const [annotation] =
      await sql`SELECT * FROM report_annotations a JOIN reports r ON r.id = a.report_id ORDER BY r.created_at, r.id, a.sentence_index LIMIT 1`
    expect(bundle.rows.report_annotations[0]).toEqual({
      report_idx: 0,
      sentence_index: 0,
      sentence_text: annotation!.sentence_text,
      fact_idx: facts.indexOf(annotation!.fact_id),
      score: annotation!.score,
      posture: annotation!.posture,
    })
  })

  test('citations carry portable UUIDs: of the right fact or concept; an unknown UUID stays as it was', async () => {
    const sql = await server.context.pools.forRepository(full.id)
    const summaries = await idsInOrder('concept_summaries')
    const content = bundle.rows.concept_summaries[summaries.indexOf(added.citingSummary)]!.content
    const [fact] = await sql`SELECT content_hash FROM facts WHERE id = ${added.citedFact}`
    const [concept] = await sql`SELECT canonical_name, context FROM concepts WHERE id = ${added.citedConcept}`
    expect(content).toContain(`(<fact:${portableFactId(fact!.content_hash)}>)`)
    expect(content).toContain(
      `[the concept](<concept:${portableConceptId(concept!.canonical_name, concept!.context)}>)`,
    )
    expect(content).toContain(`[a lost fact](<fact:${added.unknownFact}>)`)
    // No local UUID of a fact is left in any text.
    const local = (await idsInOrder('facts')).filter((id) => id !== added.unknownFact)
    const texts = [
      ...bundle.rows.concept_summaries.map((s) => s.content),
      ...bundle.rows.concept_syntheses.map((s) => s.content),
      ...bundle.rows.reports.map((r) => r.body_md),
    ]
    expect(texts.join('\n').match(/<fact:[0-9a-f-]{36}>/g)!.length).toBeGreaterThan(100)
    expect(local.some((id) => texts.some((text) => text.includes(id)))).toBe(false)
  })

  test("vectors come in ascending position and equal LanceDB's", async () => {
    expect(bundle.embeddings).toEqual({
      model: server.context.embedder.model,
      dimensions: server.context.embedder.dimensions,
    })
    for (const [kind, table] of [
      ['facts', 'facts'],
      ['concepts', 'concepts'],
    ] as const) {
      const ids = await idsInOrder(table)
      const stored = new Map<string, Float32Array>()
      for await (const batch of server.context.vectors.scan(full.id, kind, 500))
        for (const { id, vector } of batch) stored.set(id, vector)
      const written = bundle.vectors[kind]
      expect(written.map((v) => v.index)).toEqual(ids.map((_, i) => i))
      // Written in shortest float32 form: read back, each number is the stored float32 exactly.
      for (const { index, vector } of written) expect(vector.map(Math.fround)).toEqual([...stored.get(ids[index]!)!])
    }
  })

  test("stored images are embedded with their blobs' bytes; a lost blob is skipped, its row without image_ref", async () => {
    const sql = await server.context.pools.forRepository(full.id)
    const images = await sql<
      { id: string; storage_key: string }[]
    >`SELECT id, storage_key FROM source_images ORDER BY created_at, id`
    const lost = images.findIndex((i) => i.storage_key === added.lostImageKey)
    expect(lost).toBe(2)
    expect([...bundle.media.images.keys()]).toEqual(
      images.map((_, i) => `img-${i}`).filter((ref) => ref !== `img-${lost}`),
    )
    for (const [i, image] of images.entries()) {
      expect(bundle.rows.source_images[i]!.image_ref).toBe(i === lost ? undefined : `img-${i}`)
      if (i !== lost)
        expect(
          bundle.media.images
            .get(`img-${i}`)!
            .equals(Buffer.from((await server.context.blobs.get(image.storage_key))!)),
        ).toBe(true)
    }
  })

  test('the same exported_at gives the same sha256 (media options aside); without images and with bodies the file says so', async () => {
    const again = await exportAndWait(full.slug, {
      exported_at: EXPORTED_AT,
      tags: ['physics', 'test'],
      include_images: false,
      include_bodies: true,
    })
    expect(again.result).toMatchObject({ graph_id: job.result.graph_id, sha256: job.result.sha256, new: false })
    const latest = Buffer.from(await (await download(`/${full.slug}/export-graph/download`, owner.token)).arrayBuffer())
    expect(Object.keys(JSON.parse(gunzipSync(latest).toString()))).toEqual([
      'schema_version',
      'metadata',
      'sources',
      'bodies',
      'source_images',
      'source_bodies',
      'facts',
      'fact_sources',
      'concepts',
      'concept_aliases',
      'fact_concepts',
      'concept_summaries',
      'concept_syntheses',
      'investigations',
      'investigation_sources',
      'reports',
      'report_annotations',
      'embeddings',
    ])
    const other = await readBack(latest)
    expect(other.rows.source_images.some((row) => row.image_ref !== undefined)).toBe(false)
    expect(other.rows.source_bodies).toEqual([{ source_idx: 0, body_ref: 'body-0', content_type: 'text/html' }])
    const body = other.media.bodies.get('body-0')!
    expect(body.equals(Buffer.from((await server.context.blobs.get(`repositories/${full.id}/bodies/0`))!))).toBe(true)
    expect(body.toString()).toStartWith('<!doctype html>')
    expect(bundleProblems(await summarizeBundle(chunks(latest)))).toEqual([])
  })
})

describe(`exportRepository, the plain function (${BACKEND})`, () => {
  /** Exports the full repository into a scratch file; its bytes, the summary, the progress. */
  async function exportPlain(
    options: {
      onProgress?: (progress: ExportProgress) => void
      signal?: AbortSignal
      prefetch?: boolean
      workMem?: string
    } = {},
  ) {
    const path = join(tempDir('kgs-export-'), 'plain.json.gz')
    const sql = await server.context.pools.forRepository(full.id)
    const summary = await exportRepository(
      sql,
      server.context,
      { repositoryId: full.id, name: 'Plain', exportedAt: EXPORTED_AT, includeBodies: true, ...options },
      path,
    )
    return { summary, bytes: readFileSync(path), path }
  }

  test('reports ranking table by table, then writing row by row in one pass; the same snapshot and options give the same bytes', async () => {
    const phases: ExportProgress[] = []
    const first = await exportPlain({ onProgress: (progress) => phases.push(progress) })
    const second = await exportPlain()
    expect(second.bytes.equals(first.bytes)).toBe(true)
    expect(first.summary.bytes).toBe(first.bytes.byteLength)

    const ranking = phases.filter((p) => p.phase === 'ranking')
    const writing = phases.filter((p) => p.phase === 'writing')
    expect(phases).toEqual([...ranking, ...writing])
    // Ranking counts the tables whose rows get positions, so it is never stuck at a total of 0.
    expect(ranking[0]!.total).toBeGreaterThan(0)
    for (const list of [ranking, writing]) {
      expect(list[0]!.done).toBe(0)
      expect(list.map((p) => p.done)).toEqual(list.map((p) => p.done).sort((a, b) => a - b))
      expect(list.at(-1)!.done).toBe(list.at(-1)!.total)
    }
    // One pass over every row: the hashed sections, 8 source_images, 1 source_bodies row and the vectors of 300 facts and 30 concepts.
    const { counts } = first.summary
    const links = (await readBack(first.bytes)).rows
    const hashed =
      Object.values(counts).reduce((a, b) => a + b, 0) +
      links.fact_sources.length +
      links.concept_aliases.length +
      links.fact_concepts.length +
      links.investigation_sources.length +
      links.report_annotations.length
    expect(writing[0]!.total).toBe(hashed + 8 + 1 + 330)
    expect(writing.map((p) => p.bytes)).toEqual(writing.map((p) => p.bytes).sort((a, b) => a - b))
    expect(writing.at(-1)!.bytes).toBeLessThanOrEqual(first.bytes.byteLength)
  })

  test('the file is gzip members (the head first, alone) that gzip(1), Python, Node and the reader all read as the same JSON, with the canonical hash', async () => {
    const { bytes, path, summary } = await exportPlain()
    const members = gzipMemberOffsets(bytes)
    expect(members.length).toBeGreaterThan(1)
    // The first member is the head alone: the document up to the end of its metadata.
    const head = gunzipSync(bytes.subarray(0, members[1]!)).toString()
    expect(head).toStartWith('{"schema_version":2,"metadata":{')
    expect(JSON.parse(`${head}}`).metadata.sha256).toBe(summary.metadata.sha256)

    const json = gunzipSync(bytes)
    const document = JSON.parse(json.toString())
    expect(document.metadata).toEqual(summary.metadata)
    // The reader recomputes the canonical hash of the rows it reads: it is the one in the metadata.
    expect(bundleProblems(await summarizeBundle(chunks(bytes)))).toEqual([])
    // Python's gzip module and gzip(1) decompress the whole file to the same bytes as Node's zlib.
    const python = Bun.spawnSync([
      'python3',
      '-c',
      'import gzip, hashlib, sys; print(hashlib.sha256(gzip.open(sys.argv[1]).read()).hexdigest())',
      path,
    ])
    expect(python.stderr.toString()).toBe('')
    const expected = new Bun.CryptoHasher('sha256').update(json).digest('hex')
    expect(python.stdout.toString().trim()).toBe(expected)
    const gzip = Bun.spawnSync(['gzip', '-dc', path])
    expect(gzip.exitCode).toBe(0)
    expect(new Bun.CryptoHasher('sha256').update(gzip.stdout).digest('hex')).toBe(expected)
  })

  test('text that JSON escapes, and empty fields, come out byte for byte as the row codecs write them (rows read by COPY)', async () => {
    const repo = (await http.post('/api/v1/repositories', { name: 'Export Escapes' }, owner.token)).body as {
      id: string
    }
    const sql = await server.context.pools.forRepository(repo.id)
    // Go's escapes (quotes, backslash, controls, <>&, U+2028/9), UTF-8 of 2 to 4 bytes, and
    // characters whose UTF-8 starts as U+2028's does (E2 80 A0, E2 82 AC) but is not escaped.
    const text = 'He said "hi" \\ back\\slash <b>&amp;</b> \u2028 \u2029 \u0001\u001f\t\n\r\b\f\u007f é 日本 😀 † € end'
    const [source] = await sql<{ id: string }[]>`
      INSERT INTO sources (id, url, kind, status, parsed_title, parsed_text) VALUES (${crypto.randomUUID()}, ${`https://example.org/?a=1&b=<2>`}, 'web', 'processed', ${text}, ${text}) RETURNING id`
    const [fact] = await sql<{ id: string }[]>`
      INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${crypto.randomUUID()}, ${text}, 'text', ${'0'.repeat(64)}, 'new') RETURNING id`
    const [concept] = await sql<{ id: string }[]>`
      INSERT INTO concepts (id, canonical_name, context) VALUES (${crypto.randomUUID()}, ${text}, '') RETURNING id`
    await sql`INSERT INTO fact_sources (fact_id, source_id, chunk_index) VALUES (${fact!.id}, ${source!.id}, 0)`
    await sql`INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash) VALUES (${fact!.id}, ${concept!.id}, ${text})`
    await sql`INSERT INTO concept_aliases (concept_id, alias_text) VALUES (${concept!.id}, ${text})`

    const path = join(tempDir('kgs-export-'), 'escapes.json.gz')
    await exportRepository(
      sql,
      server.context,
      { repositoryId: repo.id, name: 'Escapes', exportedAt: EXPORTED_AT },
      path,
    )
    const json = gunzipSync(readFileSync(path)).toString()
    const document = JSON.parse(json)
    expect(document.facts[0].text).toBe(text)
    expect(document.concepts[0]).toEqual({ idx: 0, canonical_name: text, context: '' })
    for (const section of [
      'sources',
      'facts',
      'fact_sources',
      'concepts',
      'concept_aliases',
      'fact_concepts',
    ] as const) {
      const encode = ROW_CODECS[section].encode as (row: unknown) => string
      expect(json).toContain(`"${section}":[${(document[section] as unknown[]).map(encode).join(',')}]`)
    }
  })

  test.skipIf(BACKEND === 'embedded')(
    'the links, summaries, syntheses and annotations read ahead on a second connection give the same bytes, through spools it removes',
    async () => {
      const sql = await server.context.pools.forRepository(full.id)
      // Scores whose shortest decimal takes every digit of a double: the spool's binary value must print as the driver's text does.
      const scores = [0.1 + 0.2, 1 / 3]
      const annotated = await sql<
        { report_id: string; sentence_index: number; fact_id: string }[]
      >`SELECT report_id, sentence_index, fact_id FROM report_annotations ORDER BY created_at LIMIT 2`
      for (const [i, a] of annotated.entries())
        await sql`UPDATE report_annotations SET score = ${scores[i]!} WHERE report_id = ${a.report_id} AND sentence_index = ${a.sentence_index} AND fact_id = ${a.fact_id}`
      const plain = await exportPlain()
      const ahead = join(tempDir('kgs-export-'), 'plain.json.gz')
      let spooled = false
      const onProgress = (progress: ExportProgress) => {
        if (progress.phase === 'writing' && progress.done > 0)
          spooled ||=
            existsSync(`${ahead}.fact_sources`) &&
            existsSync(`${ahead}.concept_summaries`) &&
            existsSync(`${ahead}.report_annotations`)
      }
      await exportRepository(
        sql,
        server.context,
        {
          repositoryId: full.id,
          name: 'Plain',
          exportedAt: EXPORTED_AT,
          includeBodies: true,
          prefetch: true,
          workMem: '64MB',
          onProgress,
        },
        ahead,
      )
      expect(spooled).toBe(true)
      expect(readFileSync(ahead).equals(plain.bytes)).toBe(true)
      const { rows } = await readBack(plain.bytes)
      expect(rows.concept_summaries.length).toBeGreaterThan(0)
      expect(rows.concept_syntheses.length).toBeGreaterThan(0)
      expect(rows.report_annotations.map((a) => a.score)).toEqual(expect.arrayContaining(scores))
      expect(readdirSync(dirname(ahead))).toEqual(['plain.json.gz'])
    },
  )

  test.skipIf(BACKEND === 'embedded')(
    'exports of other options on one connection each read their own columns',
    async () => {
      // One connection: its cursors' FETCH statements have the same text in both exports, for other queries.
      const [row] = await server.context.pools.system<
        { dsn: string }[]
      >`SELECT dsn FROM repository_databases WHERE repository_id = ${full.id}`
      const one = postgres(row!.dsn, { max: 1, onnotice: () => {} })
      try {
        const read = async (includeImages: boolean) => {
          const path = join(tempDir('kgs-export-'), 'one.json.gz')
          await exportRepository(
            one,
            server.context,
            { repositoryId: full.id, name: 'One', exportedAt: EXPORTED_AT, includeImages },
            path,
          )
          return (await readBack(readFileSync(path))).rows
        }
        const withImages = await read(true)
        const without = await read(false)
        expect(without.source_images.length).toBe(withImages.source_images.length)
        expect(without.source_images).toEqual(withImages.source_images.map(({ image_ref, ...image }) => image))
        expect(without.facts).toEqual(withImages.facts)
      } finally {
        await one.end()
      }
    },
  )

  test('cancelled in the middle of the pass, it fails and the caller is left no more than its own file', async () => {
    const controller = new AbortController()
    const dir = tempDir('kgs-export-')
    const sql = await server.context.pools.forRepository(full.id)
    let seen = 0
    const onProgress = (progress: ExportProgress) => {
      if (progress.phase === 'writing' && progress.done > 0 && ++seen === 2)
        controller.abort(new Error('stopped mid-pass'))
    }
    const path = join(dir, 'cancelled.json.gz')
    // On PostgreSQL with the sections read ahead, whose spools go too.
    const prefetch = BACKEND === 'postgres'
    const outcome = exportRepository(
      sql,
      server.context,
      {
        repositoryId: full.id,
        name: 'Cancelled',
        exportedAt: EXPORTED_AT,
        onProgress,
        signal: controller.signal,
        prefetch,
      },
      path,
    )
    expect(await rejected(outcome)).toThrow('stopped mid-pass')
    // No spool beside it: only the file it was told to write, which its caller (the job) removes.
    expect(readdirSync(dir)).toEqual(['cancelled.json.gz'])
  })
})

describe(`the export job stopped in its pass (${BACKEND})`, () => {
  test('cancelled while it writes, it fails with the cancellation and leaves no file in DATA_DIR/tmp, spool or other', async () => {
    const { pools, vectors, embedder, blobs, registry, config, baseUrl, log } = server.context
    const services: JobServices = {
      pools,
      vectors,
      embedder,
      blobs,
      registry,
      config: { ...config, baseUrl },
      log,
      enqueue: async () => ({}) as Job,
      ...jobWrites(server.context, async () => ({}) as Job),
    }
    const controller = new AbortController()
    const id = crypto.randomUUID()
    const path = await scratchFile(config.dataDir, 'export', { id, attempt: 1 })
    let existedWhenStopped = false
    const job: RunningJob<ExportParams> = {
      id,
      repositoryId: full.id,
      params: { exported_at: EXPORTED_AT },
      createdBy: owner.id,
      attempt: 1,
      signal: controller.signal,
      // Stopped from inside the progress call, once some rows are written: the pass cannot finish first.
      progress: ({ phase, done }) => {
        if (phase !== 'writing' || !done || controller.signal.aborted) return
        existedWhenStopped = existsSync(path)
        controller.abort(CANCELLED)
      },
      repository: () => pools.forRepository(full.id),
    }
    expect(await rejectionOf(exportGraphJob.run(job, services))).toBe(CANCELLED)
    expect(existedWhenStopped).toBe(true)
    expect(readdirSync(scratchDir(config.dataDir)).filter((name) => name.includes(id))).toEqual([])
  })
})

/** Where each gzip member of `bytes` starts (members end with CRC32 and ISIZE; the next starts 1f 8b 08). */
function gzipMemberOffsets(bytes: Buffer): number[] {
  const offsets: number[] = []
  for (let offset = 0; offset < bytes.byteLength; ) {
    offsets.push(offset)
    // The length of one member: inflate it alone and see how much input it took.
    const { bytesRead } = inflateMember(bytes.subarray(offset))
    offset += bytesRead
  }
  return offsets
}

/** Inflates the first gzip member of `bytes`, telling how many of its bytes that member was. */
function inflateMember(bytes: Buffer): { bytesRead: number } {
  // Header: 10 bytes, no optional fields in kgs's members (flags 0); then raw deflate; then 8 bytes.
  expect([...bytes.subarray(0, 4)]).toEqual([0x1f, 0x8b, 8, 0])
  const inflated = inflateRawSync(bytes.subarray(10), { info: true }) as unknown as { engine: { bytesWritten: number } }
  return { bytesRead: 10 + inflated.engine.bytesWritten + 8 }
}

describe(`export of an empty repository (${BACKEND})`, () => {
  test('a curator exports it (repository named by X-Repository-ID): a valid bundle with zero counts and no embeddings', async () => {
    const started = await http.call('POST', '/api/v1/export-graph', {
      body: { name: 'Nothing here', description: 'no rows yet' },
      token: curator.token,
      headers: { 'x-repository-id': empty.slug },
    })
    expect(started.status).toBe(202)
    const job = await waitForJob(http, `/${empty.slug}/jobs/${started.body.id}`, curator.token)
    const zero = { sources: 0, facts: 0, concepts: 0, summaries: 0, syntheses: 0, reports: 0, investigations: 0 }
    expect(job).toMatchObject({ status: 'succeeded', result: { name: 'Nothing here', counts: zero, new: true } })

    const bytes = Buffer.from(
      await (await download(`/${empty.slug}/export-graph/download`, curator.token)).arrayBuffer(),
    )
    const document = JSON.parse(gunzipSync(bytes).toString())
    expect(document.facts).toBeNull()
    expect('embeddings' in document || 'images' in document || 'source_bodies' in document).toBe(false)
    const summary = await summarizeBundle(chunks(bytes))
    expect(bundleProblems(summary)).toEqual([])
    expect(summary.metadata).toMatchObject({
      name: 'Nothing here',
      description: 'no rows yet',
      source_count: 0,
      fact_count: 0,
      concept_count: 0,
      report_count: 0,
    })
    expect(summary.metadata.embedding_model).toBeUndefined()
    expect(summary.metadata.promptset_hashes).toBeUndefined()
    expect(summary.embeddings).toBeUndefined()
  })
})
