// Dynamic client registration (RFC 7591): metadata, redirect URI rules, and the RFC error shape.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectOAuthError } from '../helpers/api.ts'
import { redirectUriProblem } from '../../src/oauth/clients.ts'

let server: TestServer
let http: ReturnType<typeof api>

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
})
afterAll(() => server.stop())

/** A registration error: 400 in the RFC 7591 shape, exactly {error, error_description}, not cached. */
function expectRegistrationError(
  res: { status: number; body: unknown; headers: Headers },
  error: string,
  description?: RegExp,
) {
  expectOAuthError(res, 400, error, description)
  expect(Object.keys(res.body as object).sort()).toEqual(['error', 'error_description'])
  expect(res.headers.get('cache-control')).toBe('no-store')
}

describe(`client registration (${BACKEND})`, () => {
  test('a public client: 201 with its metadata and defaults, no secret', async () => {
    const res = await http.post('/api/v1/oauth/register', {
      redirect_uris: ['http://127.0.0.1:8765/cb'],
      client_name: ' Agent ',
    })
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.body).toEqual({
      client_id: expect.stringMatching(/^[A-Za-z0-9_-]{24}$/),
      client_id_issued_at: expect.any(Number),
      client_name: 'Agent',
      redirect_uris: ['http://127.0.0.1:8765/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
      scope: 'read write',
    })
    expect(Math.abs(res.body.client_id_issued_at - Date.now() / 1000)).toBeLessThan(60)
  })

  test('a confidential client gets a 256-bit secret that never expires', async () => {
    for (const method of ['client_secret_basic', 'client_secret_post']) {
      const res = await http.post('/api/v1/oauth/register', {
        redirect_uris: ['https://agent.example/cb'],
        token_endpoint_auth_method: method,
        scope: 'read admin',
      })
      expect(res.status).toBe(201)
      expect(res.body).toMatchObject({
        token_endpoint_auth_method: method,
        scope: 'read admin',
        client_secret_expires_at: 0,
      })
      expect(res.body.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    }
  })

  test('the secret is stored only as a digest', async () => {
    const res = await http.post('/api/v1/oauth/register', {
      redirect_uris: ['https://agent.example/cb'],
      token_endpoint_auth_method: 'client_secret_basic',
    })
    const sql = server.systemSql()
    const [row] = await sql`SELECT secret_hash FROM oauth_clients WHERE id = ${res.body.client_id}`
    await sql.end()
    expect((row!.secret_hash as Buffer).length).toBe(32)
    expect((row!.secret_hash as Buffer).toString('base64url')).not.toBe(res.body.client_secret)
  })

  const badRedirects: [string, RegExp][] = [
    ['http://agent.example/cb', /plain http is allowed only on a loopback address/],
    ['http://192.168.1.5/cb', /plain http is allowed only on a loopback address/],
    ['https://agent.example/cb#frag', /must not have a fragment/],
    ['/relative/cb', /is not an absolute URI/],
    ['http://evil@127.0.0.1/cb', /must not have a user name or password/],
    ['http://127.0.0.1/x/../cb', /must not have \. or \.\. path segments/],
    ['http://2130706433/cb', /plain http is allowed only on a loopback address/],
    ['http://0x7f.0.0.1/cb', /plain http is allowed only on a loopback address/],
    ['http://127.0.0.1/cb\t', /whitespace or control characters/],
    ...[
      'javascript:alert(1)',
      'data:text/html,x',
      'file:///etc/passwd',
      'vbscript:x',
      'blob:https://a.example/x',
      'about:blank',
      'JavaScript:alert(1)',
    ].map((uri): [string, RegExp] => [uri, /expected https, http on a loopback address, or a private-use scheme/]),
  ]
  for (const [uri, description] of badRedirects) {
    test(`redirect URI ${uri}: invalid_redirect_uri`, async () => {
      expectRegistrationError(
        await http.post('/api/v1/oauth/register', { redirect_uris: [uri] }),
        'invalid_redirect_uri',
        description,
      )
    })
  }

  test('acceptable redirect URIs', () => {
    for (const uri of [
      'https://agent.example/cb',
      'http://127.0.0.1/cb',
      'http://[::1]:9000/cb',
      'http://localhost:3000/cb',
      'com.example.agent:/oauth2redirect',
      'myapp:/cb',
      'cursor://anysphere.cursor-mcp/oauth/callback',
    ]) {
      expect(redirectUriProblem(uri)).toBeUndefined()
    }
  })

  test('Cursor registers: its body, with a cursor:// redirect URI beside two others (docs/spec/decisions.md §5a)', async () => {
    const res = await http.post('/api/v1/oauth/register', {
      client_name: 'Cursor',
      redirect_uris: [
        'cursor://anysphere.cursor-mcp/oauth/callback',
        'http://127.0.0.1:33418/callback',
        'https://cursor.com/oauth/callback',
      ],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    })
    expect(res.status).toBe(201)
    expect(res.body.redirect_uris[0]).toBe('cursor://anysphere.cursor-mcp/oauth/callback')
  })

  const badMetadata: [string, unknown, RegExp][] = [
    ['no redirect_uris', { client_name: 'x' }, /redirect_uris/],
    ['redirect_uris of the wrong type', { redirect_uris: 'https://agent.example/cb' }, /redirect_uris/],
    ['an empty redirect_uris', { redirect_uris: [] }, /redirect_uris/],
    [
      'an unsupported grant type',
      { redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] },
      /grant type "client_credentials" is not supported/,
    ],
    [
      'an implicit response type',
      { redirect_uris: ['https://a.example/cb'], response_types: ['token'] },
      /response_types must be \["code"\]/,
    ],
    [
      'an unknown auth method',
      { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'private_key_jwt' },
      /token_endpoint_auth_method "private_key_jwt" is not supported/,
    ],
    [
      'an unknown scope',
      { redirect_uris: ['https://a.example/cb'], scope: 'read root' },
      /scope "root" is not supported/,
    ],
  ]
  for (const [what, body, description] of badMetadata) {
    test(`${what}: invalid_client_metadata`, async () => {
      expectRegistrationError(await http.post('/api/v1/oauth/register', body), 'invalid_client_metadata', description)
    })
  }

  test('malformed JSON and a form body: invalid_client_metadata / invalid_request in the OAuth shape', async () => {
    expectRegistrationError(
      await http.call('POST', '/api/v1/oauth/register', {
        raw: '{"redirect_uris":',
        headers: { 'content-type': 'application/json' },
      }),
      'invalid_client_metadata',
      /malformed JSON/,
    )
    const form = await http.call('POST', '/api/v1/oauth/register', {
      raw: 'redirect_uris=https://a.example/cb',
      headers: { 'content-type': 'text/plain' },
    })
    expect(form.status).toBe(415)
    expect(form.body.error).toBe('invalid_request')
  })
})
