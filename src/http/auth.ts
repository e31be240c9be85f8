// The bearer check every protected route uses: `{ auth: true }` on a route turns a valid
// Authorization header into a `principal`, or answers 401 with WWW-Authenticate;
// `{ permission: 'role:manage' }` also requires that system-domain permission (403 otherwise).
// Neither costs a database round trip (signature, claims, in-memory revocations and roles).
import { Elysia } from 'elysia'
import { HttpError } from './errors.ts'
import { SYSTEM_DOMAIN, type Permission, type SystemPermission } from '../rbac/permissions.ts'

export interface Principal {
  userId: string
  /** Set for session tokens (login/register/refresh). */
  sessionId?: string
}

export interface Authorizer {
  can(userId: string, domain: string, permission: Permission): boolean
}

export const forbidden = (permission: Permission) => new HttpError(403, `permission denied: ${permission}`)

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
        return { principal }
      },
    }),
  })
}
