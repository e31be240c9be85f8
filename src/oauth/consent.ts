// From the sign-in page to the authorization code: pending authorizations and their CSRF
// tokens, the browser session of the pages, the single decision, and the code it issues.
import type { Sql } from 'postgres'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { csrfDigest } from './authorize.ts'
import { SCOPES, type Scope } from '../permissions.ts'

/** Lifetime of the pages' sign-in: a second consent within it needs no second sign-in. */
const BROWSER_SESSION_SECONDS = 3600
const BROWSER_SESSION_COOKIE = 'kgs_oauth_session'
/**
 * The cookie binding pending authorizations to the browser that started them: a sign-in or a
 * decision is accepted only from that browser, so an attacker's own authorization, CSRF token
 * and all, cannot be posted from the victim's browser (login CSRF) even by a browser that sends
 * no Fetch Metadata. A session cookie: it outlives no browser session.
 */
const BROWSER_BINDING_COOKIE = 'kgs_oauth_browser'
/** Authorization codes live 60 s (docs/spec/decisions.md §5). */
const CODE_SECONDS = 60
/**
 * How long a consent lasts: the refresh tokens of a grant work for 30 days from the Allow (as
 * long as SESSION_TTL's default), however often they rotate. Then the client must ask again.
 */
export const GRANT_SECONDS = 30 * 86_400

const digest = (secret: string) => createHash('sha256').update(secret).digest()

export interface PendingAuthorization {
  id: string
  client_id: string
  redirect_uri: string
  scope: string
  state: string | null
  code_challenge: string
  resource: string
  csrf_hash: Buffer
  browser_hash: Buffer
  user_id: string | null
  open: boolean
}

/** The pending authorization, if it exists; `open` is false once decided or expired. */
export async function findPending(sql: Sql, id: string): Promise<PendingAuthorization | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined
  const [row] = await sql<PendingAuthorization[]>`
    SELECT id, client_id, redirect_uri, scope, state, code_challenge, resource, csrf_hash, browser_hash, user_id,
      decided_at IS NULL AND expires_at > now() AS open
    FROM oauth_authorizations WHERE id = ${id}`
  return row
}

/** Constant-time check of a form's CSRF token against the one bound to the authorization. */
export function csrfMatches(pending: PendingAuthorization, token: string): boolean {
  return timingSafeEqual(pending.csrf_hash, csrfDigest(token))
}

/** The user who signed in for a pending authorization; null again after "Not you? Sign out". */
export async function bindUser(sql: Sql, pendingId: string, userId: string | null): Promise<void> {
  await sql`UPDATE oauth_authorizations SET user_id = ${userId} WHERE id = ${pendingId}`
}

export async function startBrowserSession(sql: Sql, userId: string): Promise<string> {
  const token = randomBytes(32).toString('base64url')
  await sql`INSERT INTO oauth_browser_sessions (token_hash, user_id, expires_at) VALUES (${digest(token)}, ${userId}, now() + make_interval(secs => ${BROWSER_SESSION_SECONDS}))`
  return token
}

/** A 256-bit token of kgs's OAuth cookies, if the browser sent a well-formed one. */
export function cookieToken(cookieHeader: string | null, cookie: string): string | undefined {
  const token = cookieHeader
    ?.split(';')
    .map((part) => part.trim().split('='))
    .find(([name]) => name === cookie)?.[1]
  return token && /^[A-Za-z0-9_-]{43}$/.test(token) ? token : undefined
}

const browserSessionToken = (cookieHeader: string | null) => cookieToken(cookieHeader, BROWSER_SESSION_COOKIE)

/** The digest of the pages' session the browser sent (oauth_browser_sessions.token_hash), if it sent one. */
export function browserSessionDigest(cookieHeader: string | null): Buffer | undefined {
  const token = browserSessionToken(cookieHeader)
  return token ? digest(token) : undefined
}

/** The browser's binding token (see BROWSER_BINDING_COOKIE), if it sent one. */
export const browserBinding = (cookieHeader: string | null) => cookieToken(cookieHeader, BROWSER_BINDING_COOKIE)

export const newBrowserBinding = () => randomBytes(32).toString('base64url')
export const browserBindingDigest = (token: string) => digest(token)

/** Whether the request comes from the browser that started the authorization (constant time). */
export function boundToBrowser(pending: PendingAuthorization, cookieHeader: string | null): boolean {
  const token = browserBinding(cookieHeader)
  return token !== undefined && timingSafeEqual(pending.browser_hash, digest(token))
}

/** Set-Cookie for the binding: HttpOnly, SameSite=Lax, only on the OAuth path, Secure on https. */
export function bindingCookie(token: string, secure: boolean): string {
  return `${BROWSER_BINDING_COOKIE}=${token}; Path=/api/v1/oauth; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
}

export async function browserSessionUser(sql: Sql, cookieHeader: string | null): Promise<string | undefined> {
  const token = browserSessionToken(cookieHeader)
  if (!token) return undefined
  const [row] = await sql<
    { user_id: string }[]
  >`SELECT user_id FROM oauth_browser_sessions WHERE token_hash = ${digest(token)} AND expires_at > now()`
  return row?.user_id
}

/** Ends the pages' session the browser sent: a new sign-in replaces it rather than adding to it. */
export async function endBrowserSession(sql: Sql, cookieHeader: string | null): Promise<void> {
  const token = browserSessionToken(cookieHeader)
  if (token) await sql`DELETE FROM oauth_browser_sessions WHERE token_hash = ${digest(token)}`
}

/** Set-Cookie for the pages' session: HttpOnly, SameSite=Lax, only on the OAuth path, Secure on https. */
export function sessionCookie(token: string, secure: boolean): string {
  return `${BROWSER_SESSION_COOKIE}=${token}; Path=/api/v1/oauth; Max-Age=${BROWSER_SESSION_SECONDS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
}

/** Set-Cookie that removes the pages' session from the browser (after "Not you? Sign out"). */
export function endedSessionCookie(secure: boolean): string {
  return `${BROWSER_SESSION_COOKIE}=; Path=/api/v1/oauth; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
}

/** Closes the authorization, once: a second decision on it finds nothing. */
export async function decide(sql: Sql, pendingId: string): Promise<boolean> {
  return (
    (
      await sql`UPDATE oauth_authorizations SET decided_at = now() WHERE id = ${pendingId} AND decided_at IS NULL AND expires_at > now() RETURNING id`
    ).length > 0
  )
}

/**
 * The scopes the person may grant for a request of `requested`: its widest scope, or any
 * narrower one (each includes those before it in SCOPES), widest first. Never wider: the
 * pending authorization holds what was requested, and its CSRF token binds the form to it.
 */
export function grantableScopes(requested: string): Scope[] {
  const widest = Math.max(...requested.split(' ').map((scope) => SCOPES.indexOf(scope as Scope)))
  return SCOPES.slice(0, widest + 1).reverse()
}

/**
 * The scope granted when the person allows `requested` up to `upTo` (absent: all of it): the
 * requested scopes up to that one, and that one; undefined if `upTo` is wider than the request.
 */
export function narrowScope(requested: string, upTo: string | undefined): string | undefined {
  if (upTo === undefined) return requested
  if (!grantableScopes(requested).includes(upTo as Scope)) return undefined
  const limit = SCOPES.indexOf(upTo as Scope)
  return [...new Set([...requested.split(' ').filter((scope) => SCOPES.indexOf(scope as Scope) < limit), upTo])].join(
    ' ',
  )
}

/** The code of an allowed authorization; `scope`: what the person granted, the request's scope or a narrower one. */
export async function issueCode(
  sql: Sql,
  pending: PendingAuthorization,
  userId: string,
  scope = pending.scope,
): Promise<string> {
  const code = randomBytes(32).toString('base64url')
  await sql`
    INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, scope, code_challenge, resource, expires_at)
    VALUES (${digest(code)}, ${pending.client_id}, ${userId}, ${pending.redirect_uri}, ${scope}, ${pending.code_challenge}, ${pending.resource},
      now() + make_interval(secs => ${CODE_SECONDS}))`
  return code
}

/** Registered clients that never got a token this long after registering are purged. */
const UNUSED_CLIENT_SECONDS = 30 * 86_400
/** Clients that got no token for this long are purged. */
const IDLE_CLIENT_SECONDS = 365 * 86_400

/**
 * Deletes what the authorization server keeps past its use, more than `keepSeconds` after it
 * ended: pending authorizations, codes, the pages' sessions, the list of revoked access tokens
 * (each entry only matters until the token expires), and grants older than GRANT_SECONDS (their
 * refresh tokens with them). Also clients never used within UNUSED_CLIENT_SECONDS of registering,
 * or unused for IDLE_CLIENT_SECONDS (their rows go with them). Anyone can register clients and
 * create pending authorizations, so without this the tables grow without bound.
 */
export async function purgeEndedOAuthRows(sql: Sql, keepSeconds: number): Promise<number> {
  const cutoff = sql`now() - make_interval(secs => ${keepSeconds})`
  const counts = await Promise.all([
    sql`DELETE FROM oauth_authorizations WHERE expires_at < ${cutoff}`,
    sql`DELETE FROM oauth_codes WHERE expires_at < ${cutoff}`,
    sql`DELETE FROM oauth_browser_sessions WHERE expires_at < ${cutoff}`,
    sql`DELETE FROM oauth_revoked_access_tokens WHERE expires_at < ${cutoff}`,
    sql`DELETE FROM oauth_token_families WHERE created_at < now() - make_interval(secs => ${GRANT_SECONDS + keepSeconds})`,
    // coalesce(...) as in the index oauth_clients_last_used_at.
    // kgs's own clients stay: they are registered once per process, when first needed.
    sql`DELETE FROM oauth_clients
      WHERE NOT first_party AND coalesce(last_used_at, created_at) < now() - make_interval(secs => ${UNUSED_CLIENT_SECONDS})
        AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => ${IDLE_CLIENT_SECONDS}))`,
  ])
  return counts.reduce((sum, rows) => sum + rows.count, 0)
}
