// Dynamic client registration (RFC 7591) with the redirect URI rules of OAuth 2.1 / RFC 8252 and
// docs/spec/decisions.md §5a: https, or http on a loopback address only, or a private-use scheme.
import type { Sql } from 'postgres'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { OAuthError } from './errors.ts'
import { SCOPES } from '../permissions.ts'
import { TOKEN_ENDPOINT_AUTH_METHODS } from './metadata.ts'

export interface ClientRegistration {
  redirect_uris: string[]
  client_name?: string
  grant_types?: string[]
  response_types?: string[]
  token_endpoint_auth_method?: string
  scope?: string
}

export interface Client {
  client_id: string
  client_name: string
  redirect_uris: string[]
  grant_types: string[]
  token_endpoint_auth_method: (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number]
  scope: string
  client_id_issued_at: number
}

/** A client as an authorization request finds it: first_party is true for kgs's own only. */
export type FoundClient = Client & { first_party?: boolean }

const GRANT_TYPES = ['authorization_code', 'refresh_token']
/** Longest client_id: a metadata document's URL (client-metadata.ts); a registered one is at most 64 characters. */
export const CLIENT_ID_MAX = 2000
/**
 * Schemes no redirect may use: they run code or read local data in the browser. Any other
 * scheme is a private-use one (RFC 8252 §7.1): reverse-domain ones, and the plain ones real
 * clients register (cursor://anysphere.cursor-mcp/oauth/callback).
 */
const REFUSED_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about'])
/**
 * A loopback http redirect URI as written, its port apart: the host exactly one of the three
 * names (no userinfo, no numeric or hex forms of 127.0.0.1), nothing but a path and query after.
 */
const LOOPBACK_URI = /^(http:\/\/(?:127\.0\.0\.1|localhost|\[::1\]))(?::\d{1,5})?((?:[/?][^#]*)?)$/
/** Whitespace and control characters, which URL parsers silently drop. */
const INVISIBLE = /[\s\x00-\x1f\x7f]/
const DOT_SEGMENT = /\/\.\.?(?:[/?]|$)/

const invalidMetadata = (description: string) => new OAuthError(400, 'invalid_client_metadata', description)
const invalidRedirect = (description: string) => new OAuthError(400, 'invalid_redirect_uri', description)

/** Returns why a redirect URI is not acceptable, or undefined. */
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return `${JSON.stringify(uri)} is not an absolute URI`
  }
  if (url.hash || uri.includes('#')) return `${JSON.stringify(uri)} must not have a fragment`
  if (INVISIBLE.test(uri)) return `${JSON.stringify(uri)} must not contain whitespace or control characters`
  if (url.username || url.password) return `${JSON.stringify(uri)} must not have a user name or password`
  if (DOT_SEGMENT.test(uri.replace(/^[^:]*:(\/\/[^/?]*)?/, '')))
    return `${JSON.stringify(uri)} must not have . or .. path segments`
  if (url.protocol === 'https:') return undefined
  if (url.protocol === 'http:')
    return LOOPBACK_URI.test(uri)
      ? undefined
      : `${JSON.stringify(uri)}: plain http is allowed only on a loopback address (127.0.0.1, [::1] or localhost)`
  if (!REFUSED_SCHEMES.has(url.protocol.slice(0, -1))) return undefined
  return `${JSON.stringify(uri)}: expected https, http on a loopback address, or a private-use scheme (not ${[...REFUSED_SCHEMES].join(', ')})`
}

/** Validates and normalizes registration metadata (defaults of RFC 7591 §2). */
export function checkRegistration(input: ClientRegistration): Omit<Client, 'client_id' | 'client_id_issued_at'> {
  if (input.redirect_uris.length === 0) throw invalidRedirect('redirect_uris must list at least one URI')
  for (const uri of input.redirect_uris) {
    const problem = redirectUriProblem(uri)
    if (problem) throw invalidRedirect(problem)
  }
  const grantTypes = input.grant_types ?? ['authorization_code', 'refresh_token']
  const unknownGrant = grantTypes.find((g) => !GRANT_TYPES.includes(g))
  if (unknownGrant)
    throw invalidMetadata(
      `grant type ${JSON.stringify(unknownGrant)} is not supported; expected authorization_code and/or refresh_token`,
    )
  if (!grantTypes.includes('authorization_code')) throw invalidMetadata('grant_types must include authorization_code')
  const responseTypes = input.response_types ?? ['code']
  if (responseTypes.length !== 1 || responseTypes[0] !== 'code')
    throw invalidMetadata('response_types must be ["code"]')
  const method = input.token_endpoint_auth_method ?? 'none'
  if (!(TOKEN_ENDPOINT_AUTH_METHODS as readonly string[]).includes(method)) {
    throw invalidMetadata(
      `token_endpoint_auth_method ${JSON.stringify(method)} is not supported; expected one of ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}`,
    )
  }
  const scope = input.scope?.trim() || 'read write'
  const unknownScope = scope.split(/ +/).find((s) => !(SCOPES as readonly string[]).includes(s))
  if (unknownScope)
    throw invalidMetadata(`scope ${JSON.stringify(unknownScope)} is not supported; expected ${SCOPES.join(', ')}`)
  return {
    client_name: input.client_name?.trim() ?? '',
    redirect_uris: input.redirect_uris,
    grant_types: [...new Set(grantTypes)],
    token_endpoint_auth_method: method as Client['token_endpoint_auth_method'],
    scope: [...new Set(scope.split(/ +/))].join(' '),
  }
}

const digest = (secret: string) => createHash('sha256').update(secret).digest()

export async function registerClient(
  sql: Sql,
  input: ClientRegistration,
): Promise<Client & { client_secret?: string; client_secret_expires_at?: number }> {
  const metadata = checkRegistration(input)
  const clientId = randomBytes(18).toString('base64url')
  const secret = metadata.token_endpoint_auth_method === 'none' ? undefined : randomBytes(32).toString('base64url')
  const [row] = await sql<{ issued_at: number }[]>`
    INSERT INTO oauth_clients (id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope)
    VALUES (${clientId}, ${secret ? digest(secret) : null}, ${metadata.client_name}, ${metadata.redirect_uris}, ${metadata.grant_types}, ${metadata.token_endpoint_auth_method}, ${metadata.scope})
    RETURNING extract(epoch FROM created_at)::bigint::int AS issued_at`
  return {
    client_id: clientId,
    client_id_issued_at: row!.issued_at,
    ...metadata,
    ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
  }
}

/** A client as kgs knows it: first_party for kgs's own (registerFirstPartyClient), never for a registered one. */
export async function findClient(sql: Sql, clientId: string): Promise<(Client & { first_party: boolean }) | undefined> {
  const [row] = await sql<(Client & { first_party: boolean })[]>`
    SELECT id AS client_id, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope,
      extract(epoch FROM created_at)::bigint::int AS client_id_issued_at, first_party
    FROM oauth_clients WHERE id = ${clientId}`
  return row
}

/** One of kgs's own applications, as it registers itself. */
export interface FirstPartyClient {
  /** Fixed, 22 to 64 of [A-Za-z0-9_-]; a registered client's id (24 random characters) can never take it. */
  client_id: string
  client_name: string
  redirect_uris: string[]
  scope: string
}

/**
 * Registers (or, after a change of BASE_URL, updates) one of kgs's own clients: public,
 * authorization code + PKCE, first-party. Only kgs calls this (registerClient, behind
 * /oauth/register, never sets first_party). Written directly rather than through dynamic
 * registration, whose redirect URI rules (https, or http on loopback) a deployment's BASE_URL
 * need not meet.
 */
export async function registerFirstPartyClient(sql: Sql, client: FirstPartyClient): Promise<void> {
  await sql`
    INSERT INTO oauth_clients (id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, first_party)
    VALUES (${client.client_id}, NULL, ${client.client_name}, ${client.redirect_uris}, ${GRANT_TYPES}, 'none', ${client.scope}, true)
    ON CONFLICT (id) DO UPDATE SET client_name = EXCLUDED.client_name, redirect_uris = EXCLUDED.redirect_uris, scope = EXCLUDED.scope, first_party = true
    WHERE (oauth_clients.client_name, oauth_clients.redirect_uris, oauth_clients.scope, oauth_clients.first_party)
      IS DISTINCT FROM (EXCLUDED.client_name, EXCLUDED.redirect_uris, EXCLUDED.scope, true)`
}

/**
 * The registered redirect URI this request names: exact match, except that the port of a
 * loopback http URI a client registered itself may vary (RFC 8252 §7.3, §8.3: native apps listen
 * on an ephemeral port). kgs's own clients are pages kgs serves at BASE_URL, never native apps:
 * their port is BASE_URL's, else any program listening on the machine would receive their codes.
 * Compared as written, so no parser's normalization (userinfo, dot segments, numeric hosts,
 * dropped whitespace) can make another URI equal to a registered one.
 */
export function matchRedirectUri(client: FoundClient, requested: string): string | undefined {
  if (client.redirect_uris.includes(requested)) return requested
  if (client.first_party) return undefined
  const portless = (uri: string) => {
    const match = LOOPBACK_URI.exec(uri)
    return match ? match[1]! + match[2]! : undefined
  }
  const wanted = portless(requested)
  return wanted !== undefined && client.redirect_uris.some((registered) => portless(registered) === wanted)
    ? requested
    : undefined
}

const invalidClient = (description: string, basic: boolean) =>
  new OAuthError(401, 'invalid_client', description, basic ? { 'www-authenticate': 'Basic realm="kgs"' } : {})

/**
 * Client authentication at the token and revocation endpoints (RFC 6749 §2.3): exactly the
 * method the client registered. Secrets are compared as SHA-256 digests in constant time.
 */
export async function authenticateClient(
  sql: Sql,
  authorization: string | null,
  body: { client_id?: string; client_secret?: string },
): Promise<Client> {
  let clientId = body.client_id
  let secret = body.client_secret
  let method: Client['token_endpoint_auth_method'] = secret === undefined ? 'none' : 'client_secret_post'
  const credentials = basicCredentials(authorization)
  if (authorization && !credentials)
    throw invalidClient('unsupported Authorization scheme; use Basic or client_secret_post', true)
  if (credentials) {
    if (secret !== undefined)
      throw new OAuthError(400, 'invalid_request', 'use one client authentication method, not two')
    if (credentials === 'malformed' || (clientId !== undefined && clientId !== credentials.id))
      throw invalidClient('malformed Basic credentials', true)
    clientId = credentials.id
    secret = credentials.secret
    method = 'client_secret_basic'
  }
  if (!clientId) throw invalidClient('client authentication failed: no client_id', false)
  const [row] = await sql<(Client & { secret_hash: Buffer | null })[]>`
    SELECT id AS client_id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope,
      extract(epoch FROM created_at)::bigint::int AS client_id_issued_at
    FROM oauth_clients WHERE id = ${clientId.slice(0, CLIENT_ID_MAX)}`
  if (!row) throw invalidClient('unknown client', method === 'client_secret_basic')
  if (row.token_endpoint_auth_method !== method)
    throw invalidClient(
      `this client authenticates with ${row.token_endpoint_auth_method}`,
      method === 'client_secret_basic',
    )
  if (method !== 'none' && !(row.secret_hash && timingSafeEqual(row.secret_hash, digest(secret!))))
    throw invalidClient('client authentication failed', method === 'client_secret_basic')
  const { secret_hash: _, ...client } = row
  return client
}

/**
 * The client credentials of a Basic Authorization header: undefined when it holds none,
 * 'malformed' when they cannot be read. The id and secret are form-encoded inside (RFC 6749
 * §2.3.1); no colon, an empty id, a broken %-escape or a NUL (which PostgreSQL text cannot hold)
 * make them malformed.
 */
export function basicCredentials(
  authorization: string | null | undefined,
): { id: string; secret: string } | 'malformed' | undefined {
  const basic = authorization?.match(/^Basic +([A-Za-z0-9+/]+=*) *$/i)?.[1]
  if (basic === undefined) return undefined
  const decoded = Buffer.from(basic, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  const id = colon < 0 ? undefined : formDecode(decoded.slice(0, colon))
  const secret = colon < 0 ? undefined : formDecode(decoded.slice(colon + 1))
  return id && secret !== undefined ? { id, secret } : 'malformed'
}

function formDecode(text: string): string | undefined {
  try {
    const value = decodeURIComponent(text.replaceAll('+', ' '))
    return value.includes('\0') ? undefined : value
  } catch {
    return undefined
  }
}
