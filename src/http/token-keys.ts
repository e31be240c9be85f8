// One signing key per kind of token, derived from JWT_SECRET with HKDF (RFC 5869): a session
// token, an OAuth access token and a service token are signed with different keys, so a token of
// one kind can never verify as another, even if a `typ` check were lost.
import { hkdfSync } from 'node:crypto'
import { decodeJwt, decodeProtectedHeader } from 'jose'

export type TokenKind = 'session' | 'oauth-access' | 'service'

/** The HS256 key of one kind of token: 32 bytes of HKDF-SHA256 over the secret. */
export function tokenKey(secret: string, kind: TokenKind): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secret, 'kgs', `kgs ${kind} token`, 32))
}

/** The `typ` of a JWT's protected header, unverified (only to pick the verifier that will check it). */
export function headerType(token: string): unknown {
  try {
    return decodeProtectedHeader(token).typ
  } catch {
    return undefined
  }
}

/** The `typ` claim of a JWT's payload, unverified (only to pick the verifier that will check it). */
export function claimType(token: string): unknown {
  try {
    return decodeJwt(token).typ
  } catch {
    return undefined
  }
}

/** Whether a JWT's `exp` has passed, unverified (only to word the 401 of a token that failed verification). */
export function hasExpired(token: string, nowSeconds = Date.now() / 1000): boolean {
  try {
    const { exp } = decodeJwt(token)
    return typeof exp === 'number' && exp <= nowSeconds
  } catch {
    return false
  }
}
