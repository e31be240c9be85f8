// Drives the authorization pages over HTTP as a browser would (GET, sign-in form, consent form)
// and returns the code delivered to the redirect URI. The real-browser run is tests/oauth/e2e.
import { createHash, randomBytes } from 'node:crypto'

export interface TestClient {
  client_id: string
  client_secret?: string
  redirect_uri: string
}

/**
 * The cookie of one browser (kgs binds each pending authorization to the browser that started
 * it): sent with GET /authorize, the server keeps it rather than setting a new one.
 */
export const browserCookie = () => `kgs_oauth_browser=${randomBytes(32).toString('base64url')}`

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** The query of an authorization request (the code flow with PKCE, S256) from `client`, with more parameters. */
export function authorizationQuery(
  client: Pick<TestClient, 'client_id' | 'redirect_uri'>,
  more: Record<string, string> = {},
  challenge = pkcePair().challenge,
): URLSearchParams {
  return new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...more,
  })
}

export async function registerClient(baseUrl: string, metadata: Record<string, unknown> = {}): Promise<TestClient> {
  const redirect_uri =
    (metadata.redirect_uris as string[] | undefined)?.[0] ??
    `http://127.0.0.1:${40000 + Math.floor(Math.random() * 20000)}/callback`
  const res = await fetch(`${baseUrl}/api/v1/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [redirect_uri], client_name: 'test client', ...metadata }),
  })
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`)
  const body = (await res.json()) as { client_id: string; client_secret?: string }
  return { client_id: body.client_id, client_secret: body.client_secret, redirect_uri }
}

/** Signs in and allows (up to the scope `allow`, if given: the consent page's choice); returns the code (and the state and iss sent back). */
export async function obtainCode(
  baseUrl: string,
  client: TestClient,
  account: { email: string; password: string },
  options: { challenge: string; scope?: string; resource?: string; allow?: string },
): Promise<{ code: string; state: string; iss: string }> {
  const state = randomBytes(8).toString('hex')
  const query = authorizationQuery(
    client,
    {
      state,
      ...(options.scope ? { scope: options.scope } : {}),
      ...(options.resource ? { resource: options.resource } : {}),
    },
    options.challenge,
  )
  const browser = browserCookie()
  const page = await (
    await fetch(`${baseUrl}/api/v1/oauth/authorize?${query}`, { headers: { cookie: browser } })
  ).text()
  const authorization_id = /name="authorization_id" value="([^"]+)"/.exec(page)![1]!
  const csrf_token = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!
  const post = (path: string, fields: Record<string, string>, cookie?: string) =>
    fetch(baseUrl + path, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: cookie ? `${browser}; ${cookie}` : browser,
      },
      body: new URLSearchParams(fields),
    })
  const login = await post('/api/v1/oauth/authorize/login', {
    authorization_id,
    csrf_token,
    email: account.email,
    password: account.password,
  })
  // kgs's own web app asks no consent: the sign-in itself redirects with the code.
  const decision = login.headers.has('location')
    ? login
    : await post(
        '/api/v1/oauth/authorize',
        { authorization_id, csrf_token, decision: 'allow', ...(options.allow ? { scope: options.allow } : {}) },
        login.headers.get('set-cookie')!.split(';')[0]!,
      )
  const location = new URL(decision.headers.get('location')!)
  return {
    code: location.searchParams.get('code')!,
    state: location.searchParams.get('state')!,
    iss: location.searchParams.get('iss')!,
  }
}

/** Signs in, allows, and exchanges the code at the token endpoint: the token response of a fresh grant. */
export async function obtainTokens(
  baseUrl: string,
  client: TestClient,
  account: { email: string; password: string },
  scope?: string,
  allow?: string,
): Promise<{ access_token: string; refresh_token?: string; scope: string }> {
  const { verifier, challenge } = pkcePair()
  const { code } = await obtainCode(baseUrl, client, account, { challenge, scope, allow })
  const fields = {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirect_uri,
    code_verifier: verifier,
    client_id: client.client_id,
  }
  const res = await fetch(`${baseUrl}/api/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(client.client_secret ? { ...fields, client_secret: client.client_secret } : fields),
  })
  if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${await res.text()}`)
  return (await res.json()) as { access_token: string; refresh_token?: string; scope: string }
}
