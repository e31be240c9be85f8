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

export interface Authenticator {
  authenticate(token: string): Promise<Principal | undefined>
}

export interface Authorizer {
  can(userId: string, domain: string, permission: Permission): boolean
}

export const forbidden = (permission: Permission) => new HttpError(403, `permission denied: ${permission}`)

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

export function unauthorized(tokenPresented: boolean): HttpError {
  return tokenPresented
    ? new HttpError(401, 'invalid or expired access token', { 'www-authenticate': 'Bearer error="invalid_token"' })
    : new HttpError(401, 'authentication required', { 'www-authenticate': 'Bearer' })
}

export async function authenticate(authenticator: Authenticator, request: Request): Promise<Principal> {
  const header = request.headers.get('authorization')
  if (!header) throw unauthorized(false)
  const token = BEARER.exec(header)?.[1]
  const principal = token ? await authenticator.authenticate(token) : undefined
  if (!principal) throw unauthorized(true)
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
