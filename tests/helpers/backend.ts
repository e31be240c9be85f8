// Which database the suite runs against: the embedded default, or PostgreSQL when
// TEST_DATABASE_URL is set (a maintenance database on a server where we may create others).
// Every test server gets a database of its own, so test files can run in parallel.
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EmbeddedCluster } from '../../src/db/embedded.ts'
import { Pools } from '../../src/db/pools.ts'
import { createScratchDatabase } from '../../scripts/lib/scratch-database.ts'
import pglitePackage from '../../node_modules/@electric-sql/pglite/package.json' with { type: 'json' }

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined
export const BACKEND: 'embedded' | 'postgres' = TEST_DATABASE_URL ? 'postgres' : 'embedded'

const tempDirs: string[] = []

/** A new directory under the system's temporary one; the suite removes it at its end (removeTempDirs) if its test did not. */
export function tempDir(prefix = 'kgs-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  tempDirs.push(dir)
  return dir
}

/** Removes every directory tempDir made: tests/helpers/preload.ts calls it once, after the last test file. */
export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

/** A fresh database on the test server; drop() removes it and every repository database it made. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set')
  return createScratchDatabase(TEST_DATABASE_URL, 'kgs_t_')
}

/**
 * initdb takes seconds; the suite runs it once per PGlite version and seeds each new data
 * directory with a copy (the product does the same within one data directory).
 */
const TEMPLATE_CACHE = join(tmpdir(), `kgs-test-pglite-template-${pglitePackage.version}`)

export async function ensureEmbeddedTemplate(): Promise<void> {
  if (!existsSync(TEMPLATE_CACHE)) {
    const scratch = tempDir('kgs-template-')
    const cluster = EmbeddedCluster.start(join(scratch, 'pg'))
    await cluster.socketFor('system')
    await cluster.close()
    try {
      renameSync(join(scratch, 'pg', 'template'), TEMPLATE_CACHE)
    } catch (error) {
      // Another test process won the race; its copy is as good as ours.
      if (!existsSync(TEMPLATE_CACHE)) throw error
    }
    rmSync(scratch, { recursive: true, force: true })
  }
}

export async function seedEmbeddedTemplate(dataDir: string): Promise<void> {
  await ensureEmbeddedTemplate()
  cpSync(TEMPLATE_CACHE, join(dataDir, 'pg', 'template'), { recursive: true })
}

/** Environment for one kgs instance on the selected backend, with its own data directory. */
export async function instanceEnvironment(): Promise<{
  env: Record<string, string>
  dataDir: string
  cleanup(): Promise<void>
}> {
  const dataDir = tempDir()
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'silent', HOST: '127.0.0.1', PORT: '0' }
  let database: { drop(): Promise<void> } | undefined
  if (TEST_DATABASE_URL) {
    const created = await createTestDatabase()
    env.DATABASE_URL = created.url
    database = created
  } else {
    await seedEmbeddedTemplate(dataDir)
  }
  return {
    env,
    dataDir,
    async cleanup() {
      await database?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Pools on an instance environment of their own (no server): close() closes them and removes the instance. */
export async function openTestPools(): Promise<{ pools: Pools; dataDir: string; close(): Promise<void> }> {
  const instance = await instanceEnvironment()
  const pools = await Pools.open({ databaseUrl: instance.env.DATABASE_URL, dataDir: instance.dataDir })
  return {
    pools,
    dataDir: instance.dataDir,
    async close() {
      await pools.close()
      await instance.cleanup()
    },
  }
}
