// SESSION_IDLE_TTL over HTTP, on the selected backend (SECURITY.md O6): a session or OAuth grant
// whose last refresh is older than the limit ends at its next refresh, and its tokens stop
// working; younger ones refresh as before. The lists of sessions and grants leave idle ones out
// from the moment they are idle. Time is moved by backdating the refresh tokens'
// created_at, not by waiting.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'

const PASSWORD = 'correct horse battery'
/** The limit under test: an hour, past the default 15-minute access tokens. */
const IDLE = '1h'
let server: TestServer
let http: ReturnType<typeof api>

beforeAll(async () => {
  server = await startTestServer({ env: { SESSION_IDLE_TTL: IDLE } })
  http = api(server.url)
})
afterAll(() => server.stop())

/** Makes every refresh token of the session or grant look issued `minutes` ago. */
async function backdate(
  table: 'refresh_tokens' | 'oauth_refresh_tokens',
  column: 'session_id' | 'family_id',
  id: string,
  minutes: number,
): Promise<void> {
  const sql = server.context.pools.system
  const updated =
    await sql`UPDATE ${sql(table)} SET created_at = now() - make_interval(mins => ${minutes}) WHERE ${sql(column)} = ${id} RETURNING 1`
  expect(updated.length).toBeGreaterThan(0)
}

const sessionOf = (token: string) =>
  (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid

async function tokenRequest(fields: Record<string, string>) {
  const res = await fetch(`${server.url}/api/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  })
  return { status: res.status, body: (await res.json()) as Record<string, string> }
}

describe(`SESSION_IDLE_TTL=${IDLE} (${BACKEND})`, () => {
  test('a session refreshed within the limit goes on; one idle past it ends at its refresh, with 401, and its tokens stop working', async () => {
    const email = uniqueEmail()
    const { token, refresh_token } = (await http.post('/api/v1/auth/register', { email, password: PASSWORD })).body as {
      token: string
      refresh_token: string
    }
    const session = sessionOf(token)
    // 59 minutes without a refresh: still within the hour.
    await backdate('refresh_tokens', 'session_id', session, 59)
    const refreshed = await http.post('/api/v1/auth/refresh', { refresh_token })
    expect(refreshed.status).toBe(200)
    // 61 minutes since that refresh: the session has ended, and another session no longer lists it.
    await backdate('refresh_tokens', 'session_id', session, 61)
    const other = (await http.post('/api/v1/auth/login', { email, password: PASSWORD })).body as { token: string }
    expect(((await http.get('/api/v1/auth/sessions', other.token)).body as { id: string }[]).map((s) => s.id)).toEqual([
      sessionOf(other.token),
    ])
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: refreshed.body.refresh_token }),
      401,
      'the session went unused longer than SESSION_IDLE_TTL; sign in again',
    )
    expectError(await http.get('/api/v1/users/me', refreshed.body.token), 401)
    // The refresh token was used up by the refused attempt: presenting it again is reuse, not a way back in.
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: refreshed.body.refresh_token }),
      401,
      'invalid refresh token',
    )
    const [ended] = await server.context.pools.system<
      { revoked_reason: string }[]
    >`SELECT revoked_reason FROM sessions WHERE id = ${session}`
    expect(ended!.revoked_reason).toBe('idle')
    // Signing in again starts a new session.
    expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(200)
  })

  test('an OAuth grant refreshed within the limit goes on; one idle past it is revoked at its refresh (invalid_grant), with its access token', async () => {
    const email = uniqueEmail()
    expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
    const client = await registerClient(server.url)
    const granted = await obtainTokens(server.url, client, { email, password: PASSWORD })
    const sql = server.context.pools.system
    const [unused] = await sql<
      { family_id: string }[]
    >`SELECT family_id FROM oauth_refresh_tokens WHERE used_at IS NULL AND family_id IN (SELECT id FROM oauth_token_families WHERE client_id = ${client.client_id})`
    const familyId = unused!.family_id
    await backdate('oauth_refresh_tokens', 'family_id', familyId, 59)
    const { token } = (await http.post('/api/v1/auth/login', { email, password: PASSWORD })).body as { token: string }
    const listed = async () =>
      ((await http.get('/api/v1/oauth/grants', token)).body as { id: string }[]).map((g) => g.id)
    expect(await listed()).toEqual([familyId])
    const refreshed = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: granted.refresh_token!,
      client_id: client.client_id,
    })
    expect(refreshed.status).toBe(200)
    expect((await http.get('/api/v1/users/me', refreshed.body.access_token)).status).toBe(200)
    await backdate('oauth_refresh_tokens', 'family_id', familyId, 61)
    expect(await listed()).toEqual([])
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: refreshed.body.refresh_token!,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /went unused longer than SESSION_IDLE_TTL/,
    )
    expectError(await http.get('/api/v1/users/me', refreshed.body.access_token), 401)
    const [family] = await sql<
      { revoked: boolean }[]
    >`SELECT revoked_at IS NOT NULL AS revoked FROM oauth_token_families WHERE id = ${familyId}`
    expect(family!.revoked).toBe(true)
  })
})
