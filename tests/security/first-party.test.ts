// kgs's own OAuth clients (the web app's, Swagger UI's) take their redirect URI exactly, port
// included, whether BASE_URL is loopback (the default) or not: the loopback port exception of
// RFC 8252 is for native apps that registered loopback URIs themselves. Else, with the web app
// asking no consent and `read write admin`, any program listening on another port of the machine
// would receive an admin-scope code once its user signed in.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SWAGGER_CLIENT_ID } from '../../src/http/swagger-ui.ts'
import { WEB_APP_CLIENT_ID } from '../../src/http/web-app.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { browserCookie, obtainTokens, registerClient, authorizationQuery } from '../helpers/oauth.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { withSystemDb } from './system-db.ts'

const PASSWORD = 'correct horse battery'
const OWN = [
  { client_id: WEB_APP_CLIENT_ID, path: '/app/callback', page: '/app' },
  { client_id: SWAGGER_CLIENT_ID, path: '/swagger/oauth2-redirect.html', page: '/swagger' },
]

/** GET /authorize as a browser: the status and the page. */
async function authorize(server: TestServer, clientId: string, redirectUri: string) {
  const query = authorizationQuery({ client_id: clientId, redirect_uri: redirectUri })
  const res = await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: browserCookie() } })
  return { status: res.status, page: await res.text() }
}

const pendingAuthorizations = (server: TestServer) =>
  withSystemDb(server, async (sql) => Number((await sql`SELECT count(*) AS n FROM oauth_authorizations`)[0]!.n))

/** A server on `env`, with an account and kgs's own clients registered (each when its page is first served). */
async function serverWithAccount(env: Record<string, string> = {}) {
  const server = await startTestServer({ env })
  const account = { email: uniqueEmail('first-party'), password: PASSWORD }
  expect((await api(server.url).post('/api/v1/auth/register', account)).status).toBe(201)
  for (const { page } of OWN) expect((await server.request(page)).status).toBe(200)
  return { server, account }
}

/** Another port than `url`'s (of a loopback URL, written the same way). */
function otherPort(url: string): string {
  const parsed = new URL(url)
  parsed.port = String(((Number(parsed.port) || 80) % 60000) + 1)
  return parsed.href.replace(/\/$/, '')
}

describe(`kgs's own clients with a loopback BASE_URL (${BACKEND})`, () => {
  let server: TestServer
  let account: { email: string; password: string }
  beforeAll(async () => {
    ;({ server, account } = await serverWithAccount())
    expect(new URL(server.context.baseUrl).hostname).toMatch(/^(127\.0\.0\.1|localhost|\[::1\])$/)
  })
  afterAll(() => server?.stop())

  test('another port, or another loopback name, is refused on kgs’s page and records nothing; the exact URI signs in', async () => {
    for (const { client_id, path } of OWN) {
      const exact = server.context.baseUrl + path
      const elsewhere = [
        otherPort(server.context.baseUrl) + path,
        `http://127.0.0.1:8765${path}`,
        `http://localhost:${new URL(exact).port}${path}`,
        `http://[::1]:${new URL(exact).port}${path}`,
      ]
      const before = await pendingAuthorizations(server)
      for (const redirectUri of elsewhere.filter((uri) => uri !== exact)) {
        const { status, page } = await authorize(server, client_id, redirectUri)
        expect({ client_id, redirectUri, status }).toEqual({ client_id, redirectUri, status: 400 })
        expect(page).toContain('The redirect_uri is not registered for this client.')
        expect(page).not.toContain('name="csrf_token"')
      }
      expect(await pendingAuthorizations(server)).toBe(before)
      const tokens = await obtainTokens(server.url, { client_id, redirect_uri: exact }, account)
      expect((await api(server.url).get('/api/v1/users/me', tokens.access_token)).body.email).toBe(account.email)
    }
  })

  test('a client that registered a loopback URI itself still has the port exception (RFC 8252 §7.3)', async () => {
    const native = await registerClient(server.url, { redirect_uris: ['http://127.0.0.1:41234/callback'] })
    const { status, page } = await authorize(server, native.client_id, 'http://127.0.0.1:50123/callback')
    expect(status).toBe(200)
    expect(page).toContain('name="csrf_token"')
    const tokens = await obtainTokens(
      server.url,
      { ...native, redirect_uri: 'http://127.0.0.1:50124/callback' },
      account,
    )
    expect(tokens.access_token).toBeString()
  })
})

describe(`kgs's own clients with a BASE_URL that is not loopback (${BACKEND})`, () => {
  const BASE_URL = 'https://kgs.first-party.test'
  let server: TestServer
  let account: { email: string; password: string }
  beforeAll(async () => {
    ;({ server, account } = await serverWithAccount({ BASE_URL }))
  })
  afterAll(() => server?.stop())

  test('only BASE_URL’s own URI: another port, plain http or the loopback address is refused; the exact URI signs in', async () => {
    for (const { client_id, path } of OWN) {
      const before = await pendingAuthorizations(server)
      for (const redirectUri of [
        `${BASE_URL}:8443${path}`,
        `http://kgs.first-party.test${path}`,
        `${server.url}${path}`,
      ]) {
        const { status, page } = await authorize(server, client_id, redirectUri)
        expect({ client_id, redirectUri, status }).toEqual({ client_id, redirectUri, status: 400 })
        expect(page).toContain('The redirect_uri is not registered for this client.')
      }
      expect(await pendingAuthorizations(server)).toBe(before)
      const tokens = await obtainTokens(server.url, { client_id, redirect_uri: BASE_URL + path }, account)
      expect((await api(server.url).get('/api/v1/users/me', tokens.access_token)).body.email).toBe(account.email)
    }
  })
})
