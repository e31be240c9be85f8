// Sign-in as kgs's own public OAuth client (authorization code + PKCE, RFC 7636), by oauth4webapi:
// the verifier, the challenge, the state, the check of the authorization response (state, iss:
// RFC 9207) and the code exchange with its answer's checks. The access token
// lives in this module's memory only. The refresh token never reaches this script: the token
// endpoint keeps it in an HttpOnly cookie of this browser (src/oauth/app-session.ts), so a reload
// or a new tab gets its access token by a refresh through that cookie, the browser's one sign-in,
// instead of authorizing again. sessionStorage holds only the PKCE verifier and state across the
// redirect.
import * as oauth from 'oauth4webapi'

const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? ''
const BASE_URL = meta('kgs-base-url')
/** This app's OAuth client. */
const clientId = meta('kgs-client-id')
const REDIRECT_URI = `${BASE_URL}/app/callback`
const SCOPE = 'read write admin'
const PENDING = 'kgs.pending-sign-in'
/** The Web Lock that lets one tab at a time refresh: two refreshes with one cookie would be a reuse, which revokes the grant. */
const REFRESH_LOCK = 'kgs.refresh'

/** kgs's authorization server as its metadata says (RFC 8414), written here: the page is served by it, no discovery request needed. */
const server: oauth.AuthorizationServer = {
  issuer: BASE_URL,
  authorization_endpoint: `${BASE_URL}/api/v1/oauth/authorize`,
  token_endpoint: `${BASE_URL}/api/v1/oauth/token`,
  authorization_response_iss_parameter_supported: true,
}
const client: oauth.Client = { client_id: clientId }
/** oauth4webapi refuses plain http unless told: allowed where kgs itself is served over it (a local server). */
const overHttp = { [oauth.allowInsecureRequests]: new URL(BASE_URL).protocol === 'http:' }

let access: string | undefined
let refreshing: Promise<boolean> | undefined
const endListeners = new Set<() => void>()

export const signedIn = () => access !== undefined

/** Calls `listener` when the sign-in ends by itself (ended from another browser, idle, expired); returns the unsubscribe. */
export function onSignInEnded(listener: () => void): () => void {
  endListeners.add(listener)
  return () => endListeners.delete(listener)
}

/** What REGISTRATION allows (open, invite or closed): the sign-in card offers a sign-up or says who makes accounts. */
export const registration = meta('kgs-registration')

/**
 * Sends the browser to the authorization page; back at /app/callback, finishSignIn completes.
 * `create`: to the sign-up form first (OpenID Connect's prompt=create), which signs in as well.
 */
export async function startSignIn(returnTo: string, create = false): Promise<void> {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const challenge = await oauth.calculatePKCECodeChallenge(verifier)
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, returnTo }))
  const url = new URL(server.authorization_endpoint!)
  const params = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    scope: SCOPE,
  }
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  if (create) url.searchParams.set('prompt', 'create')
  location.assign(url.toString())
}

/** Completes the sign-in at /app/callback: checks state, exchanges the code; returns where to go. */
export async function finishSignIn(query: URLSearchParams): Promise<string> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as {
    verifier: string
    state: string
    returnTo: string
  } | null
  sessionStorage.removeItem(PENDING)
  if (query.get('error'))
    throw new Error(`The sign-in did not complete: ${query.get('error_description') ?? query.get('error')}`)
  const mismatch = new Error('The sign-in answer does not match a sign-in this tab started. Sign in again.')
  if (!pending) throw mismatch
  let answer: URLSearchParams
  try {
    answer = oauth.validateAuthResponse(server, client, query, pending.state)
  } catch {
    throw mismatch
  }
  try {
    const exchanged = await oauth.authorizationCodeGrantRequest(
      server,
      client,
      oauth.None(),
      answer,
      REDIRECT_URI,
      pending.verifier,
      overHttp,
    )
    access = (await oauth.processAuthorizationCodeResponse(server, client, exchanged)).access_token
  } catch (error) {
    throw new Error(
      `The sign-in did not complete: ${error instanceof oauth.ResponseBodyError ? (error.error_description ?? error.error) : (error as Error).message}`,
    )
  }
  return pending.returnTo.startsWith('/app') ? pending.returnTo : '/app'
}

/**
 * A new access token through the browser's refresh cookie, which rotates; false when the browser's
 * sign-in is over. Written here, not by oauth4webapi: its refresh sends the refresh token in the
 * body, which this page never holds (the token endpoint reads the cookie).
 */
function refresh(): Promise<boolean> {
  const run = async () => {
    const response = await fetch(server.token_endpoint!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId }),
    })
    access = response.ok ? ((await response.json()) as { access_token: string }).access_token : undefined
    return response.ok
  }
  refreshing ??= (navigator.locks ? navigator.locks.request(REFRESH_LOCK, run) : run()).finally(() => {
    refreshing = undefined
  })
  return refreshing
}

/** On a load or in a new tab: signs this tab in with the browser's sign-in, if the page says it has one. */
export const resumeSignIn = (): Promise<boolean> =>
  meta('kgs-session') === 'resume' ? refresh() : Promise.resolve(false)

/**
 * A request with the access token: `send` gets the URL and the authorization header; an expired
 * token is refreshed once and `send` runs again. fetch's form is authorizedFetch; an upload that
 * reports its progress sends with XMLHttpRequest instead (api.ts).
 */
export async function authorized<R extends { status: number }>(
  path: string,
  send: (url: string, headers: Record<string, string>) => Promise<R>,
): Promise<R> {
  const attempt = (token: string | undefined) =>
    send(BASE_URL + path, token ? { authorization: `Bearer ${token}` } : {})
  const sent = access
  const response = await attempt(sent)
  if (response.status !== 401 || !sent) return response
  // Another request may have refreshed meanwhile: then its new token is used as it is.
  if (access === sent && !(await refresh())) {
    for (const listener of endListeners) listener()
    return response
  }
  return attempt(access)
}

/** fetch with the access token; an expired one is refreshed once and the request sent again. */
export const authorizedFetch = (path: string, init: RequestInit = {}): Promise<Response> =>
  authorized(path, (url, headers) =>
    fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), ...headers } }),
  )

/** Signs this browser out: its grant is revoked (every tab's tokens stop working) and the authorization pages forget it. */
export async function signOut(): Promise<void> {
  access = undefined
  await fetch(`${BASE_URL}/api/v1/oauth/app-session`, { method: 'DELETE' })
}
