// The token and revocation endpoints, and OAuth access tokens at the API, on the selected
// backend. Successful exchanges go through oauth4webapi, which validates responses strictly.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { obtainCode, pkcePair, registerClient, type TestClient } from '../helpers/oauth.ts'

let server: TestServer
let as: oauth.AuthorizationServer
let client: TestClient
const account = { email: uniqueEmail('owner'), password: 'correct horse battery' }
const insecure = { [oauth.allowInsecureRequests]: true }

beforeAll(async () => {
  server = await startTestServer()
  expect((await api(server.url).post('/api/v1/auth/register', account)).status).toBe(201)
  const issuer = new URL(server.url)
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
  )
  client = await registerClient(server.url, { scope: 'read write admin' })
})
afterAll(() => server.stop())

/** A code for `client` and its verifier. */
async function codeFor(c: TestClient = client, scope?: string) {
  const { verifier, challenge } = pkcePair()
  const { code } = await obtainCode(server.url, c, account, { challenge, scope })
  return { code, verifier }
}

/** Exchanges through oauth4webapi (public client). */
async function exchange(code: string, verifier: string, c: TestClient = client) {
  const params = new URLSearchParams({ code, iss: server.url })
  const callback = oauth.validateAuthResponse(
    as,
    { client_id: c.client_id },
    new URL(`${c.redirect_uri}?${params}`),
    oauth.skipStateCheck,
  )
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    { client_id: c.client_id },
    oauth.None(),
    callback,
    c.redirect_uri,
    verifier,
    insecure,
  )
  return oauth.processAuthorizationCodeResponse(as, { client_id: c.client_id }, response)
}

/** A raw token request, to see the exact error. */
async function tokenRequest(fields: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/api/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  })
  return {
    status: res.status,
    headers: res.headers,
    body: (await res.json()) as {
      error?: string
      error_description?: string
      access_token?: string
      refresh_token?: string
    },
  }
}

const me = (token: string) => api(server.url).get('/api/v1/users/me', token)

describe(`token endpoint (${BACKEND})`, () => {
  test('code exchange: a Bearer at+jwt access token for the API and a refresh token', async () => {
    const { code, verifier } = await codeFor(client, 'read write')
    const tokens = await exchange(code, verifier)
    expect(tokens.token_type).toBe('bearer')
    expect(tokens.scope).toBe('read write')
    expect(tokens.expires_in).toBe(900)
    expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const header = JSON.parse(Buffer.from(tokens.access_token.split('.')[0]!, 'base64url').toString())
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString())
    expect(header).toMatchObject({ alg: 'HS256', typ: 'at+jwt' })
    expect(claims).toMatchObject({
      iss: server.url,
      aud: `${server.url}/api/v1`,
      client_id: client.client_id,
      scope: 'read write',
    })
    expect((await me(tokens.access_token)).body.email).toBe(account.email)
  })

  test('the token response is no-store', async () => {
    const { code, verifier } = await codeFor()
    const res = await tokenRequest({
      grant_type: 'authorization_code',
      code,
      redirect_uri: client.redirect_uri,
      code_verifier: verifier,
      client_id: client.client_id,
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
  })

  test('wrong verifier: invalid_grant; missing verifier: invalid_request', async () => {
    const { code } = await codeFor()
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        client_id: client.client_id,
      }),
      400,
      'invalid_request',
      /code_verifier is required/,
    )
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        code_verifier: pkcePair().verifier,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /code_verifier does not match/,
    )
  })

  test('a reused code is refused and revokes what it issued', async () => {
    const { code, verifier } = await codeFor()
    const tokens = await exchange(code, verifier)
    expect((await me(tokens.access_token)).status).toBe(200)
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        code_verifier: verifier,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /already used/,
    )
    expect((await me(tokens.access_token)).status).toBe(401)
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
    )
  })

  test('two concurrent exchanges of one code: exactly one wins', async () => {
    const { code, verifier } = await codeFor()
    const fields = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: client.redirect_uri,
      code_verifier: verifier,
      client_id: client.client_id,
    }
    const results = await Promise.all([tokenRequest(fields), tokenRequest(fields)])
    expect(results.map((r) => r.status).sort()).toEqual([200, 400])
    expect(results.find((r) => r.status === 400)!.body.error).toBe('invalid_grant')
  })

  test('a code issued to another client: invalid_grant', async () => {
    const other = await registerClient(server.url)
    const { code, verifier } = await codeFor(other)
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: other.redirect_uri,
        code_verifier: verifier,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /another client/,
    )
  })

  test('redirect_uri different at the token step: invalid_grant', async () => {
    const { code, verifier } = await codeFor()
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'http://127.0.0.1:1/elsewhere',
        code_verifier: verifier,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /redirect_uri differs/,
    )
  })

  test('an expired code: invalid_grant', async () => {
    const { code, verifier } = await codeFor()
    const sql = server.systemSql()
    await sql`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`
    await sql.end()
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        code_verifier: verifier,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /expired/,
    )
  })

  test('an unknown client: 401 invalid_client', async () => {
    expectOAuthError(
      await tokenRequest({
        grant_type: 'authorization_code',
        code: 'x',
        redirect_uri: client.redirect_uri,
        code_verifier: pkcePair().verifier,
        client_id: 'no-such-client-00000000',
      }),
      401,
      'invalid_client',
    )
  })

  test('a token request as JSON: invalid_request', async () => {
    const res = await fetch(`${server.url}/api/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'x', client_id: client.client_id }),
    })
    expectOAuthError(
      { status: res.status, body: (await res.json()) as { error: string } },
      400,
      'invalid_request',
      /application\/x-www-form-urlencoded/,
    )
  })

  test('a repeated parameter, a missing or unknown grant type: invalid_request / unsupported_grant_type', async () => {
    const res = await fetch(`${server.url}/api/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&grant_type=refresh_token',
    })
    expectOAuthError(
      { status: res.status, body: (await res.json()) as { error: string } },
      400,
      'invalid_request',
      /appears more than once/,
    )
    expectOAuthError(
      await tokenRequest({ client_id: client.client_id }),
      400,
      'invalid_request',
      /grant_type is required/,
    )
    expectOAuthError(
      await tokenRequest({ grant_type: 'password', client_id: client.client_id }),
      400,
      'unsupported_grant_type',
    )
  })

  test('refresh: rotation; reuse revokes the family; a narrower scope is allowed, a wider one is not', async () => {
    const { code, verifier } = await codeFor(client, 'read write')
    const first = await exchange(code, verifier)
    const rotated = await oauth.processRefreshTokenResponse(
      as,
      { client_id: client.client_id },
      await oauth.refreshTokenGrantRequest(
        as,
        { client_id: client.client_id },
        oauth.None(),
        first.refresh_token!,
        insecure,
      ),
    )
    expect(rotated.refresh_token).not.toBe(first.refresh_token)
    expect((await me(rotated.access_token)).status).toBe(200)
    const narrower = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: rotated.refresh_token!,
      client_id: client.client_id,
      scope: 'read',
    })
    expect(narrower.status).toBe(200)
    expect((narrower.body as { scope?: string }).scope).toBe('read')
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: narrower.body.refresh_token!,
        client_id: client.client_id,
        scope: 'read admin',
      }),
      400,
      'invalid_scope',
    )
    // Reuse of the first refresh token: the whole family dies, including the newest tokens.
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: first.refresh_token!,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /already used/,
    )
    expect((await me(rotated.access_token)).status).toBe(401)
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: narrower.body.refresh_token!,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
    )
  })

  test('a refused refresh (wider scope, another client, another resource) leaves the token usable', async () => {
    const { code, verifier } = await codeFor(client, 'read')
    const tokens = await exchange(code, verifier)
    const other = await registerClient(server.url, { scope: 'read write admin' })
    const refresh = (fields: Record<string, string> = {}) =>
      tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: client.client_id,
        ...fields,
      })
    expectOAuthError(await refresh({ scope: 'read write' }), 400, 'invalid_scope')
    expectOAuthError(await refresh({ client_id: other.client_id }), 400, 'invalid_grant', /another client/)
    expectOAuthError(await refresh({ resource: server.url }), 400, 'invalid_target')
    const correct = await refresh()
    expect(correct.status).toBe(200)
    expect((await me(correct.body.access_token!)).status).toBe(200)
  })

  test('each described resource is an accepted audience: the base URL, /api/v1 and /api/v1/mcp', async () => {
    for (const resource of [server.url, `${server.url}/api/v1`, `${server.url}/api/v1/mcp`]) {
      const { verifier, challenge } = pkcePair()
      const { code } = await obtainCode(server.url, client, account, { challenge, resource })
      const granted = await tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        code_verifier: verifier,
        client_id: client.client_id,
        resource,
      })
      expect(granted.status).toBe(200)
      const claims = JSON.parse(Buffer.from(granted.body.access_token!.split('.')[1]!, 'base64url').toString()) as {
        aud: string
      }
      expect(claims.aud).toBe(resource)
      expect((await me(granted.body.access_token!)).status).toBe(200)
    }
  })

  test('confidential clients authenticate with the method they registered', async () => {
    const basicClient = await registerClient(server.url, { token_endpoint_auth_method: 'client_secret_basic' })
    const postClient = await registerClient(server.url, { token_endpoint_auth_method: 'client_secret_post' })
    const basic = (id: string, secret: string) =>
      `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
    const a = await codeFor(basicClient)
    const ok = await tokenRequest(
      {
        grant_type: 'authorization_code',
        code: a.code,
        redirect_uri: basicClient.redirect_uri,
        code_verifier: a.verifier,
      },
      { authorization: basic(basicClient.client_id, basicClient.client_secret!) },
    )
    expect(ok.status).toBe(200)
    const b = await codeFor(basicClient)
    const wrong = await tokenRequest(
      {
        grant_type: 'authorization_code',
        code: b.code,
        redirect_uri: basicClient.redirect_uri,
        code_verifier: b.verifier,
      },
      { authorization: basic(basicClient.client_id, 'wrong') },
    )
    expectOAuthError(wrong, 401, 'invalid_client')
    expect(wrong.headers.get('www-authenticate')).toBe('Basic realm="kgs"')
    const c = await codeFor(postClient)
    expect(
      (
        await tokenRequest({
          grant_type: 'authorization_code',
          code: c.code,
          redirect_uri: postClient.redirect_uri,
          code_verifier: c.verifier,
          client_id: postClient.client_id,
          client_secret: postClient.client_secret!,
        })
      ).status,
    ).toBe(200)
    // The registered method only: a post client presenting no secret, a basic client posting its secret.
    expectOAuthError(
      await tokenRequest({ grant_type: 'refresh_token', refresh_token: 'x', client_id: postClient.client_id }),
      401,
      'invalid_client',
      /client_secret_post/,
    )
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: basicClient.client_id,
        client_secret: basicClient.client_secret!,
      }),
      401,
      'invalid_client',
      /client_secret_basic/,
    )
  })
})

describe(`revocation and scopes (${BACKEND})`, () => {
  const revoke = (fields: Record<string, string>) =>
    fetch(`${server.url}/api/v1/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    })

  test('revoking a refresh token ends the grant; revoking an access token refuses it; unknown tokens: 200', async () => {
    const { code, verifier } = await codeFor()
    const tokens = await exchange(code, verifier)
    expect(
      (await revoke({ token: tokens.access_token, token_type_hint: 'access_token', client_id: client.client_id }))
        .status,
    ).toBe(200)
    expect((await me(tokens.access_token)).status).toBe(401)
    const again = await codeFor()
    const second = await exchange(again.code, again.verifier)
    expect((await revoke({ token: second.refresh_token!, client_id: client.client_id })).status).toBe(200)
    expectOAuthError(
      await tokenRequest({
        grant_type: 'refresh_token',
        refresh_token: second.refresh_token!,
        client_id: client.client_id,
      }),
      400,
      'invalid_grant',
      /revoked/,
    )
    expect((await me(second.access_token)).status).toBe(401)
    expect((await revoke({ token: 'not-a-token', client_id: client.client_id })).status).toBe(200)
    const missing = await revoke({ client_id: client.client_id })
    expect(missing.status).toBe(400)
    expect(((await missing.json()) as { error: string }).error).toBe('invalid_request')
  })

  test('a read token reads but may not write: 403 insufficient_scope with WWW-Authenticate', async () => {
    const { code, verifier } = await codeFor(client, 'read')
    const tokens = await exchange(code, verifier)
    const profile = await me(tokens.access_token)
    expect(profile.status).toBe(200)
    const update = await api(server.url).put(
      `/api/v1/users/${profile.body.id}`,
      { name: 'Agent rename' },
      tokens.access_token,
    )
    expect(update.status).toBe(403)
    expect(update.body).toEqual({
      error:
        'insufficient scope: this needs a token with the write scope (this one has read); authorize again with write',
    })
    expect(update.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="write"')
    expect((await api(server.url).post('/api/v1/repositories', { name: 'by agent' }, tokens.access_token)).status).toBe(
      403,
    )
  })

  test('no OAuth token changes the sign-in e-mail, whatever its scope, even with the password (SECURITY O5)', async () => {
    const { code, verifier } = await codeFor(client, 'read write admin')
    const tokens = await exchange(code, verifier)
    const profile = await me(tokens.access_token)
    const update = await api(server.url).put(
      `/api/v1/users/${profile.body.id}`,
      { email: uniqueEmail('taken-over'), current_password: account.password },
      tokens.access_token,
    )
    expect(update.status).toBe(403)
    expect(update.body).toEqual({
      error: 'sign-in credentials are managed with a session token, not an OAuth access token',
    })
    expect((await me(tokens.access_token)).body.email).toBe(account.email)
  })

  test('a write token writes, within the user’s roles; deleting a repository needs admin', async () => {
    const { code, verifier } = await codeFor(client, 'read write')
    const tokens = await exchange(code, verifier)
    const created = await api(server.url).post(
      '/api/v1/repositories',
      { name: `agent ${crypto.randomUUID().slice(0, 6)}` },
      tokens.access_token,
    )
    expect(created.status).toBe(201)
    expect((await api(server.url).get(`/${created.body.slug}`, tokens.access_token)).status).toBe(200)
    const deleted = await api(server.url).call('DELETE', `/api/v1/repositories/${created.body.slug}`, {
      token: tokens.access_token,
    })
    expect(deleted.status).toBe(403)
    expect(deleted.body.error).toBe(
      'insufficient scope: repository:delete needs a token with the admin scope (this one has read write); authorize again with admin',
    )
    // The user is no sysadmin: even an admin token cannot list users.
    const admin = await codeFor(client, 'admin')
    const adminTokens = await exchange(admin.code, admin.verifier)
    expect((await api(server.url).get('/api/v1/admin/users', adminTokens.access_token)).status).toBe(403)
    expect(
      (
        await api(server.url).call('DELETE', `/api/v1/repositories/${created.body.slug}`, {
          token: adminTokens.access_token,
          body: { confirm: created.body.slug },
        })
      ).status,
    ).toBe(200)
  })
})
