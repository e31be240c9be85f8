// A user's OAuth grants (token families) as the user sees them: the live ones, and revoking one
// (ASVS 7.5.2, 10.4.9, 10.7.3). Revocation itself, with its notification, is OAuthTokens'.
import type { Sql } from 'postgres'
import { refreshedWithin } from '../accounts/idle.ts'
import { isoTimestamp, type Db } from '../db/sql.ts'
import { afterCursor, pageKeyColumn, pageOrder, withPageKeys, type PageKey } from '../db/pages.ts'
import { GRANT_SECONDS } from './consent.ts'
import type { GrantSummary } from './schemas.ts'

/** Live grants with their client's name, as one relation whose columns need no qualifying. */
const liveGrants = (sql: Db) => sql`(
  SELECT f.id, f.user_id, f.client_id, c.client_name, f.scope, f.created_at, f.created_at + make_interval(secs => ${GRANT_SECONDS}) AS ends_at
  FROM oauth_token_families f JOIN oauth_clients c ON c.id = f.client_id
  WHERE f.revoked_at IS NULL AND f.created_at > now() - make_interval(secs => ${GRANT_SECONDS})
) grants`

const grantColumns = (sql: Db) => sql`id, client_id, client_name, scope, ${isoTimestamp(sql, 'grants.created_at')} AS created_at, ${isoTimestamp(sql, 'grants.ends_at')} AS expires_at`

/**
 * One page of the user's live grants, oldest first, plus the look-ahead row. With `idleSeconds`, a
 * grant whose unused refresh token is older than that is left out: its next refresh revokes it.
 */
export async function listLiveGrants(sql: Sql, userId: string, limit: number, after?: PageKey, idleSeconds?: number) {
  const rows = await sql<(GrantSummary & { key_at: string })[]>`
    SELECT ${grantColumns(sql)}, ${pageKeyColumn(sql)} FROM ${liveGrants(sql)}
    WHERE user_id = ${userId} AND ${afterCursor(sql, after)}
      AND ${refreshedWithin(sql, 'oauth_refresh_tokens', 'family_id', 'grants.id', idleSeconds)}
    ORDER BY ${pageOrder(sql, 'grants')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}

/** Revokes one live grant of `userId`; the grant, or undefined when it is not a live one of theirs. */
export async function revokeGrant(sql: Db, userId: string, grantId: string): Promise<GrantSummary | undefined> {
  const [grant] = await sql<GrantSummary[]>`
    WITH revoked AS (
      UPDATE oauth_token_families SET revoked_at = now()
      WHERE id = ${grantId} AND user_id = ${userId} AND id IN (SELECT id FROM ${liveGrants(sql)})
      RETURNING id
    )
    SELECT ${grantColumns(sql)} FROM ${liveGrants(sql)} JOIN revoked USING (id)`
  return grant
}

/** Revokes every live grant of `userId`; their ids. */
export async function revokeAllGrants(sql: Db, userId: string): Promise<string[]> {
  const revoked = await sql<{ id: string }[]>`
    UPDATE oauth_token_families SET revoked_at = now()
    WHERE user_id = ${userId} AND id IN (SELECT id FROM ${liveGrants(sql)})
    RETURNING id`
  return revoked.map((row) => row.id)
}
