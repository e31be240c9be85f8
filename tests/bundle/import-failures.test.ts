// Imports that must not leave anything behind: every broken bundle of the codec corpus
// (tests/helpers/broken-bundles.ts) uploaded through the API into a repository that already
// holds a graph (with media and vectors) gives a failed job with the reader's message, and the
// repository is exactly as before: row counts of every table, its blobs, its vectors. And an
// import whose worker process is killed midway leaves nothing, and is retried to completion.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { brokenBundles } from '../helpers/broken-bundles.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { startServerProcess, startTestServer, type TestServer } from '../helpers/server.ts'
import { tableCounts } from '../helpers/graph-dump.ts'
import { blobKeys } from '../helpers/blobs.ts'
import { generateGraph } from '../../scripts/gen-graph.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { Pools } from '../../src/db/pools.ts'
import { openBlobStore, repositoryBlobPrefix } from '../../src/blobs/store.ts'
import { loadConfig } from '../../src/config.ts'

const upload = (http: ReturnType<typeof api>, slug: string, token: string, bytes: Uint8Array) =>
  http.call('POST', `/${slug}/import-graph`, { token, raw: bytes, headers: { 'content-type': 'application/gzip' } })

describe(`broken bundles leave the repository as it was (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }

  beforeAll(async () => {
    server = await startTestServer({ env: { WORKERS: '2' } })
    http = api(server.url)
    owner = await registerAccount(http)
    repo = (await http.post('/api/v1/repositories', { name: 'Holds a graph' }, owner.token)).body
    const { pools, blobs, vectors, embedder } = server.context
    await generateGraph(await pools.forRepository(repo.id), repo.id, { facts: 60, seed: 5, blobs, vectors: { store: vectors, embedder } })
  })
  afterAll(() => server.stop())

  test('each gives a failed job with its message; rows, blobs and vectors are unchanged', async () => {
    const { pools, blobs, vectors } = server.context
    const sql = await pools.forRepository(repo.id)
    const before = { rows: await tableCounts(sql), blobs: await blobKeys(blobs), facts: await vectors.count(repo.id, 'facts'), concepts: await vectors.count(repo.id, 'concepts') }
    // Cases made for lowered reader limits are left out: an import reads with the defaults
    // (only the expanded size is configurable, IMPORT_MAX_EXPANDED_BYTES, tested with the import).
    const cases = brokenBundles().filter((c) => !c.limits)
    expect(cases.length).toBeGreaterThan(70)
    const outcomes = await Promise.all(
      cases.map(async (broken) => {
        const res = await upload(http, repo.slug, owner.token, broken.bytes)
        // Not gzip at all (or nothing): refused at the door, nothing queued.
        if (res.status === 400) return { broken, refused: res.body.error as string }
        expect(res.status).toBe(202)
        return { broken, job: await waitForJob(http, `/${repo.slug}/jobs/${res.body.id}`, owner.token) }
      }),
    )
    for (const { broken, refused, job } of outcomes) {
      if (refused !== undefined) {
        expect({ name: broken.name, refused }).toEqual({ name: broken.name, refused: expect.stringMatching(/gzip|empty/) })
        expect(['not gzip', 'empty input']).toContain(broken.name)
        continue
      }
      expect({ name: broken.name, status: job!.status }).toEqual({ name: broken.name, status: 'failed' })
      expect({ name: broken.name, error: job!.error }).toEqual({ name: broken.name, error: expect.stringMatching(broken.error) })
    }
    expect(await tableCounts(sql)).toEqual(before.rows)
    expect(await blobKeys(blobs)).toEqual(before.blobs)
    expect(await vectors.count(repo.id, 'facts')).toBe(before.facts)
    expect(await vectors.count(repo.id, 'concepts')).toBe(before.concepts)
  }, 120_000)
})

describe(`an import whose process is killed (${BACKEND})`, () => {
  let dir: string
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let env: Record<string, string>

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kgs-import-kill-'))
    instance = await instanceEnvironment()
    env = { ...instance.env, JWT_SECRET: randomBytes(32).toString('hex'), WORKERS: '1', JOB_LEASE: '2s' }
  })
  afterAll(async () => {
    await instance.cleanup()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Row counts and the repository's blobs, read with the server stopped (embedded: one owner at a time). */
  async function repositoryState(repositoryId: string) {
    const config = loadConfig(env)
    const pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
    try {
      const sql = await pools.forRepository(repositoryId)
      const blobs = openBlobStore(config)
      const keys = await blobKeys(blobs, repositoryBlobPrefix(repositoryId))
      const referenced = (await sql`SELECT storage_key FROM source_images WHERE storage_key IS NOT NULL UNION ALL SELECT storage_key FROM source_bodies`).map((r) => r.storage_key as string)
      return { rows: await tableCounts(sql), keys, referenced: referenced.sort() }
    } finally {
      await pools.close()
    }
  }

  test('leaves nothing behind, and the retry imports the whole bundle once', async () => {
    const bundlePath = join(dir, 'big.json.gz')
    const bundle = await generateBundle(bundlePath, { facts: 8_000, dimensions: 0 })
    let kgs = await startServerProcess(env)
    const http = api(kgs.url)
    const owner = await registerAccount(http)
    const repo = (await http.post('/api/v1/repositories', { name: 'Killed import' }, owner.token)).body
    const started = await upload(http, repo.slug, owner.token, new Uint8Array(await Bun.file(bundlePath).arrayBuffer()))
    expect(started.status).toBe(202)
    const path = `/${repo.slug}/jobs/${started.body.id}`
    // Kill it once it is well into the facts: rows and media written, nothing committed.
    await waitForJob(http, path, owner.token, (job: Job) => job.status === 'running' && job.progress.phase === 'facts' && job.progress.done > 0)
    expect(await kgs.stop('SIGKILL')).not.toBe(0)

    const killed = await repositoryState(repo.id)
    expect(Object.values(killed.rows).every((n) => n === 0)).toBe(true)

    kgs = await startServerProcess(env)
    try {
      // A new port, so a new issuer (BASE_URL is derived from it): sign in again.
      const again = api(kgs.url)
      const { token } = (await again.post('/api/v1/auth/login', { email: owner.email, password: 'correct horse battery' })).body
      // The dead worker's lease runs out (JOB_LEASE), the job is queued again and retried.
      const job = await waitForJob(again, path, token)
      expect(job).toMatchObject({ status: 'succeeded', attempts: 2 })
      expect((job.result as { imported: { facts: number } }).imported.facts).toBe(bundle.counts.facts)
    } finally {
      await kgs.stop()
    }
    const done = await repositoryState(repo.id)
    expect(done.rows.facts).toBe(bundle.counts.facts)
    expect(done.rows.sources).toBe(bundle.counts.sources)
    // Every blob of the repository is one its rows reference: the killed attempt's are gone.
    expect(done.keys).toEqual(done.referenced)
    expect(done.keys.length).toBeGreaterThan(0)
  }, 120_000)
})
