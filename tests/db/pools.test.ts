// Pools and migrations against the selected backend.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Pools, repositoryDatabaseName } from '../../src/db/pools.ts'
import { MigrationError, migrate } from '../../src/db/migrate.ts'
import { MIGRATIONS } from '../../src/db/migrations/index.ts'
import { BACKEND, openTestPools } from '../helpers/backend.ts'

/** The message of the promise's rejection (Bun's `rejects` is slow at formatting driver errors). */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('expected a rejection')
}

let pools: Pools
let opened: Awaited<ReturnType<typeof openTestPools>>

beforeAll(async () => {
  opened = await openTestPools()
  pools = opened.pools
})
afterAll(() => opened?.close())

describe(`migrations (${BACKEND})`, () => {
  test('every SQL file is listed once, in order, numbered by its file name', () => {
    for (const set of ['system', 'repository'] as const) {
      const files = readdirSync(join(import.meta.dir, '../../src/db/migrations', set))
        .filter((f) => f.endsWith('.sql'))
        .sort()
      expect(MIGRATIONS[set].map((m) => `${m.name}.sql`)).toEqual(files)
      expect(MIGRATIONS[set].map((m) => m.version)).toEqual(files.map((f) => Number(f.slice(0, 4))))
    }
  })

  test('system migrations apply once; a second run is a no-op', async () => {
    expect(await pools.migrate()).toEqual(MIGRATIONS.system.map((m) => m.name))
    expect(await pools.migrate()).toEqual([])
    const rows = await pools.system<{ version: number }[]>`SELECT version FROM schema_migrations ORDER BY version`
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.system.map((m) => m.version))
  })

  test('a failing migration leaves nothing behind (each runs in a transaction)', async () => {
    const broken = [
      { version: 900, name: '0900_broken', sql: 'CREATE TABLE half_done (id int); SELECT no_such_function();' },
    ]
    expect(await failure(migrate(pools.system, 'system', [...MIGRATIONS.system, ...broken]))).toMatch(
      /no_such_function/,
    )
    const [{ present }] = (await pools.system`SELECT to_regclass('half_done') IS NOT NULL AS present`) as unknown as [
      { present: boolean },
    ]
    expect(present).toBe(false)
    expect(await pools.system`SELECT 1 FROM schema_migrations WHERE version = 900`).toHaveLength(0)
  })

  test('an applied migration whose SQL changed is refused', async () => {
    const edited = MIGRATIONS.system.map((m, i) => (i === 0 ? { ...m, sql: m.sql + '\n-- edited' } : m))
    const error = await migrate(pools.system, 'system', edited).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MigrationError)
    expect((error as Error).message).toBe(
      'system migration 0001_repository_databases was changed after it was applied; add a new migration instead',
    )
  })

  test('concurrent migrators apply each migration exactly once', async () => {
    const sets = [{ version: 950, name: '0950_counter', sql: 'CREATE TABLE concurrency_probe (id int)' }]
    const results = await Promise.all(
      [0, 1, 2].map(() => migrate(pools.system, 'system', [...MIGRATIONS.system, ...sets])),
    )
    expect(results.flat()).toEqual(['0950_counter'])
  })
})

describe(`concurrency (${BACKEND})`, () => {
  test('concurrent queries and transactions each get their own answers', async () => {
    await pools.system`CREATE TABLE IF NOT EXISTS concurrency_counter (id int PRIMARY KEY, n int NOT NULL)`
    await pools.system`INSERT INTO concurrency_counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0`
    const work = Array.from({ length: 200 }, (_, i) =>
      i % 4 === 0
        ? pools.system.begin(async (tx) => {
            const [row] = await tx<{ n: number }[]>`SELECT n FROM concurrency_counter WHERE id = 1 FOR UPDATE`
            await tx`UPDATE concurrency_counter SET n = ${row!.n + 1} WHERE id = 1`
            return i
          })
        : pools.system<{ echo: number }[]>`SELECT ${i}::int AS echo`.then((rows) => rows[0]!.echo),
    )
    expect(await Promise.all(work)).toEqual(Array.from({ length: 200 }, (_, i) => i))
    const [{ n }] = (await pools.system`SELECT n FROM concurrency_counter WHERE id = 1`) as unknown as [{ n: number }]
    expect(n).toBe(50)
  })
})

describe(`repository pools (${BACKEND})`, () => {
  test('forRepository creates, migrates and tags the database; the same pool is returned again', async () => {
    const id = crypto.randomUUID()
    const sql = await pools.forRepository(id)
    expect(await pools.forRepository(id.toUpperCase())).toBe(sql)
    const [identity] = await sql<{ repository_id: string }[]>`SELECT repository_id FROM repository_identity`
    expect(identity!.repository_id).toBe(id)
    const [{ count }] = (await sql`SELECT count(*)::int AS count FROM schema_migrations`) as unknown as [
      { count: number },
    ]
    expect(count).toBe(MIGRATIONS.repository.length)
    const [recorded] = await pools.system<
      { dsn: string }[]
    >`SELECT dsn FROM repository_databases WHERE repository_id = ${id}`
    expect(recorded!.dsn).toContain(id.replaceAll('-', ''))
  })

  test('repositories are isolated: a table in one is absent from another', async () => {
    const a = await pools.forRepository(crypto.randomUUID())
    const b = await pools.forRepository(crypto.randomUUID())
    await a`CREATE TABLE only_in_a (id int)`
    const [{ present }] = (await b`SELECT to_regclass('only_in_a') IS NOT NULL AS present`) as unknown as [
      { present: boolean },
    ]
    expect(present).toBe(false)
  })

  test('dropRepository removes the database and its record; a later open starts empty', async () => {
    const id = crypto.randomUUID()
    const sql = await pools.forRepository(id)
    await sql`CREATE TABLE scratch (id int)`
    const [{ dsn }] =
      (await pools.system`SELECT dsn FROM repository_databases WHERE repository_id = ${id}`) as unknown as [
        { dsn: string },
      ]
    await pools.dropRepository(id)
    expect(await pools.system`SELECT 1 FROM repository_databases WHERE repository_id = ${id}`).toHaveLength(0)
    if (BACKEND === 'embedded') {
      expect(existsSync(join(opened.dataDir, 'pg', dsn.slice('pglite:'.length)))).toBe(false)
    } else {
      const name = new URL(dsn).pathname.slice(1)
      expect(await pools.system`SELECT 1 FROM pg_database WHERE datname = ${name}`).toHaveLength(0)
    }
    const again = await pools.forRepository(id)
    const [{ present }] = (await again`SELECT to_regclass('scratch') IS NOT NULL AS present`) as unknown as [
      { present: boolean },
    ]
    expect(present).toBe(false)
  })

  test('migrateRepositories visits every recorded repository and finds them current', async () => {
    const { repositories, migrated } = await pools.migrateRepositories()
    expect(repositories).toBeGreaterThanOrEqual(3)
    expect(migrated).toBe(0)
  })

  test('a non-UUID repository id is refused', () => {
    expect(() => pools.forRepository('../etc')).toThrow(TypeError)
  })

  test('repository database names fit PostgreSQL identifiers', () => {
    const name = repositoryDatabaseName('a-very-long-system-database-name-that-goes-on', crypto.randomUUID())
    expect(name.length).toBeLessThanOrEqual(63)
    expect(name).toMatch(/^[a-z0-9_]+$/)
  })
})
