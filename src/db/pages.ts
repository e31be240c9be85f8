// The SQL side of cursor pagination (http/pagination.ts holds the HTTP side): rows ordered by
// (created_at, id), each carrying its page key with full timestamp precision.
import type { Fragment, Sql } from 'postgres'
import type { Db } from './sql.ts'

export interface PageKey {
  /** created_at as text with microseconds. */
  at: string
  id: string
}

/** A page to read: `limit` rows (and one of look-ahead) after the cursor's row, if any. */
export interface PageRequest {
  limit: number
  after?: PageKey
}

/**
 * ORDER BY of a page, table-qualified: a bare `created_at` would sort by the output column of
 * that name, the millisecond text of isoTimestamp, and rows within one millisecond would come
 * out in id order while the cursor compares microseconds: a page could skip a row.
 */
export const pageOrder = (sql: Db, table: string, descending = false) =>
  descending
    ? sql`${sql(table)}.created_at DESC, ${sql(table)}.id DESC`
    : sql`${sql(table)}.created_at, ${sql(table)}.id`

/** The page key of a row of a table ordered by (created_at, id), with full precision. */
export const pageKeyColumn = (sql: Db) =>
  sql`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key_at`

/**
 * Rows after the cursor (in the order of the page). Its time is sent as text: typed as timestamptz, postgres.js would pass
 * it through a Date and lose the microseconds, and the page would start again at its own last row.
 */
export const afterCursor = (sql: Db, after: PageKey | undefined, descending = false) =>
  !after
    ? sql`true`
    : descending
      ? sql`(created_at, id) < (${after.at}::text::timestamptz, ${after.id}::uuid)`
      : sql`(created_at, id) > (${after.at}::text::timestamptz, ${after.id}::uuid)`

export function withPageKeys<T extends { id: string; key_at: string }>(
  rows: T[],
): (Omit<T, 'key_at'> & { page_key: PageKey })[] {
  return rows.map(({ key_at, ...row }) => ({ ...row, page_key: { at: key_at, id: row.id } }))
}

/** Rows `offset` to `offset + limit` of a ranked list (search hits, related rows). */
export interface RankedRange {
  offset: number
  limit: number
}

/**
 * One slice of the rows of `ranked` (a SELECT with an `id` column) in `order`, and how many rows
 * it has: one statement, whose answer carries the count even past the last row.
 */
export async function rankedSlice<T extends { id: string }>(
  sql: Sql,
  ranked: Fragment,
  order: Fragment,
  range: RankedRange,
): Promise<{ total: number; rows: T[] }> {
  const rows = await sql<(T & { total: number })[]>`
    WITH ranked AS MATERIALIZED (${ranked})
    SELECT counted.total, slice.* FROM (SELECT count(*)::int AS total FROM ranked) counted
    LEFT JOIN (SELECT * FROM ranked ORDER BY ${order} LIMIT ${range.limit} OFFSET ${range.offset}) slice ON true
    ORDER BY ${order}`
  return {
    total: rows[0]?.total ?? 0,
    rows: rows.filter((row) => row.id !== null).map(({ total: _, ...row }) => row as unknown as T),
  }
}
