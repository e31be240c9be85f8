// Applies a migration set to one database: each migration in its own transaction, under an
// advisory lock (several instances may start at once), recorded with a checksum so that an
// edited, already-applied migration is refused rather than silently skipped.
import type { Sql } from 'postgres'
import { createHash } from 'node:crypto'
import { MIGRATIONS, type Migration, type MigrationSet } from './migrations/index.ts'

/** Arbitrary constant shared by every kgs process: serializes concurrent migrators. */
const MIGRATION_LOCK = 7_344_201_117

const checksum = (m: Migration) => createHash('sha256').update(m.sql).digest('hex')

export class MigrationError extends Error {}

/** Returns the names of the migrations it applied (empty when the database was up to date). */
export async function migrate(
  sql: Sql,
  set: MigrationSet,
  migrations: readonly Migration[] = MIGRATIONS[set],
): Promise<string[]> {
  const applied = await appliedChecksums(sql)
  const pending = migrations.filter((m) => {
    const known = applied.get(m.version)
    if (known !== undefined && known !== checksum(m)) {
      throw new MigrationError(
        `${set} migration ${m.name} was changed after it was applied; add a new migration instead`,
      )
    }
    return known === undefined
  })
  const ran: string[] = []
  for (const migration of pending) {
    const didRun = await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`
      const [done] = await tx`SELECT 1 FROM schema_migrations WHERE version = ${migration.version}`
      if (done) return false
      await tx.unsafe(migration.sql)
      await tx`INSERT INTO schema_migrations (version, name, checksum) VALUES (${migration.version}, ${migration.name}, ${checksum(migration)})`
      return true
    })
    if (didRun) ran.push(migration.name)
  }
  return ran
}

async function appliedChecksums(sql: Sql): Promise<Map<number, string>> {
  const [{ present }] = (await sql`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`) as unknown as [
    { present: boolean },
  ]
  if (!present) return new Map()
  const rows = await sql<{ version: number; checksum: string }[]>`SELECT version, checksum FROM schema_migrations`
  return new Map(rows.map((r) => [r.version, r.checksum]))
}
