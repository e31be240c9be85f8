// Session access tokens (signed and verified by http/tokens.ts): a session's user and id, living
// ACCESS_TOKEN_TTL at most and never past the session's end.
import { sessionTokenCodec, type SessionClaims } from '../http/tokens.ts'

export interface SessionTokens {
  /** `notAfter` (seconds since the epoch) caps the expiry, e.g. at the session's end. */
  issue(userId: string, sessionId: string, notAfter?: number): Promise<string>
  /** The claims of a valid session token, or undefined (bad signature, algorithm, claims, expiry). */
  verify(token: string): Promise<SessionClaims | undefined>
}

export function createSessionTokens(options: { secret: string; issuer: string; ttlSeconds: number }): SessionTokens {
  const codec = sessionTokenCodec(options)
  return {
    issue: (userId, sessionId, notAfter = Infinity) =>
      codec.sign({
        sub: userId,
        sid: sessionId,
        jti: crypto.randomUUID(),
        typ: 'session',
        exp: Math.min(Math.floor(Date.now() / 1000) + options.ttlSeconds, notAfter),
      }),
    verify: (token) => codec.verify(token),
  }
}
