// The SQL side of cursor pagination (http/pagination.ts holds the HTTP side): rows ordered by
// (created_at, id), each carrying its page key with full timestamp precision.
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
export const pageOrder = (sql: Db, table: string, descending = false) => (descending ? sql`${sql(table)}.created_at DESC, ${sql(table)}.id DESC` : sql`${sql(table)}.created_at, ${sql(table)}.id`)

/** The page key of a row of a table ordered by (created_at, id), with full precision. */
export const pageKeyColumn = (sql: Db) => sql`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS key_at`

/**
 * Rows after the cursor (in the order of the page). Its time is sent as text: typed as timestamptz, postgres.js would pass
 * it through a Date and lose the microseconds, and the page would start again at its own last row.
 */
export const afterCursor = (sql: Db, after: PageKey | undefined, descending = false) =>
  !after ? sql`true` : descending ? sql`(created_at, id) < (${after.at}::text::timestamptz, ${after.id}::uuid)` : sql`(created_at, id) > (${after.at}::text::timestamptz, ${after.id}::uuid)`

export function withPageKeys<T extends { id: string; key_at: string }>(rows: T[]): (Omit<T, 'key_at'> & { page_key: PageKey })[] {
  return rows.map(({ key_at, ...row }) => ({ ...row, page_key: { at: key_at, id: row.id } }))
}
