// Imports through the API, and what they leave in a repository: shared by the import failure
// tests (tests/bundle/import/import-failures.test.ts) and the fault tests (tests/faults/).
import { afterAll, beforeAll, expect } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { instanceEnvironment } from './backend.ts'
import { api, registerAccount } from './api.ts'
import { tableCounts } from './graph-dump.ts'
import { blobKeys } from './blobs.ts'
import { waitForJob } from './jobs.ts'
import { startServerProcess } from './server.ts'
import { Pools } from '../../src/db/pools.ts'
import { openBlobStore } from '../../src/blobs/open.ts'
import { repositoryBlobPrefix } from '../../src/blobs/store.ts'
import { loadConfig, type Config } from '../../src/config.ts'
import { generateBundle, type BundleCounts, type BundleOptions } from '../../scripts/gen-bundle.ts'
import { ROW_SECTIONS } from '../../src/bundle/format/schema.ts'
import type { Job } from '../../src/jobs/queue.ts'

/**
 * For the describe block it is called in: a scratch directory and the environment of `kgs serve`
 * children that share one database and data directory (one worker, a 2 s lease, so that a job of
 * a dead instance is taken over quickly), made before its tests and removed after them.
 */
export function serveInstances(prefix: string): { dir: string; env: Record<string, string> } {
  const shared = { dir: '', env: {} as Record<string, string> }
  let instance: Awaited<ReturnType<typeof instanceEnvironment>> | undefined
  beforeAll(async () => {
    shared.dir = mkdtempSync(join(tmpdir(), prefix))
    instance = await instanceEnvironment()
    shared.env = { ...instance.env, JWT_SECRET: randomBytes(32).toString('hex'), WORKERS: '1', JOB_LEASE: '2s' }
  })
  afterAll(async () => {
    await instance?.cleanup()
    rmSync(shared.dir, { recursive: true, force: true })
  })
  return shared
}

/** POST /{repoID}/import-graph with the bundle as a raw gzip body. */
export const uploadBundle = (http: ReturnType<typeof api>, slug: string, token: string, bytes: Uint8Array) =>
  http.call('POST', `/${slug}/import-graph`, { token, raw: bytes, headers: { 'content-type': 'application/gzip' } })

/**
 * The import is inside its transaction with rows written: some section of the bundle is going
 * into the tables (progress reaches the API once a second, so a single section may pass unseen).
 */
export const writingRows = (job: Job) =>
  job.status === 'running' && job.progress.done > 0 && (ROW_SECTIONS as readonly string[]).includes(job.progress.phase)

/**
 * Starts `kgs serve` for `env` and, as a new account, an import of a generated bundle of `facts`
 * facts (written to `bundlePath`; without vectors unless `options` ask) into a new repository;
 * returns once the job is queued.
 */
export async function startImport(
  env: Record<string, string>,
  bundlePath: string,
  facts: number,
  repositoryName: string,
  options: Partial<BundleOptions> = {},
) {
  const bundle = await generateBundle(bundlePath, { facts, dimensions: 0, ...options })
  const kgs = await startServerProcess(env)
  const http = api(kgs.url)
  const owner = await registerAccount(http)
  const repo = (await http.post('/api/v1/repositories', { name: repositoryName }, owner.token)).body as {
    id: string
    slug: string
  }
  const started = await uploadBundle(
    http,
    repo.slug,
    owner.token,
    new Uint8Array(await Bun.file(bundlePath).arrayBuffer()),
  )
  expect(started.status).toBe(202)
  return {
    bundle,
    kgs,
    http,
    owner,
    repo,
    jobId: started.body.id as string,
    path: `/${repo.slug}/jobs/${started.body.id}`,
  }
}

/** Runs `read` on the databases of the instance `env` configures, with its server stopped (embedded: one owner at a time). */
export async function readStoppedInstance<T>(
  env: Record<string, string>,
  read: (pools: Pools, config: Config) => Promise<T>,
): Promise<T> {
  const config = loadConfig(env)
  const pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  try {
    return await read(pools, config)
  } finally {
    await pools.close()
  }
}

/** Row counts, the repository's blobs, and the blobs its rows reference. */
export function repositoryState(env: Record<string, string>, repositoryId: string) {
  return readStoppedInstance(env, async (pools, config) => {
    const sql = await pools.forRepository(repositoryId)
    const keys = await blobKeys(openBlobStore(config), repositoryBlobPrefix(repositoryId))
    const referenced = (
      await sql`SELECT storage_key FROM source_images WHERE storage_key IS NOT NULL UNION ALL SELECT storage_key FROM source_bodies`
    ).map((r) => r.storage_key as string)
    return { rows: await tableCounts(sql), keys, referenced: referenced.sort() }
  })
}

/**
 * Starts `kgs serve` for `env` again and waits for the interrupted import job at `path`: it
 * completes on its second attempt with the whole bundle, and the repository then holds the
 * bundle once (every row section's count), each of its blobs referenced by a row (the
 * interrupted attempt's are gone).
 */
/** A new instance takes the job over and imports the bundle exactly once, on attempt `attempt`. */
export async function expectImportRetried(
  env: Record<string, string>,
  owner: { email: string },
  path: string,
  repositoryId: string,
  counts: BundleCounts,
  attempt = 2,
) {
  const kgs = await startServerProcess(env)
  try {
    // A new port, so a new issuer (BASE_URL is derived from it): sign in again.
    const http = api(kgs.url)
    const { token } = (await http.post('/api/v1/auth/login', { email: owner.email, password: 'correct horse battery' }))
      .body
    const job = await waitForJob(http, path, token)
    expect(job).toMatchObject({ status: 'succeeded', attempts: attempt })
    expect((job.result as { imported: { facts: number } }).imported.facts).toBe(counts.facts)
  } finally {
    await kgs.stop()
  }
  const done = await repositoryState(env, repositoryId)
  expect(done.rows).toEqual(Object.fromEntries(ROW_SECTIONS.map((section) => [section, counts[section]])))
  expect(done.keys).toEqual(done.referenced)
  expect(done.keys.length).toBeGreaterThan(0)
}
