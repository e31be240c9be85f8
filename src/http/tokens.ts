// Every kind of JWT kgs signs, signed and verified here and nowhere else: session tokens, OAuth
// access tokens (RFC 9068) and the server's service tokens. HS256 with one key per kind, derived
// from JWT_SECRET with HKDF (RFC 5869), so that a token of one kind can never verify as another
// even if a `typ` check were lost. Verification pins the algorithm, the issuer (and for access
// tokens the audiences), requires the claims, and checks their shape against a schema: what it
// answers is typed by that check, not by a cast. Verified tokens are remembered by their exact
// text until they expire: a client presents the same token for its whole lifetime, and verifying
// its HMAC once instead of per request was the largest cost of an authenticated request in
// profiles. Revocation is the callers' (sessions, grants), checked on every request anyway.
import { hkdfSync } from 'node:crypto'
import { Type, type Static, type TObject } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { SignJWT, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
import { ExpiringMap } from '../expiring.ts'

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

/** Bound of each kind's memory of verified tokens. */
const VERIFIED_CACHE_SIZE = 50_000

const registered = { iss: Type.String(), jti: Type.String(), iat: Type.Integer(), exp: Type.Integer() }

const SessionClaims = Type.Object({
  ...registered,
  sub: Type.String(),
  sid: Type.String(),
  typ: Type.Literal('session'),
})
const AccessClaims = Type.Object({
  ...registered,
  sub: Type.String(),
  aud: Type.String(),
  client_id: Type.String(),
  scope: Type.String(),
  fam: Type.String(),
})
const ServiceClaims = Type.Object({
  ...registered,
  sub: Type.String(),
  typ: Type.Literal('service'),
  obo: Type.Optional(Type.String()),
})
export type SessionClaims = Static<typeof SessionClaims>

/** The schema of a kind's claims. */
type Claims = TObject

/** What a kind's tokens carry besides what signing sets (iss, iat). */
type Payload<C extends Claims> = Omit<Static<C>, 'iss' | 'iat'>

export interface TokenCodec<C extends Claims> {
  sign(payload: Payload<C>): Promise<string>
  /** The claims of a valid token of this kind, or undefined (signature, algorithm, typ, issuer, audience, claims, expiry). */
  verify(token: string): Promise<Static<C> | undefined>
}

function tokenCodec<C extends Claims>(
  kind: TokenKind,
  claims: C,
  options: { secret: string; issuer: string; headerType?: string; audiences?: string[] },
): TokenCodec<C> {
  const key = tokenKey(options.secret, kind)
  const shape = TypeCompiler.Compile(claims)
  const verified = new ExpiringMap<string, Static<C>>(VERIFIED_CACHE_SIZE)
  return {
    sign: (payload) =>
      new SignJWT(payload)
        .setProtectedHeader({ alg: 'HS256', ...(options.headerType ? { typ: options.headerType } : {}) })
        .setIssuer(options.issuer)
        .setIssuedAt()
        .sign(key),
    async verify(token) {
      const known = verified.get(token)
      if (known) return known
      let payload: JWTPayload
      try {
        ;({ payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: options.issuer,
          audience: options.audiences,
          typ: options.headerType,
        }))
      } catch {
        return undefined
      }
      // jwtVerify has checked exp (a required claim of every kind's schema).
      if (!shape.Check(payload) || payload.exp === undefined) return undefined
      verified.set(token, payload, payload.exp * 1000)
      return payload
    },
  }
}

/** Session tokens (login, register, refresh): `typ: "session"` claim, `sid` the session. */
export const sessionTokenCodec = (options: { secret: string; issuer: string }) =>
  tokenCodec('session', SessionClaims, options)

/** OAuth access tokens (RFC 9068): `typ: at+jwt` header, for one of `audiences`. */
export const accessTokenCodec = (options: { secret: string; issuer: string; audiences: string[] }) =>
  tokenCodec('oauth-access', AccessClaims, { ...options, headerType: 'at+jwt' })

/** The server's own service tokens (http/auth.ts): `typ: "service"` claim. */
export const serviceTokenCodec = (options: { secret: string; issuer: string }) =>
  tokenCodec('service', ServiceClaims, options)
