// The bearer check every protected route uses: `{ auth: true }` on a route turns a valid
// Authorization header into a `principal`, or answers 401 with WWW-Authenticate;
// `{ permission: 'role:manage' }` also requires that system-domain permission (403 otherwise).
// Neither costs a database round trip (signature, claims, in-memory revocations and roles).
import { Elysia } from 'elysia'
import { HttpError } from './errors.ts'
import { SYSTEM_DOMAIN, scopeAllows, scopeNeeded, type Permission, type Scope, type SystemPermission } from '../rbac/permissions.ts'

export interface Principal {
  userId: string
  /** Set for session tokens (login/register/refresh). */
  sessionId?: string
  /** Set for OAuth access tokens: the client, and the scopes that cap the user's permissions. */
  clientId?: string
  scopes?: string[]
}

export interface Authorizer {
  can(userId: string, domain: string, permission: Permission): boolean
}

export const forbidden = (permission: Permission) => new HttpError(403, `permission denied: ${permission}`)

/** 403 for an OAuth token whose scopes do not cover the action (RFC 6750 §3.1). */
export function insufficientScope(resourceMetadata: string, need: Scope): HttpError {
  return new HttpError(403, `insufficient scope: this needs a token with the ${need} scope`, {
    'www-authenticate': `Bearer resource_metadata="${resourceMetadata}", error="insufficient_scope", scope="${need}"`,
  })
}

/** Throws unless the principal's token scopes allow `need` (session tokens are not capped). */
export function requireScope(principal: Principal, need: Scope, resourceMetadata: string): void {
  if (!scopeAllows(principal.scopes, need)) throw insufficientScope(resourceMetadata, need)
}

/**
 * Session tokens and OAuth access tokens share the Authorization header; the JWT header's typ
 * (at+jwt for OAuth, RFC 9068) says which verifier to ask. Each verifier still checks typ.
 */
export function bearerAuthenticator(sessions: Authenticator, oauth: Pick<Authenticator, 'authenticate'>): Authenticator {
  const isAccessToken = (token: string) => {
    try {
      return (JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString()) as { typ?: unknown }).typ === 'at+jwt'
    } catch {
      return false
    }
  }
  return {
    resourceMetadataUrl: sessions.resourceMetadataUrl,
    authenticate: (token) => (isAccessToken(token) ? oauth.authenticate(token) : sessions.authenticate(token)),
  }
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/**
 * 401 with WWW-Authenticate: Bearer and the protected resource metadata URL (RFC 9728 §5.1), so
 * that a client meeting the API for the first time can discover its authorization server.
 */
function unauthorized(resourceMetadata: string, tokenPresented: boolean): HttpError {
  const challenge = `Bearer resource_metadata="${resourceMetadata}"`
  return tokenPresented
    ? new HttpError(401, 'invalid or expired access token', { 'www-authenticate': `${challenge}, error="invalid_token"` })
    : new HttpError(401, 'authentication required', { 'www-authenticate': challenge })
}

export interface Authenticator {
  authenticate(token: string): Promise<Principal | undefined>
  /** Absolute URL of the protected resource metadata, for WWW-Authenticate. */
  readonly resourceMetadataUrl: string
}

export async function authenticate(authenticator: Authenticator, request: Request): Promise<Principal> {
  const header = request.headers.get('authorization')
  if (!header) throw unauthorized(authenticator.resourceMetadataUrl, false)
  const token = BEARER.exec(header)?.[1]
  const principal = token ? await authenticator.authenticate(token) : undefined
  if (!principal) throw unauthorized(authenticator.resourceMetadataUrl, true)
  return principal
}

export function accessControl(authenticator: Authenticator, authorizer: Authorizer) {
  return new Elysia({ name: 'kgs/access-control' }).macro({
    auth: {
      async resolve({ request }) {
        return { principal: await authenticate(authenticator, request) }
      },
    },
    permission: (permission: SystemPermission) => ({
      async resolve({ request }) {
        const principal = await authenticate(authenticator, request)
        if (!authorizer.can(principal.userId, SYSTEM_DOMAIN, permission)) throw forbidden(permission)
        requireScope(principal, scopeNeeded(permission), authenticator.resourceMetadataUrl)
        return { principal }
      },
    }),
  })
}
