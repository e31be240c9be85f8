// Sign-in as a public OAuth client of kgs (authorization code + PKCE, RFC 7636). The tokens live
// in this module's memory only: a reload signs in again, silently while the authorization pages
// remember the browser (their own cookie). sessionStorage holds only the PKCE verifier and state
// across the redirect, and whether this tab had signed in.
const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? ''
const BASE_URL = meta('kgs-base-url')
/** This app's OAuth client. */
export const clientId = meta('kgs-client-id')
const REDIRECT_URI = `${BASE_URL}/app/callback`
const SCOPE = 'read write admin'
const PENDING = 'kgs.pending-sign-in'
const SIGNED_IN = 'kgs.signed-in'
const SIGNED_OUT = 'kgs.signed-out'

interface Tokens {
  access: string
  refresh: string | undefined
}
let tokens: Tokens | undefined
let refreshing: Promise<boolean> | undefined

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
const randomToken = () => base64url(crypto.getRandomValues(new Uint8Array(32)))

export const signedIn = () => tokens !== undefined
/** Whether this tab signed in before (a reload then signs in again without asking). */
export const hadSession = () => sessionStorage.getItem(SIGNED_IN) === '1'

/** What REGISTRATION allows (open, invite or closed): the sign-in card offers a sign-up or says who makes accounts. */
export const registration = meta('kgs-registration')

/**
 * Sends the browser to the authorization page; back at /app/callback, finishSignIn completes.
 * `create`: to the sign-up form first (OpenID Connect's prompt=create), which signs in as well.
 */
export async function startSignIn(returnTo: string, create = false): Promise<void> {
  const verifier = randomToken()
  const state = randomToken()
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))))
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, returnTo }))
  const url = new URL(`${BASE_URL}/api/v1/oauth/authorize`)
  const params = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256', state, scope: SCOPE }
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  // After a sign-out the next sign-in asks for the password, whatever the pages remember.
  if (create) url.searchParams.set('prompt', 'create')
  else if (sessionStorage.getItem(SIGNED_OUT) === '1') url.searchParams.set('prompt', 'login')
  location.assign(url.toString())
}

async function tokenRequest(form: Record<string, string>): Promise<Response> {
  return fetch(`${BASE_URL}/api/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ ...form, client_id: clientId }) })
}

const keep = (body: { access_token: string; refresh_token?: string }) => {
  tokens = { access: body.access_token, refresh: body.refresh_token }
}

/** Completes the sign-in at /app/callback: checks state, exchanges the code; returns where to go. */
export async function finishSignIn(query: URLSearchParams): Promise<string> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as { verifier: string; state: string; returnTo: string } | null
  sessionStorage.removeItem(PENDING)
  if (query.get('error')) throw new Error(`The sign-in did not complete: ${query.get('error_description') ?? query.get('error')}`)
  if (!pending || query.get('state') !== pending.state) throw new Error('The sign-in answer does not match a sign-in this tab started. Sign in again.')
  const response = await tokenRequest({ grant_type: 'authorization_code', code: query.get('code') ?? '', redirect_uri: REDIRECT_URI, code_verifier: pending.verifier })
  const body = await response.json()
  if (!response.ok) throw new Error(`The sign-in did not complete: ${body.error_description ?? body.error}`)
  keep(body)
  sessionStorage.setItem(SIGNED_IN, '1')
  sessionStorage.removeItem(SIGNED_OUT)
  return pending.returnTo.startsWith('/app') ? pending.returnTo : '/app'
}

/** A new access token for the refresh token, which rotates (the old one stops working). */
function refresh(): Promise<boolean> {
  refreshing ??= (async () => {
    const current = tokens?.refresh
    if (!current) return false
    const response = await tokenRequest({ grant_type: 'refresh_token', refresh_token: current })
    if (!response.ok) return false
    keep(await response.json())
    return true
  })().finally(() => {
    refreshing = undefined
  })
  return refreshing
}

/** fetch with the access token; an expired one is refreshed once and the request sent again. */
export async function authorizedFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const send = (access: string | undefined) => fetch(BASE_URL + path, { ...init, headers: { ...(init.headers as Record<string, string>), ...(access ? { authorization: `Bearer ${access}` } : {}) } })
  const sent = tokens?.access
  const response = await send(sent)
  if (response.status !== 401 || !sent) return response
  // Another request may have refreshed meanwhile: then its new token is used as it is.
  if (tokens?.access === sent && !(await refresh())) return response
  return send(tokens?.access)
}

/** Revokes the grant (its refresh token, and so every token of it) and forgets the tokens. */
export async function signOut(): Promise<void> {
  const current = tokens
  tokens = undefined
  sessionStorage.removeItem(SIGNED_IN)
  sessionStorage.setItem(SIGNED_OUT, '1')
  const token = current?.refresh ?? current?.access
  if (token) {
    await fetch(`${BASE_URL}/api/v1/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, token_type_hint: current?.refresh ? 'refresh_token' : 'access_token', client_id: clientId }),
    })
  }
}
