// A user's sessions over HTTP, on the selected backend: listing them, ending one, and an
// administrator ending all of a user's sessions and OAuth grants (SECURITY.md O3, O4). Ended
// sessions' access and refresh tokens stop working at once; OAuth tokens cannot manage sessions.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, untilSysadmin, type TestServer } from '../helpers/server.ts'
import { api, expectError, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient, type TestClient } from '../helpers/oauth.ts'

const PASSWORD = 'correct horse battery'
let server: TestServer
let http: ReturnType<typeof api>
let admin: string

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
  const email = uniqueEmail('admin')
  expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
  expect((await server.promote(email)).code).toBe(0)
  admin = (await http.post('/api/v1/auth/login', { email, password: PASSWORD })).body.token
  await untilSysadmin(server, admin)
})
afterAll(() => server.stop())

interface Grant {
  user: { id: string }
  token: string
  refresh_token: string
}

async function account(): Promise<{ email: string; first: Grant }> {
  const email = uniqueEmail()
  const res = await http.post('/api/v1/auth/register', { email, password: PASSWORD })
  expect(res.status).toBe(201)
  return { email, first: res.body }
}
async function login(email: string): Promise<Grant> {
  const res = await http.post('/api/v1/auth/login', { email, password: PASSWORD })
  expect(res.status).toBe(200)
  return res.body
}
const sessionOf = (token: string) =>
  (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid
const refresh = (refreshToken: string) => http.post('/api/v1/auth/refresh', { refresh_token: refreshToken })

/** A form post to the OAuth token endpoint. */
async function tokenRequest(fields: Record<string, string>) {
  const res = await fetch(`${server.url}/api/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  })
  return { status: res.status, body: (await res.json()) as Record<string, string> }
}
/** An OAuth grant of `email` to a fresh client: its access and refresh tokens. */
async function oauthGrant(email: string): Promise<{ client: TestClient; access: string; refresh: string }> {
  const client = await registerClient(server.url)
  const tokens = await obtainTokens(server.url, client, { email, password: PASSWORD })
  return { client, access: tokens.access_token, refresh: tokens.refresh_token! }
}

describe(`a user's sessions (${BACKEND})`, () => {
  test('GET /auth/sessions lists the live sessions of the caller, oldest first, the current one marked; paginated', async () => {
    const { email, first } = await account()
    const second = await login(email)
    const third = await login(email)
    await account() // someone else's sessions stay out
    const res = await http.get('/api/v1/auth/sessions', second.token)
    expect(res.status).toBe(200)
    expect(res.body.map((s: { id: string }) => s.id)).toEqual([first, second, third].map((g) => sessionOf(g.token)))
    expect(res.body.map((s: { current: boolean }) => s.current)).toEqual([false, true, false])
    for (const session of res.body) {
      expect(Object.keys(session).sort()).toEqual(['created_at', 'current', 'expires_at', 'id'])
      expect(Date.parse(session.expires_at)).toBeGreaterThan(Date.parse(session.created_at))
    }
    // Logged out: gone from the list.
    expect((await http.post('/api/v1/auth/logout', undefined, third.token)).status).toBe(200)
    const pageOne = await http.get('/api/v1/auth/sessions?limit=1', first.token)
    expect(pageOne.body.map((s: { id: string }) => s.id)).toEqual([sessionOf(first.token)])
    const next = /<([^>]+)>; rel="next"/.exec(pageOne.headers.get('link')!)![1]!
    const pageTwo = await http.get(next, first.token)
    expect(pageTwo.body.map((s: { id: string }) => s.id)).toEqual([sessionOf(second.token)])
    expect(pageTwo.headers.get('link')).toBeNull()
  })

  test('DELETE /auth/sessions/{id} ends one: its access and refresh tokens stop working at once, the others go on', async () => {
    const { email, first } = await account()
    const second = await login(email)
    const res = await http.call('DELETE', `/api/v1/auth/sessions/${sessionOf(second.token).toUpperCase()}`, {
      token: first.token,
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: sessionOf(second.token), current: false })
    expectError(await http.get('/api/v1/users/me', second.token), 401)
    expectError(await refresh(second.refresh_token), 401, 'invalid refresh token')
    expect((await http.get('/api/v1/users/me', first.token)).status).toBe(200)
    expect((await refresh(first.refresh_token)).status).toBe(200)
    // Once ended it is not found again; nor is a session of another user, nor one that never was.
    expectError(
      await http.call('DELETE', `/api/v1/auth/sessions/${sessionOf(second.token)}`, { token: first.token }),
      404,
      'session not found',
    )
    const other = await account()
    expectError(
      await http.call('DELETE', `/api/v1/auth/sessions/${sessionOf(other.first.token)}`, { token: first.token }),
      404,
      'session not found',
    )
    expect((await http.get('/api/v1/users/me', other.first.token)).status).toBe(200)
    expectError(
      await http.call('DELETE', `/api/v1/auth/sessions/${crypto.randomUUID()}`, { token: first.token }),
      404,
      'session not found',
    )
  })

  test('ending the current session works like logout', async () => {
    const { first } = await account()
    const res = await http.call('DELETE', `/api/v1/auth/sessions/${sessionOf(first.token)}`, { token: first.token })
    expect(res.status).toBe(200)
    expect(res.body.current).toBe(true)
    expectError(await http.get('/api/v1/users/me', first.token), 401)
  })

  test('malformed ids, limits and cursors are 400; without a token 401; an OAuth access token 403', async () => {
    const { email, first } = await account()
    expectError(
      await http.call('DELETE', '/api/v1/auth/sessions/not-a-uuid', { token: first.token }),
      400,
      /sessionID: expected a UUID/,
    )
    expectError(await http.get('/api/v1/auth/sessions?limit=0', first.token), 400, /limit/)
    expectError(await http.get('/api/v1/auth/sessions?limit=abc', first.token), 400, /limit/)
    expectError(await http.get('/api/v1/auth/sessions?cursor=%%%', first.token), 400, /cursor/)
    expectError(await http.get('/api/v1/auth/sessions'), 401, 'authentication required')
    expectError(
      await http.call('DELETE', `/api/v1/auth/sessions/${sessionOf(first.token)}`),
      401,
      'authentication required',
    )
    expectError(await http.get('/api/v1/auth/sessions', 'not.a.token'), 401)
    const { access } = await oauthGrant(email)
    const forbidden = 'sessions are managed with a session token, not an OAuth access token'
    expectError(await http.get('/api/v1/auth/sessions', access), 403, forbidden)
    expectError(
      await http.call('DELETE', `/api/v1/auth/sessions/${sessionOf(first.token)}`, { token: access }),
      403,
      forbidden,
    )
    expect((await http.get('/api/v1/users/me', first.token)).status).toBe(200)
  })
})

describe(`an administrator ends a user's sessions and grants (${BACKEND})`, () => {
  test('every session and OAuth grant of the user ends at once; other users are untouched', async () => {
    const { email, first } = await account()
    const second = await login(email)
    const granted = await oauthGrant(email)
    const bystander = await account()
    const res = await http.call('DELETE', `/api/v1/admin/users/${first.user.id.toUpperCase()}/sessions`, {
      token: admin,
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ sessions_ended: 2, grants_revoked: 1 })
    for (const grant of [first, second]) {
      expectError(await http.get('/api/v1/users/me', grant.token), 401)
      expectError(await refresh(grant.refresh_token), 401, 'invalid refresh token')
    }
    expectError(await http.get('/api/v1/users/me', granted.access), 401)
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: granted.refresh,
        client_id: granted.client.client_id,
      }),
      400,
      'invalid_grant',
    )
    expect((await http.get('/api/v1/users/me', bystander.first.token)).status).toBe(200)
    // Nothing left to end; the user may sign in again.
    expect((await http.call('DELETE', `/api/v1/admin/users/${first.user.id}/sessions`, { token: admin })).body).toEqual(
      { sessions_ended: 0, grants_revoked: 0 },
    )
    expect((await http.get('/api/v1/users/me', (await login(email)).token)).status).toBe(200)
  })

  test('user:manage is needed (403); an unknown user is 404, a malformed id 400, no token 401', async () => {
    const { first } = await account()
    const other = await account()
    expectError(
      await http.call('DELETE', `/api/v1/admin/users/${other.first.user.id}/sessions`, { token: first.token }),
      403,
      'permission denied: user:manage needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expect((await http.get('/api/v1/users/me', other.first.token)).status).toBe(200)
    expectError(
      await http.call('DELETE', `/api/v1/admin/users/${crypto.randomUUID()}/sessions`, { token: admin }),
      404,
      'user not found',
    )
    expectError(
      await http.call('DELETE', '/api/v1/admin/users/nobody/sessions', { token: admin }),
      400,
      /userID: expected a UUID/,
    )
    expectError(
      await http.call('DELETE', `/api/v1/admin/users/${other.first.user.id}/sessions`),
      401,
      'authentication required',
    )
  })
})
