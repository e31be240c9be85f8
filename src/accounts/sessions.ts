// Sessions and their refresh tokens, and the in-memory set of revoked sessions that lets the
// bearer check refuse a logged-out session's access tokens without a database round trip.
import { runtime } from '../runtime/index.ts'
import type { Sql } from 'postgres'
import { createHash, randomBytes } from 'node:crypto'
import type { EventBus } from '../db/events.ts'
import { isoTimestamp, type Db } from '../db/sql.ts'
import { refreshedWithin, refreshIdle } from './idle.ts'
import { ExpiringMap } from '../expiring.ts'
import { afterCursor, pageKeyColumn, pageOrder, withPageKeys, type PageKey } from '../db/pages.ts'
import type { Logger } from '../log.ts'
import type { SessionSummary } from './schemas.ts'
import { describeError } from '../log.ts'

export const SESSION_REVOKED = 'kgs_session_revoked'

/** 256 bits, base64url: 43 characters. */
function newRefreshToken(): string {
  return randomBytes(32).toString('base64url')
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

export interface NewSession {
  sessionId: string
  refreshToken: string
  expiresAt: Date
}

/** One statement, so one round trip on a pooled connection (the foreign key is checked at its end). */
export async function insertSession(sql: Sql, userId: string, ttlSeconds: number): Promise<NewSession> {
  const sessionId = crypto.randomUUID()
  const refreshToken = newRefreshToken()
  const [row] = await sql<{ expires_at: Date }[]>`
    WITH session AS (
      INSERT INTO sessions (id, user_id, expires_at) VALUES (${sessionId}, ${userId}, now() + make_interval(secs => ${ttlSeconds}))
      RETURNING id, expires_at
    ), token AS (
      INSERT INTO refresh_tokens (token_hash, session_id) SELECT ${digest(refreshToken)}, id FROM session
    )
    SELECT expires_at FROM session`
  return { sessionId, refreshToken, expiresAt: row!.expires_at }
}

export type Rotation =
  | { outcome: 'rotated'; userId: string; sessionId: string; refreshToken: string; expiresAt: Date }
  /** The token had been used already: the session is now revoked. */
  | { outcome: 'reused'; sessionId: string }
  /** The token is older than the idle limit: the session is now ended. */
  | { outcome: 'idle'; sessionId: string }
  | { outcome: 'invalid' }

/**
 * Exchanges a refresh token for a new one, once. The UPDATE ... WHERE used_at IS NULL makes
 * concurrent exchanges of one token race safely: exactly one wins, the others count as reuse.
 * The exchange is one statement (claim, check the session, issue the next token), so a refresh
 * holds a pooled connection for one round trip; only a failed claim takes a second look.
 * With `idleSeconds`, a token issued longer ago than that ends its session instead (idle.ts).
 */
export async function rotateRefreshToken(sql: Sql, token: string, idleSeconds?: number): Promise<Rotation> {
  const refreshToken = newRefreshToken()
  const [claimed] = await sql<{ session_id: string; idle: boolean; user_id: string | null; expires_at: Date | null }[]>`
    WITH claimed AS (
      UPDATE refresh_tokens SET used_at = now() WHERE token_hash = ${digest(token)} AND used_at IS NULL
      RETURNING session_id, ${refreshIdle(sql, 'created_at', idleSeconds)} AS idle
    ), live AS (
      SELECT s.id, s.user_id, s.expires_at FROM sessions s JOIN claimed ON s.id = claimed.session_id
      WHERE s.revoked_at IS NULL AND s.expires_at > now() AND NOT claimed.idle
    ), ended AS (
      UPDATE sessions SET revoked_at = now(), revoked_reason = 'idle' FROM claimed
      WHERE sessions.id = claimed.session_id AND claimed.idle AND sessions.revoked_at IS NULL
    ), issued AS (
      INSERT INTO refresh_tokens (token_hash, session_id) SELECT ${digest(refreshToken)}, id FROM live
    )
    SELECT claimed.session_id, claimed.idle, live.user_id, live.expires_at FROM claimed LEFT JOIN live ON live.id = claimed.session_id`
  if (!claimed) return revokeOnReuse(sql, token)
  if (claimed.idle) return { outcome: 'idle', sessionId: claimed.session_id }
  if (claimed.user_id === null || claimed.expires_at === null) return { outcome: 'invalid' }
  return {
    outcome: 'rotated',
    userId: claimed.user_id,
    sessionId: claimed.session_id,
    refreshToken,
    expiresAt: claimed.expires_at,
  }
}

/** A token that could not be claimed: unknown, or used before, which revokes its session. */
async function revokeOnReuse(sql: Sql, token: string): Promise<Rotation> {
  const [used] = await sql<
    { session_id: string }[]
  >`SELECT session_id FROM refresh_tokens WHERE token_hash = ${digest(token)}`
  if (!used) return { outcome: 'invalid' }
  await markRevoked(sql, used.session_id, 'refresh_reuse')
  return { outcome: 'reused', sessionId: used.session_id }
}

/** Why a session ended before its time: logout, refresh-token reuse, its user, an administrator. */
export type RevokedReason = 'logout' | 'refresh_reuse' | 'ended' | 'admin'

const sessionColumns = (sql: Db) =>
  sql`id, ${isoTimestamp(sql, 'sessions.created_at')} AS created_at, ${isoTimestamp(sql, 'sessions.expires_at')} AS expires_at`

/**
 * One page of the user's live sessions, oldest first, plus the look-ahead row. With `idleSeconds`,
 * a session whose unused refresh token is older than that is left out: its next refresh ends it.
 */
export async function listLiveSessions(sql: Sql, userId: string, limit: number, after?: PageKey, idleSeconds?: number) {
  const rows = await sql<(SessionSummary & { key_at: string })[]>`
    SELECT ${sessionColumns(sql)}, ${pageKeyColumn(sql)} FROM sessions
    WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > now() AND ${afterCursor(sql, after)}
      AND ${refreshedWithin(sql, 'refresh_tokens', 'session_id', 'sessions.id', idleSeconds)}
    ORDER BY ${pageOrder(sql, 'sessions')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}

/** Ends one live session of `userId`; the session, or undefined when it is not a live one of theirs. */
export async function endSession(sql: Db, userId: string, sessionId: string): Promise<SessionSummary | undefined> {
  const [ended] = await sql<SessionSummary[]>`
    UPDATE sessions SET revoked_at = now(), revoked_reason = 'ended'
    WHERE id = ${sessionId} AND user_id = ${userId} AND revoked_at IS NULL AND expires_at > now()
    RETURNING ${sessionColumns(sql)}`
  return ended
}

/** Ends every live session of `userId` (an administrator's doing); their ids. */
export async function endUserSessions(sql: Db, userId: string): Promise<string[]> {
  const ended = await sql<{ id: string }[]>`
    UPDATE sessions SET revoked_at = now(), revoked_reason = 'admin'
    WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > now()
    RETURNING id`
  return ended.map((row) => row.id)
}

/** Returns whether this call revoked it (false: unknown or already revoked). */
export async function markRevoked(sql: Db, sessionId: string, reason: RevokedReason): Promise<boolean> {
  const rows =
    await sql`UPDATE sessions SET revoked_at = now(), revoked_reason = ${reason} WHERE id = ${sessionId} AND revoked_at IS NULL RETURNING id`
  return rows.length > 0
}

/** How often an instance on PostgreSQL re-reads recent revocations, in case a NOTIFY was missed. */
const CATCH_UP_MS = 5_000
/** Allowance for clock differences between instances and the database. */
const SKEW_MS = 60_000

/**
 * The sessions revoked recently enough that access tokens issued before the revocation may still
 * be unexpired. Each entry is forgotten once the longest-lived such token has expired.
 */
export class RevokedSessions {
  private readonly revoked = new ExpiringMap<string, true>()
  private timer: Timer | undefined
  private watermark: Date | undefined

  constructor(
    private readonly system: Sql,
    private readonly accessTtlSeconds: number,
    private readonly log: Logger,
  ) {}

  has(sessionId: string): boolean {
    return this.revoked.has(sessionId)
  }

  add(sessionId: string): void {
    this.revoked.set(sessionId, true, Date.now() + this.accessTtlSeconds * 1000 + SKEW_MS)
  }

  /** Loads current revocations, follows the bus, and (for fleets) catches up periodically. */
  async start(bus: EventBus, catchUp: boolean): Promise<void> {
    await bus.subscribe(SESSION_REVOKED, (sessionId) => this.add(sessionId))
    await this.catchUp()
    if (catchUp) {
      this.timer = setInterval(
        () => void this.catchUp().catch((error) => this.log.warn('revocation catch-up failed', describeError(error))),
        CATCH_UP_MS,
      )
      runtime.unref(this.timer)
    }
  }

  private async catchUp(): Promise<void> {
    const since = this.watermark ?? new Date(0)
    const rows = await this.system<{ id: string; now: Date }[]>`
      SELECT id, now() AS now FROM sessions
      WHERE revoked_at >= greatest(${since}::timestamptz - make_interval(secs => ${SKEW_MS / 1000}), now() - make_interval(secs => ${this.accessTtlSeconds}))`
    for (const row of rows) this.add(row.id)
    const [clock] = rows.length ? rows : await this.system<{ now: Date }[]>`SELECT now() AS now`
    this.watermark = clock!.now
    this.revoked.prune()
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

/**
 * Deletes the sessions (their refresh tokens with them) that ended more than `keepSeconds` ago.
 * Kept that long past their end, a deleted session can have no access token left that is
 * still valid, so its deletion changes no answer; without it the table only grows.
 */
export async function purgeEndedSessions(sql: Db, keepSeconds: number): Promise<number> {
  return (await sql`DELETE FROM sessions WHERE expires_at < now() - make_interval(secs => ${keepSeconds})`).count
}
