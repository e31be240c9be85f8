// A user's OAuth grants over HTTP, on the selected backend: listing the live ones with their
// client, and revoking one, whose access and refresh tokens stop working at once while the
// others go on (SECURITY.md O3; ASVS 7.5.2, 10.4.9, 10.7.3). Session tokens, and the tokens of
// kgs's own clients (the web app, Swagger UI); a third party's token is refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient, type TestClient } from '../helpers/oauth.ts'
import { WEB_APP_CLIENT_ID } from '../../src/http/web-app.ts'
import { SWAGGER_CLIENT_ID } from '../../src/http/swagger-ui.ts'

const PASSWORD = 'correct horse battery'
let server: TestServer
let http: ReturnType<typeof api>

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
})
afterAll(() => server.stop())

async function account(): Promise<{ email: string; token: string }> {
  const email = uniqueEmail()
  const res = await http.post('/api/v1/auth/register', { email, password: PASSWORD })
  expect(res.status).toBe(201)
  return { email, token: res.body.token }
}
/** A grant of `email` to a new client named `name`. */
async function grant(
  email: string,
  name: string,
  scope?: string,
): Promise<{ client: TestClient; access: string; refresh: string }> {
  const client = await registerClient(server.url, { client_name: name })
  const tokens = await obtainTokens(server.url, client, { email, password: PASSWORD }, scope)
  return { client, access: tokens.access_token, refresh: tokens.refresh_token! }
}
async function refresh(granted: { client: TestClient; refresh: string }) {
  const res = await fetch(`${server.url}/api/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: granted.refresh,
      client_id: granted.client.client_id,
    }),
  })
  return { status: res.status, body: (await res.json()) as Record<string, string> }
}

describe(`a user's OAuth grants (${BACKEND})`, () => {
  test('GET /oauth/grants lists the live grants of the caller with their client, oldest first; paginated', async () => {
    const { email, token } = await account()
    const first = await grant(email, 'First agent', 'read')
    const second = await grant(email, 'Second agent')
    const other = await account()
    await grant(other.email, 'Someone else’s agent')
    const res = await http.get('/api/v1/oauth/grants', token)
    expect(res.status).toBe(200)
    expect(
      res.body.map((g: { client_id: string; client_name: string; scope: string }) => [
        g.client_id,
        g.client_name,
        g.scope,
      ]),
    ).toEqual([
      [first.client.client_id, 'First agent', 'read'],
      [second.client.client_id, 'Second agent', expect.any(String)],
    ])
    for (const g of res.body) {
      expect(Object.keys(g).sort()).toEqual([
        'browser',
        'client_id',
        'client_name',
        'created_at',
        'current',
        'expires_at',
        'id',
        'last_used_at',
        'scope',
      ])
      expect(Date.parse(g.expires_at) - Date.parse(g.created_at)).toBe(30 * 86_400_000)
      // Not the web app's, and listed with a session token: no browser, not the caller's own grant.
      expect([g.browser, g.current]).toEqual([null, false])
      expect(Date.parse(g.last_used_at)).toBeGreaterThanOrEqual(Date.parse(g.created_at))
    }
    const pageOne = await http.get('/api/v1/oauth/grants?limit=1', token)
    expect(pageOne.body.map((g: { id: string }) => g.id)).toEqual([res.body[0].id])
    const next = /<([^>]+)>; rel="next"/.exec(pageOne.headers.get('link')!)![1]!
    expect((await http.get(next, token)).body.map((g: { id: string }) => g.id)).toEqual([res.body[1].id])
  })

  test('DELETE /oauth/grants/{id} revokes one: its access and refresh tokens stop working at once, the other goes on', async () => {
    const { email, token } = await account()
    const kept = await grant(email, 'Kept')
    const revoked = await grant(email, 'Revoked')
    const [, target] = (await http.get('/api/v1/oauth/grants', token)).body as { id: string }[]
    const res = await http.call('DELETE', `/api/v1/oauth/grants/${target!.id.toUpperCase()}`, { token })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: target!.id, client_id: revoked.client.client_id, client_name: 'Revoked' })
    expectError(await http.get('/api/v1/users/me', revoked.access), 401)
    expectOAuthError(await refresh(revoked), 400, 'invalid_grant')
    expect((await http.get('/api/v1/users/me', kept.access)).status).toBe(200)
    expect((await refresh(kept)).status).toBe(200)
    expect(((await http.get('/api/v1/oauth/grants', token)).body as { id: string }[]).map((g) => g.id)).not.toContain(
      target!.id,
    )
    // Once revoked it is not found again; nor is another user's grant, nor one that never was.
    expectError(await http.call('DELETE', `/api/v1/oauth/grants/${target!.id}`, { token }), 404, 'grant not found')
    const other = await account()
    const theirs = await grant(other.email, 'Theirs')
    const [theirGrant] = (await http.get('/api/v1/oauth/grants', other.token)).body as { id: string }[]
    expectError(await http.call('DELETE', `/api/v1/oauth/grants/${theirGrant!.id}`, { token }), 404, 'grant not found')
    expect((await http.get('/api/v1/users/me', theirs.access)).status).toBe(200)
    expectError(
      await http.call('DELETE', `/api/v1/oauth/grants/${crypto.randomUUID()}`, { token }),
      404,
      'grant not found',
    )
  })

  test("kgs's own clients (the web app, Swagger UI) list and revoke grants with their access tokens", async () => {
    const { email } = await account()
    const agent = await grant(email, 'Agent')
    // Each registers itself when its page is first served.
    for (const page of ['/app', '/swagger']) expect((await server.request(page)).status).toBe(200)
    const own = [
      { client_id: WEB_APP_CLIENT_ID, redirect_uri: `${server.url}/app/callback` },
      { client_id: SWAGGER_CLIENT_ID, redirect_uri: `${server.url}/swagger/oauth2-redirect.html` },
    ]
    const [app, swagger] = await Promise.all(
      own.map((client) => obtainTokens(server.url, client, { email, password: PASSWORD })),
    )
    const listed = await http.get('/api/v1/oauth/grants', app!.access_token)
    expect(listed.status).toBe(200)
    expect(listed.body.map((g: { client_id: string }) => g.client_id).sort()).toEqual(
      [agent.client.client_id, ...own.map((client) => client.client_id)].sort(),
    )
    const agentGrant = listed.body.find((g: { client_id: string }) => g.client_id === agent.client.client_id)
    expect(
      (await http.call('DELETE', `/api/v1/oauth/grants/${agentGrant.id}`, { token: swagger!.access_token })).status,
    ).toBe(200)
    expectError(await http.get('/api/v1/users/me', agent.access), 401)
    expect((await http.get('/api/v1/oauth/grants', swagger!.access_token)).body).toHaveLength(2)
  })

  test('malformed ids, limits and cursors are 400; without a token 401; a third party’s access token 403', async () => {
    const { email, token } = await account()
    const granted = await grant(email, 'Agent')
    const [own] = (await http.get('/api/v1/oauth/grants', token)).body as { id: string }[]
    expectError(
      await http.call('DELETE', '/api/v1/oauth/grants/not-a-uuid', { token }),
      400,
      /grantID: expected a UUID/,
    )
    expectError(await http.get('/api/v1/oauth/grants?limit=0', token), 400, /limit/)
    expectError(await http.get('/api/v1/oauth/grants?cursor=%%%', token), 400, /cursor/)
    expectError(await http.get('/api/v1/oauth/grants'), 401, 'authentication required')
    expectError(await http.call('DELETE', `/api/v1/oauth/grants/${own!.id}`), 401, 'authentication required')
    const forbidden =
      "grants are managed with a session token or in kgs's own apps, not with another client's OAuth access token"
    expectError(await http.get('/api/v1/oauth/grants', granted.access), 403, forbidden)
    expectError(await http.call('DELETE', `/api/v1/oauth/grants/${own!.id}`, { token: granted.access }), 403, forbidden)
    expect((await http.get('/api/v1/users/me', granted.access)).status).toBe(200)
  })
})
