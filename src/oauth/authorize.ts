// The authorization request (GET /oauth/authorize), checked in the order RFC 6749 §4.1.2.1
// prescribes. Every error here is shown to the user on kgs's own page, never redirected: clients
// register themselves, so a registered redirect URI proves nothing, and redirecting errors would
// make kgs an open redirector for anyone (RFC 9700 §4.11.2). Only after the user has signed in
// for the request do errors (access_denied) go back to the client. A valid request becomes a
// pending authorization with a CSRF token bound to it.
import type { Sql } from 'postgres'
import { createHash, randomBytes } from 'node:crypto'
import { matchRedirectUri, type Client, type FoundClient } from './clients.ts'
import { ClientMetadataError } from './client-metadata.ts'
import { resourceIdentifier, resourceIdentifiers } from './metadata.ts'

/** How long the user has from the authorization request to the decision. */
const AUTHORIZATION_TTL_SECONDS = 600

const CODE_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/
const PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const

export type AuthorizeOutcome =
  | { kind: 'error-page'; message: string }
  | { kind: 'login'; client: Client; redirectUri: string; scope: string; authorizationId: string; csrfToken: string }

export function csrfDigest(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/** The client's redirect URI with the authorization response parameters, and iss. */
export function redirectWith(redirectUri: string, issuer: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(key, value)
  url.searchParams.set('iss', issuer)
  return url.toString()
}

/**
 * `browserHash`: the digest of the binding cookie of the browser that sent the request (see
 * consent.ts); `findClient`: the client a client_id names (ClientMetadataDocuments.find).
 */
export async function beginAuthorization(
  sql: Sql,
  issuer: string,
  query: URLSearchParams,
  browserHash: Buffer,
  findClient: (clientId: string) => Promise<FoundClient | undefined>,
): Promise<AuthorizeOutcome> {
  const repeated = PARAMETERS.find((name) => query.getAll(name).length > 1)
  const get = (name: (typeof PARAMETERS)[number]) => query.get(name) ?? undefined

  const clientId = get('client_id')
  let client: FoundClient | undefined
  try {
    client = clientId ? await findClient(clientId) : undefined
  } catch (error) {
    if (!(error instanceof ClientMetadataError)) throw error
    return { kind: 'error-page', message: `The application's client ID ${clientId} cannot be used: ${error.message}.` }
  }
  if (!client)
    return {
      kind: 'error-page',
      message: clientId ? 'Unknown client.' : 'The request names no client (client_id is missing).',
    }
  const requested = get('redirect_uri')
  const redirectUri = requested === undefined ? undefined : matchRedirectUri(client, requested)
  if (!redirectUri)
    return {
      kind: 'error-page',
      message:
        requested === undefined
          ? 'The request has no redirect_uri.'
          : 'The redirect_uri is not registered for this client.',
    }
  if (repeated === 'client_id' || repeated === 'redirect_uri')
    return { kind: 'error-page', message: `The parameter ${repeated} appears more than once.` }

  const state = get('state')
  const fail = (error: string, description: string): AuthorizeOutcome => ({
    kind: 'error-page',
    message: `The application's request is invalid (${error}): ${description}.`,
  })
  if (repeated) return fail('invalid_request', `${repeated} appears more than once`)
  if (get('response_type') !== 'code') return fail('unsupported_response_type', 'response_type must be code')
  if (get('code_challenge_method') !== 'S256')
    return fail('invalid_request', 'PKCE is required: code_challenge_method must be S256')
  const challenge = get('code_challenge')
  if (!challenge || !CODE_CHALLENGE.test(challenge))
    return fail('invalid_request', 'code_challenge must be 43 to 128 characters of [A-Za-z0-9._~-]')
  const allowed = client.scope.split(' ')
  const scopes = get('scope')?.split(' ').filter(Boolean) ?? allowed
  const notAllowed = scopes.find((s) => !allowed.includes(s))
  if (notAllowed || scopes.length === 0)
    return fail('invalid_scope', `scope ${JSON.stringify(notAllowed ?? '')} is not allowed for this client`)
  const resource = get('resource') ?? resourceIdentifier(issuer)
  if (!resourceIdentifiers(issuer).includes(resource))
    return fail('invalid_target', `resource must be one of ${resourceIdentifiers(issuer).join(', ')}`)
  if (state !== undefined && state.length > 1024) return fail('invalid_request', 'state is longer than 1024 characters')

  const authorizationId = crypto.randomUUID()
  const csrfToken = randomBytes(32).toString('base64url')
  const scope = [...new Set(scopes)].join(' ')
  // A code_challenge is a one-time value (RFC 7636 §4.1): one seen before is a replay or a
  // client that reuses its verifier, and either way not a fresh authorization.
  const inserted = await sql`
    INSERT INTO oauth_authorizations (id, client_id, redirect_uri, scope, state, code_challenge, resource, csrf_hash, browser_hash, expires_at)
    VALUES (${authorizationId}, ${client.client_id}, ${redirectUri}, ${scope}, ${state ?? null}, ${challenge}, ${resource},
      ${csrfDigest(csrfToken)}, ${browserHash}, now() + make_interval(secs => ${AUTHORIZATION_TTL_SECONDS}))
    ON CONFLICT (code_challenge) DO NOTHING
    RETURNING id`
  if (inserted.length === 0)
    return fail('invalid_request', 'this code_challenge was already used; each authorization needs a new one')
  return { kind: 'login', client, redirectUri, scope, authorizationId, csrfToken }
}
