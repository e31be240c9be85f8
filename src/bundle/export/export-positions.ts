// The export's position tables (docs/bundles.md, "Export"), made once in the snapshot's
// transaction before any row is written (export-snapshot.ts): each row's bundle position is its
// rank in its table, kept in a temporary table (id, pos) that every section's query joins to; the
// stored vectors are loaded likewise by position. The counts and promptset hashes the metadata
// needs come from the same pass.
import type { TransactionSql } from 'postgres'
import type { Embedder } from '../../vectors/embedder.ts'
import { VECTOR_KINDS, type VectorKind, type VectorStore } from '../../vectors/store.ts'

type Tx = TransactionSql

/** Tables whose rows are referenced by position. */
export const POSITIONED = [
  'sources',
  'source_images',
  'facts',
  'concepts',
  'concept_summaries',
  'investigations',
  'reports',
] as const
export type Positioned = (typeof POSITIONED)[number]
/** The temporary table (id, pos) of a table's positions; the queries name them literally. */
export const positionTable = (table: Positioned) => `export_pos_${table}`
export const vectorTable = (kind: VectorKind) => `export_vectors_${kind}`

export interface ExportCounts {
  sources: number
  facts: number
  concepts: number
  summaries: number
  syntheses: number
  reports: number
  investigations: number
}

/**
 * The position tables of `tables`, the counts and the promptset hashes; `onRanked` is called as
 * each table is ranked. The counts read the position tables of sources, source_images, concepts,
 * investigations and reports, which `tables` must hold (a report on a parent cycle has no
 * position and is not counted), and the facts and summaries tables themselves (every row has a
 * position). The promptset hashes are queried here unless `promptsetHashes` brings them.
 */
export async function preparePositions(
  tx: Tx,
  tables: readonly Positioned[],
  onRanked: () => void,
  promptsetHashes?: Promise<string[]>,
) {
  await rankPositions(tx, tables, onRanked)
  const [row] = await tx<(ExportCounts & { source_images: number; source_bodies: number; links: number })[]>`
    SELECT
      (SELECT count(*) FROM export_pos_sources)::int AS sources,
      (SELECT count(*) FROM facts)::int AS facts,
      (SELECT count(*) FROM export_pos_concepts)::int AS concepts,
      (SELECT count(*) FROM concept_summaries)::int AS summaries,
      (SELECT count(*) FROM concept_syntheses)::int AS syntheses,
      (SELECT count(*) FROM export_pos_reports)::int AS reports,
      (SELECT count(*) FROM export_pos_investigations)::int AS investigations,
      (SELECT count(*) FROM export_pos_source_images)::int AS source_images,
      (SELECT count(*) FROM source_bodies)::int AS source_bodies,
      (SELECT count(*) FROM fact_sources)::int + (SELECT count(*) FROM concept_aliases)::int + (SELECT count(*) FROM fact_concepts)::int
        + (SELECT count(*) FROM investigation_sources)::int + (SELECT count(*) FROM report_annotations)::int AS links`
  const { source_images, source_bodies, links, ...counts } = row!
  const hashed = Object.values(counts).reduce((a, b) => a + b, 0) + links
  return {
    counts,
    rowTotal: hashed + source_images + source_bodies,
    promptsetHashes: await (promptsetHashes ?? queryPromptsetHashes(tx)),
  }
}

/** The metadata's promptset_hashes: every non-empty one of facts, concepts and their links, sorted. */
export async function queryPromptsetHashes(tx: Tx): Promise<string[]> {
  const hashes = await tx<{ hash: string }[]>`
    SELECT hash FROM (
      SELECT promptset_hash AS hash FROM facts UNION SELECT promptset_hash FROM concepts UNION SELECT promptset_hash FROM fact_concepts
    ) h WHERE hash <> '' ORDER BY hash COLLATE "C"`
  return hashes.map((h) => h.hash)
}

/** The position tables of `tables`, in this transaction; `onRanked` is called as each is made. */
export async function rankPositions(
  tx: Tx,
  tables: readonly Positioned[],
  onRanked: () => void = () => {},
): Promise<void> {
  for (const table of tables) {
    const name = positionTable(table)
    // Reports in (created_at, id) order, as every other table, except that a parent must
    // precede its children: each report sorts at the latest created_at on its path from the
    // root, and below its parent on a tie. So a repository imported from a bundle (created_at
    // in file order) exports its reports in the file's order. A report on a parent cycle has
    // no root and cannot be written (its parent could not come first).
    const ranked =
      table === 'reports'
        ? tx`WITH RECURSIVE tree AS (
               SELECT id, 0 AS depth, created_at AS sort_at FROM reports WHERE parent_id IS NULL
               UNION ALL
               SELECT r.id, tree.depth + 1, greatest(tree.sort_at, r.created_at) FROM reports r JOIN tree ON r.parent_id = tree.id
             )
             SELECT tree.id, (row_number() OVER (ORDER BY tree.sort_at, tree.depth, r.created_at, r.id) - 1)::int AS pos FROM tree JOIN reports r ON r.id = tree.id`
        : tx`SELECT id, (row_number() OVER (ORDER BY created_at, id) - 1)::int AS pos FROM ${tx(table)}`
    await tx`CREATE TEMP TABLE ${tx(name)} ON COMMIT DROP AS ${ranked}`
    await tx`CREATE UNIQUE INDEX ON ${tx(name)} (id)`
    // Temporary tables get no statistics from autovacuum; the cursors' plans need them.
    await tx`ANALYZE ${tx(name)}`
    onRanked()
  }
}

/** Where the stored vectors are read from. */
interface VectorSource {
  vectors: VectorStore
  /** The configured embedder: only its dimensions' vectors are exported. */
  embedder: Pick<Embedder, 'dimensions'>
  repositoryId: string
}

/**
 * The kinds whose stored vectors the export writes: those of the configured embedder's
 * dimensions. Others came from another model, and naming this one for them would be wrong.
 */
export async function exportedVectorKinds({ vectors, embedder, repositoryId }: VectorSource): Promise<VectorKind[]> {
  const kinds: VectorKind[] = []
  for (const kind of VECTOR_KINDS)
    if ((await vectors.dimensions(repositoryId, kind)) === embedder.dimensions) kinds.push(kind)
  return kinds
}

/**
 * The stored vectors of each kind, in a temporary table by position (ascending order is what
 * the writer needs, and LanceDB scans in no order); those of `kinds` only (exportedVectorKinds),
 * the others' tables left empty. Returns how many vectors will be written.
 */
export async function loadVectorTables(
  tx: Tx,
  source: VectorSource & { batchSize: number; signal?: AbortSignal },
  kinds: readonly VectorKind[],
): Promise<number> {
  const { vectors, embedder, repositoryId, batchSize, signal } = source
  let loaded = 0
  for (const kind of VECTOR_KINDS) {
    const table = vectorTable(kind)
    await tx`CREATE TEMP TABLE ${tx(table)} (pos int PRIMARY KEY, vector bytea NOT NULL) ON COMMIT DROP`
    if (!kinds.includes(kind)) continue
    const width = embedder.dimensions * Float32Array.BYTES_PER_ELEMENT
    for await (const batch of vectors.scan(repositoryId, kind, batchSize)) {
      signal?.throwIfAborted()
      // One parameter for the whole batch: the vectors' bytes end to end, cut apart in SQL.
      const bytes = Buffer.concat(
        batch.map(({ vector }) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)),
      )
      // Vectors of rows outside the snapshot (deleted, or added since) have no position: skipped.
      const inserted = await tx`
        INSERT INTO ${tx(table)} (pos, vector)
        SELECT p.pos, substring(${bytes}::bytea FROM ((u.n - 1) * ${width}::int + 1)::int FOR ${width}::int)
        FROM unnest(${batch.map((v) => v.id)}::uuid[]) WITH ORDINALITY AS u (id, n)
        JOIN ${tx(positionTable(kind))} p ON p.id = u.id`
      loaded += inserted.count
    }
  }
  return loaded
}
