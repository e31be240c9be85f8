// A user's OAuth grants (token families) as the user sees them: the live ones, and revoking one
// (ASVS 7.5.2, 10.4.9, 10.7.3). Revocation itself, with its notification, is OAuthTokens'.
// The web app's grants are its sessions in browsers, one per browser (app-session.ts): a grant
// of it also ends the authorization pages' sign-in it came from when it is revoked.
import type { Sql } from 'postgres'
import { refreshedWithin } from '../accounts/idle.ts'
import { isoTimestamp, type Db } from '../db/sql.ts'
import { afterCursor, pageKeyColumn, pageOrder, withPageKeys, type PageKey } from '../db/pages.ts'
import { GRANT_SECONDS } from './consent.ts'
import type { GrantSummary } from './schemas.ts'

/** Live grants with their client's name, as one relation whose columns need no qualifying. */
const liveGrants = (sql: Db) => sql`(
  SELECT f.id, f.user_id, f.client_id, c.client_name, f.scope, f.browser, f.created_at, f.created_at + make_interval(secs => ${GRANT_SECONDS}) AS ends_at,
    coalesce((SELECT max(r.created_at) FROM oauth_refresh_tokens r WHERE r.family_id = f.id), f.created_at) AS last_used_at
  FROM oauth_token_families f JOIN oauth_clients c ON c.id = f.client_id
  WHERE f.revoked_at IS NULL AND f.created_at > now() - make_interval(secs => ${GRANT_SECONDS})
) grants`

/** `currentGrant`: the grant of the caller's token, marked `current`. */
const grantColumns = (sql: Db, currentGrant: string | undefined) =>
  sql`id, client_id, client_name, scope, browser, coalesce(grants.id = ${currentGrant ?? null}::uuid, false) AS current,
    ${isoTimestamp(sql, 'grants.created_at')} AS created_at, ${isoTimestamp(sql, 'grants.ends_at')} AS expires_at, ${isoTimestamp(sql, 'grants.last_used_at')} AS last_used_at`

/**
 * After a CTE `revoked` of revoked families (with their browser_session_hash): the authorization
 * pages' sign-ins those grants came from end with them, so ending a browser's app session leaves
 * that browser no way back in without the password.
 */
const endPagesSignIns = (sql: Db) =>
  sql`ended_sign_ins AS (DELETE FROM oauth_browser_sessions WHERE token_hash IN (SELECT browser_session_hash FROM revoked))`

export interface GrantFilter {
  /** Only the grants of this client (`only`), or those of every other client (`except`). */
  client?: { only: string } | { except: string }
  /** The grant of the caller's token (its `fam` claim), marked `current`. */
  currentGrant?: string
}

/**
 * One page of the user's live grants, oldest first, plus the look-ahead row. With `idleSeconds`, a
 * grant whose unused refresh token is older than that is left out: its next refresh revokes it.
 */
export async function listLiveGrants(
  sql: Sql,
  userId: string,
  limit: number,
  after: PageKey | undefined,
  idleSeconds: number | undefined,
  filter: GrantFilter = {},
) {
  const client = !filter.client
    ? sql`true`
    : 'only' in filter.client
      ? sql`client_id = ${filter.client.only}`
      : sql`client_id <> ${filter.client.except}`
  const rows = await sql<(GrantSummary & { key_at: string })[]>`
    SELECT ${grantColumns(sql, filter.currentGrant)}, ${pageKeyColumn(sql)} FROM ${liveGrants(sql)}
    WHERE user_id = ${userId} AND ${client} AND ${afterCursor(sql, after)}
      AND ${refreshedWithin(sql, 'oauth_refresh_tokens', 'family_id', 'grants.id', idleSeconds)}
    ORDER BY ${pageOrder(sql, 'grants')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}

/** Revokes one live grant of `userId`; the grant, or undefined when it is not a live one of theirs. */
export async function revokeGrant(
  sql: Db,
  userId: string,
  grantId: string,
  currentGrant?: string,
): Promise<GrantSummary | undefined> {
  const [grant] = await sql<GrantSummary[]>`
    WITH revoked AS (
      UPDATE oauth_token_families SET revoked_at = now()
      WHERE id = ${grantId} AND user_id = ${userId} AND id IN (SELECT id FROM ${liveGrants(sql)})
      RETURNING id, browser_session_hash
    ), ${endPagesSignIns(sql)}
    SELECT ${grantColumns(sql, currentGrant)} FROM ${liveGrants(sql)} JOIN revoked USING (id)`
  return grant
}

/** Revokes every live grant of `userId`; their ids. */
export async function revokeAllGrants(sql: Db, userId: string): Promise<string[]> {
  const revoked = await sql<{ id: string }[]>`
    WITH revoked AS (
      UPDATE oauth_token_families SET revoked_at = now()
      WHERE user_id = ${userId} AND id IN (SELECT id FROM ${liveGrants(sql)})
      RETURNING id, browser_session_hash
    ), ${endPagesSignIns(sql)}
    SELECT id FROM revoked`
  return revoked.map((row) => row.id)
}

/**
 * Revokes the live grant of `clientId` that the refresh token (its digest) belongs to; its id.
 * `endSignIn`: the authorization pages' sign-in it came from ends too (a sign-out, not a grant
 * replaced by the sign-in that just used it).
 */
export async function revokeGrantOfRefreshToken(
  sql: Db,
  clientId: string,
  tokenHash: Buffer,
  endSignIn: boolean,
): Promise<string | undefined> {
  const [revoked] = await sql<{ id: string }[]>`
    WITH revoked AS (
      UPDATE oauth_token_families SET revoked_at = now()
      WHERE revoked_at IS NULL AND client_id = ${clientId} AND id = (SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = ${tokenHash})
      RETURNING id, browser_session_hash
    )${endSignIn ? sql`, ${endPagesSignIns(sql)}` : sql``}
    SELECT id FROM revoked`
  return revoked?.id
}
