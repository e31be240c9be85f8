// SIGTERM while a `kgs serve` runs an import: the instance stops within its drain timeout, the
// import's transaction rolls back (no row, no blob, no staged vector of it), the job is handed
// back to the queue at once with its attempt given back (not left claimed until its lease runs
// out), and the next instance takes it and imports the bundle exactly once.
import { describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { BACKEND } from '../helpers/backend.ts'
import { waitForJob } from '../helpers/jobs.ts'
import {
  expectImportRetried,
  readStoppedInstance,
  repositoryState,
  serveInstances,
  startImport,
  writingRows,
} from '../helpers/imports.ts'
import { DRAIN_TIMEOUT_MS } from '../../src/server.ts'
import { VectorStore, VECTOR_KINDS } from '../../src/vectors/store.ts'
import { loadConfig } from '../../src/config.ts'
import { SHUTDOWN_RELEASE } from '../../src/jobs/worker.ts'

describe(`SIGTERM during an import (${BACKEND})`, () => {
  const instances = serveInstances('kgs-import-sigterm-')

  /** The job's vectors staged but not promoted, per kind, and every staging table on disk. */
  async function stagedVectors(jobId: string) {
    const lance = loadConfig(instances.env).lancedbUri
    const vectors = await VectorStore.open(lance)
    try {
      const counts = Object.fromEntries(
        await Promise.all(VECTOR_KINDS.map(async (kind) => [kind, await vectors.countStaged(jobId, kind)])),
      )
      const tables = readdirSync(lance, { withFileTypes: true })
        .filter((entry) => entry.name.startsWith('staging_'))
        .map((entry) => entry.name)
      return { counts, tables }
    } finally {
      await vectors.close()
    }
  }

  test('rolls back, hands the job back at once, and the next instance imports the bundle once', async () => {
    const { dir, env } = instances
    // The built-in embedder's vectors: the import keeps them (staged, then promoted after the commit).
    const { bundle, kgs, http, owner, repo, jobId, path } = await startImport(
      env,
      join(dir, 'big.json.gz'),
      // Enough rows that writing them outlasts a second of progress on a fast machine too.
      24_000,
      'Interrupted import',
      { dimensions: 384, vectors: 'kgs-hash-v1' },
    )
    await waitForJob(http, path, owner.token, writingRows)
    const signalled = performance.now()
    expect(await kgs.stop('SIGTERM')).toBe(0)
    expect(performance.now() - signalled).toBeLessThan(DRAIN_TIMEOUT_MS)

    // Queued again by the instance that stopped, ready now (no lease to wait out), its attempt given back.
    const job = await readStoppedInstance(
      env,
      async (pools) =>
        (
          await pools.system`SELECT status, attempts, lease_owner, run_after <= now() AS ready, error FROM jobs WHERE id = ${jobId}`
        )[0],
    )
    expect(job).toEqual({ status: 'queued', attempts: 0, lease_owner: null, ready: true, error: SHUTDOWN_RELEASE })
    const stopped = await repositoryState(env, repo.id)
    expect(stopped.rows).toEqual(Object.fromEntries(Object.keys(stopped.rows).map((table) => [table, 0])))
    expect(stopped.keys).toEqual([])
    expect(await stagedVectors(jobId)).toEqual({ counts: { facts: 0, concepts: 0 }, tables: [] })

    // The shutdown did not use up an attempt: the next instance's run is attempt 1.
    await expectImportRetried(env, owner, path, repo.id, bundle.counts, 1)
    expect(await stagedVectors(jobId)).toEqual({ counts: { facts: 0, concepts: 0 }, tables: [] })
    const vectors = await VectorStore.open(loadConfig(env).lancedbUri)
    try {
      expect({
        facts: await vectors.count(repo.id, 'facts'),
        concepts: await vectors.count(repo.id, 'concepts'),
      }).toEqual({
        facts: bundle.counts.fact_vectors,
        concepts: bundle.counts.concept_vectors,
      })
    } finally {
      await vectors.close()
    }
  }, 180_000)
})
