// Reads of a repository's knowledge graph (tables: src/db/migrations/repository/0002_graph.sql).
// Every function takes the repository's own pool, so a query can never reach another
// repository's rows. Lists are ordered by (created_at, id) and fetch one row of look-ahead for
// the Link header; they leave out the big text columns, which only the details carry.
import type { Fragment, Sql } from 'postgres'
import { isoTimestamp, likePrefix, type Db } from '../db/sql.ts'
import {
  NEIGHBOURHOOD_SIZE,
  RELATED_LIMIT,
  type Citation,
  type Concept,
  type ConceptDetail,
  type Fact,
  type FactDetail,
  type FactMerge,
  type Investigation,
  type InvestigationDetail,
  type Neighbourhood,
  type RelatedConcept,
  type Report,
  type ReportDetail,
  type Source,
  type SourceDetail,
  type SourceFact,
} from './schemas.ts'
import {
  afterCursor,
  pageKeyColumn,
  pageOrder,
  rankedSlice,
  type PageKey,
  type PageRequest,
  type RankedRange,
} from '../db/pages.ts'

type Paged<T> = (T & { page_key: PageKey })[]

// The output column created_at is text with milliseconds; every ORDER BY here names the table's
// column instead (pageOrder), or rows of one millisecond would tie and pages skip rows.
const createdAt = (sql: Db, table: string) => sql`${isoTimestamp(sql, `${table}.created_at`)} AS created_at`
// bigint arrives from postgres.js as a string; byte counts stay far below 2^53.
const bytes = (sql: Db) => sql`bytes::float8 AS bytes`

/**
 * Bytes of rows a list answer carries, about: past them the page ends early (its Link goes on
 * from there). With rows of up to the import's row limit, `limit` of them would be unbounded.
 */
export const PAGE_BYTES = 8 * 1024 ** 2

/** Related concepts, and a fact's citations, rank this many at most (the REST routes and the MCP tools alike). */
export const RELATED_WINDOW = 1000
/** Bytes a listed row counts beyond its text columns: its ids, times, numbers and JSON punctuation, generously. */
const ROW_OVERHEAD = 256

/**
 * One page of `table` (with its own filter), ordered by (created_at, id), plus the look-ahead
 * row; cut where its rows pass PAGE_BYTES, in which case the rows carry the shorter page's size
 * (`pageLimit`, see http/pagination.ts) and the Link goes on from there. At least one row is shown, whatever
 * its size. A row's size is that of its `textColumns` (the only ones a row can make large)
 * plus ROW_OVERHEAD.
 *
 * The window runs in the index scan's own order, so PostgreSQL streams it and stops at the LIMIT
 * (no sort, no second pass); `has_next` (lead) tells a cut from the end of the rows.
 */
async function listPage<T extends object>(
  sql: Sql,
  columns: Fragment,
  table: string,
  textColumns: readonly string[],
  filter: Fragment,
  request: PageRequest,
): Promise<Paged<T>> {
  const rowBytes = textColumns.reduce(
    (sum, column) => sql`${sum} + coalesce(octet_length(${sql(`${table}.${column}`)}), 0)`,
    sql`${ROW_OVERHEAD}::int`,
  )
  const rows = await sql<(T & { id: string; key_at: string; bytes_before: string; rn: number; has_next: boolean })[]>`
    SELECT * FROM (
      SELECT ${columns}, ${pageKeyColumn(sql)},
        coalesce(sum(${rowBytes}) OVER page, 0) AS bytes_before,
        (row_number() OVER page)::int AS rn,
        lead(true, 1, false) OVER page AS has_next
      FROM ${sql(table)}
      WHERE ${afterCursor(sql, request.after)} AND ${filter}
      WINDOW page AS (ORDER BY ${pageOrder(sql, table)} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      ORDER BY ${pageOrder(sql, table)}
      LIMIT ${request.limit + 1}
    ) sized
    WHERE bytes_before < ${PAGE_BYTES} OR rn <= 2`
  // The outer query keeps the inner order in practice, but SQL does not promise it: rn does.
  rows.sort((a, b) => a.rn - b.rn)
  const last = rows.at(-1)
  const paged = rows.map(({ key_at, rn: _, has_next: __, bytes_before: ___, ...row }) =>
    Object.assign(row, { page_key: { at: key_at, id: row.id } }),
  ) as unknown as Paged<T>
  // Cut: a row after the last one returned exists within the LIMIT, so the last row is the look-ahead of a shorter page.
  return last && rows.length <= request.limit && last.has_next
    ? Object.assign(paged, { pageLimit: Math.max(1, rows.length - 1) })
    : paged
}

/**
 * A detail's related rows as a JSON array ([] for none), computed inside the detail's own
 * statement: one round trip and one snapshot per detail instead of a query per relation. The rows
 * keep the order of `rows` (its ORDER BY ... LIMIT): a sorted subquery feeding an aggregate with
 * no other processing at its level, which PostgreSQL's documentation gives as the way to order an
 * aggregate's input (section 9.21).
 */
const jsonRows = (sql: Db, rows: Fragment) =>
  sql`(SELECT coalesce(json_agg(related), '[]'::json) FROM (${rows}) related)`
/** The one related row as a JSON object, or null. */
export const jsonRow = (sql: Db, row: Fragment) => sql`(SELECT row_to_json(related) FROM (${row}) related)`

/** Rows of `table` with the given ids, in the order of `ids`; unknown ids are skipped. */
async function rowsByIds<T extends object>(
  sql: Sql,
  columns: Fragment,
  table: string,
  ids: readonly string[],
): Promise<T[]> {
  if (ids.length === 0) return []
  return await sql<T[]>`
    SELECT ${columns} FROM ${sql(table)} JOIN unnest(${ids as string[]}::uuid[]) WITH ORDINALITY AS wanted (id, ord) USING (id)
    ORDER BY wanted.ord`
}

// ---- sources

const sourceColumns = (sql: Db) =>
  sql`sources.id, url, doi, kind, status, parsed_title, to_char(published_at, 'YYYY-MM-DD') AS published_at, has_stored_body, ${createdAt(sql, 'sources')}`

export function listSources(sql: Sql, request: PageRequest): Promise<Paged<Source>> {
  return listPage(
    sql,
    sourceColumns(sql),
    'sources',
    ['url', 'doi', 'kind', 'status', 'parsed_title'],
    sql`true`,
    request,
  )
}

export async function getSource(sql: Db, id: string): Promise<SourceDetail | undefined> {
  const [source] = await sql<SourceDetail[]>`
    SELECT ${sourceColumns(sql)}, status_reason, parsed_text, parsed_markdown,
      ${jsonRows(
        sql,
        sql`SELECT id, kind, page_number, position, url, width, height, ${bytes(sql)}, alt_text, content_type
          FROM source_images WHERE source_id = sources.id
          ORDER BY kind, position
          LIMIT ${RELATED_LIMIT}`,
      )} AS images,
      ${jsonRow(sql, sql`SELECT content_type, ${bytes(sql)} FROM source_bodies WHERE source_id = sources.id`)} AS body,
      (SELECT count(DISTINCT fact_id)::int FROM fact_sources WHERE source_id = sources.id) AS fact_count,
      ${jsonRows(
        sql,
        sql`SELECT c.id, c.canonical_name, c.context, count(DISTINCT fc.fact_id)::int AS facts
          FROM fact_sources fs JOIN fact_concepts fc ON fc.fact_id = fs.fact_id JOIN concepts c ON c.id = fc.concept_id
          WHERE fs.source_id = sources.id
          GROUP BY c.id
          ORDER BY facts DESC, lower(c.canonical_name), c.id
          LIMIT ${RELATED_LIMIT}`,
      )} AS concepts
    FROM sources WHERE id = ${id}`
  return source
}

/**
 * The facts a source's chunks support, in the chunks' order (within a chunk, the facts'), one row
 * per chunk a fact cites, optionally of chunks `from` to `to` only; undefined when there is no
 * such source.
 */
export async function sourceFacts(
  sql: Sql,
  id: string,
  chunks: { from?: number; to?: number },
  range: RankedRange,
): Promise<{ total: number; rows: SourceFact[] } | undefined> {
  const [exists] = await sql`SELECT 1 FROM sources WHERE id = ${id}`
  if (!exists) return undefined
  const { total, rows } = await rankedSlice<SourceFact & { key_at: string }>(
    sql,
    sql`SELECT fs.chunk_index, f.id, f.text, f.fact_kind, f.status, f.created_at AS key_at
      FROM fact_sources fs JOIN facts f ON f.id = fs.fact_id
      WHERE fs.source_id = ${id} AND fs.chunk_index >= ${chunks.from ?? 0} AND fs.chunk_index <= ${chunks.to ?? 2 ** 31 - 1}`,
    sql`chunk_index, key_at, id`,
    range,
  )
  return { total, rows: rows.map(({ key_at: _, ...row }) => row) }
}

// ---- facts

/** The near-duplicate merges (graph/write/fact-merges.ts), of one fact or of all, oldest first. */
export function listFactMerges(sql: Sql, request: PageRequest & { factId?: string }): Promise<Paged<FactMerge>> {
  return listPage(
    sql,
    sql`id, fact_id, text, content_hash, promptset_hash, source_id, chunk_index, similarity, embedder, concept_ids::text[], ${createdAt(sql, 'fact_merges')}`,
    'fact_merges',
    ['text', 'promptset_hash', 'embedder'],
    request.factId === undefined ? sql`true` : sql`fact_id = ${request.factId}`,
    request,
  )
}

/** Whether the fact exists (a list of its rows tells no fact from one with none). */
export async function factExists(sql: Sql, id: string): Promise<boolean> {
  return (await sql`SELECT 1 FROM facts WHERE id = ${id}`).length > 0
}

export interface FactFilter {
  status?: string
  sourceId?: string
  /** text or image */
  factKind?: string
  /** Facts linked to every one of these concepts. */
  conceptIds?: readonly string[]
}

const factColumns = (sql: Db) =>
  sql`facts.id, text, fact_kind, image_url, content_hash, promptset_hash, status, source_image_id, ${createdAt(sql, 'facts')}`

export function listFacts(sql: Sql, request: PageRequest & FactFilter): Promise<Paged<Fact>> {
  const concepts = [...new Set(request.conceptIds ?? [])]
  const filter = sql`${request.status === undefined ? sql`true` : sql`status = ${request.status}`}
    AND ${request.factKind === undefined ? sql`true` : sql`fact_kind = ${request.factKind}`}
    AND ${request.sourceId === undefined ? sql`true` : sql`id IN (SELECT fact_id FROM fact_sources WHERE source_id = ${request.sourceId})`}
    AND ${concepts.length === 0 ? sql`true` : sql`id IN (SELECT fact_id FROM fact_concepts WHERE concept_id = ANY(${concepts}::uuid[]) GROUP BY fact_id HAVING count(*) = ${concepts.length})`}`
  return listPage(
    sql,
    factColumns(sql),
    'facts',
    ['text', 'fact_kind', 'image_url', 'content_hash', 'promptset_hash', 'status'],
    filter,
    request,
  )
}

/** A stored fact's detail as a select list over a row named `facts`. */
const storedFactDetail = (sql: Db) =>
  factDetailColumns(sql, {
    sources: sql`SELECT source_id, chunk_index FROM fact_sources WHERE fact_id = facts.id`,
    concepts: sql`SELECT concept_id FROM fact_concepts WHERE fact_id = facts.id`,
  })

export async function getFact(sql: Db, id: string): Promise<FactDetail | undefined> {
  const [fact] = await sql<FactDetail[]>`SELECT ${storedFactDetail(sql)} FROM facts WHERE id = ${id}`
  return fact
}

/**
 * The facts linked to concept `id`, each with its sources (and the chunks it cites) and concepts,
 * one page at a time; undefined when there is no such concept.
 */
export async function conceptFacts(sql: Sql, id: string, request: PageRequest): Promise<Paged<FactDetail> | undefined> {
  const [exists] = await sql`SELECT 1 FROM concepts WHERE id = ${id}`
  if (!exists) return undefined
  return listPage(
    sql,
    storedFactDetail(sql),
    'facts',
    ['text', 'image_url', 'content_hash', 'promptset_hash'],
    sql`id IN (SELECT fact_id FROM fact_concepts WHERE concept_id = ${id})`,
    request,
  )
}

/**
 * A fact's detail as a select list over a row named `facts`, its links read from `links`
 * (rows of source_id and chunk_index; of concept_id): a fact's stored links, or those a
 * statement writing the fact is inserting (graph/write/facts.ts).
 */
export const factDetailColumns = (sql: Db, links: { sources: Fragment; concepts: Fragment }) => sql`
  ${factColumns(sql)},
  ${jsonRows(
    sql,
    sql`SELECT sources.id, url, parsed_title, l.chunk_index
      FROM (${links.sources}) l JOIN sources ON sources.id = l.source_id
      ORDER BY ${pageOrder(sql, 'sources')}, l.chunk_index
      LIMIT ${RELATED_LIMIT}`,
  )} AS sources,
  ${jsonRows(
    sql,
    sql`SELECT concepts.id, canonical_name, context
      FROM (${links.concepts}) l JOIN concepts ON concepts.id = l.concept_id
      ORDER BY ${pageOrder(sql, 'concepts')}
      LIMIT ${RELATED_LIMIT}`,
  )} AS concepts`

/**
 * The summaries that cover fact `id` (covered_fact_ids, GIN-indexed) in their concepts' order,
 * then the reports whose sentences it annotates, by (created_at, id); undefined when there is no
 * such fact. Citations in the texts alone are not searched: that would read every summary and
 * report (graph/write's citationsOf does, for a deletion).
 */
export async function factCitations(
  sql: Sql,
  id: string,
  range: RankedRange,
): Promise<{ total: number; rows: Citation[] } | undefined> {
  const [exists] = await sql`SELECT 1 FROM facts WHERE id = ${id}`
  if (!exists) return undefined
  const { total, rows } = await rankedSlice<Citation & { kind_order: number; key_at: string }>(
    sql,
    sql`SELECT 'summary' AS kind, s.id, c.canonical_name AS title, s.concept_id, s.sequence_num, 0 AS sentences,
        0 AS kind_order, c.created_at AS key_at
      FROM concept_summaries s JOIN concepts c ON c.id = s.concept_id
      WHERE s.covered_fact_ids @> ARRAY[${id}]::uuid[]
      UNION ALL
      SELECT 'report', r.id, r.title, NULL, NULL, a.sentences, 1, r.created_at
      FROM (SELECT report_id, count(DISTINCT sentence_index)::int AS sentences FROM report_annotations WHERE fact_id = ${id} GROUP BY report_id) a
        JOIN reports r ON r.id = a.report_id`,
    sql`kind_order, key_at, concept_id, sequence_num, id`,
    range,
  )
  return { total, rows: rows.map(({ kind_order: _, key_at: __, ...row }) => row) }
}

/** Facts in the order of `ids` (unknown ids skipped): hydrates ranked hits of a vector search. */
export function factsByIds(sql: Sql, ids: readonly string[]): Promise<Fact[]> {
  return rowsByIds(sql, factColumns(sql), 'facts', ids)
}

// ---- concepts

const conceptColumns = (sql: Db) =>
  sql`concepts.id, canonical_name, context, description, promptset_hash, ${createdAt(sql, 'concepts')}`

export function listConcepts(sql: Sql, request: PageRequest & { prefix?: string }): Promise<Paged<Concept>> {
  // lower(...) LIKE '<literal>%' is what the concepts_lower_name_prefix index (text_pattern_ops) serves.
  const filter =
    request.prefix === undefined ? sql`true` : sql`lower(canonical_name) LIKE lower(${likePrefix(request.prefix)})`
  return listPage(
    sql,
    conceptColumns(sql),
    'concepts',
    ['canonical_name', 'context', 'description', 'promptset_hash'],
    filter,
    request,
  )
}

export async function getConcept(sql: Db, id: string): Promise<ConceptDetail | undefined> {
  const [concept] = await sql<ConceptDetail[]>`
    SELECT ${conceptColumns(sql)},
      (SELECT coalesce(json_agg(alias_text), '[]'::json) FROM (
        SELECT alias_text FROM concept_aliases WHERE concept_id = concepts.id ORDER BY alias_text LIMIT ${RELATED_LIMIT}
      ) related) AS aliases,
      ${jsonRows(
        sql,
        sql`SELECT id, sequence_num, is_complete, fact_count, content, covered_fact_ids, model, ${createdAt(sql, 'concept_summaries')}
          FROM concept_summaries WHERE concept_id = concepts.id
          ORDER BY sequence_num
          LIMIT ${RELATED_LIMIT}`,
      )} AS summaries,
      -- The synthesis of the concept's own name is authoritative; failing that, one that covers it.
      ${jsonRow(
        sql,
        sql`SELECT id, canonical_name, content, covered_summary_ids, covered_concept_ids, embedded_image_fact_ids, model, ${createdAt(sql, 'concept_syntheses')}
          FROM concept_syntheses
          WHERE lower(canonical_name) = lower(concepts.canonical_name) OR concepts.id = ANY(covered_concept_ids)
          ORDER BY lower(canonical_name) = lower(concepts.canonical_name) DESC, ${pageOrder(sql, 'concept_syntheses')}
          LIMIT 1`,
      )} AS synthesis,
      (SELECT count(*)::int FROM fact_concepts WHERE concept_id = concepts.id) AS fact_count
    FROM concepts WHERE id = ${id}`
  return concept
}

/**
 * Concepts that share facts with concept `id`, most shared first (ties by id), with the number
 * they share; undefined when there is no such concept.
 */
export async function relatedConcepts(
  sql: Sql,
  id: string,
  range: RankedRange,
): Promise<{ total: number; rows: RelatedConcept[] } | undefined> {
  const [exists] = await sql`SELECT 1 FROM concepts WHERE id = ${id}`
  if (!exists) return undefined
  return rankedSlice<RelatedConcept>(
    sql,
    sql`SELECT ${conceptColumns(sql)}, related.shared_facts
      FROM (
        SELECT other.concept_id, count(*)::int AS shared_facts
        FROM fact_concepts mine JOIN fact_concepts other ON other.fact_id = mine.fact_id AND other.concept_id <> mine.concept_id
        WHERE mine.concept_id = ${id}
        GROUP BY other.concept_id
      ) related JOIN concepts ON concepts.id = related.concept_id`,
    sql`shared_facts DESC, id`,
    range,
  )
}

/**
 * Concept `id`'s neighbourhood: the first NEIGHBOURHOOD_SIZE of its related concepts (the
 * related list's rows and counts, by the same query) and the facts each pair of them shares;
 * undefined when there is no such concept. The edges are bounded by the pairs of the concepts
 * listed (NEIGHBOURHOOD_SIZE² / 2).
 */
export async function conceptNeighbourhood(sql: Sql, id: string): Promise<Neighbourhood | undefined> {
  const related = await relatedConcepts(sql, id, { offset: 0, limit: NEIGHBOURHOOD_SIZE })
  if (!related) return undefined
  const ids = related.rows.map((concept) => concept.id)
  const edges = await sql<Neighbourhood['edges']>`
    SELECT a.concept_id AS source, b.concept_id AS target, count(*)::int AS shared_facts
    FROM fact_concepts a JOIN fact_concepts b ON b.fact_id = a.fact_id AND b.concept_id > a.concept_id
    WHERE a.concept_id = ANY(${ids}::uuid[]) AND b.concept_id = ANY(${ids}::uuid[])
    GROUP BY a.concept_id, b.concept_id
    ORDER BY shared_facts DESC, source, target`
  return { total: related.total, concepts: related.rows, edges: [...edges] }
}

/** Concepts in the order of `ids` (unknown ids skipped): hydrates ranked hits of a vector search. */
export function conceptsByIds(sql: Sql, ids: readonly string[]): Promise<Concept[]> {
  return rowsByIds(sql, conceptColumns(sql), 'concepts', ids)
}

// ---- investigations

const investigationColumns = (sql: Db) => sql`id, title, topic, ${createdAt(sql, 'investigations')}`

export function listInvestigations(sql: Sql, request: PageRequest): Promise<Paged<Investigation>> {
  return listPage(sql, investigationColumns(sql), 'investigations', ['title', 'topic'], sql`true`, request)
}

export async function getInvestigation(sql: Db, id: string): Promise<InvestigationDetail | undefined> {
  const [investigation] = await sql<InvestigationDetail[]>`
    SELECT ${investigationColumns(sql)},
      ${jsonRows(
        sql,
        sql`SELECT sources.id, url, parsed_title
          FROM investigation_sources JOIN sources ON sources.id = investigation_sources.source_id
          WHERE investigation_id = investigations.id
          ORDER BY ${pageOrder(sql, 'sources')}
          LIMIT ${RELATED_LIMIT}`,
      )} AS sources
    FROM investigations WHERE id = ${id}`
  return investigation
}

// ---- reports

/** A parent's UUID, or null for top-level reports only. */
export type ParentFilter = string | null

const reportColumns = (sql: Db) =>
  sql`id, title, topic, status, parent_id, similarity_threshold, embedded_model, sentence_count, ${createdAt(sql, 'reports')}`

export function listReports(sql: Sql, request: PageRequest & { parentId?: ParentFilter }): Promise<Paged<Report>> {
  const { parentId } = request
  const filter =
    parentId === undefined ? sql`true` : parentId === null ? sql`parent_id IS NULL` : sql`parent_id = ${parentId}`
  return listPage(sql, reportColumns(sql), 'reports', ['title', 'topic', 'status', 'embedded_model'], filter, request)
}

export async function getReport(sql: Db, id: string): Promise<ReportDetail | undefined> {
  const [report] = await sql<ReportDetail[]>`
    SELECT ${reportColumns(sql)}, body_md,
      ${jsonRows(
        sql,
        sql`SELECT sentence_index, sentence_text, fact_id, score, posture
          FROM report_annotations WHERE report_id = reports.id
          ORDER BY sentence_index, score DESC, fact_id
          LIMIT ${RELATED_LIMIT}`,
      )} AS annotations,
      ${jsonRows(
        sql,
        sql`SELECT id, title, status, ${createdAt(sql, 'children')}
          FROM reports children WHERE parent_id = reports.id
          ORDER BY ${pageOrder(sql, 'children')}
          LIMIT ${RELATED_LIMIT}`,
      )} AS children
    FROM reports WHERE id = ${id}`
  return report
}
