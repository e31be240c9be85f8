// import_graph and POST /{repoID}/import-graph (docs/spec/bundle.md §5) against the real server, on the
// selected backend: the four ways a bundle arrives (registry id, name and sha256, multipart,
// raw gzip), what lands where (rows in the bundle's order, media bytes under the job's prefix,
// image facts pointing at their local copy, vectors under local UUIDs), a second import adding
// nothing, citations rewritten to local UUIDs, version 1 bundles, vectors of another model
// re-embedded, broken bundles leaving the repository as it was, exactly-once across a crash,
// and the route's refusals (auth, permissions, bodies, types, sizes) leaving no blob behind.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BACKEND } from '../../helpers/backend.ts'
import { api, expectError, registerAccount, type Account } from '../../helpers/api.ts'
import {
  BODY_TEXT,
  brokenBundles,
  gzipBundle,
  IMAGE_BYTES,
  v1Json,
  validBundle,
  validBundleJson,
} from '../../helpers/broken-bundles.ts'
import { dumpGraph, tableCounts } from '../../helpers/graph-dump.ts'
import { jobWrites, settleJobs, waitForJob } from '../../helpers/jobs.ts'
import { blobKeys } from '../../helpers/blobs.ts'
import { startTestServer, type TestServer } from '../../helpers/server.ts'
import {
  bundleContent,
  generateBundle,
  SyntheticGraph,
  type BundleOptions,
  type GenerateResult,
} from '../../../scripts/gen-bundle.ts'
import { generateGraph } from '../../../scripts/gen-graph.ts'
import { repositoryBlobPrefix } from '../../../src/blobs/store.ts'
import { citedIds, portableConceptId, portableFactId } from '../../../src/bundle/format/citations.ts'
import { factContentHash } from '../../../src/bundle/format/hashes.ts'
import { importGraph, uploadKey, type ImportJob, type ImportResult } from '../../../src/bundle/import/import-job.ts'
import { writeBundle, type BundleContent } from '../../../src/bundle/format/writer.ts'
import type { EnqueueRequest, JobServices } from '../../../src/jobs/kinds.ts'
import type { Job } from '../../../src/jobs/queue.ts'
import { CANCELLED, LEASE_LOST } from '../../../src/jobs/worker.ts'
import { localImageUrl } from '../../../src/media/urls.ts'
import { hashEmbedding } from '../../../src/vectors/embedder.ts'
import type { VectorStore } from '../../../src/vectors/store.ts'
import { rejected, rejectionOf } from '../../helpers/promises.ts'

type Http = ReturnType<typeof api>
interface Repo {
  id: string
  slug: string
}

const FACTS = 120
const SAME_MODEL: BundleOptions = { facts: FACTS, vectors: 'kgs-hash-v1', seed: 3 }
const OTHER_MODEL: BundleOptions = { facts: FACTS, seed: 4 }

let server: TestServer
let http: Http
let admin: Account
let owner: Account
let dir: string
let sameModel: GenerateResult
let sameModelBytes: Uint8Array

const sqlOf = (repo: Repo) => server.context.pools.forRepository(repo.id)

const storedKeys = (prefix = '') => blobKeys(server.context.blobs, prefix)

async function createRepo(name: string, as = owner): Promise<Repo> {
  const res = await http.post('/api/v1/repositories', { name: `${name} ${crypto.randomUUID().slice(0, 6)}` }, as.token)
  expect(res.status).toBe(201)
  return res.body
}

const upload = (slug: string, bytes: Uint8Array, token = owner.token, contentType = 'application/gzip') =>
  http.call('POST', `/${slug}/import-graph`, { token, raw: bytes, headers: { 'content-type': contentType } })

async function uploadForm(slug: string, form: FormData, token = owner.token) {
  const res = await fetch(`${server.url}/${slug}/import-graph`, {
    method: 'POST',
    body: form,
    headers: { authorization: `Bearer ${token}` },
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

const bundleForm = (bytes: Uint8Array, field = 'bundle') => {
  const form = new FormData()
  form.append('note', 'fields before the file are skipped')
  form.append(field, new Blob([bytes], { type: 'application/gzip' }), 'graph.json.gz')
  return form
}

/** Waits for the job a 202 answered with; it must succeed. */
async function succeeded(
  slug: string,
  started: { status: number; body: Job },
): Promise<Job & { result: ImportResult }> {
  expect(started.status).toBe(202)
  expect(started.body).toMatchObject({ kind: 'import_graph', status: 'queued' })
  const job = await waitForJob(http, `/${slug}/jobs/${started.body.id}`, owner.token)
  if (job.status !== 'succeeded') throw new Error(`import ${job.status}: ${job.error}`)
  return job as Job & { result: ImportResult }
}

/** Waits for the job a 202 answered with; it must fail, with this message. */
async function failed(slug: string, started: { status: number; body: Job }, error: RegExp): Promise<Job> {
  expect(started.status).toBe(202)
  const job = await waitForJob(http, `/${slug}/jobs/${started.body.id}`, owner.token)
  expect({ status: job.status, error: job.error }).toEqual({ status: 'failed', error: expect.stringMatching(error) })
  return job
}

/** Waits until every job of the repository (an import's follow-ups) has finished. */
const settle = (slug: string) => settleJobs(http, slug, owner.token)

/** The citations gen-bundle writes (with portable UUIDs of rows in the bundle, so all resolve). */
function citationCount(options: BundleOptions): number {
  const rows = bundleContent(options).rows
  let count = 0
  const add = (text: string) => {
    const ids = citedIds(text)
    count += ids.fact.length + ids.concept.length
  }
  for (const row of rows.concept_summaries as Iterable<{ content: string }>) add(row.content)
  for (const row of rows.concept_syntheses as Iterable<{ content: string }>) add(row.content)
  for (const row of rows.reports as Iterable<{ body_md: string }>) add(row.body_md)
  return count
}

/** The table counts a bundle of gen-bundle imports into an empty repository as. */
function expectedCounts(bundle: GenerateResult): Record<string, number> {
  const { counts } = bundle
  return {
    sources: counts.sources,
    source_images: counts.source_images,
    source_bodies: counts.bodies,
    facts: counts.facts,
    fact_sources: counts.fact_sources,
    concepts: counts.concepts,
    concept_aliases: counts.concept_aliases,
    fact_concepts: counts.fact_concepts,
    concept_summaries: counts.concept_summaries,
    concept_syntheses: counts.concept_syntheses,
    investigations: counts.investigations,
    investigation_sources: counts.investigation_sources,
    reports: counts.reports,
    report_annotations: counts.report_annotations,
  }
}

/**
 * Everything a gen-bundle import into an empty repository must give: the result, the rows, the
 * media bytes under the job's prefix, image facts' URLs, the bundle's order, the vectors.
 */
async function expectImported(
  repo: Repo,
  job: Job & { result: ImportResult },
  bundle: GenerateResult,
  options: BundleOptions,
) {
  const graph = new SyntheticGraph(options)
  const counts = expectedCounts(bundle)
  const images = Array.from({ length: bundle.counts.source_images }, (_, j) => j)
  expect(job.result).toEqual({
    imported: {
      sources: counts.sources!,
      source_images: counts.source_images!,
      facts: counts.facts!,
      fact_sources: counts.fact_sources!,
      concepts: counts.concepts!,
      concept_aliases: counts.concept_aliases!,
      fact_concepts: counts.fact_concepts!,
      summaries: counts.concept_summaries!,
      syntheses: counts.concept_syntheses!,
      investigations: counts.investigations!,
      investigation_sources: counts.investigation_sources!,
      reports: counts.reports!,
      report_annotations: counts.report_annotations!,
    },
    reused: { sources: 0, facts: 0, concepts: 0 },
    citations: { rewritten: citationCount(options), unresolved: 0 },
    embeddings: options.vectors === 'kgs-hash-v1' ? 'upserted' : 're-embedding',
    media: {
      stored: bundle.counts.images + bundle.counts.bodies,
      to_fetch: images.filter((j) => !graph.hasImageBytes(j)).length,
      lost: 0,
    },
  })
  const sql = await sqlOf(repo)
  expect(await tableCounts(sql)).toEqual(counts)

  // Rows keep the bundle's order: the n-th by (created_at, id) is the bundle's n-th.
  const facts = await sql<{ id: string; text: string }[]>`SELECT id, text FROM facts ORDER BY created_at, id`
  expect(facts.map((f) => f.text)).toEqual(Array.from({ length: FACTS }, (_, i) => graph.factText(i)))

  // Image bytes under the job's prefix, keyed by the image's UUID; image facts point at the local copy.
  const prefix = `${repositoryBlobPrefix(repo.id)}imports/${job.id}/`
  const stored = await sql<
    { id: string; url: string; storage_key: string | null }[]
  >`SELECT id, url, storage_key FROM source_images ORDER BY created_at, id`
  for (const [j, image] of stored.entries()) {
    if (!graph.hasImageBytes(j)) {
      expect(image.storage_key).toBeNull()
      continue
    }
    expect(image.storage_key).toBe(`${prefix}images/${image.id}`)
    expect(await server.context.blobs.get(image.storage_key!)).toEqual(graph.imageBytes(j))
  }
  const imageFacts = await sql<{ image_url: string; image_id: string; url: string; storage_key: string | null }[]>`
    SELECT f.image_url, si.id AS image_id, si.url, si.storage_key FROM facts f JOIN source_images si ON si.id = f.source_image_id ORDER BY f.created_at`
  expect(imageFacts).toHaveLength(bundle.counts.source_images)
  for (const fact of imageFacts)
    expect(fact.image_url).toBe(
      fact.storage_key ? localImageUrl(server.context.baseUrl, repo.id, fact.image_id) : fact.url,
    )
  const bodies = await sql<{ source_id: string; storage_key: string; bytes: number; position: number }[]>`
    SELECT b.source_id, b.storage_key, b.bytes::int AS bytes, (SELECT count(*)::int FROM sources o WHERE (o.created_at, o.id) < (s.created_at, s.id)) AS position
    FROM source_bodies b JOIN sources s ON s.id = b.source_id`
  expect(bodies).toHaveLength(bundle.counts.bodies)
  for (const body of bodies) {
    const expected = graph.body(body.position).data as Uint8Array
    expect(body.storage_key).toBe(`${prefix}bodies/${body.source_id}`)
    expect(body.bytes).toBe(expected.byteLength)
    expect(await server.context.blobs.get(body.storage_key)).toEqual(expected)
  }
  // Nothing else under the prefix (media of reused rows would have been deleted), no upload left.
  expect((await storedKeys(prefix)).length).toBe(bundle.counts.images + bundle.counts.bodies)
  expect(await storedKeys('uploads/')).toEqual([])
}

type Obj = Record<string, unknown>
const rowsOf = (bundle: Obj, section: string) => bundle[section] as Obj[]
/** The valid bundle of the codec corpus, changed. */
function mutated(change: (bundle: Obj) => void): ReturnType<typeof validBundle> {
  const bundle = validBundle()
  change(bundle as Obj)
  return bundle
}

/** Every stored vector of a kind, by id. */
async function vectorsOf(vectors: VectorStore, repo: Repo, kind: 'facts' | 'concepts'): Promise<Map<string, number[]>> {
  const all = new Map<string, number[]>()
  for await (const batch of vectors.scan(repo.id, kind, 500)) for (const row of batch) all.set(row.id, [...row.vector])
  return all
}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '2', MEDIA_FETCH_TIMEOUT: '2s' } })
  http = api(server.url)
  ;[admin, owner] = await Promise.all([registerAccount(http), registerAccount(http)])
  expect((await server.promote(admin.email)).code).toBe(0)
  dir = mkdtempSync(join(tmpdir(), 'kgs-import-'))
  sameModel = await generateBundle(join(dir, 'same-model.json.gz'), SAME_MODEL)
  sameModelBytes = readFileSync(sameModel.path)
})

afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe(`import from each source (${BACKEND})`, () => {
  let pushed: { graph_id: string }

  beforeAll(async () => {
    pushed = await server.context.registry.push(sameModel.path, {
      name: 'import-test',
      sha256: sameModel.sha256,
      schema_version: 2,
      fact_count: FACTS,
    })
  })

  test('by registry id: rows, media, image URLs, order and vectors as in the bundle', async () => {
    const repo = await createRepo('By id')
    const job = await succeeded(
      repo.slug,
      await http.post(`/${repo.slug}/import-graph`, { graph_id: pushed.graph_id }, owner.token),
    )
    await expectImported(repo, job, sameModel, SAME_MODEL)
    // The bundle's vectors (the built-in model's) are kept, under the local UUIDs.
    const sql = await sqlOf(repo)
    const facts = await vectorsOf(server.context.vectors, repo, 'facts')
    expect(facts.size).toBe(FACTS)
    for (const fact of await sql<{ id: string; text: string }[]>`SELECT id, text FROM facts`)
      expect(facts.get(fact.id)).toEqual([...hashEmbedding(fact.text)])
    expect(await server.context.vectors.count(repo.id, 'concepts')).toBe(sameModel.counts.concepts)
    expect(await server.context.vectors.countStaged(job.id, 'facts')).toBe(0)
  })

  test('into an empty repository the tables load before their indexes and foreign keys, which end exactly as in any repository', async () => {
    /** The indexes and constraints of the graph tables, as PostgreSQL writes their definitions. */
    const schemaOf = async (repo: Repo) => {
      const sql = await sqlOf(repo)
      const indexes =
        await sql`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname`
      const constraints = await sql`
        SELECT conrelid::regclass::text AS table, conname, pg_get_constraintdef(oid) AS definition, convalidated
        FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2`
      const triggers =
        await sql`SELECT tgrelid::regclass::text AS table, tgname, tgenabled FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`
      return { indexes, constraints, triggers }
    }
    const repo = await createRepo('Indexes after rows')
    const untouched = await schemaOf(await createRepo('Indexes untouched'))
    const job = await succeeded(
      repo.slug,
      await http.post(`/${repo.slug}/import-graph`, { graph_id: pushed.graph_id }, owner.token),
    )
    await expectImported(repo, job, sameModel, SAME_MODEL)
    const after = await schemaOf(repo)
    expect(after.constraints.some((c) => c.definition.startsWith('FOREIGN KEY'))).toBe(true)
    expect(after.indexes.some((index) => index.indexname === 'fact_sources_source_id')).toBe(true)
    expect(after.triggers.some((trigger) => trigger.tgname === 'facts_documents_inserted')).toBe(true)
    expect(after).toEqual(untouched)
    // Every fact has its full-text document (computed after the rows), exactly the one its trigger writes.
    const sql = await sqlOf(repo)
    const [documents] = await sql`
      SELECT count(*)::int AS facts, count(d.id)::int AS documents, count(*) FILTER (WHERE d.fulltext = to_tsvector('english', f.text))::int AS same
      FROM facts f LEFT JOIN fact_documents d ON d.id = f.id`
    expect(documents).toEqual({ facts: FACTS, documents: FACTS, same: FACTS })
    // Into a repository with rows, nothing is dropped: the import of the same bundle again, in a transaction of its own.
    const again = await succeeded(
      repo.slug,
      await http.post(`/${repo.slug}/import-graph`, { graph_id: pushed.graph_id }, owner.token),
    )
    expect(again.result.imported.facts).toBe(0)
    expect(await schemaOf(repo)).toEqual(untouched)
  })

  test('by name and sha256, at /api/v1 with X-Repository-ID', async () => {
    const repo = await createRepo('By name')
    const started = await http.call('POST', '/api/v1/import-graph', {
      token: owner.token,
      body: { name: 'import-test', sha256: sameModel.sha256 },
      headers: { 'x-repository-id': repo.slug },
    })
    await expectImported(repo, await succeeded(repo.slug, started as never), sameModel, SAME_MODEL)
  })

  test('as the multipart file field "bundle"', async () => {
    const repo = await createRepo('Multipart')
    await expectImported(
      repo,
      await succeeded(repo.slug, await uploadForm(repo.slug, bundleForm(sameModelBytes))),
      sameModel,
      SAME_MODEL,
    )
  })

  test('as a raw application/gzip body; importing it again adds nothing and stores nothing', async () => {
    const repo = await createRepo('Raw')
    const job = await succeeded(repo.slug, await upload(repo.slug, sameModelBytes))
    await expectImported(repo, job, sameModel, SAME_MODEL)
    // Progress: every phase counts done and total in one unit (the last one: follow-up jobs queued),
    // and bytes says how much of the upload was read.
    expect(job.progress).toMatchObject({ phase: 'succeeded', bytes: sameModelBytes.byteLength, percent: 100 })
    expect(job.progress.done).toBe(job.progress.total)
    const sql = await sqlOf(repo)
    const before = {
      rows: await tableCounts(sql),
      blobs: await storedKeys(repositoryBlobPrefix(repo.id)),
      dump: await dumpGraph(sql, repo.id, server.context),
    }

    const again = await succeeded(repo.slug, await upload(repo.slug, sameModelBytes))
    expect(Object.values(again.result.imported).every((n) => n === 0)).toBe(true)
    expect(again.result.reused).toEqual({
      sources: sameModel.counts.sources,
      facts: FACTS,
      concepts: sameModel.counts.concepts,
    })
    expect(again.result).toMatchObject({ embeddings: 'none', media: { stored: 0, to_fetch: 0, lost: 0 } })
    expect(await tableCounts(sql)).toEqual(before.rows)
    expect(await storedKeys(repositoryBlobPrefix(repo.id))).toEqual(before.blobs)
    expect(await dumpGraph(sql, repo.id, server.context)).toEqual(before.dump)
  })

  test('an unknown graph is refused at once (404), by id or by name', async () => {
    const repo = await createRepo('Unknown graph')
    const id = crypto.randomUUID()
    expectError(
      await http.post(`/${repo.slug}/import-graph`, { graph_id: id }, owner.token),
      404,
      `graph ${id} is not in the registry`,
    )
    expectError(
      await http.post(`/${repo.slug}/import-graph`, { name: 'import-test', sha256: 'a'.repeat(64) }, owner.token),
      404,
      `graph "import-test" with sha256 ${'a'.repeat(64)} is not in the registry`,
    )
  })

  test('without registry:pull, a stored graph is refused exactly like an unknown one (no confused deputy, no oracle)', async () => {
    const puller = await registerAccount(http)
    const repo = await createRepo('No pull', puller)
    // The repository's repoadmin keeps graph:import; losing member takes registry:pull away.
    expect(
      (
        await http.call('DELETE', '/api/v1/admin/users/roles', {
          token: admin.token,
          body: { user_id: puller.id, role: 'member', domain: 'system' },
        })
      ).status,
    ).toBe(200)
    expectError(await http.get(`/api/v1/graphs/${pushed.graph_id}`, puller.token), 403)
    const unknown = crypto.randomUUID()
    const answers = await Promise.all([
      http.post(`/${repo.slug}/import-graph`, { graph_id: pushed.graph_id }, puller.token),
      http.post(`/${repo.slug}/import-graph`, { graph_id: unknown }, puller.token),
      http.post(`/${repo.slug}/import-graph`, { name: 'import-test', sha256: sameModel.sha256 }, puller.token),
      http.post(`/${repo.slug}/import-graph`, { name: 'import-test', sha256: 'a'.repeat(64) }, puller.token),
    ])
    expectError(answers[0]!, 404, `graph ${pushed.graph_id} is not in the registry`)
    expectError(answers[1]!, 404, `graph ${unknown} is not in the registry`)
    expectError(answers[2]!, 404, `graph "import-test" with sha256 ${sameModel.sha256} is not in the registry`)
    expectError(answers[3]!, 404, `graph "import-test" with sha256 ${'a'.repeat(64)} is not in the registry`)
    expect((await http.get(`/${repo.slug}/jobs`, puller.token)).body).toEqual([])
  })

  test('by name and sha256: a bundle whose canonical hash is not that sha256 fails, and nothing stays', async () => {
    // The first pusher of a (name, sha256) pair claims it with other content.
    const other = await generateBundle(join(dir, 'other.json.gz'), { ...SAME_MODEL, facts: 5, seed: 99 })
    expect(other.sha256).not.toBe(sameModel.sha256)
    await server.context.registry.push(other.path, { name: 'squatted', sha256: sameModel.sha256, schema_version: 2 })
    const repo = await createRepo('Squatted')
    const job = await failed(
      repo.slug,
      await http.post(`/${repo.slug}/import-graph`, { name: 'squatted', sha256: sameModel.sha256 }, owner.token),
      /canonical hash/,
    )
    expect(job.error).toBe(
      `bundle: the canonical hash of the bundle is ${other.sha256}, not the sha256 ${sameModel.sha256} it was imported by`,
    )
    expect(job.attempts).toBe(1)
    expect(Object.values(await tableCounts(await sqlOf(repo))).every((n) => n === 0)).toBe(true)
    expect(await storedKeys(repositoryBlobPrefix(repo.id))).toEqual([])
  })
})

describe(`citations, reused rows and version 1 (${BACKEND})`, () => {
  const texts = ['Rain falls in spring.', 'A photo of hail on a car.', 'Snow melts.']
  const portable = (text: string) => portableFactId(factContentHash(text))
  const elsewhere = crypto.randomUUID()

  /** A bundle citing its facts and concept by their portable UUIDs (and one UUID of nothing here). */
  function citingBundle(): BundleContent {
    return {
      metadata: {
        name: 'citing',
        source_count: 1,
        fact_count: 3,
        concept_count: 1,
        summary_count: 1,
        synthesis_count: 1,
        report_count: 1,
        investigation_count: 0,
        exported_at: '2026-01-02T03:04:05Z',
      },
      rows: {
        sources: [{ idx: 0, url: 'https://example.org/weather', kind: 'web', status: 'parsed' }],
        source_images: [
          {
            idx: 0,
            source_idx: 0,
            kind: 'inline',
            position: 0,
            url: 'https://example.org/hail.png',
            content_type: 'image/png',
            image_ref: 'img-0',
          },
        ],
        facts: [
          { idx: 0, text: texts[0]!, fact_kind: 'text', status: 'new', source_image_idx: -1 },
          {
            idx: 1,
            text: texts[1]!,
            fact_kind: 'image',
            image_url: 'https://example.org/hail.png',
            status: 'stable',
            source_image_idx: 0,
          },
          { idx: 2, text: texts[2]!, fact_kind: 'text', status: 'stable', source_image_idx: -1 },
        ],
        fact_sources: [
          { fact_idx: 0, source_idx: 0, chunk_index: 0 },
          { fact_idx: 2, source_idx: 0, chunk_index: 1 },
        ],
        concepts: [{ idx: 0, canonical_name: 'Rain', context: 'weather' }],
        fact_concepts: [{ fact_idx: 2, concept_idx: 0 }],
        concept_summaries: [
          {
            concept_idx: 0,
            sequence_num: 0,
            is_complete: true,
            fact_count: 2,
            content: `Rain [falls](<fact:${portable(texts[0]!)}>), [snow](<fact:${portable(texts[2]!)}>) melts; see [Rain](<concept:${portableConceptId('Rain', 'weather')}>) and [this](<fact:${elsewhere}>).`,
            covered_fact_idxs: [0, 2],
          },
        ],
        concept_syntheses: [
          {
            canonical_name: 'Rain',
            content: `![hail](<fact:${portable(texts[1]!)}>)`,
            covered_summary_idxs: [0],
            covered_concept_idxs: [0],
            embedded_image_idxs: [1],
          },
        ],
        reports: [
          {
            idx: 0,
            title: 'Weather',
            body_md: `It rains [here](<fact:${portable(texts[0]!).toUpperCase()}>).`,
            status: 'pending',
            parent_idx: -1,
          },
        ],
      },
      images: [{ ref: 'img-0', contentType: 'image/png', data: IMAGE_BYTES }],
    }
  }

  test('citations of bundle rows point at the local rows, new or reused; links of a reused fact are merged', async () => {
    const repo = await createRepo('Citing')
    const sql = await sqlOf(repo)
    // The repository already holds "Snow melts." (spelled with other whitespace: the same fact).
    const existing = crypto.randomUUID()
    await sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${existing}, ${'Snow   melts.\n'}, 'text', ${factContentHash(texts[2]!)}, 'new')`
    const path = join(dir, 'citing.json.gz')
    await writeBundle(citingBundle(), createWriteStream(path))
    const job = await succeeded(repo.slug, await upload(repo.slug, readFileSync(path)))
    expect(job.result).toMatchObject({
      reused: { sources: 0, facts: 1, concepts: 0 },
      citations: { rewritten: 5, unresolved: 1 },
      embeddings: 're-embedding',
    })
    expect(job.result.imported).toMatchObject({
      facts: 2,
      fact_sources: 2,
      fact_concepts: 1,
      summaries: 1,
      syntheses: 1,
      reports: 1,
    })

    const id = async (text: string) =>
      (await sql<{ id: string }[]>`SELECT id FROM facts WHERE content_hash = ${factContentHash(text)}`)[0]!.id
    const [rain, hail] = [await id(texts[0]!), await id(texts[1]!)]
    expect(await id(texts[2]!)).toBe(existing)
    const [concept] = await sql<{ id: string }[]>`SELECT id FROM concepts`
    const [summary] = await sql<
      { id: string; content: string; covered_fact_ids: string[] }[]
    >`SELECT id, content, covered_fact_ids FROM concept_summaries`
    expect(summary!.content).toBe(
      `Rain [falls](<fact:${rain}>), [snow](<fact:${existing}>) melts; see [Rain](<concept:${concept!.id}>) and [this](<fact:${elsewhere}>).`,
    )
    expect(summary!.covered_fact_ids).toEqual([rain, existing])
    const [synthesis] =
      await sql`SELECT content, covered_summary_ids, covered_concept_ids, embedded_image_fact_ids FROM concept_syntheses`
    expect(synthesis).toEqual({
      content: `![hail](<fact:${hail}>)`,
      covered_summary_ids: [summary!.id],
      covered_concept_ids: [concept!.id],
      embedded_image_fact_ids: [hail],
    })
    expect((await sql`SELECT body_md FROM reports`)[0]!.body_md).toBe(`It rains [here](<fact:${rain}>).`)
    // The reused fact gained the bundle's links; it keeps its own text.
    expect((await sql`SELECT count(*)::int AS n FROM fact_sources WHERE fact_id = ${existing}`)[0]!.n).toBe(1)
    expect((await sql`SELECT text FROM facts WHERE id = ${existing}`)[0]!.text).toBe('Snow   melts.\n')
    // The image fact points at its stored image.
    const [image] = await sql<{ id: string; storage_key: string }[]>`SELECT id, storage_key FROM source_images`
    expect((await sql`SELECT image_url FROM facts WHERE id = ${hail}`)[0]!.image_url).toBe(
      localImageUrl(server.context.baseUrl, repo.id, image!.id),
    )
    expect(await server.context.blobs.get(image!.storage_key)).toEqual(IMAGE_BYTES)
    await settle(repo.slug)
  })

  test('a version 1 bundle (media after the rows that use them) imports as its version 2 twin', async () => {
    const [v1, v2] = [await createRepo('Version 1'), await createRepo('Version 2')]
    const first = await succeeded(v1.slug, await upload(v1.slug, gzipBundle(v1Json())))
    const second = await succeeded(v2.slug, await upload(v2.slug, gzipBundle(validBundleJson())))
    expect(first.result).toEqual(second.result)
    expect(first.result).toMatchObject({ media: { stored: 2, to_fetch: 0, lost: 0 }, embeddings: 're-embedding' })
    await Promise.all([settle(v1.slug), settle(v2.slug)])
    const [one, two] = [
      await dumpGraph(await sqlOf(v1), v1.id, server.context),
      await dumpGraph(await sqlOf(v2), v2.id, server.context),
    ]
    expect(one).toEqual(two)
    for (const repo of [v1, v2]) {
      const sql = await sqlOf(repo)
      const [fact] = await sql<
        { image_url: string; source_image_id: string }[]
      >`SELECT image_url, source_image_id FROM facts WHERE fact_kind = 'image'`
      expect(fact!.image_url).toBe(localImageUrl(server.context.baseUrl, repo.id, fact!.source_image_id))
      const [body] = await sql<{ storage_key: string }[]>`SELECT storage_key FROM source_bodies`
      expect(new TextDecoder().decode((await server.context.blobs.get(body!.storage_key))!)).toBe(BODY_TEXT)
    }
  })

  test('a body left out of the bundle is to fetch when its source stores bodies, lost when the source says it stores none', async () => {
    const withoutBody = (storesBody: boolean) =>
      gzipBundle(
        validBundleJson(
          mutated((b) => {
            delete b.bodies
            ;(b.sources as Obj[])[0]!.has_stored_body = storesBody
          }),
        ),
      )
    const [flagged, unflagged] = [await createRepo('Body to fetch'), await createRepo('Body lost')]
    const fetching = await succeeded(flagged.slug, await upload(flagged.slug, withoutBody(true)))
    expect(fetching.result.media).toEqual({ stored: 1, to_fetch: 1, lost: 0 })
    const losing = await succeeded(unflagged.slug, await upload(unflagged.slug, withoutBody(false)))
    expect(losing.result.media).toEqual({ stored: 1, to_fetch: 0, lost: 1 })
    // Only the first queued a fetch.
    const kinds = async (slug: string) => (await settle(slug)).map((job) => job.kind).sort()
    expect(await kinds(flagged.slug)).toContain('fetch_media')
    expect(await kinds(unflagged.slug)).not.toContain('fetch_media')
  })
})

describe(`vectors of another model (${BACKEND})`, () => {
  test('are dropped; embed_facts and embed_concepts compute every vector with this instance model', async () => {
    const other = await generateBundle(join(dir, 'other-model.json.gz'), OTHER_MODEL)
    const repo = await createRepo('Other model')
    const job = await succeeded(repo.slug, await upload(repo.slug, readFileSync(other.path)))
    expect(job.result.embeddings).toBe('re-embedding')
    const jobs = await settle(repo.slug)
    for (const kind of ['embed_facts', 'embed_concepts'])
      expect(jobs.find((j) => j.kind === kind)).toMatchObject({ status: 'succeeded' })
    const sql = await sqlOf(repo)
    const vectors = await vectorsOf(server.context.vectors, repo, 'facts')
    expect(vectors.size).toBe(FACTS)
    for (const fact of await sql<{ id: string; text: string }[]>`SELECT id, text FROM facts`)
      expect(vectors.get(fact.id)).toEqual([...hashEmbedding(fact.text)])
    expect(await server.context.vectors.count(repo.id, 'concepts')).toBe(other.counts.concepts)
  })
})

describe(`broken bundles (${BACKEND})`, () => {
  let repo: Repo

  beforeAll(async () => {
    repo = await createRepo('Holds a graph')
    const { blobs, vectors, embedder } = server.context
    await generateGraph(await sqlOf(repo), repo.id, {
      facts: 60,
      seed: 5,
      blobs,
      vectors: { store: vectors, embedder },
    })
  })

  /** Rows, blobs and vectors of the repository, and the uploads waiting. */
  async function state() {
    const { vectors } = server.context
    return {
      rows: await tableCounts(await sqlOf(repo)),
      blobs: await storedKeys(repositoryBlobPrefix(repo.id)),
      uploads: await storedKeys('uploads/'),
      vectors: [await vectors.count(repo.id, 'facts'), await vectors.count(repo.id, 'concepts')],
    }
  }

  const CORPUS = [
    'truncated gzip',
    'truncated JSON',
    'schema_version 3',
    'facts: wrong type',
    'report_annotations: wrong type',
    'dangling fact_concepts.concept_idx',
    'dangling reference to a later section (v1 order, checked when it ends)',
    'bad base64',
    'vector of the wrong length',
    'trailing garbage after the object',
  ]
  const broken = brokenBundles().filter((c) => CORPUS.includes(c.name))
  /** Values the reader accepts and the database cannot hold; the media before them were stored already. */
  const refused = [
    {
      name: 'a NUL character in a text',
      bytes: gzipBundle(validBundleJson(mutated((b) => (rowsOf(b, 'facts')[2]!.text = 'Snow\u0000')))),
      error: /^facts\[2\]: text contains a NUL character \(not storable\)$/,
    },
    {
      name: 'a date that is none',
      bytes: gzipBundle(validBundleJson(mutated((b) => (rowsOf(b, 'sources')[1]!.published_at = '2025-02-30')))),
      error: /^sources\[1\]: published_at must be a date YYYY-MM-DD, not "2025-02-30"$/,
    },
    {
      name: 'an integer past the column',
      bytes: gzipBundle(validBundleJson(mutated((b) => (rowsOf(b, 'concept_summaries')[0]!.sequence_num = 2 ** 31)))),
      error: /^concept_summaries\[0\]: sequence_num 2147483648 is too large \(at most 2147483647\)$/,
    },
  ]

  test.each([...broken, ...refused].map((c) => [c.name, c] as const))(
    '%s: a failed job with its message; nothing changed',
    async (_, c) => {
      const before = await state()
      const started = await upload(repo.slug, c.bytes)
      await failed(repo.slug, started, c.error)
      expect(await state()).toEqual(before)
    },
  )

  test('a bundle that is not gzip is refused at the door (400), nothing stored', async () => {
    const before = await state()
    expectError(
      await upload(repo.slug, new TextEncoder().encode(validBundleJson())),
      400,
      'the bundle is not gzip: upload a .json.gz bundle',
    )
    expect(await state()).toEqual(before)
  })
})

describe(`exactly once (${BACKEND})`, () => {
  const enqueued: EnqueueRequest[] = []

  function services(overrides: Partial<JobServices> = {}): JobServices {
    const { pools, vectors, embedder, blobs, registry, config, baseUrl, log } = server.context
    const enqueue = async (request: EnqueueRequest) => {
      enqueued.push(request)
      return {} as Job
    }
    return {
      pools,
      vectors,
      embedder,
      blobs,
      registry,
      config: { ...config, baseUrl },
      log,
      enqueue,
      ...jobWrites(server.context, enqueue),
      ...overrides,
    }
  }

  async function importJob(repo: Repo, bytes: Uint8Array): Promise<ImportJob & { params: { upload: string } }> {
    const key = uploadKey()
    await server.context.blobs.put(key, bytes)
    return {
      id: crypto.randomUUID(),
      repositoryId: repo.id,
      params: { upload: key },
      attempt: 1,
      signal: new AbortController().signal,
      progress: () => {},
      repository: () => server.context.pools.forRepository(repo.id),
    }
  }

  const graphImport = async (repo: Repo, jobId: string) =>
    (
      await (await sqlOf(
        repo,
      ))`SELECT result, vectors_pending, followups_pending FROM graph_imports WHERE job_id = ${jobId}`
    )[0]

  test('a worker dying after the commit: the retry finishes the rest and returns the stored result, adding nothing', async () => {
    const repo = await createRepo('Crash after commit')
    const job = await importJob(repo, sameModelBytes)
    const { vectors } = server.context
    // The worker "dies" where it would promote the staged vectors, after the commit.
    const dying = Object.assign(Object.create(vectors) as VectorStore, {
      promoteStaged: async () => {
        throw new Error('worker died')
      },
    })
    enqueued.length = 0
    expect(await rejected(importGraph(job, services({ vectors: dying })))).toThrow('worker died')
    const committed = await graphImport(repo, job.id)
    expect(committed).toMatchObject({ vectors_pending: true, followups_pending: true })
    const rows = await tableCounts(await sqlOf(repo))
    expect(rows).toEqual(expectedCounts(sameModel))
    expect([await vectors.count(repo.id, 'facts'), await vectors.countStaged(job.id, 'facts')]).toEqual([0, FACTS])
    expect(enqueued).toEqual([])
    expect(await storedKeys(job.params.upload)).toHaveLength(1) // kept for the retry

    const retried = await importGraph({ ...job, attempt: 2 }, services())
    expect(retried).toEqual(committed!.result)
    expect(retried.imported.facts).toBe(FACTS)
    expect(await tableCounts(await sqlOf(repo))).toEqual(rows)
    expect([await vectors.count(repo.id, 'facts'), await vectors.countStaged(job.id, 'facts')]).toEqual([FACTS, 0])
    expect(enqueued).toEqual([
      { kind: 'fetch_media', repositoryId: repo.id },
      { kind: 'optimize_vectors', params: { kind: 'facts' }, repositoryId: repo.id },
      { kind: 'optimize_vectors', params: { kind: 'concepts' }, repositoryId: repo.id },
    ])
    expect(await graphImport(repo, job.id)).toMatchObject({ vectors_pending: false, followups_pending: false })
    expect(await storedKeys(job.params.upload)).toEqual([])

    // Once more (a third claim of a finished job): the same result, nothing queued again.
    expect(await importGraph({ ...job, attempt: 3 }, services())).toEqual(retried)
    expect(enqueued).toHaveLength(3)
  })

  test('stopped midway: cancelled, it rolls back and deletes its media and upload; its lease lost, it leaves both to the new owner', async () => {
    const repo = await createRepo('Stopped')
    const { blobs } = server.context
    /**
     * A job whose signal is aborted with `reason` as it reaches the facts. The abort happens in
     * the progress call itself, so the import cannot finish first (the next row sees it).
     */
    const stoppedAtFacts = async (reason: string, overrides: Partial<JobServices> = {}) => {
      const job = await importJob(repo, sameModelBytes)
      const controller = new AbortController()
      const stopping = {
        ...job,
        signal: controller.signal,
        progress: ({ phase }: { phase?: string }) => void (phase === 'facts' && controller.abort(reason)),
      }
      expect(await rejectionOf(importGraph(stopping, services(overrides)))).toBe(reason)
      return job
    }

    const cancelled = await stoppedAtFacts(CANCELLED)
    expect(Object.values(await tableCounts(await sqlOf(repo))).every((n) => n === 0)).toBe(true)
    expect(await storedKeys(repositoryBlobPrefix(repo.id))).toEqual([])
    expect(await storedKeys(cancelled.params.upload)).toEqual([])

    // Another worker takes the job over as this attempt starts: right after this attempt has
    // cleared the job's prefix, the new owner stores media under it.
    let theirs = ''
    const newOwnerStores = Object.assign(Object.create(blobs), {
      deletePrefix: async (prefix: string) => {
        await blobs.deletePrefix(prefix)
        if (theirs !== '' || !prefix.startsWith(`${repositoryBlobPrefix(repo.id)}imports/`)) return
        theirs = `${prefix}images/${crypto.randomUUID()}`
        await blobs.put(theirs, 'the new owner stored this')
      },
    })
    const lost = await stoppedAtFacts(LEASE_LOST, { blobs: newOwnerStores })
    expect(theirs).not.toBe('')
    expect(Object.values(await tableCounts(await sqlOf(repo))).every((n) => n === 0)).toBe(true)
    expect(await storedKeys(theirs)).toEqual([theirs])
    expect(await storedKeys(lost.params.upload)).toEqual([lost.params.upload])
  })

  test('batches reach the database in the bundle order, whatever their citation lookups take', async () => {
    // The first batch of reports and of summaries cites a fact (a lookup before its statement);
    // the next batch cites nothing, so it could be sent first: its reports need the first
    // batch's report as their parent, and its summary repeats the key of the first batch's.
    const bundle = validBundle() as { metadata: Record<string, unknown> } & Record<string, Record<string, unknown>[]>
    const rain = `[rain](<fact:${portableFactId(factContentHash('Rain falls.'))}>)`
    const children = 1500
    bundle.reports = [
      { idx: 0, title: 'root', body_md: `About ${rain}.`, status: 'pending', parent_idx: -1 },
      ...Array.from({ length: children }, (_, i) => ({
        idx: i + 1,
        title: `child ${i}`,
        body_md: 'No citation.',
        status: 'pending',
        parent_idx: 0,
      })),
    ]
    bundle.report_annotations = []
    bundle.metadata.report_count = children + 1
    bundle.concept_summaries = [
      {
        concept_idx: 0,
        sequence_num: 0,
        is_complete: true,
        fact_count: 1,
        content: `First: ${rain}.`,
        covered_fact_idxs: [0],
      },
      ...Array.from({ length: 1000 }, (_, i) => ({
        concept_idx: 1,
        sequence_num: i,
        is_complete: false,
        fact_count: 0,
        content: `Other ${i}.`,
      })),
      { concept_idx: 0, sequence_num: 0, is_complete: false, fact_count: 0, content: 'Later, the same key.' },
    ]
    bundle.metadata.summary_count = 1002
    bundle.concept_syntheses = []
    bundle.metadata.synthesis_count = 0
    const repo = await createRepo('Batch order')
    const result = await importGraph(await importJob(repo, gzipBundle(validBundleJson(bundle as never))), services())
    expect(result.imported).toMatchObject({ reports: children + 1, summaries: 1001 })
    const sql = await sqlOf(repo)
    const [root] = await sql<{ id: string }[]>`SELECT id FROM reports WHERE title = 'root'`
    expect((await sql`SELECT count(*)::int AS n FROM reports WHERE parent_id = ${root!.id}`)[0]!.n).toBe(children)
    const [fact] = await sql<{ id: string }[]>`SELECT id FROM facts WHERE text = 'Rain falls.'`
    const [concept] = await sql<{ id: string }[]>`SELECT id FROM concepts WHERE canonical_name = 'Rain'`
    const [first] =
      await sql`SELECT content FROM concept_summaries WHERE concept_id = ${concept!.id} AND sequence_num = 0`
    expect(first).toEqual({ content: `First: [rain](<fact:${fact!.id}>).` })
  })

  test('into an empty repository the facts load without their unique indexes; a bundle that repeats one loads again, deduplicating, as into any repository', async () => {
    const infos: string[] = []
    const log = Object.assign(Object.create(server.context.log), {
      info: (message: string) => void infos.push(message),
    })
    const REPEATED = 'import: the bundle repeats rows; importing it again, deduplicating as it goes'

    // No repeat: the bulk load's indexes build, nothing is loaded twice.
    const plain = await createRepo('Bulk, no repeats')
    const once = await importGraph(await importJob(plain, gzipBundle(validBundleJson())), services({ log }))
    expect(once.imported).toMatchObject({ facts: 3, fact_sources: 2, fact_concepts: 2 })
    expect(infos).not.toContain(REPEATED)

    // A fact given twice (the same text but for its spaces: one content hash), with a link of each
    // to the same source and concept, and one link given twice.
    const repeating = validBundle() as { metadata: Record<string, unknown> } & Record<string, Record<string, unknown>[]>
    repeating.metadata.fact_count = 4
    repeating.facts!.push({ idx: 3, text: 'Rain   falls.', fact_kind: 'text', status: 'new', source_image_idx: -1 })
    repeating.fact_sources!.push(
      { fact_idx: 3, source_idx: 0, chunk_index: 0 },
      { fact_idx: 0, source_idx: 0, chunk_index: 0 },
    )
    repeating.fact_concepts!.push({ fact_idx: 3, concept_idx: 0 })
    const bytes = gzipBundle(validBundleJson(repeating as never))
    const empty = await createRepo('Bulk, repeats')
    const job = await importJob(empty, bytes)
    const result = await importGraph(job, services({ log }))
    expect(infos.filter((message) => message === REPEATED)).toHaveLength(1)
    // Into a repository that is not empty (no bulk load from the start): the same result, the same rows.
    const other = await createRepo('Not empty')
    const sql = await sqlOf(other)
    await sql`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, 'already here')`
    const reference = await importGraph(await importJob(other, bytes), services({ log }))
    expect(infos.filter((message) => message === REPEATED)).toHaveLength(1)
    expect(result).toEqual(reference)
    expect(result.imported).toMatchObject({ facts: 3, fact_sources: 2, fact_concepts: 2 })
    expect(result.reused.facts).toBe(1)
    const rows = await tableCounts(await sqlOf(empty))
    expect(rows).toEqual({ ...(await tableCounts(sql)), investigations: 1 })
    expect(rows).toMatchObject({ facts: 3, fact_sources: 2, fact_concepts: 2 })
    // The first, bulk attempt left nothing behind: one media copy of each stored image and body.
    expect(await storedKeys(`${repositoryBlobPrefix(empty.id)}imports/`)).toHaveLength(2)
  })

  test('a failure midway rolls everything back (rows, media, staged vectors); the retry imports it whole', async () => {
    const repo = await createRepo('Fails midway')
    const job = await importJob(repo, sameModelBytes)
    const { blobs, vectors } = server.context
    // The blob store fails on the source body, after images were stored and before the facts.
    const failing = Object.assign(Object.create(blobs), {
      put: async (key: string, ...rest: unknown[]) => {
        if (key.includes('/bodies/')) throw new Error('disk full')
        return (blobs.put as (...args: unknown[]) => Promise<{ bytes: number }>).call(blobs, key, ...rest)
      },
    })
    expect(await rejected(importGraph(job, services({ blobs: failing })))).toThrow('disk full')
    expect(Object.values(await tableCounts(await sqlOf(repo))).every((n) => n === 0)).toBe(true)
    expect(await storedKeys(repositoryBlobPrefix(repo.id))).toEqual([])
    expect(await graphImport(repo, job.id)).toBeUndefined()

    const result = await importGraph({ ...job, attempt: 2 }, services())
    expect(result.imported.facts).toBe(FACTS)
    expect(await tableCounts(await sqlOf(repo))).toEqual(expectedCounts(sameModel))
    expect(await vectors.count(repo.id, 'facts')).toBe(FACTS)
  })

  test('a registry that resets downloads left idle (as servers and proxies do) cannot break an import that pauses to write', async () => {
    const repo = await createRepo('Idle download')
    const { registry } = server.context
    const { graph_id } = await registry.push(sameModel.path, {
      name: 'idle-test',
      sha256: sameModel.sha256,
      schema_version: 2,
      fact_count: FACTS,
    })
    const IDLE_LIMIT_MS = 200
    let resets = 0
    /** The download in 16 KB pieces, reset when the reader waits more than IDLE_LIMIT_MS between two. */
    const resetWhenIdle = (source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> => {
      const reader = source.getReader()
      let pending: Uint8Array = new Uint8Array(0)
      let lastPull: number | undefined
      return new ReadableStream({
        async pull(controller) {
          const now = performance.now()
          if (lastPull !== undefined && now - lastPull > IDLE_LIMIT_MS) {
            resets++
            return controller.error(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
          }
          lastPull = now
          if (pending.length === 0) {
            const { done, value } = await reader.read()
            if (done) return controller.close()
            pending = value
          }
          controller.enqueue(pending.subarray(0, 16_384))
          pending = pending.subarray(16_384)
        },
      })
    }
    const cutting = Object.assign(Object.create(registry), {
      download: async (id: string, signal?: AbortSignal) => resetWhenIdle(await registry.download(id, signal)),
    })
    // Writing the facts takes longer than the registry waits (a slow disk, a lock): here the
    // worker is simply busy for 300 ms when the facts begin.
    const busyAtFacts = ({ phase }: { phase?: string }) => {
      if (phase !== 'facts') return
      const until = performance.now() + 300
      while (performance.now() < until);
    }
    const job: ImportJob = {
      id: crypto.randomUUID(),
      repositoryId: repo.id,
      params: { graph_id },
      attempt: 1,
      signal: new AbortController().signal,
      progress: busyAtFacts,
      repository: () => sqlOf(repo),
    }
    const result = await importGraph(job, services({ registry: cutting }))
    expect(resets).toBe(0)
    expect(result.imported.facts).toBe(FACTS)
    expect(await tableCounts(await sqlOf(repo))).toEqual(expectedCounts(sameModel))
    expect(readdirSync(join(server.dataDir, 'tmp'))).toEqual([]) // the local copy is gone
  })
})

describe(`POST /{repoID}/import-graph refusals (${BACKEND})`, () => {
  let repo: Repo
  let viewer: Account
  let curator: Account

  beforeAll(async () => {
    repo = await createRepo('Refusals')
    ;[viewer, curator] = await Promise.all([registerAccount(http), registerAccount(http)])
    for (const [account, role] of [
      [viewer, 'viewer'],
      [curator, 'curator'],
    ] as const) {
      expect(
        (await http.put('/api/v1/admin/users/roles', { user_id: account.id, role, domain: repo.id }, admin.token))
          .status,
      ).toBe(200)
    }
  })

  /** Runs a refused request and checks that no blob was left behind (nor any job queued). */
  async function refused(
    request: () => Promise<{ status: number; body: unknown }>,
    status: number,
    message: string | RegExp,
  ) {
    const before = await storedKeys()
    expectError(await request(), status, message)
    expect(await storedKeys()).toEqual(before)
    expect((await http.get<Job[]>(`/${repo.slug}/jobs`, owner.token)).body).toEqual([])
  }

  test('401 without a token, 403 for a viewer and a curator (no graph:import), 404 for an unknown repository', async () => {
    await refused(
      () => http.call('POST', `/${repo.slug}/import-graph`, { body: { graph_id: crypto.randomUUID() } }),
      401,
      /./,
    )
    for (const account of [viewer, curator])
      await refused(() => upload(repo.slug, sameModelBytes, account.token), 403, /graph:import/)
    await refused(() => upload('no-such-repository', sameModelBytes), 404, 'repository not found')
    await refused(
      () => http.post(`/${crypto.randomUUID()}/import-graph`, { graph_id: crypto.randomUUID() }, owner.token),
      404,
      'repository not found',
    )
  })

  test('400 for a JSON body that is malformed, names both forms or neither, has other fields or wrong types', async () => {
    const post = (body: unknown) => () => http.post(`/${repo.slug}/import-graph`, body, owner.token)
    await refused(
      () =>
        http.call('POST', `/${repo.slug}/import-graph`, {
          token: owner.token,
          raw: '{"graph_id": ',
          headers: { 'content-type': 'application/json' },
        }),
      400,
      /^malformed JSON body/,
    )
    await refused(
      () =>
        http.call('POST', `/${repo.slug}/import-graph`, {
          token: owner.token,
          raw: '',
          headers: { 'content-type': 'application/json' },
        }),
      400,
      /empty/,
    )
    await refused(
      post({ graph_id: crypto.randomUUID(), name: 'x', sha256: 'a'.repeat(64) }),
      400,
      'invalid body: give graph_id, or name and sha256, not both',
    )
    await refused(post({}), 400, /^invalid body: expected \{"graph_id"/)
    await refused(post(['graph']), 400, /^invalid body: expected an object/)
    await refused(post({ graph_id: crypto.randomUUID(), force: true }), 400, /^invalid body: unknown field "force"/)
    await refused(post({ graph_id: 42 }), 400, 'invalid body: graph_id: expected a UUID')
    await refused(post({ graph_id: 'not-a-uuid' }), 400, 'invalid body: graph_id: expected a UUID')
    await refused(post({ name: 'x' }), 400, 'invalid body: sha256: expected 64 lowercase hexadecimal digits')
    await refused(post({ name: 7, sha256: 'a'.repeat(64) }), 400, /^invalid body: name: expected a graph name/)
    await refused(
      post({ name: 'x', sha256: 'A'.repeat(64) }),
      400,
      'invalid body: sha256: expected 64 lowercase hexadecimal digits',
    )
    await refused(
      post({ name: 'x', sha256: 'abc' }),
      400,
      'invalid body: sha256: expected 64 lowercase hexadecimal digits',
    )
  })

  test('415 for another content type; 400 for an empty or non-gzip upload, or a form without the file "bundle"', async () => {
    await refused(
      () => upload(repo.slug, sameModelBytes, owner.token, 'text/plain'),
      415,
      /^unsupported Content-Type "text\/plain"/,
    )
    await refused(
      () => upload(repo.slug, sameModelBytes, owner.token, 'application/octet-stream'),
      415,
      /^unsupported Content-Type/,
    )
    await refused(
      () => http.call('POST', `/${repo.slug}/import-graph`, { token: owner.token }),
      400,
      /^request body is empty/,
    )
    await refused(() => upload(repo.slug, new Uint8Array()), 400, /^request body is empty/)
    await refused(
      () => upload(repo.slug, new TextEncoder().encode('{"schema_version":2}')),
      400,
      'the bundle is not gzip: upload a .json.gz bundle',
    )
    await refused(() => upload(repo.slug, Uint8Array.of(0x1f)), 400, 'the bundle is not gzip: upload a .json.gz bundle')
    await refused(
      () => uploadForm(repo.slug, bundleForm(new TextEncoder().encode('plain text'))),
      400,
      'the bundle is not gzip: upload a .json.gz bundle',
    )
    await refused(
      () => uploadForm(repo.slug, bundleForm(sameModelBytes, 'file')),
      400,
      'the multipart body has no file field "bundle"',
    )
    const textField = new FormData()
    textField.append('bundle', 'not a file')
    await refused(() => uploadForm(repo.slug, textField), 400, /^the form field "bundle" must be a file/)
    await refused(
      () => upload(repo.slug, new TextEncoder().encode('--x\r\nbroken'), owner.token, 'multipart/form-data'),
      400,
      /^malformed multipart body/,
    )
  })
})

describe(`limits, and a registry out of reach (${BACKEND})`, () => {
  const MAX_BYTES = 4096
  let small: TestServer
  let smallHttp: Http
  let user: Account
  let repo: Repo

  beforeAll(async () => {
    // A registry nobody serves: port 9 (discard) on the loopback.
    small = await startTestServer({
      env: {
        WORKERS: '1',
        IMPORT_MAX_BYTES: String(MAX_BYTES),
        IMPORT_MAX_EXPANDED_BYTES: '1000',
        REGISTRY_URL: 'http://127.0.0.1:9',
        REGISTRY_TOKEN: 'unused',
      },
    })
    smallHttp = api(small.url)
    user = await registerAccount(smallHttp)
    repo = (await smallHttp.post('/api/v1/repositories', { name: 'Small' }, user.token)).body
  })
  afterAll(() => small.stop())

  const keys = async () => {
    const all: string[] = []
    for await (const key of small.context.blobs.list('')) all.push(key)
    return all
  }

  test('413 past IMPORT_MAX_BYTES, raw (declared or streamed) or multipart; nothing stored', async () => {
    const big = gzipBundle(crypto.getRandomValues(new Uint8Array(3 * MAX_BYTES)))
    const before = await keys()
    const message = `the bundle exceeds the import limit of ${MAX_BYTES} bytes`
    const raw = (body: Uint8Array) =>
      smallHttp.call('POST', `/${repo.slug}/import-graph`, {
        token: user.token,
        raw: body,
        headers: { 'content-type': 'application/gzip' },
      })
    expectError(await raw(big), 413, message)
    // Without a Content-Length: the limit is found while streaming.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(big)
        controller.close()
      },
    })
    const streamed = await fetch(`${small.url}/${repo.slug}/import-graph`, {
      method: 'POST',
      body: stream,
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/gzip' },
      duplex: 'half',
    } as RequestInit)
    expectError({ status: streamed.status, body: await streamed.json() }, 413, message)
    const form = await fetch(`${small.url}/${repo.slug}/import-graph`, {
      method: 'POST',
      body: bundleForm(big),
      headers: { authorization: `Bearer ${user.token}` },
    })
    expectError({ status: form.status, body: await form.json() }, 413, message)
    expect(await keys()).toEqual(before)
  })

  test('502 when the registry cannot be asked about a graph; nothing queued', async () => {
    const res = await smallHttp.post(`/${repo.slug}/import-graph`, { graph_id: crypto.randomUUID() }, user.token)
    expectError(res, 502, /^the registry could not be asked: registry http:\/\/127\.0\.0\.1:9 unreachable/)
    expect((await smallHttp.get<Job[]>(`/${repo.slug}/jobs`, user.token)).body).toEqual([])
  })

  test('a bundle expanding past IMPORT_MAX_EXPANDED_BYTES fails its job; the upload is deleted', async () => {
    const started = await smallHttp.call('POST', `/${repo.slug}/import-graph`, {
      token: user.token,
      raw: gzipBundle(validBundleJson()),
      headers: { 'content-type': 'application/gzip' },
    })
    expect(started.status).toBe(202)
    const job = await waitForJob(smallHttp, `/${repo.slug}/jobs/${started.body.id}`, user.token)
    expect(job).toMatchObject({ status: 'failed', error: 'gzip: bundle expands past 1000 bytes (limit)', attempts: 1 })
    expect(await keys()).toEqual([])
  })
})
