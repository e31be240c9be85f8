// Secrets at rest and in flight, for the security review (SECURITY.md): how passwords and every
// kind of token are stored, that answers carrying tokens or given for credentials are never
// cached, that no route answers cross-origin requests (no CORS), and that SQL in a value stays
// data.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { withSystemDb } from './system-db.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { obtainCode, pkcePair, registerClient } from '../helpers/oauth.ts'

let server: TestServer
let http: ReturnType<typeof api>
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
})
afterAll(() => server.stop())

describe(`secrets at rest (${BACKEND})`, () => {
  test('a password is stored as an argon2id hash and nowhere in clear', async () => {
    const email = uniqueEmail()
    expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
    const [row] = await withSystemDb(server, (sql) => sql`SELECT password_hash, users::text AS whole FROM users WHERE email = ${email}`)
    expect(row!.password_hash).toMatch(/^\$argon2id\$v=19\$m=\d+,t=\d+,p=\d+\$/)
    expect(await Bun.password.verify(PASSWORD, row!.password_hash)).toBe(true)
    expect(row!.whole).not.toContain(PASSWORD)
  })

  test('every token and secret is stored only as its SHA-256 digest', async () => {
    // One of each: a session refresh token; a client secret; the pages' CSRF token and session;
    // an authorization code; an OAuth refresh token.
    const session = (await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).body
    const client = await registerClient(server.url, { token_endpoint_auth_method: 'client_secret_post' })
    const account = { email: session.user.email, password: PASSWORD }
    const query = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: client.redirect_uri, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' })
    const page = await (await fetch(`${server.url}/api/v1/oauth/authorize?${query}`)).text()
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!
    const login = await fetch(`${server.url}/api/v1/oauth/authorize/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ authorization_id: /name="authorization_id" value="([^"]+)"/.exec(page)![1]!, csrf_token: csrf, ...account }),
    })
    const pagesSession = /kgs_oauth_session=([^;]+)/.exec(login.headers.get('set-cookie')!)![1]!
    const { verifier, challenge } = pkcePair()
    const { code } = await obtainCode(server.url, client, account, { challenge })
    const tokens = (await (
      await fetch(`${server.url}/api/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirect_uri, code_verifier: verifier, client_id: client.client_id, client_secret: client.client_secret! }),
      })
    ).json()) as { refresh_token: string }

    const stored: [table: string, column: string, secret: string][] = [
      ['refresh_tokens', 'token_hash', session.refresh_token],
      ['oauth_clients', 'secret_hash', client.client_secret!],
      ['oauth_authorizations', 'csrf_hash', csrf],
      ['oauth_browser_sessions', 'token_hash', pagesSession],
      ['oauth_codes', 'code_hash', code],
      ['oauth_refresh_tokens', 'token_hash', tokens.refresh_token],
    ]
    await withSystemDb(server, async (sql) => {
      for (const [table, column, secret] of stored) {
        const digest = createHash('sha256').update(secret).digest()
        const [{ digests, clear }] = (await sql`
          SELECT count(*) FILTER (WHERE ${sql(column)} = ${digest})::int AS digests,
            count(*) FILTER (WHERE strpos(t::text, ${secret}) > 0)::int AS clear
          FROM ${sql(table)} t`) as unknown as [{ digests: number; clear: number }]
        expect({ table, digests, clear }).toEqual({ table, digests: 1, clear: 0 })
      }
    })
  })
})

describe(`secrets in flight (${BACKEND})`, () => {
  test('answers that carry session tokens are never cached (no-store)', async () => {
    const email = uniqueEmail()
    const registered = await http.post('/api/v1/auth/register', { email, password: PASSWORD })
    const loggedIn = await http.post('/api/v1/auth/login', { email, password: PASSWORD })
    const refreshed = await http.post('/api/v1/auth/refresh', { refresh_token: loggedIn.body.refresh_token })
    for (const res of [registered, loggedIn, refreshed]) {
      expect(res.body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(res.headers.get('cache-control')).toBe('no-store')
    }
  })

  test('answers to requests with credentials are no-store, every answer nosniff; anonymous public ones may be cached', async () => {
    const { token } = (await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).body
    const me = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: `Bearer ${token}` } })
    const refused = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: 'Bearer not-a-token' } })
    for (const res of [me, refused]) {
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    }
    const health = await fetch(`${server.url}/healthz`)
    expect(health.status).toBe(200)
    expect(health.headers.get('cache-control')).toBeNull()
    expect(health.headers.get('x-content-type-options')).toBe('nosniff')
  })

  test('an access token counts only in the Authorization header, never in the query or a form body', async () => {
    const { token } = (await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).body
    expect((await http.get('/api/v1/users/me', token)).status).toBe(200)
    expect((await fetch(`${server.url}/api/v1/users/me?${new URLSearchParams({ access_token: token })}`)).status).toBe(401)
    const logout = await fetch(`${server.url}/api/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ access_token: token }) })
    expect(logout.status).toBe(401)
    expect((await http.get('/api/v1/users/me', token)).status).toBe(200)
  })

  test('no CORS: no route grants another origin access, preflights included', async () => {
    const origin = { origin: 'https://evil.example' }
    const answers = [
      await fetch(`${server.url}/api/v1/oauth/token`, { method: 'OPTIONS', headers: { ...origin, 'access-control-request-method': 'POST' } }),
      await fetch(`${server.url}/api/v1/users/me`, { method: 'OPTIONS', headers: { ...origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } }),
      await fetch(`${server.url}/.well-known/oauth-authorization-server`, { headers: origin }),
      await fetch(`${server.url}/api/v1/oauth/authorize?client_id=x`, { headers: origin }),
      await fetch(`${server.url}/api/v1/auth/login`, { method: 'POST', headers: { ...origin, 'content-type': 'application/json' }, body: '{}' }),
    ]
    for (const res of answers) {
      expect([...res.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([])
    }
    // A preflight is not answered with success, so a browser never sends the request itself.
    expect(answers[0]!.status).toBeGreaterThanOrEqual(400)
    expect(answers[1]!.status).toBeGreaterThanOrEqual(400)
  })
})

describe(`SQL injection (${BACKEND})`, () => {
  test('SQL in a value is only ever data: quotes and statements come back verbatim', async () => {
    const email = `o'brien-${crypto.randomUUID().slice(0, 8)}"--@example.com`
    const name = "Robert'); DROP TABLE users; --"
    expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD, name })).status).toBe(201)
    const login = await http.post('/api/v1/auth/login', { email, password: PASSWORD })
    expect(login.status).toBe(200)
    expect((await http.get('/api/v1/users/me', login.body.token)).body).toMatchObject({ email, name })
    expect((await http.post('/api/v1/auth/login', { email: "' OR '1'='1'--@example.com", password: "' OR '1'='1" })).status).toBe(401)
  })
})
