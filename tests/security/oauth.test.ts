// The authorization server against the points of the security review (SECURITY.md) that the
// protocol tests under tests/oauth do not already prove: grant lifetimes, what each client may
// do, the resource server's token checks, and the pages' defences against cross-site posts,
// stale sessions and self-registered clients posing as someone else.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { SignJWT } from 'jose'
import { SWAGGER_CLIENT_ID } from '../../src/http/swagger-ui.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { withSystemDb } from './system-db.ts'
import { api, expectError, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import {
  browserCookie,
  obtainCode,
  pkcePair,
  registerClient,
  type TestClient,
  authorizationQuery,
} from '../helpers/oauth.ts'
import { GRANT_SECONDS } from '../../src/oauth/consent.ts'
import { tokenKey } from '../../src/http/tokens.ts'

let server: TestServer
const account = { email: uniqueEmail('owner'), password: 'correct horse battery' }
let userId: string

beforeAll(async () => {
  server = await startTestServer()
  userId = (await api(server.url).post('/api/v1/auth/register', account)).body.user.id
})
afterAll(() => server.stop())

const sha256 = (text: string) => createHash('sha256').update(text).digest()

/** A form post to an OAuth endpoint, answered as JSON (token, revoke). */
async function postOAuth(path: string, fields: Record<string, string>) {
  const res = await fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  })
  const text = await res.text()
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, string> }
}

/** Signs in, allows, and exchanges the code: the token response of a fresh grant. */
async function grant(client: TestClient) {
  const { verifier, challenge } = pkcePair()
  const { code } = await obtainCode(server.url, client, account, { challenge })
  const fields = {
    grant_type: 'authorization_code',
    code,
    redirect_uri: client.redirect_uri,
    code_verifier: verifier,
    client_id: client.client_id,
  }
  const res = await postOAuth(
    '/api/v1/oauth/token',
    client.client_secret ? { ...fields, client_secret: client.client_secret } : fields,
  )
  expect(res.status).toBe(200)
  return res.body
}

const me = (token: string) => api(server.url).get('/api/v1/users/me', token)

describe(`grants and clients (${BACKEND})`, () => {
  test('a refresh token works until its grant is GRANT_SECONDS old, and never after (ASVS 10.4.8)', async () => {
    const client = await registerClient(server.url)
    const tokens = await grant(client)
    const family = async (interval: string) =>
      withSystemDb(
        server,
        (sql) =>
          sql`UPDATE oauth_token_families SET created_at = now() - ${interval}::interval WHERE id = ${JSON.parse(atob(tokens.access_token!.split('.')[1]!)).fam}`,
      )
    await family(`${GRANT_SECONDS - 3600} seconds`)
    const refreshed = await postOAuth('/api/v1/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.client_id,
    })
    expect(refreshed.status).toBe(200)
    // Rotation does not make the grant younger: its age counts from the consent.
    await family(`${GRANT_SECONDS + 60} seconds`)
    const late = await postOAuth('/api/v1/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshed.body.refresh_token!,
      client_id: client.client_id,
    })
    expectOAuthError(late, 400, 'invalid_grant', /expired/)
  })

  test('a refresh token works only for the client it was issued to (RFC 9700 §4.14)', async () => {
    const [owner, other] = [await registerClient(server.url), await registerClient(server.url)]
    const tokens = await grant(owner)
    expectOAuthError(
      await postOAuth('/api/v1/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: other.client_id,
      }),
      400,
      'invalid_grant',
      /another client/,
    )
  })

  test('an authorization code lives 60 seconds (ASVS 10.4.3)', async () => {
    const client = await registerClient(server.url)
    const { code } = await obtainCode(server.url, client, account, { challenge: pkcePair().challenge })
    const [row] = await withSystemDb(
      server,
      (sql) =>
        sql`SELECT extract(epoch FROM expires_at - created_at)::int AS seconds FROM oauth_codes WHERE code_hash = ${sha256(code)}`,
    )
    expect(row!.seconds).toBe(60)
  })

  test('a client registered without refresh_token gets no refresh token and may not refresh (ASVS 10.4.4)', async () => {
    const client = await registerClient(server.url, { grant_types: ['authorization_code'] })
    const tokens = await grant(client)
    expect(tokens.refresh_token).toBeUndefined()
    expect((await me(tokens.access_token!)).status).toBe(200)
    expectOAuthError(
      await postOAuth('/api/v1/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: 'x'.repeat(43),
        client_id: client.client_id,
      }),
      400,
      'unauthorized_client',
    )
  })

  test('Basic credentials that do not form-decode, or hold a NUL, are invalid_client, not a crash', async () => {
    for (const credentials of ['%zz:secret', 'client:%E0%A4%A', '%00client:secret', '\u0000client:secret']) {
      const res = await fetch(`${server.url}/api/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(credentials)}` },
        body: 'grant_type=refresh_token&refresh_token=x',
      })
      expectOAuthError(
        { status: res.status, body: await res.json() },
        401,
        'invalid_client',
        /malformed Basic credentials/,
      )
    }
  })

  test('a confidential client must authenticate to revoke (ASVS 10.4.10)', async () => {
    const client = await registerClient(server.url, { token_endpoint_auth_method: 'client_secret_post' })
    const tokens = await grant(client)
    expectOAuthError(
      await postOAuth('/api/v1/oauth/revoke', { token: tokens.refresh_token!, client_id: client.client_id }),
      401,
      'invalid_client',
    )
    expectOAuthError(
      await postOAuth('/api/v1/oauth/revoke', {
        token: tokens.refresh_token!,
        client_id: client.client_id,
        client_secret: 'wrong',
      }),
      401,
      'invalid_client',
    )
    expect((await me(tokens.access_token!)).status).toBe(200)
    expect(
      (
        await postOAuth('/api/v1/oauth/revoke', {
          token: tokens.refresh_token!,
          client_id: client.client_id,
          client_secret: client.client_secret!,
        })
      ).status,
    ).toBe(200)
    expect((await me(tokens.access_token!)).status).toBe(401)
  })
})

describe(`access tokens at the resource server (${BACKEND})`, () => {
  const secret = () => tokenKey(server.env.JWT_SECRET!, 'oauth-access')
  const claims = () => ({
    sub: userId,
    aud: `${server.url}/api/v1`,
    client_id: 'forged-client-000000000000',
    scope: 'read',
    jti: crypto.randomUUID(),
    fam: crypto.randomUUID(),
  })
  const sign = (
    payload: Record<string, unknown>,
    header: { alg: string; typ?: string } = { alg: 'HS256', typ: 'at+jwt' },
    issuer = server.url,
  ) =>
    new SignJWT(payload)
      .setProtectedHeader(header)
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(secret())

  test('a token made exactly as ours is accepted (each refusal below differs in one thing)', async () => {
    expect((await me(await sign(claims()))).status).toBe(200)
  })

  const refused: [string, () => Promise<string>][] = [
    ['another audience (ASVS 10.3.1)', () => sign({ ...claims(), aud: 'https://other.example/api' })],
    ['no audience', () => sign({ ...claims(), aud: undefined })],
    ['another issuer (ASVS 10.3.3)', () => sign(claims(), undefined, 'https://evil.example')],
    ['no client_id', () => sign({ ...claims(), client_id: undefined })],
    ['no scope', () => sign({ ...claims(), scope: undefined })],
    ['the JWT type of session tokens', () => sign(claims(), { alg: 'HS256', typ: 'JWT' })],
    [
      'a session token’s claims under at+jwt',
      () => sign({ sub: userId, sid: crypto.randomUUID(), jti: crypto.randomUUID(), typ: 'session' }),
    ],
    ['another HMAC algorithm (HS512)', () => sign(claims(), { alg: 'HS512', typ: 'at+jwt' })],
    [
      'signed with the session tokens’ key',
      () =>
        new SignJWT(claims())
          .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
          .setIssuer(server.url)
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(tokenKey(server.env.JWT_SECRET!, 'session')),
    ],
  ]
  test('an expired one: 401 naming the refresh grant', async () => {
    const expired = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
      .setIssuer(server.url)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(secret())
    const res = await me(expired)
    expectError(
      res,
      401,
      'access token expired: get a new one from the OAuth token endpoint (grant_type=refresh_token) or authorize again',
    )
    expect(res.headers.get('www-authenticate')).toContain(
      'error="invalid_token", error_description="the access token expired; refresh it or sign in again"',
    )
  })

  for (const [what, make] of refused) {
    test(`${what}: 401`, async () => {
      expectError(
        await me(await make()),
        401,
        'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
      )
    })
  }
})

/** The authorization pages as a browser meets them: the ids a page carries, and form posts with chosen headers. */
function pages(baseUrl: () => string) {
  const browser = browserCookie()
  const withBrowser = (cookie?: string) => (cookie ? `${browser}; ${cookie}` : browser)
  return {
    async open(client: TestClient, cookie?: string) {
      const query = authorizationQuery(client)
      const html = await (
        await fetch(`${baseUrl()}/api/v1/oauth/authorize?${query}`, { headers: { cookie: withBrowser(cookie) } })
      ).text()
      return {
        html,
        authorization_id: /name="authorization_id" value="([^"]+)"/.exec(html)![1]!,
        csrf_token: /name="csrf_token" value="([^"]+)"/.exec(html)![1]!,
      }
    },
    post: (path: string, fields: Record<string, string>, { cookie, ...headers }: Record<string, string> = {}) =>
      fetch(baseUrl() + path, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: withBrowser(cookie), ...headers },
        body: new URLSearchParams(fields),
      }),
  }
}

describe(`the authorization pages (${BACKEND})`, () => {
  const page = pages(() => server.url)
  let client: TestClient
  beforeAll(async () => {
    client = await registerClient(server.url, { client_name: 'Totally Official Agent' })
  })
  const signIn = async (cookie?: string) => {
    const opened = await page.open(client)
    const res = await page.post(
      '/api/v1/oauth/authorize/login',
      { authorization_id: opened.authorization_id, csrf_token: opened.csrf_token, ...account },
      cookie ? { cookie } : {},
    )
    return { opened, res, cookie: res.headers.get('set-cookie')?.split(';')[0] }
  }

  test('the consent page says the client registered itself, where the code goes, and how long access lasts (ASVS 10.4.7, 10.7.2)', async () => {
    const { res } = await signIn()
    const html = await res.text()
    expect(html).toContain('Totally Official Agent')
    expect(html).toMatch(/registered itself/)
    expect(html).not.toContain('kgs’s own application')
    expect(html).toContain(new URL(client.redirect_uri).host)
    expect(html).toContain(`${GRANT_SECONDS / 86_400} days`)
  })

  test("kgs's own client (Swagger UI) is first-party on the consent page; a registration cannot claim to be", async () => {
    expect((await fetch(`${server.url}/swagger`)).status).toBe(200)
    const swagger = {
      client_id: SWAGGER_CLIENT_ID,
      redirect_uri: `${server.url}/swagger/oauth2-redirect.html`,
    } as TestClient
    const opened = await page.open(swagger)
    const own = await (
      await page.post('/api/v1/oauth/authorize/login', {
        authorization_id: opened.authorization_id,
        csrf_token: opened.csrf_token,
        ...account,
      })
    ).text()
    expect(own).toContain('<strong>kgs Swagger UI</strong>')
    expect(own).toContain(
      '<p>This is kgs’s own application: kgs registered it, and vouches for its name and where it redirects.</p>',
    )
    expect(own).not.toContain('registered itself')

    const claiming = await registerClient(server.url, { client_name: 'kgs Swagger UI', first_party: true })
    const claimed = await page.open(claiming)
    const html = await (
      await page.post('/api/v1/oauth/authorize/login', {
        authorization_id: claimed.authorization_id,
        csrf_token: claimed.csrf_token,
        ...account,
      })
    ).text()
    expect(html).toContain('kgs has not verified this application: it registered itself')
    expect(html).not.toContain('kgs’s own application')
  })

  test('the consent page says exactly what each scope allows, and that no client changes credentials', async () => {
    const wide = await registerClient(server.url, { scope: 'read write admin' })
    const opened = await page.open(wide)
    const html = await (
      await page.post('/api/v1/oauth/authorize/login', {
        authorization_id: opened.authorization_id,
        csrf_token: opened.csrf_token,
        ...account,
      })
    ).text()
    expect(html).toContain(
      '<li><strong>read</strong>: see what your roles let you see (repositories, their graphs, members and jobs, your profile), and change nothing</li>',
    )
    expect(html).toContain(
      '<li><strong>write</strong>: see, and change what your roles let you change: create and edit repositories, import and export graphs, push and pull them in the registry, cancel jobs, rename your profile; not roles, members or users, and not deleting repositories</li>',
    )
    expect(html).toContain(
      '<li><strong>admin</strong>: everything your roles allow, including managing roles, members and users, and deleting repositories</li>',
    )
    expect(html).toContain('No application can change your password or sign-in e-mail, whatever it is allowed.')
  })

  test('a sign-in or a decision posted from another site is refused, whatever it carries (login CSRF)', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const opened = await page.open(client)
      const login = await page.post(
        '/api/v1/oauth/authorize/login',
        { authorization_id: opened.authorization_id, csrf_token: opened.csrf_token, ...account },
        { 'sec-fetch-site': site },
      )
      expect(login.status).toBe(403)
      expect(login.headers.get('set-cookie')).toBeNull()
      expect(await login.text()).toContain('another site')
    }
    const { opened, cookie } = await signIn()
    const fields = { authorization_id: opened.authorization_id, csrf_token: opened.csrf_token, decision: 'allow' }
    expect(
      (await page.post('/api/v1/oauth/authorize', fields, { cookie: cookie!, 'sec-fetch-site': 'cross-site' })).status,
    ).toBe(403)
    // The same post from the page itself goes through (and, sent without fetch metadata, from non-browser clients too).
    const allowed = await page.post('/api/v1/oauth/authorize', fields, {
      cookie: cookie!,
      'sec-fetch-site': 'same-origin',
    })
    expect(allowed.status).toBe(303)
    expect(new URL(allowed.headers.get('location')!).searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  test('signing in again ends the pages’ previous session (ASVS 7.2.4)', async () => {
    const first = await signIn()
    expect((await page.open(client, first.cookie)).html).toContain('>Allow</button>')
    const second = await signIn(first.cookie)
    expect(second.cookie).not.toBe(first.cookie)
    expect((await page.open(client, first.cookie)).html).toContain('>Sign in</button>')
    expect((await page.open(client, second.cookie)).html).toContain('>Allow</button>')
  })
})

describe(`the pages behind an https BASE_URL (${BACKEND})`, () => {
  let https: TestServer
  beforeAll(async () => {
    https = await startTestServer({ env: { BASE_URL: 'https://kgs.example' } })
    expect((await api(https.url).post('/api/v1/auth/register', account)).status).toBe(201)
  })
  afterAll(() => https.stop())

  test('the pages’ session cookie is Secure', async () => {
    const page = pages(() => https.url)
    const client = await registerClient(https.url)
    const opened = await page.open(client)
    const res = await page.post('/api/v1/oauth/authorize/login', {
      authorization_id: opened.authorization_id,
      csrf_token: opened.csrf_token,
      ...account,
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('set-cookie')).toMatch(/; HttpOnly; SameSite=Lax; Secure$/)
  })
})
