// Authentication: a valid Authorization header becomes a `principal`, or the request is answered
// 401 with WWW-Authenticate; and the checks the access rules of access.ts are made of. None costs
// a database round trip (signature, claims, in-memory revocations and roles).
// Also here: the server's own service principal (a short-lived token it signs for itself to
// reach its registry), accepted only by the routes that opt in (withServiceTokens).
import { ExpiringMap } from '../expiring.ts'
import { claimType, hasExpired, headerType, serviceTokenCodec } from './tokens.ts'
import { HttpError } from './errors.ts'
import {
  SYSTEM_DOMAIN,
  permissionDenied,
  scopeAllows,
  scopeRefused,
  type Permission,
  type Scope,
  type SystemPermission,
} from '../permissions.ts'

export interface Principal {
  userId: string
  /** Set for session tokens (login/register/refresh). */
  sessionId?: string
  /** Set for OAuth access tokens: the client, and the scopes that cap the user's permissions. */
  clientId?: string
  scopes?: string[]
  /** Set for OAuth access tokens: the grant (token family) they were issued from. */
  grantId?: string
  /**
   * Set only for the service principal: the system-domain permissions it holds, whatever the
   * roles say (it has none). See SERVICE_PERMISSIONS.
   */
  grants?: readonly SystemPermission[]
  /**
   * Service principal only: the user a job acts for (its token's `obo` claim), e.g. the one who
   * asked for an export, who then owns the pushed graph.
   */
  onBehalfOf?: string
}

export interface Authorizer {
  can(userId: string, domain: string, permission: Permission): boolean
}

/** 403 for a permission the caller's roles lack: in `repository` (how the refusal names it), or in the system domain. */
export const forbidden = (permission: Permission, repository?: string) =>
  new HttpError(403, permissionDenied(permission, repository))

/** A system-domain permission: the service principal by its grants, a user by its roles. */
export function holdsSystemPermission(
  authorizer: Authorizer,
  principal: Principal,
  permission: SystemPermission,
): boolean {
  return principal.grants
    ? principal.grants.includes(permission)
    : authorizer.can(principal.userId, SYSTEM_DOMAIN, permission)
}

/**
 * The user of a session token. A user's sessions and grants are managed with one: an OAuth
 * client acts for its user within its scopes, and these are not among them (403).
 */
export function requireSessionToken(principal: Principal, what: string): string {
  if (!principal.sessionId)
    throw new HttpError(403, `${what} are managed with a session token, not an OAuth access token`)
  return principal.userId
}

/** 403 for an OAuth token whose scopes do not cover the action (RFC 6750 §3.1). */
function insufficientScope(
  resourceMetadata: string,
  need: Scope,
  scopes: readonly string[],
  what?: Permission,
): HttpError {
  return new HttpError(403, scopeRefused(need, scopes, what), {
    'www-authenticate': `Bearer resource_metadata="${resourceMetadata}", error="insufficient_scope", scope="${need}"`,
  })
}

/** Throws unless the principal's token scopes allow `need` (session tokens are not capped); `what` names the permission in the refusal. */
export function requireScope(principal: Principal, need: Scope, resourceMetadata: string, what?: Permission): void {
  if (!scopeAllows(principal.scopes, need))
    throw insufficientScope(resourceMetadata, need, principal.scopes ?? [], what)
}

/**
 * Session tokens and OAuth access tokens share the Authorization header; the JWT header's typ
 * (at+jwt for OAuth, RFC 9068) says which verifier to ask. Each verifier still checks typ.
 */
export function bearerAuthenticator(
  sessions: Authenticator,
  oauth: Pick<Authenticator, 'authenticate'>,
): Authenticator {
  const isAccessToken = (token: string) => headerType(token) === 'at+jwt'
  return {
    resourceMetadataUrl: sessions.resourceMetadataUrl,
    authenticate: (token) => (isAccessToken(token) ? oauth.authenticate(token) : sessions.authenticate(token)),
  }
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/** Why a request was not authenticated. */
type Unauthenticated = 'missing' | 'malformed' | 'expired' | 'invalid'

const SIGN_IN = 'sign in again (POST /api/v1/auth/login)'
/** The body says what to do; the challenge's error_description (RFC 6750 §3) says it briefly. */
const UNAUTHENTICATED: Record<
  Exclude<Unauthenticated, 'expired'>,
  { error?: string; message: string; description?: string }
> = {
  missing: { message: 'authentication required' },
  // RFC 6750 §3.1 would answer invalid_request with 400; kgs answers 401 so that the challenge
  // reaches the client (docs/spec/decisions.md §5a).
  malformed: {
    error: 'invalid_request',
    message: 'malformed Authorization header: expected Bearer <token> (the word Bearer, a space, then the token)',
    description: 'expected Authorization: Bearer <token>',
  },
  invalid: {
    error: 'invalid_token',
    message: `invalid access token (revoked, signed out, or not issued by this server): ${SIGN_IN}`,
    description: 'the access token is invalid or revoked; sign in again',
  },
}
const EXPIRED = {
  session: `access token expired: get a new one with the refresh token of your sign-in (POST /api/v1/auth/refresh {"refresh_token": "..."}) or ${SIGN_IN}`,
  oauth:
    'access token expired: get a new one from the OAuth token endpoint (grant_type=refresh_token) or authorize again',
}

/**
 * 401 with WWW-Authenticate: Bearer, the protected resource metadata URL (RFC 9728 §5.1), so
 * that a client meeting the API for the first time can discover its authorization server, and
 * the scope the route needs, so that it asks the user for no more than that. The body and the
 * challenge's error say what to do: send a token, fix the header's form, refresh, sign in again.
 */
function unauthorized(resourceMetadata: string, why: Unauthenticated, need: Scope, token?: string): HttpError {
  const challenge = `Bearer resource_metadata="${resourceMetadata}", scope="${need}"`
  const { error, message, description } =
    why === 'expired'
      ? {
          error: 'invalid_token',
          message: headerType(token ?? '') === 'at+jwt' ? EXPIRED.oauth : EXPIRED.session,
          description: 'the access token expired; refresh it or sign in again',
        }
      : UNAUTHENTICATED[why]
  return new HttpError(401, message, {
    'www-authenticate': error ? `${challenge}, error="${error}", error_description="${description}"` : challenge,
  })
}

export interface Authenticator {
  authenticate(token: string): Promise<Principal | undefined>
  /** Absolute URL of the protected resource metadata, for WWW-Authenticate. */
  readonly resourceMetadataUrl: string
}

async function authenticate(authenticator: Authenticator, request: Request, need: Scope): Promise<Principal> {
  const header = request.headers.get('authorization')
  if (!header) throw unauthorized(authenticator.resourceMetadataUrl, 'missing', need)
  const token = BEARER.exec(header)?.[1]
  if (!token) throw unauthorized(authenticator.resourceMetadataUrl, 'malformed', need)
  const principal = await authenticator.authenticate(token)
  if (!principal)
    throw unauthorized(authenticator.resourceMetadataUrl, hasExpired(token) ? 'expired' : 'invalid', need, token)
  return principal
}

const principals = new WeakMap<Request, Principal>()

/**
 * The first hook of every protected route: authentication in `transform`, which Elysia runs
 * before it validates the query and body (the body parser holds its refusals back until then,
 * see bodyParsing). docs/spec/decisions.md §5a, RFC 6750 §3: a request without credentials is a 401 with
 * the challenge whatever its body, or clients could not discover the server from it. The
 * route's `resolve` takes the principal with principalOf.
 */
export function authenticatesFirst(authenticator: Authenticator, need: Scope) {
  return {
    async transform({ request }: { request: Request }) {
      principals.set(request, await authenticate(authenticator, request, need))
    },
  }
}

/** The principal authenticatesFirst found for this request. */
export function principalOf(request: Request): Principal {
  const principal = principals.get(request)
  if (!principal) throw new Error('principalOf: the route does not authenticate first')
  return principal
}

// ---------------------------------------------------------------------------------------------
// The service principal. Export and import jobs reach the registry over HTTP, by default this
// very server's: with no REGISTRY_TOKEN they present a token the server signs for itself with
// its JWT secret. It is an HS256 JWT with `sub: "kgs"` and `typ: "service"` (no session, no
// client, no user), lives SERVICE_TOKEN_TTL seconds, and stands for exactly SERVICE_PERMISSIONS.
// A job acting for a user (an export) gets a token naming that user in `obo`: the registry
// records the user as the owner of what it pushes; the permissions stay the service's.
// Only routes whose authenticator is wrapped in withServiceTokens accept it (the registry's);
// everywhere else it fails the session check (no `typ: "session"`, no `sid`) and is a 401.
// It needs no revocation: it is never handed out, and expires within minutes.

/** The service principal's identity: `sub` of its tokens, `owner` of what it pushes. */
export const SERVICE_SUBJECT = 'kgs'
/** Everything the service principal may do. */
const SERVICE_PERMISSIONS: readonly SystemPermission[] = ['registry:push', 'registry:pull']
/** Seconds a service token lives. A push that outlasts it is fine: tokens are checked when a request starts. */
const SERVICE_TOKEN_TTL = 300
/** A cached token is replaced this many seconds before it expires. */
const SERVICE_TOKEN_RENEW_BEFORE = 60

export interface ServiceTokens {
  /**
   * A valid service token, acting for `onBehalfOf` (a user id) if given: the cached one, or a
   * new one when that is within a minute of expiring.
   */
  token(onBehalfOf?: string): Promise<string>
  /** The service principal, if `token` is a valid service token. */
  authenticate(token: string): Promise<Principal | undefined>
}

export function createServiceTokens(options: { secret: string; issuer: string; ttlSeconds?: number }): ServiceTokens {
  const ttl = options.ttlSeconds ?? SERVICE_TOKEN_TTL
  const codec = serviceTokenCodec(options)
  // Cached until renewal, per user acted for ('' for none).
  const current = new ExpiringMap<string, Promise<string>>(1_000)
  return {
    token(onBehalfOf) {
      const key = onBehalfOf ?? ''
      let token = current.get(key)
      if (!token) {
        const now = Date.now()
        token = codec.sign({
          sub: SERVICE_SUBJECT,
          typ: 'service',
          jti: crypto.randomUUID(),
          exp: Math.floor(now / 1000) + ttl,
          ...(onBehalfOf ? { obo: onBehalfOf } : {}),
        })
        current.set(key, token, now + Math.max(ttl - SERVICE_TOKEN_RENEW_BEFORE, ttl / 2) * 1000)
        token.catch(() => current.delete(key))
      }
      return token
    },
    async authenticate(token) {
      const claims = await codec.verify(token)
      // A service token never lives longer than this server would have made it.
      if (!claims || claims.sub !== SERVICE_SUBJECT || claims.exp - claims.iat > ttl) return undefined
      return { userId: SERVICE_SUBJECT, grants: SERVICE_PERMISSIONS, ...(claims.obo ? { onBehalfOf: claims.obo } : {}) }
    },
  }
}

/** `authenticator`, also accepting service tokens (told apart by their `typ` claim). */
export function withServiceTokens(authenticator: Authenticator, service: ServiceTokens): Authenticator {
  const isServiceToken = (token: string) => claimType(token) === 'service'
  return {
    resourceMetadataUrl: authenticator.resourceMetadataUrl,
    authenticate: (token) => (isServiceToken(token) ? service.authenticate(token) : authenticator.authenticate(token)),
  }
}
