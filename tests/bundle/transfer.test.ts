// A whole repository moved between two kgs instances (each with its own data directory and
// database) through the first one's registry: gen-graph fills it on the origin, export_graph
// pushes it, import_graph on the copy pulls it. The two repositories must then compare equal
// (tests/helpers/graph-dump.ts: every entity, link, citation, media byte and vector), a second
// import must add nothing, and exporting the copy must give the original canonical hash. Also:
// without media (fetched back from their original URLs) and with another embedding model
// (re-embedded on arrival).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { dumpGraph, type GraphDump } from '../helpers/graph-dump.ts'
import { generateGraph } from '../../scripts/gen-graph.ts'
import { localImageUrl } from '../../src/media/urls.ts'
import type { Job } from '../../src/jobs/queue.ts'

const FACTS = 240
const EXPORTED_AT = '2026-01-02T03:04:05.5Z'

interface Instance {
  server: TestServer
  http: ReturnType<typeof api>
  user: Account
}

let origin: Instance
let copy: Instance
let reembedding: Instance
/** Serves the origin's media at their "original" URLs, as the web would. */
let web: ReturnType<typeof Bun.serve>
const webFiles = new Map<string, { bytes: Uint8Array; type: string }>()
/** The fake embedding provider of the third instance (another model than the built-in one). */
let provider: ReturnType<typeof Bun.serve>

async function instance(env: Record<string, string> = {}): Promise<Instance> {
  const server = await startTestServer({ env: { WORKERS: '1', ...env } })
  const http = api(server.url)
  return { server, http, user: await registerAccount(http) }
}

async function createRepository(at: Instance, name: string): Promise<{ id: string; slug: string }> {
  const res = await at.http.post('/api/v1/repositories', { name }, at.user.token)
  expect(res.status).toBe(201)
  return res.body
}

async function runJob(at: Instance, slug: string, path: string, body: unknown): Promise<Job> {
  const started = await at.http.post(`/${slug}/${path}`, body, at.user.token)
  expect(started.status).toBe(202)
  const job = await waitForJob(at.http, `/${slug}/jobs/${started.body.id}`, at.user.token)
  if (job.status !== 'succeeded') throw new Error(`${path} ${job.status}: ${job.error}`)
  return job
}

/** Waits for every job of the repository (follow-ups an import queued) to finish. */
const settle = (at: Instance, slug: string) => settleJobs(at.http, slug, at.user.token)

async function dump(at: Instance, repositoryId: string): Promise<GraphDump> {
  const { pools, blobs, vectors } = at.server.context
  return dumpGraph(await pools.forRepository(repositoryId), repositoryId, { blobs, vectors })
}

/** A repository on the origin filled by gen-graph, with image and body bytes and vectors. */
async function generated(name: string, seed: number) {
  const repository = await createRepository(origin, name)
  const { pools, blobs, vectors, embedder } = origin.server.context
  await generateGraph(await pools.forRepository(repository.id), repository.id, {
    facts: FACTS,
    seed,
    blobs,
    vectors: { store: vectors, embedder },
  })
  return repository
}

/** The image facts' image_url on the copy: the local copy of a stored image, the original URL otherwise. */
async function expectLocalImageUrls(at: Instance, repositoryId: string): Promise<number> {
  const sql = await at.server.context.pools.forRepository(repositoryId)
  const facts =
    await sql`SELECT f.image_url, si.id AS image_id, si.url, si.storage_key FROM facts f JOIN source_images si ON si.id = f.source_image_id`
  expect(facts.length).toBeGreaterThan(0)
  for (const fact of facts)
    expect(fact.image_url).toBe(
      fact.storage_key ? localImageUrl(at.server.context.baseUrl, repositoryId, fact.image_id) : fact.url,
    )
  return facts.filter((fact) => fact.storage_key).length
}

beforeAll(async () => {
  web = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const file = webFiles.get(new URL(request.url).pathname)
      return file
        ? new Response(file.bytes, { headers: { 'content-type': file.type } })
        : new Response('not found', { status: 404 })
    },
  })
  provider = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const { input } = (await request.json()) as { input: string[] }
      return Response.json({ data: input.map((text, index) => ({ index, embedding: [text.length, index % 7, 1] })) })
    },
  })
  origin = await instance()
  const admin = await registerAccount(origin.http)
  expect((await origin.server.promote(admin.email)).code).toBe(0)
  // The other instances pull from the origin's registry, as its sysadmin (registry:pull).
  const registry = { REGISTRY_URL: origin.server.url, REGISTRY_TOKEN: admin.token, MEDIA_FETCH_ALLOW_PRIVATE: 'true' }
  copy = await instance(registry)
  reembedding = await instance({
    ...registry,
    EMBEDDING_URL: `http://127.0.0.1:${provider.port}/v1`,
    EMBEDDING_MODEL: 'fake-embedding-3',
  })
})

afterAll(async () => {
  await Promise.all([origin?.server.stop(), copy?.server.stop(), reembedding?.server.stop()])
  web?.stop(true)
  provider?.stop(true)
})

describe(`a repository moved between instances (${BACKEND})`, () => {
  let source: { id: string; slug: string }
  let target: { id: string; slug: string }
  let exported: Job

  beforeAll(async () => {
    source = await generated('Moved graph', 11)
    target = await createRepository(copy, 'Moved graph copy')
    exported = await runJob(origin, source.slug, 'export-graph', {
      name: 'moved-graph',
      exported_at: EXPORTED_AT,
      include_bodies: true,
    })
  })

  test('the export is in the registry with its counts, owned by the user who asked for it', async () => {
    const result = exported.result as { graph_id: string; sha256: string; counts: Record<string, number>; new: boolean }
    expect(result).toMatchObject({ name: 'moved-graph', new: true })
    expect(result.counts.facts).toBeGreaterThanOrEqual(FACTS)
    const record = await origin.server.context.registry.get(result.graph_id)
    expect(record).toMatchObject({
      name: 'moved-graph',
      sha256: result.sha256,
      fact_count: result.counts.facts,
      source_count: result.counts.sources,
    })
    // Pushed for the user who asked for the export: theirs, as Go's registry would record it.
    expect(record).toMatchObject({ owner: origin.user.email, owner_id: origin.user.id })
  })

  test('imported on the other instance, it compares equal: entities, links, citations, media, vectors', async () => {
    const imported = await runJob(copy, target.slug, 'import-graph', {
      graph_id: (exported.result as { graph_id: string }).graph_id,
    })
    const result = imported.result as {
      imported: Record<string, number>
      reused: Record<string, number>
      citations: { rewritten: number; unresolved: number }
      embeddings: string
      media: Record<string, number>
    }
    expect(result.embeddings).toBe('upserted')
    expect(result.reused).toEqual({ sources: 0, facts: 0, concepts: 0 })
    expect(result.citations.rewritten).toBeGreaterThan(0)
    expect(result.citations.unresolved).toBe(0)
    expect(result.media.to_fetch).toBe(0)
    await settle(copy, target.slug)
    const [before, after] = await Promise.all([dump(origin, source.id), dump(copy, target.id)])
    expect(after).toEqual(before)
    // Nothing compared empty: every part of the graph is there.
    for (const [part, rows] of Object.entries(after))
      if (part !== 'vectors') expect({ part, rows: (rows as unknown[]).length }).not.toEqual({ part, rows: 0 })
    expect(Object.keys(after.vectors.facts)).toHaveLength(after.facts.length)
    expect(await expectLocalImageUrls(copy, target.id)).toBeGreaterThan(0)
    // The copy's citations name its own facts (the dump resolves them by the copy's UUIDs).
    expect(JSON.stringify(after.summaries)).not.toContain('dangling')
  })

  test('importing the same bundle again adds nothing', async () => {
    const before = await dump(copy, target.id)
    const again = await runJob(copy, target.slug, 'import-graph', {
      graph_id: (exported.result as { graph_id: string }).graph_id,
    })
    const result = again.result as { imported: Record<string, number>; reused: Record<string, number> }
    expect(Object.values(result.imported).every((n) => n === 0)).toBe(true)
    expect(result.reused.facts).toBe(before.facts.length)
    expect(await dump(copy, target.id)).toEqual(before)
  })

  test('exporting the copy gives the canonical hash of the original export', async () => {
    const reexported = await runJob(copy, target.slug, 'export-graph', {
      name: 'moved-graph',
      exported_at: EXPORTED_AT,
      include_bodies: true,
    })
    const original = exported.result as { sha256: string; graph_id: string }
    // Same (name, sha256) in the same registry: recognised, not stored twice.
    expect(reexported.result).toMatchObject({ sha256: original.sha256, graph_id: original.graph_id, new: false })
  })
})

describe(`moved without media or with another embedding model (${BACKEND})`, () => {
  let source: { id: string; slug: string }
  let graphId: string

  beforeAll(async () => {
    source = await generated('Bare graph', 12)
    // Give every medium an original URL on the loopback "web", serving the origin's bytes.
    const sql = await origin.server.context.pools.forRepository(source.id)
    const base = `http://127.0.0.1:${web.port}`
    for (const image of await sql`SELECT id, storage_key, content_type FROM source_images WHERE storage_key IS NOT NULL`) {
      webFiles.set(`/images/${image.id}`, {
        bytes: (await origin.server.context.blobs.get(image.storage_key))!,
        type: image.content_type || 'image/png',
      })
      await sql`UPDATE source_images SET url = ${`${base}/images/${image.id}`} WHERE id = ${image.id}`
    }
    for (const body of await sql`SELECT source_id, storage_key, content_type FROM source_bodies`) {
      webFiles.set(`/bodies/${body.source_id}`, {
        bytes: (await origin.server.context.blobs.get(body.storage_key))!,
        type: body.content_type,
      })
      await sql`UPDATE sources SET url = ${`${base}/bodies/${body.source_id}`} WHERE id = ${body.source_id}`
    }
    const exported = await runJob(origin, source.slug, 'export-graph', {
      name: 'bare-graph',
      include_images: false,
      include_bodies: false,
    })
    graphId = (exported.result as { graph_id: string }).graph_id
  })

  test('media not in the bundle are fetched from their original URLs by the follow-up job', async () => {
    const target = await createRepository(copy, 'Bare graph copy')
    const imported = await runJob(copy, target.slug, 'import-graph', { graph_id: graphId })
    const media = (imported.result as { media: { stored: number; to_fetch: number; lost: number } }).media
    expect(media).toMatchObject({ stored: 0, lost: 0 })
    expect(media.to_fetch).toBe(webFiles.size)
    const jobs = await settle(copy, target.slug)
    expect(jobs.find((job) => job.kind === 'fetch_media')).toMatchObject({ status: 'succeeded' })
    expect(await dump(copy, target.id)).toEqual(await dump(origin, source.id))
    expect(await expectLocalImageUrls(copy, target.id)).toBeGreaterThan(0)
  })

  test('another embedding model: the vectors are dropped and re-embedded on arrival', async () => {
    const target = await createRepository(reembedding, 'Re-embedded copy')
    const imported = await runJob(reembedding, target.slug, 'import-graph', { graph_id: graphId })
    expect((imported.result as { embeddings: string }).embeddings).toBe('re-embedding')
    const jobs = await settle(reembedding, target.slug)
    for (const kind of ['embed_facts', 'embed_concepts'])
      expect(jobs.find((job) => job.kind === kind)).toMatchObject({ status: 'succeeded' })
    const moved = await dump(reembedding, target.id)
    const original = await dump(origin, source.id)
    expect(Object.keys(moved.vectors.facts).sort()).toEqual(Object.keys(original.vectors.facts).sort())
    expect(Object.keys(moved.vectors.concepts).sort()).toEqual(Object.keys(original.vectors.concepts).sort())
    // The provider's vectors, not the bundle's: [text length, index % 7, 1].
    expect(Object.values(moved.vectors.facts).every((vector) => vector.length === 3 && vector[2] === 1)).toBe(true)
  })
})

describe(`an export the registry refuses (${BACKEND})`, () => {
  test('fails for good, and keeps no bundle of its own: the copy stored beside the push is removed', async () => {
    // Pushing as a member of the origin, who may not push: 403, a final refusal.
    const refused = await instance({ REGISTRY_URL: origin.server.url, REGISTRY_TOKEN: origin.user.token })
    try {
      const repository = await createRepository(refused, 'Refused export')
      await refused.http.post(`/${repository.slug}/facts`, { text: 'Rain falls on the plain.' }, refused.user.token)
      const started = await refused.http.post(`/${repository.slug}/export-graph`, {}, refused.user.token)
      expect(started.status).toBe(202)
      const job = await waitForJob(refused.http, `/${repository.slug}/jobs/${started.body.id}`, refused.user.token)
      expect(job).toMatchObject({ status: 'failed', attempts: 1, error: expect.stringContaining('403') })
      const stored: string[] = []
      for await (const key of refused.server.context.blobs.list(`repositories/${repository.id}/`)) stored.push(key)
      expect(stored).toEqual([])
    } finally {
      await refused.server.stop()
    }
  })
})
