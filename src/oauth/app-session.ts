// The web app's session in a browser. The app (WEB_APP_CLIENT_ID) keeps its access token in the
// page's memory; its refresh token never reaches page script: the token endpoint puts it in an
// HttpOnly cookie and leaves it out of the answer. A reload or a new tab refreshes through that
// cookie instead of authorizing again, and a sign-in in a browser that holds the cookie replaces
// that browser's grant: a browser holds one grant of the app. Rotation and reuse detection are the
// token endpoint's as for any client. Signing out revokes the grant and ends the authorization
// pages' sign-in of the browser; SESSION_IDLE_TTL ends an unused one, as for every grant.
//
// The cookie is HttpOnly, SameSite=Strict and scoped to /api/v1/oauth (the token endpoint and the
// sign-out below), and it counts only on a request the browser says comes from kgs's own origin
// (Sec-Fetch-Site: same-origin; a request without Fetch Metadata is let through, as on the pages:
// SameSite=Strict still keeps other sites' requests from carrying the cookie). The answers it gets are JSON that no other origin may read with credentials
// (cors.ts never allows them), so another site can neither use nor learn it.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import { publicAccess } from '../http/access.ts'
import { HttpError } from '../http/errors.ts'
import { ErrorBody } from '../http/schemas.ts'
import { APP_SIGNED_IN_COOKIE, WEB_APP_CLIENT_ID, WEB_APP_PATH } from '../http/web-app.ts'
import { findClient, type Client } from './clients.ts'
import { browserSessionDigest, cookieToken, endBrowserSession, endedSessionCookie, GRANT_SECONDS } from './consent.ts'
import { OAuthError } from './errors.ts'
import type { OAuthTokens, TokenResponse } from './tokens.ts'

const APP_REFRESH_COOKIE = 'kgs_app_refresh'
const COOKIE_PATH = '/api/v1/oauth'
/** Of a User-Agent header, what browserSummary reads: the rest is never needed. */
const USER_AGENT_READ = 512

/** Whether the browser says the request comes from a page of another origin (or sends no Fetch Metadata: not a browser). */
const fromAnotherOrigin = (request: Request) => {
  const site = request.headers.get('sec-fetch-site')
  return site !== null && site !== 'same-origin'
}

/** The refresh token of the app's cookie, if the request carries one and comes from kgs's own pages. */
function cookieRefreshToken(request: Request): string | undefined {
  return fromAnotherOrigin(request) ? undefined : cookieToken(request.headers.get('cookie'), APP_REFRESH_COOKIE)
}

/** The refresh token's cookie, and the app's marker that a session exists (web-app.ts): set and cleared together. */
function refreshCookies(token: string, maxAgeSeconds: number, secure: boolean): string[] {
  const flags = `Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
  return [
    `${APP_REFRESH_COOKIE}=${token}; Path=${COOKIE_PATH}; ${flags}`,
    `${APP_SIGNED_IN_COOKIE}=${token ? '1' : ''}; Path=${WEB_APP_PATH}; ${flags}`,
  ]
}

const BROWSERS: [RegExp, string][] = [
  [/\bEdg(?:e|A|iOS)?\/(\d{1,4})/, 'Edge'],
  [/\bOPR\/(\d{1,4})/, 'Opera'],
  [/\b(?:Firefox|FxiOS)\/(\d{1,4})/, 'Firefox'],
  [/(?:Chrome|CriOS)\/(\d{1,4})/, 'Chrome'],
  [/\bVersion\/(\d{1,4})[.\d]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
]
const SYSTEMS: [RegExp, string][] = [
  [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
]

/**
 * "Chrome 131 on Linux": which browser signed in, enough for a person to tell their browsers
 * apart on the Agents page; short by construction (the header itself is not stored).
 */
export function browserSummary(userAgent: string | null): string {
  const header = (userAgent ?? '').slice(0, USER_AGENT_READ)
  let browser = 'Unknown browser'
  for (const [pattern, name] of BROWSERS) {
    const version = pattern.exec(header)?.[1]
    if (version) {
      browser = `${name} ${version}`
      break
    }
  }
  const system = SYSTEMS.find(([pattern]) => pattern.test(header))?.[1]
  return system ? `${browser} on ${system}` : browser
}

/**
 * Whether the request is the web app's refresh with no refresh token at all, neither in the body
 * nor in a cookie: a signed-out browser loading the app. It guesses nothing, so the token
 * throttles do not count it (else every signed-out visitor would draw on the app's budget).
 */
export function appRefreshWithoutToken(
  body: { client_id?: string; grant_type?: string; refresh_token?: string },
  request: Request,
): boolean {
  return (
    body.client_id === WEB_APP_CLIENT_ID &&
    body.grant_type === 'refresh_token' &&
    body.refresh_token === undefined &&
    cookieRefreshToken(request) === undefined
  )
}

/** The token endpoint's answer without the refresh token, which goes to the cookie. */
function intoCookie(response: TokenResponse, headers: Record<string, unknown>, secure: boolean): TokenResponse {
  const { refresh_token: refresh, ...rest } = response
  if (refresh) headers['set-cookie'] = refreshCookies(refresh, GRANT_SECONDS, secure)
  return rest
}

/** The token endpoint for the web app: both grants, the refresh token in the cookie (see the top). */
export function appTokenEndpoint(tokens: OAuthTokens, secure: boolean) {
  return async (
    client: Client,
    body: Record<string, string | undefined>,
    request: Request,
    headers: Record<string, unknown>,
  ): Promise<TokenResponse | undefined> => {
    if (body.grant_type === 'authorization_code') {
      const cookies = request.headers.get('cookie')
      const browser = {
        summary: browserSummary(request.headers.get('user-agent')),
        pagesSignIn: browserSessionDigest(cookies),
        replacing: cookieRefreshToken(request),
      }
      return intoCookie(await tokens.exchangeCode(client, body, browser), headers, secure)
    }
    if (body.grant_type !== 'refresh_token') return undefined
    const fromCookie = body.refresh_token === undefined ? cookieRefreshToken(request) : undefined
    try {
      return intoCookie(
        await tokens.refresh(client, { ...body, refresh_token: body.refresh_token ?? fromCookie }),
        headers,
        secure,
      )
    } catch (error) {
      // A grant that is over (revoked, idle, expired, reused): the browser forgets its cookie.
      if (fromCookie && error instanceof OAuthError && error.code === 'invalid_grant') {
        throw new OAuthError(error.status, error.code, error.description, {
          ...error.headers,
          'set-cookie': refreshCookies('', 0, secure),
        })
      }
      throw error
    }
  }
}

/** DELETE /api/v1/oauth/app-session: the web app's sign-out in this browser. */
export interface AppSessionRoutesOptions {
  system: Sql
  baseUrl: string
  tokens: OAuthTokens
}

export function appSessionRoutes({ system, baseUrl, tokens }: AppSessionRoutesOptions) {
  const secure = baseUrl.startsWith('https:')
  return new Elysia({ name: 'kgs/oauth-app-session' }).use(publicAccess).delete(
    '/api/v1/oauth/app-session',
    async ({ request, set }) => {
      // A sign-out posted from another site would sign the person out against their will.
      if (fromAnotherOrigin(request)) throw new HttpError(403, "the web app signs out from kgs's own pages only")
      const refresh = cookieRefreshToken(request)
      const client = refresh ? await findClient(system, WEB_APP_CLIENT_ID) : undefined
      if (refresh && client) await tokens.endBrowserGrant(client, refresh)
      await endBrowserSession(system, request.headers.get('cookie'))
      set.headers['set-cookie'] = [...refreshCookies('', 0, secure), endedSessionCookie(secure)]
      set.headers['cache-control'] = 'no-store'
      return {}
    },
    {
      // Authorized by the cookie it ends, from kgs's own origin only; without one it ends nothing.
      public: true,
      response: { 200: t.Object({}), 403: ErrorBody },
      detail: {
        tags: ['oauth'],
        summary:
          "The web app's sign-out in this browser: revokes the grant its HttpOnly cookie holds, ends the authorization pages' sign-in, clears both cookies (from kgs's own pages only: 403 for a request another site sent)",
      },
    },
  )
}
