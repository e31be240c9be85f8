// What interrupted or cancelled bundle work leaves behind is swept: scratch files of jobs no
// longer running (DATA_DIR/tmp), uploads no job will read (a job cancelled while queued, a
// process that died before queueing), abandoned registry pushes and unindexed bundles. The
// sweep runs at start-up and hourly; the tests call its parts, with a clock a day ahead where
// the grace period matters, and check the start-up sweep once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { blobKeys } from '../helpers/blobs.ts'
import { gzipBundle, validBundleJson } from '../helpers/broken-bundles.ts'
import { startServerProcess, startTestServer, type TestServer } from '../helpers/server.ts'
import { LEFTOVER_GRACE_MS, timestampedId } from '../../src/blobs/leftovers.ts'
import { sweepUploads } from '../../src/bundle/import/import-job.ts'
import { scratchDir, scratchFile, sweepScratch } from '../../src/bundle/scratch.ts'
import { graphKey, incomingKey, sweepRegistryLeftovers } from '../../src/registry/leftovers.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let system: ReturnType<TestServer['systemSql']>
const DAY_LATER = () => Date.now() + LEFTOVER_GRACE_MS + 60_000

beforeAll(async () => {
  // No workers: queued jobs stay queued, as behind a long queue.
  server = await startTestServer()
  http = api(server.url)
  owner = await registerAccount(http)
  system = server.systemSql()
})

afterAll(async () => {
  await system.end()
  await server.stop()
})

/** A job row in the given state, straight into the queue's table. */
async function jobIn(status: 'queued' | 'running' | 'succeeded'): Promise<string> {
  const id = crypto.randomUUID()
  const running = status === 'running'
  await system`
    INSERT INTO jobs (id, kind, status, max_attempts, lease_owner, lease_expires_at)
    VALUES (${id}, 'import_graph', ${status}, 3, ${running ? 'elsewhere' : null}, ${running ? new Date(Date.now() + 60_000) : null})`
  return id
}

describe(`leftover sweeps (${BACKEND})`, () => {
  test('scratch files: those of jobs not running go, once older than the check; a running job keeps its own', async () => {
    const { dataDir } = server
    const running = await jobIn('running')
    const finished = await jobIn('succeeded')
    const requeued = await jobIn('queued')
    const files = {
      running: await scratchFile(dataDir, 'export', { id: running, attempt: 1 }),
      finished: await scratchFile(dataDir, 'import', { id: finished, attempt: 2 }),
      requeued: await scratchFile(dataDir, 'export', { id: requeued, attempt: 1 }),
      unknown: await scratchFile(dataDir, 'import', { id: crypto.randomUUID(), attempt: 1 }),
      foreign: join(scratchDir(dataDir), 'notes.txt'),
    }
    // The export's spool files beside its file (export-prefetch.ts) go and stay with it.
    const spools = { running: `${files.running}.concept_summaries`, finished: `${files.finished}.concept_syntheses` }
    for (const path of [...Object.values(files), ...Object.values(spools)]) {
      writeFileSync(path, 'x')
      utimesSync(path, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
    }
    // Made during the sweep's check, for all it knows: left for the next sweep.
    const fresh = await scratchFile(dataDir, 'export', { id: finished, attempt: 3 })
    writeFileSync(fresh, 'x')
    utimesSync(fresh, new Date(Date.now() + 60_000), new Date(Date.now() + 60_000))

    expect(await sweepScratch(system, dataDir)).toBe(4)
    const names = (path: string) => path.slice(path.lastIndexOf('/') + 1)
    expect(readdirSync(scratchDir(dataDir)).sort()).toEqual(
      [files.running, spools.running, files.foreign, fresh].map(names).sort(),
    )
  })

  test("a job's next attempt removes the files of its earlier ones, spools included, and no other job's", async () => {
    const { dataDir } = server
    const id = crypto.randomUUID()
    const other = await scratchFile(dataDir, 'export', { id: crypto.randomUUID(), attempt: 1 })
    const first = await scratchFile(dataDir, 'export', { id, attempt: 1 })
    const importFile = await scratchFile(dataDir, 'import', { id, attempt: 1 })
    for (const path of [
      other,
      `${other}.concept_summaries`,
      first,
      `${first}.concept_summaries`,
      `${first}.concept_syntheses`,
      importFile,
    ])
      writeFileSync(path, 'x')
    const second = await scratchFile(dataDir, 'export', { id, attempt: 2 })
    expect(second).not.toBe(first)
    const names = readdirSync(scratchDir(dataDir))
    for (const gone of [first, `${first}.concept_summaries`, `${first}.concept_syntheses`])
      expect(names).not.toContain(gone.slice(gone.lastIndexOf('/') + 1))
    for (const kept of [other, `${other}.concept_summaries`, importFile])
      expect(names).toContain(kept.slice(kept.lastIndexOf('/') + 1))
  })

  test('an upload whose job was cancelled while queued is deleted; one waiting for its queued job is kept', async () => {
    const res = await http.post(
      '/api/v1/repositories',
      { name: `Leftovers ${crypto.randomUUID().slice(0, 6)}` },
      owner.token,
    )
    expect(res.status).toBe(201)
    const slug = res.body.slug
    const uploads = () => blobKeys(server.context.blobs, 'uploads/')
    /** Starts an import with an upload; its job and the upload's key. */
    const start = async () => {
      const before = await uploads()
      const started = await http.call('POST', `/${slug}/import-graph`, {
        token: owner.token,
        raw: gzipBundle(validBundleJson()),
        headers: { 'content-type': 'application/gzip' },
      })
      expect(started.status).toBe(202)
      const added = (await uploads()).filter((key) => !before.includes(key))
      expect(added).toHaveLength(1)
      return { id: started.body.id as string, upload: added[0]! }
    }
    const cancelled = await start()
    const waiting = await start()
    expect((await http.post(`/${slug}/jobs/${cancelled.id}/cancel`, undefined, owner.token)).status).toBe(200)
    expect(await uploads()).toEqual([cancelled.upload, waiting.upload].sort())

    expect(await sweepUploads(system, server.context.blobs, DAY_LATER())).toBe(1)
    expect(await uploads()).toEqual([waiting.upload])
    // The waiting job's upload stays however old it is; cancelled, it goes.
    expect((await http.post(`/${slug}/jobs/${waiting.id}/cancel`, undefined, owner.token)).status).toBe(200)
    expect(await sweepUploads(system, server.context.blobs)).toBe(1)
    expect(await uploads()).toEqual([])
  })

  test('an upload no job refers to is kept through the grace period (its job may be about to be queued), then deleted', async () => {
    const { blobs } = server.context
    const key = `uploads/${timestampedId()}.json.gz`
    await blobs.put(key, gzipBundle(validBundleJson()))
    expect(await sweepUploads(system, blobs)).toBe(0)
    expect(await blobKeys(blobs, 'uploads/')).toEqual([key])
    expect(await sweepUploads(system, blobs, DAY_LATER())).toBe(1)
    expect(await blobKeys(blobs, 'uploads/')).toEqual([])
  })

  test('registry: an abandoned push and a bundle without its index row go after the grace period; indexed bundles stay', async () => {
    const { blobs, registry } = server.context
    const pushed = await registry.push(gzipBundle(validBundleJson()), { name: 'kept', schema_version: 2 })
    const incoming = incomingKey()
    const unindexed = graphKey(timestampedId())
    await blobs.put(incoming, 'half a push')
    await blobs.put(unindexed, gzipBundle(validBundleJson()))
    const before = await blobKeys(blobs, 'registry/')
    expect(before).toEqual([incoming, unindexed, graphKey(pushed.graph_id)].sort())

    expect(await sweepRegistryLeftovers(system, blobs)).toBe(0)
    expect(await sweepRegistryLeftovers(system, blobs, DAY_LATER())).toBe(2)
    expect(await blobKeys(blobs, 'registry/')).toEqual([graphKey(pushed.graph_id)])
    expect(
      (
        await fetch(`${server.url}/api/v1/graphs/${pushed.graph_id}/bundle`, {
          headers: { authorization: `Bearer ${owner.token}` },
        })
      ).status,
    ).toBe(200)
  })

  test("a server sweeps at start-up: a dead process's scratch file is gone once it has started", async () => {
    const instance = await instanceEnvironment()
    try {
      const dir = scratchDir(instance.dataDir)
      mkdirSync(dir, { recursive: true })
      const left = join(dir, `export-${crypto.randomUUID()}-1.json.gz`)
      writeFileSync(left, 'x')
      utimesSync(left, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
      const child = await startServerProcess({
        JWT_SECRET: randomBytes(32).toString('hex'),
        WORKERS: '0',
        ...instance.env,
      })
      try {
        await child.waitFor(/"msg":"leftovers removed","scratch_files":1,"uploads":0,"registry_blobs":0/)
        expect(readdirSync(dir)).toEqual([])
      } finally {
        await child.stop()
      }
    } finally {
      await instance.cleanup()
    }
  })
})
