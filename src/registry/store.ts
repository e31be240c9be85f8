// The registry's index: the graphs table of the system database (migration 0010_graphs).
// Bundles themselves are blobs under storage_key; see routes.ts for the order of writes.
import type { Static } from '@sinclair/typebox'
import { isoTimestamp, type Db } from '../db/sql.ts'
import type { GraphRecord } from './graph-record.ts'
import { afterCursor, pageKeyColumn, pageOrder, withPageKeys, type PageKey } from '../db/pages.ts'

/** The seven counts of a bundle's metadata, echoed from the push headers. */
export const COUNT_FIELDS = [
  'source_count',
  'fact_count',
  'concept_count',
  'summary_count',
  'synthesis_count',
  'report_count',
  'investigation_count',
] as const
type CountField = (typeof COUNT_FIELDS)[number]
export type GraphCounts = Record<CountField, number>

/** The graph record of docs/spec/bundle.md §7. */
export type Graph = Static<typeof GraphRecord>

/** What a push stores: the record without its times, plus where the bundle lies. */
export interface NewGraph extends Omit<Graph, 'created_at' | 'updated_at'> {
  storage_key: string
}

// bigint columns arrive as strings from postgres.js; every value here is far below 2^53.
const columns = (sql: Db) => sql`
  id, name, description, owner, owner_id, tags, sha256, schema_version, bytes::float8 AS bytes,
  source_count::float8 AS source_count, fact_count::float8 AS fact_count, concept_count::float8 AS concept_count,
  summary_count::float8 AS summary_count, synthesis_count::float8 AS synthesis_count,
  report_count::float8 AS report_count, investigation_count::float8 AS investigation_count,
  ${isoTimestamp(sql, 'created_at')} AS created_at, ${isoTimestamp(sql, 'created_at')} AS updated_at`

/**
 * Inserts the row unless (name, sha256) is already stored; undefined then (the caller keeps
 * the stored graph and drops its blob). Two concurrent pushes of one pair: exactly one inserts.
 */
export async function insertGraph(sql: Db, g: NewGraph): Promise<Graph | undefined> {
  const [row] = await sql<Graph[]>`
    INSERT INTO graphs (id, name, description, owner, owner_id, tags, sha256, schema_version, bytes,
      source_count, fact_count, concept_count, summary_count, synthesis_count, report_count, investigation_count, storage_key)
    VALUES (${g.id}, ${g.name}, ${g.description}, ${g.owner}, ${g.owner_id}, ${g.tags}::text[], ${g.sha256}, ${g.schema_version}, ${g.bytes},
      ${g.source_count}, ${g.fact_count}, ${g.concept_count}, ${g.summary_count}, ${g.synthesis_count}, ${g.report_count}, ${g.investigation_count}, ${g.storage_key})
    ON CONFLICT ON CONSTRAINT graphs_name_sha256_key DO NOTHING
    RETURNING ${columns(sql)}`
  return row
}

export async function findGraphByNameAndHash(sql: Db, name: string, sha256: string): Promise<Graph | undefined> {
  const [row] = await sql<Graph[]>`SELECT ${columns(sql)} FROM graphs WHERE name = ${name} AND sha256 = ${sha256}`
  return row
}

export async function getGraph(sql: Db, id: string): Promise<(Graph & { storage_key: string }) | undefined> {
  const [row] = await sql<
    (Graph & { storage_key: string })[]
  >`SELECT ${columns(sql)}, storage_key FROM graphs WHERE id = ${id}`
  return row
}

/** Removes the row; returns it (with its blob's key) if there was one. */
export async function deleteGraph(sql: Db, id: string): Promise<(Graph & { storage_key: string }) | undefined> {
  const [row] = await sql<
    (Graph & { storage_key: string })[]
  >`DELETE FROM graphs WHERE id = ${id} RETURNING ${columns(sql)}, storage_key`
  return row
}

export interface GraphFilter {
  /** Case-insensitive substring of the name or the description, taken literally. */
  q?: string
  /** Graphs carrying this tag (exact). */
  tag?: string
  /** Graphs of exactly this name: the versions of one name. */
  name?: string
}

/** LIKE pattern matching `text` anywhere, with its wildcards and the escape character escaped. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`

const matching = (sql: Db, filter: GraphFilter) => {
  const q = filter.q ? containing(filter.q) : undefined
  return sql`${q ? sql`(name ILIKE ${q} OR description ILIKE ${q})` : sql`true`}
    AND ${filter.tag !== undefined ? sql`tags @> ARRAY[${filter.tag}]::text[]` : sql`true`}
    AND ${filter.name !== undefined ? sql`name = ${filter.name}` : sql`true`}`
}

/** A page of graphs in (created_at, id) order, with one row of look-ahead. */
export async function listGraphs(sql: Db, filter: GraphFilter, limit: number, after: PageKey | undefined) {
  const rows = await sql<(Graph & { key_at: string })[]>`
    SELECT ${columns(sql)}, ${pageKeyColumn(sql)} FROM graphs
    WHERE ${matching(sql, filter)} AND ${afterCursor(sql, after)}
    ORDER BY ${pageOrder(sql, 'graphs')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}

/** The Go registry's page (docs/spec/bundle.md §7): newest first from `offset`, and how many graphs match. */
export async function listGraphsByOffset(
  sql: Db,
  filter: GraphFilter,
  limit: number,
  offset: number,
): Promise<{ graphs: Graph[]; total: number }> {
  const [graphs, [counted]] = await Promise.all([
    // Table-qualified, as in pageOrder: created_at is also an output column (text).
    sql<Graph[]>`
      SELECT ${columns(sql)} FROM graphs WHERE ${matching(sql, filter)}
      ORDER BY graphs.created_at DESC, graphs.id DESC
      LIMIT ${limit} OFFSET ${offset}`,
    sql<{ total: number }[]>`SELECT count(*)::float8 AS total FROM graphs WHERE ${matching(sql, filter)}`,
  ])
  return { graphs, total: counted!.total }
}

/** The newest versions of a name that its group lists; the others are in listGraphs by name. */
export const VERSIONS_LISTED = 10

/** A stored graph with its version: its rank among the stored graphs of its name, oldest 1. */
export type GraphVersion = Graph & { version: number }

export interface GraphName {
  name: string
  /** How many graphs of this name are stored. */
  version_count: number
  /** The newest VERSIONS_LISTED of them, newest first. */
  versions: GraphVersion[]
}

/**
 * A page of names, the name whose newest graph was pushed last first (a name is keyed by its
 * newest graph's (created_at, id)), with one row of look-ahead. A name is listed when any of its
 * graphs matches `filter`; its versions are all its graphs, so that their numbers do not depend on the filter.
 */
export async function listGraphNames(sql: Db, filter: GraphFilter, limit: number, after: PageKey | undefined) {
  const names = await sql<{ name: string; id: string; key_at: string }[]>`
    SELECT name, id, ${pageKeyColumn(sql)} FROM (
      SELECT DISTINCT ON (name) name, id, created_at FROM graphs
      WHERE name IN (SELECT name FROM graphs WHERE ${matching(sql, filter)})
      ORDER BY name, created_at DESC, id DESC
    ) newest
    WHERE ${afterCursor(sql, after, true)}
    ORDER BY newest.created_at DESC, newest.id DESC
    LIMIT ${limit + 1}`
  const versions =
    names.length === 0
      ? []
      : await sql<(GraphVersion & { version_count: number })[]>`
    SELECT * FROM (
      SELECT ${columns(sql)},
        (row_number() OVER (PARTITION BY name ORDER BY graphs.created_at, graphs.id))::int AS version,
        (count(*) OVER (PARTITION BY name))::int AS version_count
      FROM graphs WHERE name = ANY(${names.map((n) => n.name)}::text[])
    ) numbered
    WHERE version > version_count - ${VERSIONS_LISTED}
    ORDER BY version DESC`
  const byName = new Map<string, (GraphVersion & { version_count: number })[]>()
  for (const version of versions) {
    const listed = byName.get(version.name)
    if (listed) listed.push(version)
    else byName.set(version.name, [version])
  }
  return withPageKeys(names).map(({ name, page_key }): GraphName & { page_key: PageKey } => {
    const mine = byName.get(name) ?? []
    return {
      name,
      version_count: mine[0]?.version_count ?? 0,
      versions: mine.map(({ version_count: _, ...version }) => version),
      page_key,
    }
  })
}

/** How many graphs are stored. */
export async function countGraphs(sql: Db): Promise<number> {
  const [row] = await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM graphs`
  return row!.count
}
