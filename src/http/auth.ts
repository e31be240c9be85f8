// The bearer check every protected route uses: `{ auth: true }` on a route turns a valid
// Authorization header into a `principal`, or answers 401 with WWW-Authenticate. Verifying
// costs no database round trip (signature, claims, and the in-memory revocation set).
import { Elysia } from 'elysia'
import { HttpError } from './errors.ts'

export interface Principal {
  userId: string
  /** Set for session tokens (login/register/refresh). */
  sessionId?: string
}

export interface Authenticator {
  authenticate(token: string): Promise<Principal | undefined>
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

export function unauthorized(tokenPresented: boolean): HttpError {
  return tokenPresented
    ? new HttpError(401, 'invalid or expired access token', { 'www-authenticate': 'Bearer error="invalid_token"' })
    : new HttpError(401, 'authentication required', { 'www-authenticate': 'Bearer' })
}

export function bearerAuth(authenticator: Authenticator) {
  return new Elysia({ name: 'kgs/auth' }).macro({
    auth: {
      async resolve({ request }) {
        const header = request.headers.get('authorization')
        if (!header) throw unauthorized(false)
        const token = BEARER.exec(header)?.[1]
        const principal = token ? await authenticator.authenticate(token) : undefined
        if (!principal) throw unauthorized(true)
        return { principal }
      },
    },
  })
}
