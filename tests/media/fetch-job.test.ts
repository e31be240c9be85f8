// The fetch_media job end to end on the selected backend: a repository whose images and bodies
// point at a loopback media server, the job run by a worker thread, and the outcome read back
// over HTTP (stored bytes, image facts pointing at their local copy, the counts in the result).
// With MEDIA_FETCH_ALLOW_PRIVATE the loopback server is reachable; without it (the default)
// every one of those media is refused, and the media server is never contacted.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { type api, expectError, type Account } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { localImageUrl } from '../../src/media/urls.ts'
import { repositoryBlobPrefix } from '../../src/blobs/store.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { startCutShortServer } from '../helpers/cut-short.ts'
import { fetchMediaJob } from '../../src/media/fetch-job.ts'
import type { JobServices, RunningJob } from '../../src/jobs/kinds.ts'
import type { BlobStore } from '../../src/blobs/store.ts'
import { createLogger } from '../../src/log.ts'
import { rejected } from '../helpers/promises.ts'

const MAX_BYTES = 1000
const bytes = (seed: number, length: number) => Uint8Array.from({ length }, (_, i) => (seed * 31 + i) % 256)
const PNG = bytes(1, 300)
const WEBP = bytes(2, 500)
const PDF = bytes(3, MAX_BYTES)

/** The media server: what it answers, and every path it was asked for. */
let media: ReturnType<typeof Bun.serve>
let mediaUrl: string
const hits: string[] = []
/** Breaks off every download: the body fails while the blob store is reading it. */
let cutShort: ReturnType<typeof startCutShortServer>

beforeAll(() => {
  media = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname
      hits.push(path)
      const many = /^\/many\/(\d+)$/.exec(path)
      if (many) return new Response(bytes(Number(many[1]), 50), { headers: { 'content-type': 'image/gif' } })
      switch (path) {
        case '/kettle.png':
          return new Response(PNG, { headers: { 'content-type': 'image/png' } })
        case '/steam':
          return new Response(WEBP, { headers: { 'content-type': 'image/webp' } })
        case '/huge.png':
          return new Response(new Uint8Array(MAX_BYTES + 1), { headers: { 'content-type': 'image/png' } })
        case '/paper.pdf':
          return new Response(PDF, { headers: { 'content-type': 'application/pdf' } })
        default:
          return new Response('not here', { status: 404 })
      }
    },
  })
  mediaUrl = `http://127.0.0.1:${media.port}`
  cutShort = startCutShortServer()
})
afterAll(() => {
  media.stop(true)
  cutShort.stop(true)
})

interface Seeded {
  sources: { paper: string; gone: string; uploaded: string; bodiless: string; alreadyStored: string }
  images: { kettle: string; steam: string; missing: string; huge: string; cut: string; urlless: string; stored: string }
  facts: { kettle: string; missing: string }
}

/** A source with images and image facts, and sources whose bodies are or are not to be fetched. */
async function seed(sql: Sql): Promise<Seeded> {
  const id = () => crypto.randomUUID()
  const sources = { paper: id(), gone: id(), uploaded: id(), bodiless: id(), alreadyStored: id() }
  const images = { kettle: id(), steam: id(), missing: id(), huge: id(), cut: id(), urlless: id(), stored: id() }
  const facts = { kettle: id(), missing: id() }
  await sql.begin(async (tx) => {
    await tx`INSERT INTO sources ${tx([
      { id: sources.paper, url: `${mediaUrl}/paper.pdf`, kind: 'pdf', status: 'processed', has_stored_body: true },
      { id: sources.gone, url: `${mediaUrl}/gone.pdf`, kind: 'pdf', status: 'processed', has_stored_body: true },
      // Only an upload: nothing to fetch it from.
      {
        id: sources.uploaded,
        url: 'upload://local/notes.pdf',
        kind: 'pdf',
        status: 'processed',
        has_stored_body: true,
      },
      { id: sources.bodiless, url: `${mediaUrl}/page`, kind: 'html', status: 'processed', has_stored_body: false },
      {
        id: sources.alreadyStored,
        url: `${mediaUrl}/stored.pdf`,
        kind: 'pdf',
        status: 'processed',
        has_stored_body: true,
      },
    ])}`
    await tx`INSERT INTO source_bodies ${tx({ source_id: sources.alreadyStored, content_type: 'application/pdf', storage_key: 'elsewhere/stored.pdf', bytes: 9 })}`
    const image = (
      imageId: string,
      position: number,
      url: string,
      more: { content_type?: string; storage_key?: string } = {},
    ) => ({
      id: imageId,
      source_id: sources.paper,
      kind: 'inline',
      position,
      url,
      content_type: more.content_type ?? '',
      storage_key: more.storage_key ?? null,
    })
    await tx`INSERT INTO source_images ${tx([
      image(images.kettle, 0, `${mediaUrl}/kettle.png`),
      // The row's own media type wins over the server's.
      image(images.steam, 1, `${mediaUrl}/steam`, { content_type: 'image/x-steam' }),
      image(images.missing, 2, `${mediaUrl}/missing.png`),
      image(images.huge, 3, `${mediaUrl}/huge.png`),
      image(images.cut, 4, `http://127.0.0.1:${cutShort.port}/cut.png`),
      image(images.urlless, 5, ''),
      image(images.stored, 6, `${mediaUrl}/stored.png`, {
        content_type: 'image/png',
        storage_key: 'elsewhere/stored.png',
      }),
    ])}`
    await tx`INSERT INTO facts ${tx([
      {
        id: facts.kettle,
        text: 'A kettle.',
        fact_kind: 'image',
        image_url: `${mediaUrl}/kettle.png`,
        content_hash: '1'.repeat(64),
        status: 'stable',
        source_image_id: images.kettle,
      },
      {
        id: facts.missing,
        text: 'A lost picture.',
        fact_kind: 'image',
        image_url: `${mediaUrl}/missing.png`,
        content_hash: '2'.repeat(64),
        status: 'stable',
        source_image_id: images.missing,
      },
    ])}`
  })
  return { sources, images, facts }
}

interface Setup {
  server: TestServer
  http: ReturnType<typeof api>
  owner: Account
  repo: { id: string; slug: string }
  seeded: Seeded
}

async function setUp(env: Record<string, string>): Promise<Setup> {
  const {
    server,
    http,
    users: { owner },
    repositories: { repo },
  } = await fixture({
    server: { env: { WORKERS: '1', MEDIA_FETCH_MAX_BYTES: String(MAX_BYTES), MEDIA_FETCH_TIMEOUT: '10s', ...env } },
    users: { owner: 'member' },
    repositories: { repo: { by: 'owner', name: 'Media' } },
  })
  const seeded = await seed(await server.context.pools.forRepository(repo.id))
  return { server, http, owner, repo, seeded }
}

async function runJob({ server, http, owner, repo }: Setup): Promise<Job> {
  const queued = await server.context.jobs.enqueue({ kind: 'fetch_media', repositoryId: repo.id, params: {} })
  return waitForJob(http, `/${repo.slug}/jobs/${queued.id}`, owner.token)
}

async function getBytes(url: string, token: string) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, type: res.headers.get('content-type'), bytes: new Uint8Array(await res.arrayBuffer()) }
}

describe(`fetch_media with MEDIA_FETCH_ALLOW_PRIVATE (${BACKEND})`, () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp({ MEDIA_FETCH_ALLOW_PRIVATE: 'true' })
  })
  afterAll(() => setup.server.stop())

  test('stores what it can get, counts what it cannot, and points image facts at the local copies', async () => {
    const { http, owner, repo, seeded, server } = setup
    hits.length = 0
    const job = await runJob(setup)
    expect(job).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      error: null,
      result: { images: { stored: 2, failed: 3, refused: 0 }, bodies: { stored: 1, failed: 1, refused: 0 } },
    })
    // The last phase's progress: every missing body done.
    expect(job.progress).toMatchObject({ done: 2, total: 2 })
    expect(hits.toSorted()).toEqual(['/gone.pdf', '/huge.png', '/kettle.png', '/missing.png', '/paper.pdf', '/steam'])

    const image = (imageId: string) => getBytes(localImageUrl(server.url, repo.id, imageId), owner.token)
    expect(await image(seeded.images.kettle)).toEqual({ status: 200, type: 'image/png', bytes: PNG })
    expect(await image(seeded.images.steam)).toEqual({ status: 200, type: 'image/x-steam', bytes: WEBP })
    for (const unstored of [seeded.images.missing, seeded.images.huge, seeded.images.cut, seeded.images.urlless]) {
      expectError(await http.get(`/${repo.slug}/images/${unstored}`, owner.token), 404, 'image not stored')
    }
    const body = await getBytes(`${server.url}/${repo.slug}/sources/${seeded.sources.paper}/body`, owner.token)
    expect(body).toEqual({ status: 200, type: 'application/pdf', bytes: PDF })
    expectError(
      await http.get(`/${repo.slug}/sources/${seeded.sources.gone}/body`, owner.token),
      404,
      'body not stored',
    )

    const source = await http.get(`/${repo.slug}/sources/${seeded.sources.paper}`, owner.token)
    expect(source.body.body).toEqual({ content_type: 'application/pdf', bytes: PDF.byteLength })
    const images = Object.fromEntries(
      (source.body.images as { id: string; bytes: number | null; content_type: string }[]).map((i) => [
        i.id,
        { bytes: i.bytes, content_type: i.content_type },
      ]),
    )
    expect(images[seeded.images.kettle]).toEqual({ bytes: PNG.byteLength, content_type: 'image/png' })
    expect(images[seeded.images.steam]).toEqual({ bytes: WEBP.byteLength, content_type: 'image/x-steam' })
    expect(images[seeded.images.huge]).toEqual({ bytes: null, content_type: '' })

    const prefix = repositoryBlobPrefix(repo.id)
    expect(await Array.fromAsync(server.context.blobs.list(prefix))).toEqual(
      [
        `media/bodies/${seeded.sources.paper}`,
        `media/images/${seeded.images.kettle}`,
        `media/images/${seeded.images.steam}`,
      ]
        .map((key) => prefix + key)
        .toSorted(),
    )

    // The image fact whose image is stored points at it; the other keeps its original URL.
    expect((await http.get(`/${repo.slug}/facts/${seeded.facts.kettle}`, owner.token)).body.image_url).toBe(
      localImageUrl(server.context.baseUrl, repo.id, seeded.images.kettle),
    )
    expect((await http.get(`/${repo.slug}/facts/${seeded.facts.missing}`, owner.token)).body.image_url).toBe(
      `${mediaUrl}/missing.png`,
    )
  })

  test('a second run fetches only what is still missing, and stores nothing new', async () => {
    hits.length = 0
    const job = await runJob(setup)
    expect(job).toMatchObject({
      status: 'succeeded',
      result: { images: { stored: 0, failed: 3, refused: 0 }, bodies: { stored: 0, failed: 1, refused: 0 } },
    })
    expect(hits.toSorted()).toEqual(['/gone.pdf', '/huge.png', '/missing.png'])
  })

  test('many media: batch after batch, every one stored once', async () => {
    const { server, http, owner } = setup
    const repo = (await http.post('/api/v1/repositories', { name: 'Many' }, owner.token)).body as Setup['repo']
    const sql = await server.context.pools.forRepository(repo.id)
    const source = crypto.randomUUID()
    // More than one batch (100).
    const count = 120
    await sql`INSERT INTO sources (id, url, kind, status) VALUES (${source}, ${`${mediaUrl}/many`}, 'html', 'processed')`
    const images = Array.from({ length: count }, (_, n) => ({
      id: crypto.randomUUID(),
      source_id: source,
      kind: 'inline',
      position: n,
      url: `${mediaUrl}/many/${n}`,
    }))
    await sql`INSERT INTO source_images ${sql(images)}`
    hits.length = 0
    const job = await runJob({ ...setup, repo })
    expect(job).toMatchObject({
      status: 'succeeded',
      result: { images: { stored: count, failed: 0, refused: 0 }, bodies: { stored: 0, failed: 0, refused: 0 } },
    })
    expect(hits.toSorted()).toEqual(images.map((image) => new URL(image.url).pathname).toSorted())
    for (const n of [0, 99, 100, 119]) {
      expect(await getBytes(localImageUrl(server.url, repo.id, images[n]!.id), owner.token)).toEqual({
        status: 200,
        type: 'image/gif',
        bytes: bytes(n, 50),
      })
    }
  })

  test('the blob store failing fails the job (to be retried), unlike a medium failing', async () => {
    const { server, http, owner } = setup
    const repo = (await http.post('/api/v1/repositories', { name: 'Full disk' }, owner.token)).body as Setup['repo']
    const sql = await server.context.pools.forRepository(repo.id)
    const source = crypto.randomUUID()
    await sql`INSERT INTO sources (id, url, kind, status) VALUES (${source}, ${`${mediaUrl}/article`}, 'html', 'processed')`
    await sql`INSERT INTO source_images (id, source_id, kind, position, url) VALUES (${crypto.randomUUID()}, ${source}, 'inline', 0, ${`${mediaUrl}/kettle.png`})`
    const fullDisk: BlobStore = Object.assign(Object.create(server.context.blobs), {
      put: async () => {
        throw new Error('no space left on device')
      },
    })
    const job: RunningJob = {
      id: crypto.randomUUID(),
      repositoryId: repo.id,
      params: {},
      attempt: 1,
      signal: new AbortController().signal,
      progress: () => {},
      repository: async () => sql,
    }
    const services = {
      blobs: fullDisk,
      config: { ...server.context.config, baseUrl: server.context.baseUrl },
      log: createLogger('silent'),
    } as unknown as JobServices
    expect(await rejected(fetchMediaJob.run(job, services))).toThrow('no space left on device')
  })

  test('parameters: none', async () => {
    const { server, repo } = setup
    expect(
      await rejected(
        server.context.jobs.enqueue({ kind: 'fetch_media', repositoryId: repo.id, params: { images: true } }),
      ),
    ).toThrow(/invalid job parameters/)
  })
})

describe(`fetch_media by default (${BACKEND})`, () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await setUp({})
  })
  afterAll(() => setup.server.stop())

  test('every loopback medium is refused, and the media server never contacted', async () => {
    const { http, owner, repo, seeded } = setup
    hits.length = 0
    const job = await runJob(setup)
    expect(job).toMatchObject({
      status: 'succeeded',
      result: { images: { stored: 0, failed: 0, refused: 5 }, bodies: { stored: 0, failed: 0, refused: 2 } },
    })
    expect(hits).toEqual([])
    expectError(await http.get(`/${repo.slug}/images/${seeded.images.kettle}`, owner.token), 404, 'image not stored')
    expect((await http.get(`/${repo.slug}/facts/${seeded.facts.kettle}`, owner.token)).body.image_url).toBe(
      `${mediaUrl}/kettle.png`,
    )
  })
})
