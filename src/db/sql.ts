// Small SQL fragments shared by features.
import type { Sql, TransactionSql } from 'postgres'

/** A timestamptz column as RFC 3339 UTC with milliseconds, the form every API response uses. */
export function isoTimestamp(sql: Db, column: string) {
  return sql`to_char(${sql(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
}

/** A pool or a transaction: functions that only run queries accept either. */
export type Db = Sql | TransactionSql
