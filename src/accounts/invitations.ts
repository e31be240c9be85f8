// The invitations table (REGISTRATION=invite): a sysadmin invites an e-mail address and hands
// the code to the person out of band; registering with that address and code consumes it. The
// code is 192 random bits, stored only as its SHA-256 digest and shown once, when it is made.
import { createHash, randomBytes } from 'node:crypto'
import type { Sql } from 'postgres'
import { afterCursor, pageKeyColumn, pageOrder, withPageKeys, type PageKey } from '../db/pages.ts'
import { isoTimestamp, type Db } from '../db/sql.ts'

/** Open invitations at most: past it a sysadmin revokes some, or waits for them to expire. */
export const OPEN_INVITATIONS_MAX = 1000
export const INVITATION_DAYS_DEFAULT = 7
export const INVITATION_DAYS_MAX = 30

export interface Invitation {
  id: string
  email: string
  created_at: string
  expires_at: string
}

const digest = (code: string) => createHash('sha256').update(code).digest()

const columns = (sql: Db) =>
  sql`id, email, ${isoTimestamp(sql, 'created_at')} AS created_at, ${isoTimestamp(sql, 'expires_at')} AS expires_at`

export type InvitationOutcome =
  | { kind: 'created'; invitation: Invitation; code: string }
  | { kind: 'registered' }
  | { kind: 'too-many' }

/**
 * An invitation for `email` valid `days` days; one made for that address before is replaced (its
 * code stops working). Refused for an address that has an account, or past OPEN_INVITATIONS_MAX.
 */
export async function createInvitation(
  sql: Sql,
  input: { email: string; days: number; createdBy: string },
): Promise<InvitationOutcome> {
  return sql.begin(async (tx) => {
    await tx`DELETE FROM invitations WHERE expires_at <= now()`
    const [registered] = await tx`SELECT 1 FROM users WHERE email = ${input.email}`
    if (registered) return { kind: 'registered' as const }
    const [open] = await tx<
      { count: number }[]
    >`SELECT count(*)::int AS count FROM invitations WHERE email <> ${input.email}`
    if (open!.count >= OPEN_INVITATIONS_MAX) return { kind: 'too-many' as const }
    const code = randomBytes(24).toString('base64url')
    const [invitation] = await tx<Invitation[]>`
      INSERT INTO invitations (id, email, code_hash, created_by, expires_at)
      VALUES (${crypto.randomUUID()}, ${input.email}, ${digest(code)}, ${input.createdBy}, now() + make_interval(days => ${input.days}))
      ON CONFLICT (email) DO UPDATE SET id = excluded.id, code_hash = excluded.code_hash, created_by = excluded.created_by, created_at = now(), expires_at = excluded.expires_at
      RETURNING ${columns(tx)}`
    return { kind: 'created' as const, invitation: invitation!, code }
  })
}

/** One page of the invitations not yet expired, oldest first, with one row of look-ahead. */
export async function listInvitations(
  sql: Sql,
  limit: number,
  after?: PageKey,
): Promise<(Invitation & { page_key: PageKey })[]> {
  const rows = await sql<(Invitation & { key_at: string })[]>`
    SELECT ${columns(sql)}, ${pageKeyColumn(sql)} FROM invitations
    WHERE expires_at > now() AND ${afterCursor(sql, after)}
    ORDER BY ${pageOrder(sql, 'invitations')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}

/** Revokes an invitation; undefined if there was none (or it had expired). */
export async function deleteInvitation(sql: Sql, id: string): Promise<Invitation | undefined> {
  const [row] = await sql<
    Invitation[]
  >`DELETE FROM invitations WHERE id = ${id} AND expires_at > now() RETURNING ${columns(sql)}`
  return row
}

/** Whether `code` is the open invitation of `email` (a check before the password is hashed). */
export async function invitationValid(sql: Db, email: string, code: string): Promise<boolean> {
  const [row] =
    await sql`SELECT 1 FROM invitations WHERE email = ${email} AND code_hash = ${digest(code)} AND expires_at > now()`
  return row !== undefined
}

/** Uses up the invitation, in the transaction that makes the account: false if it is not open. */
export async function consumeInvitation(tx: Db, email: string, code: string): Promise<boolean> {
  return (
    (
      await tx`DELETE FROM invitations WHERE email = ${email} AND code_hash = ${digest(code)} AND expires_at > now() RETURNING id`
    ).length > 0
  )
}
