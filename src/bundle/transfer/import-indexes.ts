// An import into an empty repository loads its tables first and builds their secondary indexes and
// checks their foreign keys afterwards, once per table, as pg_restore does: maintaining an index
// row by row and firing a foreign-key trigger per row cost more than the rows themselves. The
// unique indexes stay (the import deduplicates with ON CONFLICT on them), and so do the indexes of
// investigations and reports, which the import probes for rows that existed before it. Everything
// happens inside the import's transaction: a failed import rolls the definitions back with the
// rows. The tables are locked (ACCESS EXCLUSIVE) until the commit, so a reader of the repository
// waits for the import instead of seeing it half done.
import type { TransactionSql } from 'postgres'
import { ROW_SECTIONS } from '../format/schema.ts'

/** Tables whose non-unique indexes the import never probes. */
const BULK_TABLES = ROW_SECTIONS.filter((table) => table !== 'investigations' && table !== 'reports')

/** The graph tables' names are this module's constants: plain identifiers, written as they are. */
const EMPTY = `SELECT NOT EXISTS (${ROW_SECTIONS.map((table) => `SELECT 1 FROM ${table}`).join(' UNION ALL ')}) AS empty`
const LOCK = `LOCK TABLE ${ROW_SECTIONS.join(', ')} IN ACCESS EXCLUSIVE MODE`

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`

interface Deferred {
  /** As regclass writes it: quoted where it must be. */
  table: string
  name: string
  definition: string
}

/**
 * When every graph table of the repository is empty: drops their foreign keys and the secondary
 * indexes of the bulk tables, and returns what builds them again (to run after the last row).
 * Otherwise nothing is changed and undefined is returned.
 */
export async function deferIndexesIfEmpty(tx: TransactionSql): Promise<(() => Promise<void>) | undefined> {
  const isEmpty = async () => ((await tx.unsafe(EMPTY)) as unknown as [{ empty: boolean }])[0].empty
  if (!(await isEmpty())) return undefined
  // Locked first, then checked again: a write that came in between keeps the indexes.
  await tx.unsafe(LOCK)
  if (!(await isEmpty())) return undefined
  const foreignKeys = await tx<Deferred[]>`
    SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS definition
    FROM pg_constraint c
    WHERE c.contype = 'f' AND c.conrelid = ANY(${[...ROW_SECTIONS]}::text[]::regclass[])
    ORDER BY 1, 2`
  const indexes = await tx<Deferred[]>`
    SELECT i.indrelid::regclass::text AS table, i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i
    WHERE NOT i.indisunique AND NOT i.indisprimary AND i.indrelid = ANY(${BULK_TABLES}::text[]::regclass[])
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
    ORDER BY 2`
  // Names and definitions as PostgreSQL itself wrote them out a moment ago, from the catalog.
  for (const key of foreignKeys) await tx.unsafe(`ALTER TABLE ${key.table} DROP CONSTRAINT ${quoted(key.name)}`)
  for (const index of indexes) await tx.unsafe(`DROP INDEX ${index.name}`)
  return async () => {
    for (const index of indexes) await tx.unsafe(index.definition)
    for (const key of foreignKeys) await tx.unsafe(`ALTER TABLE ${key.table} ADD CONSTRAINT ${quoted(key.name)} ${key.definition}`)
  }
}
