// Imports that must not leave anything behind: every broken bundle of the codec corpus
// (tests/helpers/broken-bundles.ts) uploaded through the API into a repository that already
// holds a graph (with media and vectors) gives a failed job with the reader's message, and the
// repository is exactly as before: row counts of every table, its blobs, its vectors. And an
// import whose worker process is killed midway leaves nothing, and is retried to completion.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { BACKEND } from '../../helpers/backend.ts'
import { api, registerAccount, type Account } from '../../helpers/api.ts'
import { brokenBundles } from '../../helpers/broken-bundles.ts'
import { waitForJob } from '../../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../../helpers/server.ts'
import { tableCounts } from '../../helpers/graph-dump.ts'
import { blobKeys } from '../../helpers/blobs.ts'
import {
  expectImportRetried,
  repositoryState,
  serveInstances,
  startImport,
  uploadBundle as upload,
  writingRows,
} from '../../helpers/imports.ts'
import { generateGraph } from '../../../scripts/gen-graph.ts'

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
    await generateGraph(await pools.forRepository(repo.id), repo.id, {
      facts: 60,
      seed: 5,
      blobs,
      vectors: { store: vectors, embedder },
    })
  })
  afterAll(() => server.stop())

  test('each gives a failed job with its message; rows, blobs and vectors are unchanged', async () => {
    const { pools, blobs, vectors } = server.context
    const sql = await pools.forRepository(repo.id)
    const before = {
      rows: await tableCounts(sql),
      blobs: await blobKeys(blobs),
      facts: await vectors.count(repo.id, 'facts'),
      concepts: await vectors.count(repo.id, 'concepts'),
    }
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
        expect({ name: broken.name, refused }).toEqual({
          name: broken.name,
          refused: expect.stringMatching(/gzip|empty/),
        })
        expect(['not gzip', 'empty input']).toContain(broken.name)
        continue
      }
      expect({ name: broken.name, status: job!.status }).toEqual({ name: broken.name, status: 'failed' })
      expect({ name: broken.name, error: job!.error }).toEqual({
        name: broken.name,
        error: expect.stringMatching(broken.error),
      })
    }
    expect(await tableCounts(sql)).toEqual(before.rows)
    expect(await blobKeys(blobs)).toEqual(before.blobs)
    expect(await vectors.count(repo.id, 'facts')).toBe(before.facts)
    expect(await vectors.count(repo.id, 'concepts')).toBe(before.concepts)
  }, 120_000)
})

describe(`an import whose process is killed (${BACKEND})`, () => {
  const instances = serveInstances('kgs-import-kill-')

  test('leaves nothing behind, and the retry imports the whole bundle once', async () => {
    const { dir, env } = instances
    // With vectors, as in tests/faults/sigterm-import.test.ts: without them an import of 8,000
    // facts on PostgreSQL wrote its rows in less time than a progress report takes to reach the
    // database, and the test saw it succeed without ever seeing it write.
    const { bundle, kgs, http, owner, repo, path } = await startImport(
      env,
      join(dir, 'big.json.gz'),
      // Enough rows that writing them outlasts a second of progress on a fast machine too.
      24_000,
      'Killed import',
      { dimensions: 384, vectors: 'kgs-hash-v1' },
    )
    // Kill it once rows (and media) are being written: nothing is committed yet.
    await waitForJob(http, path, owner.token, writingRows)
    expect(await kgs.stop('SIGKILL')).not.toBe(0)

    const killed = await repositoryState(env, repo.id)
    expect(Object.values(killed.rows).every((n) => n === 0)).toBe(true)

    // The dead worker's lease runs out (JOB_LEASE), the job is queued again and retried.
    await expectImportRetried(env, owner, path, repo.id, bundle.counts)
  }, 120_000)
})
