// SESSION_IDLE_TTL, for API sessions (refresh_tokens by session_id) and OAuth grants
// (oauth_refresh_tokens by family_id) alike. The unused refresh token of a session or grant is
// always its newest, so its age is the time since the last refresh.
import type { Db } from '../db/sql.ts'

/** Whether the refresh token issued at `createdAt` (a column) is older than `idleSeconds`; false without a limit. */
export function refreshIdle(sql: Db, createdAt: string, idleSeconds: number | undefined) {
  return idleSeconds === undefined
    ? sql`false`
    : sql`${sql(createdAt)} <= now() - make_interval(secs => ${idleSeconds})`
}

/**
 * Whether the session or grant `owner` (a column) was refreshed within `idleSeconds`: it holds an
 * unused refresh token in `tokens` (keyed by `ownerColumn`) younger than that. True without a limit.
 */
export function refreshedWithin(
  sql: Db,
  tokens: 'refresh_tokens' | 'oauth_refresh_tokens',
  ownerColumn: 'session_id' | 'family_id',
  owner: string,
  idleSeconds: number | undefined,
) {
  return idleSeconds === undefined
    ? sql`true`
    : sql`EXISTS (SELECT 1 FROM ${sql(tokens)} r WHERE r.${sql(ownerColumn)} = ${sql(owner)} AND r.used_at IS NULL AND NOT ${refreshIdle(sql, 'r.created_at', idleSeconds)})`
}
