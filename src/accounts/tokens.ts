// Session access tokens: HS256 JWTs signed and verified through @elysiajs/jwt (jose underneath),
// with the session key derived from JWT_SECRET (http/token-keys.ts).
// Verification pins the algorithm and issuer and requires every claim we rely on; jose would
// otherwise accept any HMAC algorithm for a symmetric key.
import { jwt } from '@elysiajs/jwt'
import { ExpiringMap } from '../expiring.ts'
import { tokenKey } from '../http/token-keys.ts'

interface SessionClaims {
  iss: string
  sub: string
  sid: string
  jti: string
  iat: number
  exp: number
  typ: 'session'
}

export interface SessionTokens {
  /** `notAfter` (seconds since the epoch) caps the expiry, e.g. at the session's end. */
  issue(userId: string, sessionId: string, notAfter?: number): Promise<string>
  /** The claims of a valid session token, or undefined (bad signature, algorithm, claims, expiry). */
  verify(token: string): Promise<SessionClaims | undefined>
}

const REQUIRED_CLAIMS = ['iss', 'sub', 'sid', 'jti', 'iat', 'exp']

/**
 * Verified tokens, by their exact text. A client presents the same access token for its whole
 * lifetime; verifying its HMAC once instead of per request was the largest cost of an
 * authenticated request in profiles. Expiry is re-checked on every hit (revocation is checked by
 * the caller on every request anyway), and the map is bounded.
 */
const VERIFIED_CACHE_SIZE = 50_000

export function createSessionTokens(options: { secret: string; issuer: string; ttlSeconds: number }): SessionTokens {
  // The bearer check runs before a route's handler, so sign/verify are taken from the plugin's
  // public `decorator` once rather than from a request context.
  const { sessionJwt } = jwt({ name: 'sessionJwt', secret: tokenKey(options.secret, 'session'), alg: 'HS256', iss: options.issuer }).decorator
  const verified = new ExpiringMap<string, SessionClaims>(VERIFIED_CACHE_SIZE)
  return {
    issue: (userId, sessionId, notAfter = Infinity) =>
      sessionJwt.sign({
        sub: userId,
        sid: sessionId,
        jti: crypto.randomUUID(),
        typ: 'session',
        exp: Math.min(Math.floor(Date.now() / 1000) + options.ttlSeconds, notAfter),
      }),
    async verify(token) {
      const known = verified.get(token)
      if (known) return known
      const claims = await sessionJwt.verify(token, { algorithms: ['HS256'], issuer: options.issuer, requiredClaims: REQUIRED_CLAIMS })
      if (!claims || claims.typ !== 'session' || typeof claims.sid !== 'string' || typeof claims.sub !== 'string') return undefined
      verified.set(token, claims as unknown as SessionClaims, claims.exp! * 1000)
      return claims as unknown as SessionClaims
    },
  }
}
