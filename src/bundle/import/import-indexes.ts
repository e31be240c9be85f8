// An import into an empty repository loads its tables first and builds their indexes and checks
// their foreign keys afterwards, once per table, as pg_restore does: maintaining an index row by
// row and firing a foreign-key trigger per row cost more than the rows themselves. The facts'
// full-text documents (fact_documents, written by a trigger on facts) load the same way: a GIN
// index built once is far cheaper than one fed a row at a time through its pending list.
//
// A bulk load also leaves the facts' full-text documents to the end: the trigger that computes
// them statement by statement (0008) is off during the load, and one statement computes them all
// afterwards, which PostgreSQL runs on parallel workers (a CREATE TABLE AS may; an INSERT may not).
//
// A bulk load also drops the unique indexes and primary keys of the largest tables (BULK_UNIQUE):
// their statements then insert every row (RowContext.bulk), and building those indexes afterwards
// is the check that the bundle repeated nothing. A bundle that does repeat a row (two facts of one
// text, a link given twice) fails that build with a unique violation; the import is then run again
// with the indexes kept, deduplicating as it goes (import-job.ts). An export never repeats a row, so
// the second run is for hand-made bundles only.
//
// The unique indexes the remaining statements name in ON CONFLICT stay, and so do the indexes of
// investigations and reports, which the import probes for rows that existed before it. Everything
// happens inside the import's transaction: a failed import rolls the definitions back with the
// rows. The tables are locked (ACCESS EXCLUSIVE) until the commit, so a reader of the repository
// waits for the import instead of seeing it half done.
import type { TransactionSql } from 'postgres'
import { ROW_SECTIONS } from '../format/schema.ts'

/** The tables an import writes: the row sections' and the facts' documents. */
const GRAPH_TABLES: readonly string[] = [...ROW_SECTIONS, 'fact_documents']
/** Tables whose non-unique indexes the import never probes. */
const BULK_TABLES = GRAPH_TABLES.filter((table) => table !== 'investigations' && table !== 'reports')
/** Tables whose unique indexes a bulk load drops too: no statement of theirs names one in ON CONFLICT then (import-rows.ts). */
const BULK_UNIQUE: readonly string[] = ['facts', 'fact_documents', 'fact_sources', 'fact_concepts']

/** The graph tables' names are this module's constants: plain identifiers, written as they are. */
const EMPTY = `SELECT NOT EXISTS (${GRAPH_TABLES.map((table) => `SELECT 1 FROM ${table}`).join(' UNION ALL ')}) AS empty`
const LOCK = `LOCK TABLE ${GRAPH_TABLES.join(', ')} IN ACCESS EXCLUSIVE MODE`

/** The trigger of repository migration 0008 that writes a fact's document as the fact is inserted. */
const DOCUMENTS_TRIGGER = 'facts_documents_inserted'

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`

interface Deferred {
  /** As regclass writes it: quoted where it must be. */
  table: string
  name: string
  definition: string
}

/** The constraints of the given types (pg_constraint.contype) on `tables`, as the catalog writes them. */
const constraintsOf = (tx: TransactionSql, types: readonly string[], tables: readonly string[]) => tx<Deferred[]>`
  SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS definition
  FROM pg_constraint c
  WHERE c.contype::text = ANY(${types}::text[]) AND c.conrelid = ANY(${tables}::text[]::regclass[])
  ORDER BY 1, 2`

/**
 * The foreign keys of other tables onto `tables` (fact_merges onto facts): a key they depend on
 * cannot be dropped while they stand. An empty repository's graph leaves them nothing to check.
 */
const referencing = (tx: TransactionSql, tables: readonly string[]) => tx<Deferred[]>`
  SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS definition
  FROM pg_constraint c
  WHERE c.contype = 'f' AND c.confrelid = ANY(${tables}::text[]::regclass[]) AND NOT c.conrelid = ANY(${GRAPH_TABLES}::text[]::regclass[])
  ORDER BY 1, 2`

const addConstraint = (key: Deferred) => `ALTER TABLE ${key.table} ADD CONSTRAINT ${quoted(key.name)} ${key.definition}`

/** What a load into an empty repository does at its end. */
export interface DeferredIndexes {
  /** Whether the unique indexes of BULK_UNIQUE were dropped: the statements must not deduplicate on them. */
  bulk: boolean
  /** Builds everything again, the unique indexes first (a bulk load's unique violation surfaces there). */
  build(): Promise<void>
}

/**
 * When every graph table of the repository is empty: drops their foreign keys (and those onto
 * the tables whose keys go), the secondary
 * indexes of the bulk tables and, with `bulk`, the unique indexes and keys of BULK_UNIQUE; returns
 * what builds them again (to run after the last row). Otherwise nothing is changed and undefined
 * is returned.
 */
export async function deferIndexesIfEmpty(
  tx: TransactionSql,
  { bulk }: { bulk: boolean },
): Promise<DeferredIndexes | undefined> {
  const isEmpty = async () => ((await tx.unsafe(EMPTY)) as unknown as [{ empty: boolean }])[0].empty
  if (!(await isEmpty())) return undefined
  // Locked first, then checked again: a write that came in between keeps the indexes.
  await tx.unsafe(LOCK)
  if (!(await isEmpty())) return undefined
  const uniqueTables = bulk ? BULK_UNIQUE : []
  const foreignKeys = [...(await constraintsOf(tx, ['f'], GRAPH_TABLES)), ...(await referencing(tx, uniqueTables))]
  const keys = await constraintsOf(tx, ['p', 'u'], uniqueTables)
  // Unique ones first: they are built first again, so that a bulk load's repeat surfaces there.
  const indexes = await tx<Deferred[]>`
    SELECT i.indrelid::regclass::text AS table, i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i
    WHERE (NOT i.indisunique AND i.indrelid = ANY(${BULK_TABLES}::text[]::regclass[]) OR i.indisunique AND i.indrelid = ANY(${uniqueTables}::text[]::regclass[]))
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
    ORDER BY i.indisunique DESC, 2`
  // Names and definitions as PostgreSQL itself wrote them out a moment ago, from the catalog.
  for (const key of [...foreignKeys, ...keys])
    await tx.unsafe(`ALTER TABLE ${key.table} DROP CONSTRAINT ${quoted(key.name)}`)
  for (const index of indexes) await tx.unsafe(`DROP INDEX ${index.name}`)
  if (bulk) await tx.unsafe(`ALTER TABLE facts DISABLE TRIGGER ${DOCUMENTS_TRIGGER}`)
  return {
    bulk,
    build: async () => {
      if (bulk) {
        // The planner's default costs of moving rows between processes keep this statement on one
        // process: its per-row work (to_tsvector) is what those costs do not weigh.
        await tx.unsafe('SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0')
        await tx.unsafe(
          'CREATE TEMP TABLE import_documents ON COMMIT DROP AS SELECT id, fact_document(text) AS fulltext FROM facts',
        )
        await tx.unsafe('SET LOCAL parallel_setup_cost TO DEFAULT; SET LOCAL parallel_tuple_cost TO DEFAULT')
        await tx.unsafe('INSERT INTO fact_documents (id, fulltext) SELECT id, fulltext FROM import_documents')
        await tx.unsafe('DROP TABLE import_documents')
        await tx.unsafe(`ALTER TABLE facts ENABLE TRIGGER ${DOCUMENTS_TRIGGER}`)
      }
      for (const key of keys) await tx.unsafe(addConstraint(key))
      for (const index of indexes) await tx.unsafe(index.definition)
      for (const key of foreignKeys) await tx.unsafe(addConstraint(key))
    },
  }
}
