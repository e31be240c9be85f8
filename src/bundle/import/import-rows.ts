// The statements of an import (docs/spec/bundle.md §5): one per batch of a row section, inside the
// import's transaction (import-transaction.ts gathers the batches).
//
// Each is an INSERT ... SELECT FROM unnest(<one array per column>) that deduplicates with
// ON CONFLICT on the table's natural key and, in the same statement (a data-modifying CTE),
// records position → local UUID in a temporary mapping table (import_<section>): a new row's id
// comes from RETURNING, a reused row's from the table as it was before the statement (a CTE's
// inserts are invisible to the rest of the statement, so coalesce(new, existing) is the row's id
// either way, and the existing one is only looked up for rows not inserted). Later sections resolve their references through those tables, by index
// probes (mapped()): a join would have the planner hash a whole mapping table, the size of the
// bundle, for each batch.
//
// - New rows get random UUIDs and created_at = transaction start + position µs (per table), so
//   the repository lists them in the bundle's order. Reused rows keep theirs.
// - Sources dedup on url; facts on the content hash recomputed from the text; concepts on
//   (lower(name), lower(context)); aliases, junctions, annotations, images (source, kind,
//   position) and bodies (source) on their keys. A summary whose (concept, sequence_num) exists
//   keeps the existing one (conservative: the repository's text and citations stay). Syntheses
//   upsert on lower(name), the bundle's content winning; of one name given twice, the later.
//   Investigations (title, topic) and reports (title, topic, body, parent) have no key in the
//   bundle: a row that existed before this import is reused, so a bundle imported twice adds
//   nothing, while the bundle's own look-alikes stay apart.
// - In a bulk load (import-indexes.ts) facts have no unique index: their statement inserts every
//   row, so each row's local UUID is the one sent and is mapped without a lookup, and a repeated
//   one surfaces when the indexes are built (the links' DO NOTHING then names no index either).
// - The sections most rows point at (sources, facts, concepts) also keep their local UUIDs in
//   memory (LocalIds): the largest sections, the links between them, send their UUIDs instead of
//   having PostgreSQL probe two mapping tables per row. A statement of those sections answers
//   the positions whose row is not the one it sent (reused, or a duplicate within the bundle).
// - Citations are made local before a batch reaches its writer (import-citations.ts).
import { randomUUID } from 'node:crypto'
import type { PendingQuery, Row as SqlRow, TransactionSql } from 'postgres'
import { factContentHash } from '../../graph/rules.ts'
import { portableConceptId, portableFactId } from '../format/citations.ts'
import { encodeFloat64 } from '../format/json.ts'
import type { Row, RowSection } from '../format/schema.ts'
import type { LocalIds } from './import-ids.ts'

export interface Batch<S extends RowSection = RowSection> {
  section: S
  positions: number[]
  rows: Row<S>[]
}

/** What the statements need besides their batch, and the counters they add to. */
export interface RowContext {
  tx: TransactionSql
  /** localImageUrl() of this repository less the image's UUID: an image fact's image_url when its bytes are stored here. */
  localImageUrlPrefix: string
  citations: { rewritten: number; unresolved: number }
  /** Media that came before their rows, claimed by the rows inserted. */
  media: { stored: number }
  /** The index of the portable UUIDs, built in one go by the first citation lookup (import-citations.ts). */
  portableIndex?: Promise<unknown>
  /** The local UUIDs of the sections link rows point at, by position. */
  ids: Record<RememberedSection, LocalIds>
  /**
   * A bulk load (import-indexes.ts): the facts' unique indexes are gone, so every fact is
   * inserted; one the bundle repeats surfaces as a unique violation later.
   */
  bulk: boolean
  /** A bulk load on PostgreSQL: the sections of COPY_SECTIONS (import-copy.ts) stream in by binary COPY. */
  copy: boolean
}

type RememberedSection = 'sources' | 'facts' | 'concepts'

type Fragment = PendingQuery<SqlRow[]>
type MappingTable =
  | 'import_sources'
  | 'import_images'
  | 'import_facts'
  | 'import_concepts'
  | 'import_summaries'
  | 'import_investigations'
  | 'import_reports'

/** Creates the mapping tables (dropped with the transaction's end, committed or not). */
export async function createMappingTables(tx: TransactionSql): Promise<void> {
  await tx.unsafe(`
    CREATE TEMP TABLE import_sources (pos int PRIMARY KEY, id uuid NOT NULL) ON COMMIT DROP;
    CREATE TEMP TABLE import_images (pos int PRIMARY KEY, id uuid NOT NULL, is_new boolean NOT NULL, image_ref text) ON COMMIT DROP;
    CREATE INDEX ON import_images (image_ref);
    CREATE TEMP TABLE import_bodies (pos int PRIMARY KEY, source_id uuid NOT NULL, body_ref text, content_type text NOT NULL, stored boolean NOT NULL) ON COMMIT DROP;
    CREATE INDEX ON import_bodies (body_ref);
    CREATE TEMP TABLE import_media (
      section text, ref text, id uuid NOT NULL, storage_key text NOT NULL, bytes bigint, content_type text NOT NULL, claimed boolean NOT NULL DEFAULT false,
      PRIMARY KEY (section, ref)
    ) ON COMMIT DROP;
    CREATE TEMP TABLE import_facts (pos int PRIMARY KEY, id uuid NOT NULL, portable uuid NOT NULL, is_new boolean NOT NULL, image_pos int NOT NULL) ON COMMIT DROP;
    CREATE TEMP TABLE import_concepts (pos int PRIMARY KEY, id uuid NOT NULL, portable uuid NOT NULL, is_new boolean NOT NULL) ON COMMIT DROP;
    CREATE TEMP TABLE import_summaries (pos int PRIMARY KEY, id uuid NOT NULL) ON COMMIT DROP;
    CREATE TEMP TABLE import_investigations (pos int PRIMARY KEY, id uuid NOT NULL) ON COMMIT DROP;
    CREATE TEMP TABLE import_reports (pos int PRIMARY KEY, id uuid NOT NULL) ON COMMIT DROP;
  `)
}

/** The local UUID of the row at position `pos` of a section (NULL for none, e.g. -1). */
const mapped = (tx: TransactionSql, table: MappingTable, pos: Fragment) =>
  tx`(SELECT m.id FROM ${tx(table)} m WHERE m.pos = ${pos})`

/** The local UUIDs, in order, of the positions in `list` (a '{...}' text column). */
const localIds = (tx: TransactionSql, table: MappingTable, list: Fragment) =>
  tx`ARRAY(SELECT ${mapped(tx, table, tx`p.pos`)} FROM unnest(${list}::int[]) WITH ORDINALITY AS p(pos, n) ORDER BY p.n)`

/** created_at of the row at `pos`: the transaction's start plus that many microseconds. */
export const createdAt = (tx: TransactionSql, pos: Fragment) => tx`now() + ${pos} * interval '1 microsecond'`

/**
 * An array in PostgreSQL's text form ('{"a","b",NULL}', cast to its type in SQL). postgres.js
 * would serialize the arrays itself, running two regular-expression replaces on every element,
 * which was most of an import's own CPU time; here only an element holding a quote or a
 * backslash is escaped.
 */
export function arrayLiteral(values: readonly (string | number | null | undefined)[]): string {
  if (values.includes(undefined)) throw new Error('arrayLiteral: an element is undefined')
  const plain = values.every((value) => typeof value === 'string' && !value.includes('"') && !value.includes('\\'))
  // One join makes one flat string; concatenating element by element builds a rope of ropes.
  if (plain) return values.length === 0 ? '{}' : `{"${values.join('","')}"}`
  const element = (value: string | number | null) =>
    value === null
      ? 'NULL'
      : typeof value === 'number'
        ? String(value)
        : `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
  return `{${(values as (string | number | null)[]).map(element).join(',')}}`
}

/** A '{1,2,3}' literal (cast to int[] in SQL): lists of positions travel as one text per row. */
const intList = (values: readonly number[] | undefined) => `{${(values ?? []).join(',')}}`
/** The local UUIDs of `positions` as a '{…}' literal (cast to uuid[] in SQL); NULL for a position with none. */
const uuidList = (ids: LocalIds, positions: readonly number[] | undefined) => ids.list(positions ?? [])
/** Booleans travel as 0/1 (cast to bool[] in SQL): postgres.js would type a boolean array as a single boolean. */
const flags = (values: readonly (boolean | undefined)[]) => values.map((value) => (value ? 1 : 0))
const fresh = (rows: readonly unknown[]) => rows.map(() => randomUUID())
/** Marks the first row naming each media ref: a media item is claimed once. */
const firstOfRef = (refs: readonly (string | undefined)[]) => {
  const seen = new Set<string>()
  return refs.map((ref) => ref !== undefined && !seen.has(ref) && seen.add(ref) !== undefined)
}

/**
 * An image fact's image_url (docs/spec/bundle.md §5), with its source image joined as `si`: the local copy
 * when the image's bytes are stored here, else the image's original URL; `otherwise` without one.
 */
export function imageUrl(context: RowContext, otherwise: Fragment): Fragment {
  const { tx } = context
  return tx`CASE WHEN si.id IS NULL THEN ${otherwise} WHEN si.storage_key IS NOT NULL THEN ${context.localImageUrlPrefix} || si.id::text ELSE si.url END`
}

/** The `inserted` a statement selects. */
async function inserted(query: Promise<unknown>): Promise<number> {
  const [row] = (await query) as [{ inserted: number }]
  return row.inserted
}

/**
 * The `inserted` a statement selects, after recording the batch's local UUIDs: the ones sent,
 * less the `reused` it selects ([position, UUID] of each row whose UUID is not the one sent).
 */
async function insertedRemembering(
  ids: LocalIds,
  positions: readonly number[],
  sent: readonly string[],
  query: Promise<unknown>,
): Promise<number> {
  const [row] = (await query) as [{ inserted: number; reused: [number, string][] }]
  for (const [index, pos] of positions.entries()) ids.set(pos, sent[index]!)
  for (const [pos, id] of row.reused) ids.set(pos, id)
  return row.inserted
}

/** The `reused` insertedRemembering() reads: from the `mapped` CTE (RETURNING pos, id) and the `batch` sent. */
const REUSED = `(SELECT coalesce(json_agg(json_build_array(m.pos, m.id)), '[]'::json) FROM mapped m JOIN batch b USING (pos) WHERE m.id <> b.id) AS reused`

/** The rows an INSERT ... ON CONFLICT DO NOTHING inserted, from its command tag (no RETURNING to carry). */
async function count(query: Promise<{ count: number }>): Promise<number> {
  return (await query).count
}

type Writers = { [S in RowSection]: (context: RowContext, batch: Batch<S>) => Promise<number> }

/** Writes a batch of each section; each answers how many rows it inserted. */
export const ROW_WRITERS: Writers = {
  sources: ({ tx, ids }, { positions, rows }) => {
    const sent = fresh(rows)
    return insertedRemembering(
      ids.sources,
      positions,
      sent,
      tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(sent)}::uuid[], ${arrayLiteral(rows.map((r) => r.url))}::text[], ${arrayLiteral(rows.map((r) => r.doi ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => r.kind))}::text[], ${arrayLiteral(rows.map((r) => r.status))}::text[], ${arrayLiteral(rows.map((r) => r.parsed_title ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => r.parsed_text ?? ''))}::text[], ${arrayLiteral(rows.map((r) => r.parsed_markdown ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => r.published_at ?? null))}::date[], ${arrayLiteral(flags(rows.map((r) => r.has_stored_body)))}::int[]::bool[]
        ) AS b(pos, id, url, doi, kind, status, parsed_title, parsed_text, parsed_markdown, published_at, has_stored_body)
      ), inserted AS (
        INSERT INTO sources (id, url, doi, kind, status, parsed_title, parsed_text, parsed_markdown, published_at, has_stored_body, created_at)
        SELECT id, url, doi, kind, status, parsed_title, parsed_text, parsed_markdown, published_at, has_stored_body, ${createdAt(tx, tx`pos`)}
        FROM batch ORDER BY pos
        ON CONFLICT (url) DO NOTHING
        RETURNING id, url
      ), mapped AS (
        INSERT INTO import_sources (pos, id)
        SELECT b.pos, coalesce(i.id, (SELECT s.id FROM sources s WHERE s.url = b.url)) FROM batch b LEFT JOIN inserted i ON i.url = b.url
        RETURNING pos, id
      )
      SELECT (SELECT count(*) FROM inserted)::int AS inserted, ${tx.unsafe(REUSED)}`,
    )
  },

  /** An image takes the bytes that came before it (import_media) if it is new: it gets their UUID. */
  source_images: async (context, { positions, rows }) => {
    const { tx } = context
    const [{ inserted, stored }] = (await tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(fresh(rows))}::uuid[], ${arrayLiteral(rows.map((r) => r.source_idx))}::int[], ${arrayLiteral(rows.map((r) => r.kind))}::text[],
          ${arrayLiteral(rows.map((r) => r.page_number ?? null))}::int[], ${arrayLiteral(rows.map((r) => r.position))}::int[], ${arrayLiteral(rows.map((r) => r.url ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => r.width ?? null))}::int[], ${arrayLiteral(rows.map((r) => r.height ?? null))}::int[], ${arrayLiteral(rows.map((r) => r.bytes ?? null))}::bigint[],
          ${arrayLiteral(rows.map((r) => r.alt_text ?? ''))}::text[], ${arrayLiteral(rows.map((r) => r.content_type ?? ''))}::text[], ${arrayLiteral(rows.map((r) => r.image_ref ?? null))}::text[],
          ${arrayLiteral(flags(firstOfRef(rows.map((r) => r.image_ref))))}::int[]::bool[]
        ) AS b(pos, id, source_pos, kind, page_number, position, url, width, height, bytes, alt_text, content_type, image_ref, first_of_ref)
      ), resolved AS (
        SELECT b.*, ${mapped(tx, 'import_sources', tx`b.source_pos`)} AS source_id, m.id AS media_id, m.storage_key
        FROM batch b LEFT JOIN import_media m ON b.first_of_ref AND m.section = 'images' AND m.ref = b.image_ref AND NOT m.claimed
      ), inserted AS (
        INSERT INTO source_images (id, source_id, kind, page_number, position, url, width, height, bytes, alt_text, content_type, storage_key, created_at)
        SELECT coalesce(media_id, id), source_id, kind, page_number, position, url, width, height, bytes, alt_text, content_type, storage_key, ${createdAt(tx, tx`pos`)}
        FROM resolved ORDER BY pos
        ON CONFLICT (source_id, kind, position) DO NOTHING
        RETURNING id, source_id, kind, position
      ), claimed AS (
        UPDATE import_media m SET claimed = true FROM inserted i WHERE m.section = 'images' AND m.id = i.id RETURNING m.id
      ), mapped AS (
        INSERT INTO import_images (pos, id, is_new, image_ref)
        SELECT r.pos, coalesce(i.id, e.id), i.id IS NOT NULL, r.image_ref
        FROM resolved r
        LEFT JOIN inserted i ON i.source_id = r.source_id AND i.kind = r.kind AND i.position = r.position
        LEFT JOIN source_images e ON e.source_id = r.source_id AND e.kind = r.kind AND e.position = r.position
      )
      SELECT (SELECT count(*) FROM inserted)::int AS inserted, (SELECT count(*) FROM claimed)::int AS stored`) as unknown as [
      { inserted: number; stored: number },
    ]
    context.media.stored += stored
    return inserted
  },

  /**
   * Every body row is recorded in import_bodies; one whose bytes came already (version 2) is
   * inserted now, one whose bytes may still come (version 1) when they do (import-media.ts).
   * A body row cannot exist without bytes (storage_key is required).
   */
  source_bodies: async (context, { positions, rows }) => {
    const { tx } = context
    const [{ stored }] = (await tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(rows.map((r) => r.source_idx))}::int[], ${arrayLiteral(rows.map((r) => r.body_ref ?? null))}::text[],
          ${arrayLiteral(rows.map((r) => r.content_type ?? ''))}::text[], ${arrayLiteral(flags(firstOfRef(rows.map((r) => r.body_ref))))}::int[]::bool[]
        ) AS b(pos, source_pos, body_ref, content_type, first_of_ref)
      ), resolved AS (
        SELECT b.pos, ${mapped(tx, 'import_sources', tx`b.source_pos`)} AS source_id, b.body_ref, b.content_type, m.storage_key, m.bytes, m.content_type AS media_type
        FROM batch b LEFT JOIN import_media m ON b.first_of_ref AND m.section = 'bodies' AND m.ref = b.body_ref AND NOT m.claimed
      ), inserted AS (
        INSERT INTO source_bodies (source_id, content_type, storage_key, bytes, created_at)
        SELECT source_id, CASE WHEN content_type <> '' THEN content_type ELSE media_type END, storage_key, bytes, ${createdAt(tx, tx`pos`)}
        FROM resolved WHERE storage_key IS NOT NULL ORDER BY pos
        ON CONFLICT (source_id) DO NOTHING
        RETURNING storage_key
      ), claimed AS (
        UPDATE import_media m SET claimed = true FROM inserted i WHERE m.section = 'bodies' AND m.storage_key = i.storage_key RETURNING m.ref
      ), recorded AS (
        INSERT INTO import_bodies (pos, source_id, body_ref, content_type, stored)
        SELECT r.pos, r.source_id, r.body_ref, r.content_type, i.storage_key IS NOT NULL
        FROM resolved r LEFT JOIN inserted i ON i.storage_key = r.storage_key
      )
      SELECT (SELECT count(*) FROM claimed)::int AS stored`) as unknown as [{ stored: number }]
    context.media.stored += stored
    return stored
  },

  /** The content hash is recomputed from the text: the field is never trusted. */
  facts: (context, { positions, rows }) => {
    const { tx } = context
    const hashes = rows.map((r) => factContentHash(r.text))
    const sent = fresh(rows)
    return insertedRemembering(
      context.ids.facts,
      positions,
      sent,
      tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(sent)}::uuid[], ${arrayLiteral(rows.map((r) => r.text))}::text[], ${arrayLiteral(rows.map((r) => r.fact_kind))}::text[],
          ${arrayLiteral(rows.map((r) => r.image_url ?? ''))}::text[], ${arrayLiteral(hashes)}::text[], ${arrayLiteral(hashes.map((hash) => portableFactId(hash)))}::uuid[],
          ${arrayLiteral(rows.map((r) => r.promptset_hash ?? ''))}::text[], ${arrayLiteral(rows.map((r) => r.status))}::text[], ${arrayLiteral(rows.map((r) => r.source_image_idx ?? -1))}::int[]
        ) AS b(pos, id, text, fact_kind, image_url, content_hash, portable, promptset_hash, status, image_pos)
      ), inserted AS (
        INSERT INTO facts (id, text, fact_kind, image_url, content_hash, promptset_hash, status, source_image_id, created_at)
        SELECT b.id, b.text, b.fact_kind, ${imageUrl(context, tx`b.image_url`)}, b.content_hash, b.promptset_hash, b.status, si.id, ${createdAt(tx, tx`b.pos`)}
        FROM batch b LEFT JOIN LATERAL (SELECT si.* FROM import_images m JOIN source_images si ON si.id = m.id WHERE m.pos = b.image_pos) si ON b.image_pos >= 0
        ORDER BY b.pos
        ${context.bulk ? tx`` : tx`ON CONFLICT (content_hash) DO NOTHING`}
        RETURNING id, content_hash
      ), mapped AS (
        INSERT INTO import_facts (pos, id, portable, is_new, image_pos)
        ${
          context.bulk
            ? tx`SELECT b.pos, b.id, b.portable, true, b.image_pos FROM batch b`
            : tx`
        SELECT b.pos, coalesce(i.id, (SELECT f.id FROM facts f WHERE f.content_hash = b.content_hash)), b.portable, i.id IS NOT NULL, b.image_pos
        FROM batch b LEFT JOIN inserted i ON i.content_hash = b.content_hash
        RETURNING pos, id`
        }
      )
      SELECT (SELECT count(*) FROM inserted)::int AS inserted, ${context.bulk ? tx`'[]'::json AS reused` : tx.unsafe(REUSED)}`,
    )
  },

  fact_sources: ({ tx, ids }, { rows }) =>
    count(tx`
      INSERT INTO fact_sources (fact_id, source_id, chunk_index)
      SELECT * FROM unnest(
        ${ids.facts.list(rows.map((r) => r.fact_idx))}::uuid[], ${ids.sources.list(rows.map((r) => r.source_idx))}::uuid[], ${arrayLiteral(rows.map((r) => r.chunk_index))}::int[]
      )
      ON CONFLICT DO NOTHING`),

  concepts: ({ tx, ids }, { positions, rows }) => {
    const sent = fresh(rows)
    return insertedRemembering(
      ids.concepts,
      positions,
      sent,
      tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(sent)}::uuid[], ${arrayLiteral(rows.map((r) => r.canonical_name))}::text[], ${arrayLiteral(rows.map((r) => r.context))}::text[],
          ${arrayLiteral(rows.map((r) => r.description ?? ''))}::text[], ${arrayLiteral(rows.map((r) => r.promptset_hash ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => portableConceptId(r.canonical_name, r.context)))}::uuid[]
        ) AS b(pos, id, canonical_name, context, description, promptset_hash, portable)
      ), inserted AS (
        INSERT INTO concepts (id, canonical_name, context, description, promptset_hash, created_at)
        SELECT id, canonical_name, context, description, promptset_hash, ${createdAt(tx, tx`pos`)}
        FROM batch ORDER BY pos
        ON CONFLICT (lower(canonical_name), lower(context)) DO NOTHING
        RETURNING id, canonical_name, context
      ), mapped AS (
        INSERT INTO import_concepts (pos, id, portable, is_new)
        SELECT b.pos, coalesce(i.id, (SELECT c.id FROM concepts c WHERE lower(c.canonical_name) = lower(b.canonical_name) AND lower(c.context) = lower(b.context))),
          b.portable, i.id IS NOT NULL
        FROM batch b LEFT JOIN inserted i ON lower(i.canonical_name) = lower(b.canonical_name) AND lower(i.context) = lower(b.context)
        RETURNING pos, id
      )
      SELECT (SELECT count(*) FROM inserted)::int AS inserted, ${tx.unsafe(REUSED)}`,
    )
  },

  concept_aliases: ({ tx, ids }, { rows }) =>
    count(tx`
      INSERT INTO concept_aliases (concept_id, alias_text)
      SELECT * FROM unnest(${ids.concepts.list(rows.map((r) => r.concept_idx))}::uuid[], ${arrayLiteral(rows.map((r) => r.alias_text))}::text[])
      ON CONFLICT DO NOTHING`),

  fact_concepts: ({ tx, ids }, { rows }) =>
    count(tx`
      INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
      SELECT * FROM unnest(
        ${ids.facts.list(rows.map((r) => r.fact_idx))}::uuid[], ${ids.concepts.list(rows.map((r) => r.concept_idx))}::uuid[], ${arrayLiteral(rows.map((r) => r.promptset_hash ?? ''))}::text[]
      )
      ON CONFLICT DO NOTHING`),

  /** Its contents' citations are local already (import-citations.ts). */
  concept_summaries: (context, { positions, rows }) => {
    const { tx, ids } = context
    return inserted(tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(fresh(rows))}::uuid[], ${ids.concepts.list(rows.map((r) => r.concept_idx))}::uuid[],
          ${arrayLiteral(rows.map((r) => r.sequence_num))}::int[], ${arrayLiteral(flags(rows.map((r) => r.is_complete)))}::int[]::bool[],
          ${arrayLiteral(rows.map((r) => r.fact_count))}::int[], ${arrayLiteral(rows.map((r) => r.content))}::text[],
          ${arrayLiteral(rows.map((r) => uuidList(ids.facts, r.covered_fact_idxs)))}::text[], ${arrayLiteral(rows.map((r) => r.model ?? ''))}::text[]
        ) AS b(pos, id, concept_id, sequence_num, is_complete, fact_count, content, covered, model)
      ), resolved AS (
        SELECT b.*, b.covered::uuid[] AS covered_fact_ids FROM batch b
      ), inserted AS (
        INSERT INTO concept_summaries (id, concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids, model, created_at)
        SELECT id, concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids, model, ${createdAt(tx, tx`pos`)}
        FROM resolved ORDER BY pos
        ON CONFLICT (concept_id, sequence_num) DO NOTHING
        RETURNING id, concept_id, sequence_num
      ), mapped AS (
        INSERT INTO import_summaries (pos, id)
        SELECT r.pos, coalesce(i.id, e.id)
        FROM resolved r
        LEFT JOIN inserted i ON i.concept_id = r.concept_id AND i.sequence_num = r.sequence_num
        LEFT JOIN concept_summaries e ON e.concept_id = r.concept_id AND e.sequence_num = r.sequence_num
      )
      SELECT count(*)::int AS inserted FROM inserted`)
  },

  /** Counts the syntheses inserted (xmax = 0), not those updated. */
  concept_syntheses: (context, { positions, rows }) => {
    const { tx } = context
    return inserted(tx`
      WITH batch AS (
        SELECT DISTINCT ON (lower(canonical_name)) * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(fresh(rows))}::uuid[], ${arrayLiteral(rows.map((r) => r.canonical_name))}::text[], ${arrayLiteral(rows.map((r) => r.content))}::text[],
          ${arrayLiteral(rows.map((r) => intList(r.covered_summary_idxs)))}::text[], ${arrayLiteral(rows.map((r) => uuidList(context.ids.concepts, r.covered_concept_idxs)))}::text[],
          ${arrayLiteral(rows.map((r) => uuidList(context.ids.facts, r.embedded_image_idxs)))}::text[], ${arrayLiteral(rows.map((r) => r.model ?? ''))}::text[]
        ) AS b(pos, id, canonical_name, content, summaries, concepts, images, model)
        ORDER BY lower(canonical_name), pos DESC
      ), upserted AS (
        INSERT INTO concept_syntheses AS s (id, canonical_name, content, covered_summary_ids, covered_concept_ids, embedded_image_fact_ids, model, created_at)
        SELECT b.id, b.canonical_name, b.content, ${localIds(tx, 'import_summaries', tx`b.summaries`)}, b.concepts::uuid[], b.images::uuid[], b.model, ${createdAt(tx, tx`b.pos`)}
        FROM batch b ORDER BY b.pos
        ON CONFLICT (lower(canonical_name)) DO UPDATE SET
          content = excluded.content, covered_summary_ids = excluded.covered_summary_ids, covered_concept_ids = excluded.covered_concept_ids,
          embedded_image_fact_ids = excluded.embedded_image_fact_ids, model = excluded.model
        WHERE (s.content, s.covered_summary_ids, s.covered_concept_ids, s.embedded_image_fact_ids, s.model)
          IS DISTINCT FROM (excluded.content, excluded.covered_summary_ids, excluded.covered_concept_ids, excluded.embedded_image_fact_ids, excluded.model)
        RETURNING xmax = 0 AS inserted
      )
      SELECT count(*) FILTER (WHERE inserted)::int AS inserted FROM upserted`)
  },

  investigations: ({ tx }, { positions, rows }) =>
    inserted(tx`
      WITH batch AS (
        SELECT * FROM unnest(${arrayLiteral(positions)}::int[], ${arrayLiteral(fresh(rows))}::uuid[], ${arrayLiteral(rows.map((r) => r.title))}::text[], ${arrayLiteral(rows.map((r) => r.topic ?? ''))}::text[])
          AS b(pos, id, title, topic)
      ), resolved AS (
        SELECT b.*, (
          SELECT e.id FROM investigations e
          WHERE e.title = b.title AND e.topic = b.topic AND e.created_at < now()
          ORDER BY e.created_at, e.id LIMIT 1
        ) AS existing
        FROM batch b
      ), inserted AS (
        INSERT INTO investigations (id, title, topic, created_at)
        SELECT id, title, topic, ${createdAt(tx, tx`pos`)} FROM resolved WHERE existing IS NULL ORDER BY pos
        RETURNING 1
      ), mapped AS (
        INSERT INTO import_investigations (pos, id) SELECT pos, coalesce(existing, id) FROM resolved
      )
      SELECT count(*)::int AS inserted FROM inserted`),

  investigation_sources: ({ tx }, { rows }) =>
    count(tx`
      INSERT INTO investigation_sources (investigation_id, source_id)
      SELECT ${mapped(tx, 'import_investigations', tx`b.investigation_pos`)}, ${mapped(tx, 'import_sources', tx`b.source_pos`)}
      FROM unnest(${arrayLiteral(rows.map((r) => r.investigation_idx))}::int[], ${arrayLiteral(rows.map((r) => r.source_idx))}::int[]) AS b(investigation_pos, source_pos)
      ON CONFLICT DO NOTHING`),

  /** A batch never holds a report and its parent (import-transaction.ts): parents are mapped already. */
  reports: ({ tx }, { positions, rows }) =>
    inserted(tx`
      WITH batch AS (
        SELECT * FROM unnest(
          ${arrayLiteral(positions)}::int[], ${arrayLiteral(fresh(rows))}::uuid[], ${arrayLiteral(rows.map((r) => r.title))}::text[], ${arrayLiteral(rows.map((r) => r.topic ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => r.body_md))}::text[], ${arrayLiteral(rows.map((r) => r.status))}::text[], ${arrayLiteral(rows.map((r) => r.parent_idx ?? -1))}::int[],
          ${arrayLiteral(rows.map((r) => (r.similarity_threshold === undefined ? null : encodeFloat64(r.similarity_threshold))))}::float8[], ${arrayLiteral(rows.map((r) => r.embedded_model ?? ''))}::text[],
          ${arrayLiteral(rows.map((r) => r.sentence_count ?? null))}::int[]
        ) AS b(pos, id, title, topic, body_md, status, parent_pos, similarity_threshold, embedded_model, sentence_count)
      ), parented AS (
        SELECT b.*, ${mapped(tx, 'import_reports', tx`b.parent_pos`)} AS parent_id FROM batch b
      ), resolved AS (
        SELECT p.*, (
          SELECT e.id FROM reports e
          WHERE e.title = p.title AND e.topic = p.topic AND e.body_md = p.body_md AND e.parent_id IS NOT DISTINCT FROM p.parent_id AND e.created_at < now()
          ORDER BY e.created_at, e.id LIMIT 1
        ) AS existing
        FROM parented p
      ), inserted AS (
        INSERT INTO reports (id, title, topic, body_md, status, parent_id, similarity_threshold, embedded_model, sentence_count, created_at)
        SELECT id, title, topic, body_md, status, parent_id, similarity_threshold, embedded_model, sentence_count, ${createdAt(tx, tx`pos`)}
        FROM resolved WHERE existing IS NULL ORDER BY pos
        RETURNING 1
      ), mapped AS (
        INSERT INTO import_reports (pos, id) SELECT pos, coalesce(existing, id) FROM resolved
      )
      SELECT count(*)::int AS inserted FROM inserted`),

  /** In the bundle's order, which need not follow the reports' (its created_at keeps it for the export). */
  report_annotations: ({ tx }, { positions, rows }) =>
    count(tx`
      INSERT INTO report_annotations (report_id, sentence_index, sentence_text, fact_id, score, posture, created_at)
      SELECT ${mapped(tx, 'import_reports', tx`b.report_pos`)}, b.sentence_index, b.sentence_text, ${mapped(tx, 'import_facts', tx`b.fact_pos`)}, b.score, b.posture,
             ${createdAt(tx, tx`b.pos`)}
      FROM unnest(
        ${arrayLiteral(positions)}::int[], ${arrayLiteral(rows.map((r) => r.report_idx))}::int[], ${arrayLiteral(rows.map((r) => r.sentence_index))}::int[], ${arrayLiteral(rows.map((r) => r.sentence_text))}::text[],
        ${arrayLiteral(rows.map((r) => r.fact_idx))}::int[], ${arrayLiteral(rows.map((r) => encodeFloat64(r.score)))}::float8[], ${arrayLiteral(rows.map((r) => r.posture ?? ''))}::text[]
      ) AS b(pos, report_pos, sentence_index, sentence_text, fact_pos, score, posture)
      ON CONFLICT DO NOTHING`),
}
