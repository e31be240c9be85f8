// The SQL of the sections an export reads ahead on a second connection when it has one
// (export-prefetch.ts), else through its own cursors (export-snapshot.ts): the facts' links, the
// long texts that cite, and the reports' annotations, each joined to the position tables
// (export-positions.ts) so that references leave the database as bundle positions.
import type { TransactionSql } from 'postgres'
import type { PrefetchedSection } from './export-prefetch.ts'
import { positionTable, type Positioned } from './export-positions.ts'

type Tx = TransactionSql

/** The positions of a uuid[] column's ids in `table`, in the array's order; ids without a row are dropped. */
function positionsOf(tx: Tx, column: string, table: Positioned) {
  // A scalar subquery per element: an index lookup each, where a join would hash the whole
  // position table once per row.
  return tx`array_remove(ARRAY(SELECT (SELECT q.pos FROM ${tx(positionTable(table))} q WHERE q.id = u.id) FROM unnest(${tx(column)}) WITH ORDINALITY AS u (id, n) ORDER BY u.n), NULL)`
}

/** The facts' links, sorted by the positions they join (read by COPY, or prefetched: export-prefetch.ts). */
export const LINK_SECTIONS = [
  {
    section: 'fact_sources',
    query: (tx: Tx) => tx`
      SELECT fp.pos AS fact_idx, sp.pos AS source_idx, fs.chunk_index
      FROM fact_sources fs JOIN export_pos_facts fp ON fp.id = fs.fact_id JOIN export_pos_sources sp ON sp.id = fs.source_id
      ORDER BY fp.pos, sp.pos, fs.chunk_index`,
  },
  {
    section: 'fact_concepts',
    query: (tx: Tx) => tx`
      SELECT fp.pos AS fact_idx, cp.pos AS concept_idx, fc.promptset_hash
      FROM fact_concepts fc JOIN export_pos_facts fp ON fp.id = fc.fact_id JOIN export_pos_concepts cp ON cp.id = fc.concept_id
      ORDER BY fp.pos, cp.pos`,
  },
] as const satisfies readonly PrefetchedSection[]

/**
 * The sections whose long texts cite, read by a cursor or prefetched (export-prefetch.ts), each
 * query's columns the section's fields in order. In position order (the position table's), from
 * the (created_at, id) index: each FETCH computes only its own rows' lookups, where a sort would
 * compute them all before the first.
 */
export const CITING_SECTIONS = [
  {
    section: 'concept_summaries',
    query: (tx: Tx) => tx`
      SELECT (SELECT cp.pos FROM export_pos_concepts cp WHERE cp.id = s.concept_id) AS concept_idx, s.sequence_num, s.is_complete, s.fact_count, s.content,
             ${positionsOf(tx, 's.covered_fact_ids', 'facts')} AS covered_fact_idxs, s.model
      FROM concept_summaries s ORDER BY s.created_at, s.id`,
  },
  {
    section: 'concept_syntheses',
    query: (tx: Tx) => tx`
      SELECT s.canonical_name, s.content,
             ${positionsOf(tx, 's.covered_summary_ids', 'concept_summaries')} AS covered_summary_idxs,
             ${positionsOf(tx, 's.covered_concept_ids', 'concepts')} AS covered_concept_idxs,
             ${positionsOf(tx, 's.embedded_image_fact_ids', 'facts')} AS embedded_image_idxs, s.model
      FROM concept_syntheses s ORDER BY s.created_at, s.id`,
  },
] as const satisfies readonly PrefetchedSection[]
export type CitingSection = (typeof CITING_SECTIONS)[number]['section']

/** The reports' annotations of facts, read by a cursor or prefetched (export-prefetch.ts): the file's last rows. */
export const ANNOTATION_SECTION = {
  section: 'report_annotations',
  query: (tx: Tx) => tx`
    SELECT rp.pos AS report_idx, a.sentence_index, a.sentence_text, fp.pos AS fact_idx, a.score, a.posture
    FROM report_annotations a JOIN export_pos_reports rp ON rp.id = a.report_id JOIN export_pos_facts fp ON fp.id = a.fact_id
    ORDER BY a.created_at, rp.pos, a.sentence_index, fp.pos`,
} as const satisfies PrefetchedSection

/** The sections read ahead when there is a second connection, in the order it reads them. */
export const PREFETCHED_SECTIONS: readonly PrefetchedSection[] = [
  ...LINK_SECTIONS,
  ...CITING_SECTIONS,
  ANNOTATION_SECTION,
]
/** The position tables PREFETCHED_SECTIONS join to. */
export const PREFETCHED_POSITIONS: readonly Positioned[] = [
  'sources',
  'facts',
  'concepts',
  'concept_summaries',
  'reports',
]
