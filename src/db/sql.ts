// Small SQL fragments shared by features.
import type { Sql, TransactionSql } from 'postgres'

/** A timestamptz column as RFC 3339 UTC with milliseconds, the form every API response uses. */
export function isoTimestamp(sql: Db, column: string) {
  return sql`to_char(${sql(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
}

/** A LIKE pattern matching strings that start with `prefix` literally. */
export const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** A pool or a transaction: functions that only run queries accept either. */
export type Db = Sql | TransactionSql

/**
 * `text` PostgreSQL can store: it refuses U+0000 in text (and jsonb), so each is written as the
 * six characters \u0000. For messages that quote untrusted input, such as a job's error: one
 * that could not be stored left its job running until the lease ran out.
 */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\\u0000') : text
}
