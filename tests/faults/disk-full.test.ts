// A full disk under an export: DATA_DIR/tmp, where the export writes its file before pushing it,
// is a tmpfs smaller than the bundle. The job fails saying so, its file is removed, nothing
// reaches the registry, and the service goes on (once there is room, the export succeeds).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, rmdirSync } from 'node:fs'
import { BACKEND, tempDir } from '../helpers/backend.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { blobKeys } from '../helpers/blobs.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { generateGraph } from '../../scripts/gen-graph.ts'
import { scratchDir } from '../../src/bundle/scratch.ts'

/** The room left on the "disk": far less than the bundle of the graph below. */
const TMPFS_BYTES = 32 * 1024

/** Mounts a tmpfs of TMPFS_BYTES at `dir` (root only); the error output when that is refused. */
function mountTmpfs(dir: string): string | undefined {
  try {
    const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${TMPFS_BYTES},mode=0700`, 'tmpfs', dir], {
      stderr: 'pipe',
    })
    return mounted.success ? undefined : mounted.stderr.toString().trim() || `mount exited with ${mounted.exitCode}`
  } catch (error) {
    return (error as Error).message // no mount command
  }
}

function unmount(dir: string): void {
  const unmounted = Bun.spawnSync(['umount', dir], { stderr: 'pipe' })
  if (!unmounted.success) throw new Error(`umount ${dir}: ${unmounted.stderr.toString().trim()}`)
}

/** Why a tmpfs cannot be mounted here (not root, no CAP_SYS_ADMIN), or undefined when it can. */
function mountRefusal(): string | undefined {
  const probe = tempDir('kgs-tmpfs-probe-')
  const refused = mountTmpfs(probe)
  if (!refused) unmount(probe)
  rmdirSync(probe)
  return refused
}

const refusal = mountRefusal()
if (refusal)
  console.warn(`disk-full.test.ts skipped: cannot mount a tmpfs to fill (${refusal}); it needs root or CAP_SYS_ADMIN`)

describe.skipIf(refusal !== undefined)(`disk full while an export writes its file (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }
  let tmp: string
  let mounted = false

  beforeAll(async () => {
    // Retries a few milliseconds apart: the test waits for the last attempt.
    server = await startTestServer({ env: { WORKERS: '1' }, jobs: { timing: { backoffBaseMs: 20 } } })
    http = api(server.url)
    owner = await registerAccount(http)
    repo = (await http.post('/api/v1/repositories', { name: 'Full disk' }, owner.token)).body
    const { pools, blobs, vectors, embedder } = server.context
    await generateGraph(await pools.forRepository(repo.id), repo.id, {
      facts: 300,
      seed: 3,
      blobs,
      vectors: { store: vectors, embedder },
    })
    tmp = scratchDir(server.dataDir)
    mkdirSync(tmp, { recursive: true, mode: 0o700 })
    const refused = mountTmpfs(tmp)
    if (refused) throw new Error(`mount tmpfs at ${tmp}: ${refused}`)
    mounted = true
  })
  afterAll(async () => {
    try {
      if (mounted) unmount(tmp)
    } finally {
      await server?.stop()
    }
  })

  const exportGraph = async () => {
    const started = await http.post(`/${repo.slug}/export-graph`, {}, owner.token)
    expect(started.status).toBe(202)
    return waitForJob(http, `/${repo.slug}/jobs/${started.body.id}`, owner.token)
  }

  test('the job fails saying the disk is full, leaves no file, pushes nothing; the service goes on', async () => {
    const blobsBefore = await blobKeys(server.context.blobs)
    const job = await exportGraph()
    // Retried (a full disk may free up), then failed with the reason.
    expect(job).toMatchObject({
      status: 'failed',
      attempts: 3,
      error: 'no space left on device writing the export file (gave up after 3 attempts)',
    })
    expect(readdirSync(tmp)).toEqual([])
    expect(await blobKeys(server.context.blobs)).toEqual(blobsBefore)
    expect((await server.context.pools.system`SELECT count(*)::int AS n FROM graphs`)[0]!.n).toBe(0)
    expect(
      (
        await server.request(`/${repo.slug}/export-graph/download`, {
          headers: { authorization: `Bearer ${owner.token}` },
        })
      ).status,
    ).toBe(404)

    // Still serving; and with room on the disk again the same export goes through.
    expect((await server.request('/healthz')).status).toBe(200)
    unmount(tmp)
    mounted = false
    const again = await exportGraph()
    expect(again).toMatchObject({ status: 'succeeded', attempts: 1 })
    expect((again.result as { bytes: number }).bytes).toBeGreaterThan(TMPFS_BYTES)
    expect(readdirSync(tmp)).toEqual([])
  }, 120_000)
})
