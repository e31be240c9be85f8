// Secrets at rest and in flight, for the security review (SECURITY.md): how passwords and every
// kind of token are stored, that answers carrying tokens or given for credentials are never
// cached, that cross-origin requests get CORS without credentials (and none on the authorization
// pages), and that SQL in a value stays data.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { SWAGGER_CLIENT_ID } from '../../src/http/swagger-ui.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { withSystemDb } from './system-db.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { browserCookie, obtainCode, pkcePair, registerClient, authorizationQuery } from '../helpers/oauth.ts'
import { purgeEndedSessions } from '../../src/accounts/sessions.ts'
import { purgeEndedOAuthRows } from '../../src/oauth/consent.ts'

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
    const [row] = await withSystemDb(
      server,
      (sql) => sql`SELECT password_hash, users::text AS whole FROM users WHERE email = ${email}`,
    )
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
    const query = authorizationQuery(client)
    const browser = browserCookie()
    const page = await (
      await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: browser } })
    ).text()
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!
    const login = await fetch(`${server.url}/api/v1/oauth/authorize/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser },
      body: new URLSearchParams({
        authorization_id: /name="authorization_id" value="([^"]+)"/.exec(page)![1]!,
        csrf_token: csrf,
        ...account,
      }),
    })
    const pagesSession = /kgs_oauth_session=([^;]+)/.exec(login.headers.get('set-cookie')!)![1]!
    const { verifier, challenge } = pkcePair()
    const { code } = await obtainCode(server.url, client, account, { challenge })
    const tokens = (await (
      await fetch(`${server.url}/api/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: client.redirect_uri,
          code_verifier: verifier,
          client_id: client.client_id,
          client_secret: client.client_secret!,
        }),
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
    expect((await fetch(`${server.url}/api/v1/users/me?${new URLSearchParams({ access_token: token })}`)).status).toBe(
      401,
    )
    // A JSON route does not read a form body at all, so a token in one cannot count: the request is anonymous (401 comes first).
    const logout = await fetch(`${server.url}/api/v1/auth/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: token }),
    })
    expect(logout.status).toBe(401)
    expect((await http.get('/api/v1/users/me', token)).status).toBe(200)
  })

  test('CORS (docs/spec/decisions.md §5a): any origin, never with credentials; the cookie-bearing pages answer none', async () => {
    const origin = { origin: 'https://evil.example' }
    const open = [
      await fetch(`${server.url}/api/v1/oauth/token`, {
        method: 'OPTIONS',
        headers: { ...origin, 'access-control-request-method': 'POST' },
      }),
      await fetch(`${server.url}/api/v1/users/me`, {
        method: 'OPTIONS',
        headers: {
          ...origin,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      }),
      await fetch(`${server.url}/.well-known/oauth-authorization-server`, { headers: origin }),
      await fetch(`${server.url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { ...origin, 'content-type': 'application/json' },
        body: '{}',
      }),
    ]
    for (const res of open) {
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      // Credentials travel in the Authorization header only: a cookie never rides along cross-origin.
      expect(res.headers.get('access-control-allow-credentials')).toBeNull()
    }
    expect(open[1]!.headers.get('access-control-allow-headers')).toBe('authorization')
    const pages = [
      await fetch(`${server.url}/api/v1/oauth/authorize?client_id=x`, { headers: origin }),
      await fetch(`${server.url}/api/v1/oauth/authorize/login`, {
        method: 'OPTIONS',
        headers: { ...origin, 'access-control-request-method': 'POST' },
      }),
      await fetch(`${server.url}/api/v1/oauth/authorize`, {
        method: 'OPTIONS',
        headers: { ...origin, 'access-control-request-method': 'POST' },
      }),
    ]
    for (const res of pages)
      expect([...res.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([])
    // Their preflights are not answered with success, so a browser never sends the request itself.
    expect(pages[1]!.status).toBeGreaterThanOrEqual(400)
    expect(pages[2]!.status).toBeGreaterThanOrEqual(400)
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
    expect(
      (await http.post('/api/v1/auth/login', { email: "' OR '1'='1'--@example.com", password: "' OR '1'='1" })).status,
    ).toBe(401)
  })
})

describe(`ended rows are purged (${BACKEND})`, () => {
  /** A user with a session and a consented OAuth grant: rows in every table the purge sweeps. */
  async function userWithGrant() {
    const account = { email: uniqueEmail(), password: PASSWORD }
    const session = (await http.post('/api/v1/auth/register', account)).body
    const client = await registerClient(server.url)
    const { verifier, challenge } = pkcePair()
    const { code } = await obtainCode(server.url, client, account, { challenge })
    const token = await fetch(`${server.url}/api/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        code_verifier: verifier,
        client_id: client.client_id,
      }),
    })
    expect(token.status).toBe(200)
    const [user] = await withSystemDb(
      server,
      (sql) => sql<{ id: string }[]>`SELECT id::text FROM users WHERE email = ${account.email}`,
    )
    return { id: user!.id, session }
  }

  /** Rows of the user in each swept table. */
  const rowsOf = (userId: string) =>
    withSystemDb(server, async (sql) => {
      const [row] = await sql`
        SELECT (SELECT count(*) FROM sessions WHERE user_id = ${userId})::int AS sessions,
               (SELECT count(*) FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id WHERE s.user_id = ${userId})::int AS refresh_tokens,
               (SELECT count(*) FROM oauth_authorizations WHERE user_id = ${userId})::int AS authorizations,
               (SELECT count(*) FROM oauth_codes WHERE user_id = ${userId})::int AS codes,
               (SELECT count(*) FROM oauth_browser_sessions WHERE user_id = ${userId})::int AS browser_sessions,
               (SELECT count(*) FROM oauth_token_families WHERE user_id = ${userId})::int AS grants,
               (SELECT count(*) FROM oauth_refresh_tokens t JOIN oauth_token_families f ON f.id = t.family_id WHERE f.user_id = ${userId})::int AS grant_refresh_tokens`
      return row as Record<string, number>
    })

  test('sessions, authorizations, codes, page sessions, grants and revoked-token entries a day past their end are deleted; live ones stay and work', async () => {
    const old = await userWithGrant()
    const live = await userWithGrant()
    const DAY = 86_400
    const staleJti = crypto.randomUUID()
    const liveJti = crypto.randomUUID()
    await withSystemDb(server, async (sql) => {
      // Ended a day and a minute ago; the grant given 31 days ago (GRANT_SECONDS is 30 days).
      const ended = sql`now() - make_interval(secs => ${DAY + 60})`
      await sql`UPDATE sessions SET expires_at = ${ended} WHERE user_id = ${old.id}`
      await sql`UPDATE oauth_authorizations SET expires_at = ${ended} WHERE user_id = ${old.id}`
      await sql`UPDATE oauth_codes SET expires_at = ${ended} WHERE user_id = ${old.id}`
      await sql`UPDATE oauth_browser_sessions SET expires_at = ${ended} WHERE user_id = ${old.id}`
      await sql`UPDATE oauth_token_families SET created_at = now() - make_interval(secs => ${31 * DAY + 60}) WHERE user_id = ${old.id}`
      await sql`INSERT INTO oauth_revoked_access_tokens (jti, expires_at) VALUES (${staleJti}, ${ended}), (${liveJti}, now() + interval '10 minutes')`
    })
    const before = await rowsOf(live.id)
    expect(Object.values(before).every((n) => n > 0)).toBe(true)
    expect(Object.values(await rowsOf(old.id)).every((n) => n > 0)).toBe(true)

    const { system } = server.context.pools
    expect(await purgeEndedSessions(system, DAY)).toBeGreaterThanOrEqual(1)
    expect(await purgeEndedOAuthRows(system, DAY)).toBeGreaterThanOrEqual(5)

    expect(await rowsOf(old.id)).toEqual(Object.fromEntries(Object.keys(before).map((table) => [table, 0])))
    expect(await rowsOf(live.id)).toEqual(before)
    const revoked = await withSystemDb(
      server,
      (sql) =>
        sql<
          { jti: string }[]
        >`SELECT jti::text FROM oauth_revoked_access_tokens WHERE jti IN (${staleJti}, ${liveJti})`,
    )
    expect(revoked.map((r) => r.jti)).toEqual([liveJti])
    // What is left works: the live session refreshes; the purged one is unknown.
    expect((await http.post('/api/v1/auth/refresh', { refresh_token: live.session.refresh_token })).status).toBe(200)
    expect((await http.post('/api/v1/auth/refresh', { refresh_token: old.session.refresh_token })).status).toBe(401)
  })

  test('clients never used within 30 days of registering, or unused for a year, are purged; others stay', async () => {
    const DAY = 86_400
    const ids = async () =>
      Promise.all(Array.from({ length: 4 }, async () => (await registerClient(server.url)).client_id))
    const [neverUsedOld, neverUsedYoung, usedLately, usedLongAgo] = (await ids()) as [string, string, string, string]
    // One used for real: a token exchange marks it, so registering it long ago does not purge it.
    const used = await registerClient(server.url)
    const session = (await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).body
    const { verifier, challenge } = pkcePair()
    const { code } = await obtainCode(
      server.url,
      used,
      { email: session.user.email, password: PASSWORD },
      { challenge },
    )
    const token = await fetch(`${server.url}/api/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: used.redirect_uri,
        code_verifier: verifier,
        client_id: used.client_id,
      }),
    })
    expect(token.status).toBe(200)
    await withSystemDb(server, async (sql) => {
      const ago = (days: number) => sql`now() - make_interval(secs => ${days * DAY})`
      await sql`UPDATE oauth_clients SET created_at = ${ago(31)} WHERE id = ${neverUsedOld}`
      await sql`UPDATE oauth_clients SET created_at = ${ago(29)} WHERE id = ${neverUsedYoung}`
      await sql`UPDATE oauth_clients SET created_at = ${ago(400)}, last_used_at = ${ago(364)} WHERE id = ${usedLately}`
      await sql`UPDATE oauth_clients SET created_at = ${ago(400)}, last_used_at = ${ago(366)} WHERE id = ${usedLongAgo}`
      await sql`UPDATE oauth_clients SET created_at = ${ago(40)} WHERE id = ${used.client_id}`
    })
    await purgeEndedOAuthRows(server.context.pools.system, DAY)
    const left = await withSystemDb(
      server,
      (sql) =>
        sql<
          { id: string }[]
        >`SELECT id FROM oauth_clients WHERE id IN ${sql([neverUsedOld, neverUsedYoung, usedLately, usedLongAgo, used.client_id])}`,
    )
    expect(left.map((row) => row.id).sort()).toEqual([neverUsedYoung, usedLately, used.client_id].sort())
  })

  test("kgs's own clients are never purged: Swagger UI's, unused for years, stays", async () => {
    expect((await fetch(`${server.url}/swagger`)).status).toBe(200)
    await withSystemDb(server, async (sql) => {
      await sql`UPDATE oauth_clients SET created_at = now() - interval '800 days', last_used_at = NULL WHERE id = ${SWAGGER_CLIENT_ID}`
    })
    await purgeEndedOAuthRows(server.context.pools.system, 86_400)
    const left = await withSystemDb(server, async (sql) => [
      ...(await sql`SELECT first_party FROM oauth_clients WHERE id = ${SWAGGER_CLIENT_ID}`),
    ])
    expect(left).toEqual([{ first_party: true }])
  })
})
