// GET /api/v1/oauth/authorize: request validation (every error before sign-in is kgs's own
// page), redirect URI matching, and the sign-in page with its security headers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api } from '../helpers/api.ts'
import { pkcePair } from '../helpers/oauth.ts'

let server: TestServer
let clientId: string
const REDIRECT = 'http://127.0.0.1:41234/callback'

beforeAll(async () => {
  server = await startTestServer()
  const registered = await api(server.url).post('/api/v1/oauth/register', {
    redirect_uris: [REDIRECT, 'https://agent.example/cb'],
    client_name: '<b>Agent</b> & "friends"',
  })
  clientId = registered.body.client_id
})
afterAll(() => server.stop())

function authorize(params: Record<string, string | string[] | undefined>) {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params))
    for (const v of [value].flat()) if (v !== undefined) query.append(key, v)
  return fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { redirect: 'manual' })
}

const valid = () => ({
  response_type: 'code',
  client_id: clientId,
  redirect_uri: REDIRECT,
  code_challenge: pkcePair().challenge,
  code_challenge_method: 'S256',
  state: 'xyz-state',
  scope: 'read',
})

async function expectErrorPage(res: Response, message: RegExp) {
  expect(res.status).toBe(400)
  expect(res.headers.get('location')).toBeNull()
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(await res.text()).toMatch(message)
}

describe(`authorization request (${BACKEND})`, () => {
  test('a valid request renders the sign-in page, escaped, with its security headers', async () => {
    const res = await authorize(valid())
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    const csp = res.headers.get('content-security-policy')!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).toContain("form-action 'self'")
    const html = await res.text()
    expect(html).toContain('<label for="email">Email</label>')
    expect(html).toContain('<label for="password">Password</label>')
    expect(html).toContain('<button type="submit">Sign in</button>')
    expect(html).toContain('&lt;b&gt;Agent&lt;/b&gt; &amp; &quot;friends&quot;')
    expect(html).not.toContain('<b>Agent</b>')
    expect(html).toContain('127.0.0.1:41234')
    expect(html).toMatch(/name="csrf_token" value="[A-Za-z0-9_-]{43}"/)
    expect(html).toMatch(/name="authorization_id" value="[0-9a-f-]{36}"/)
  })

  test('a loopback redirect URI may use another port (RFC 8252 §7.3); scope defaults to the client’s', async () => {
    expect(
      (await authorize({ ...valid(), redirect_uri: 'http://127.0.0.1:5555/callback', scope: undefined })).status,
    ).toBe(200)
  })

  test('errors before the client and redirect URI are trusted: a 400 page, never a redirect', async () => {
    await expectErrorPage(await authorize({ ...valid(), client_id: 'no-such-client-id-000000' }), /Unknown client/)
    await expectErrorPage(await authorize({ ...valid(), client_id: undefined }), /client_id is missing/)
    await expectErrorPage(await authorize({ ...valid(), redirect_uri: 'https://evil.example/cb' }), /not registered/)
    await expectErrorPage(
      await authorize({ ...valid(), redirect_uri: 'http://127.0.0.1:41234/other' }),
      /not registered/,
    )
    await expectErrorPage(await authorize({ ...valid(), redirect_uri: undefined }), /no redirect_uri/)
  })

  // Before the user has signed in, errors are kgs's own page, never a redirect (docs/spec/decisions.md §5,
  // RFC 9700 §4.11.2): clients register themselves, so a redirect would be an open redirector.
  const invalidRequests: [string, Record<string, string | string[] | undefined>, RegExp][] = [
    [
      'missing PKCE',
      { code_challenge: undefined, code_challenge_method: undefined },
      /invalid_request.*PKCE is required/,
    ],
    ['plain PKCE', { code_challenge_method: 'plain' }, /S256/],
    ['a malformed code challenge', { code_challenge: 'too-short' }, /code_challenge must be/],
    ['response_type other than code', { response_type: 'token' }, /unsupported_response_type/],
    ['a scope the client was not registered for', { scope: 'read admin' }, /invalid_scope.*&quot;admin&quot;/],
    ['another resource (RFC 8707)', { resource: 'https://other.example/api' }, /invalid_target/],
    ['a repeated parameter', { scope: ['read', 'write'] }, /scope appears more than once/],
  ]
  for (const [what, change, message] of invalidRequests) {
    test(`${what}: kgs's error page, no redirect`, async () => {
      await expectErrorPage(await authorize({ ...valid(), ...change }), message)
    })
  }

  test('open redirect (SECURITY O1): a self-registered phishing URI is never redirected to before sign-in', async () => {
    const phish = 'https://phish.example/landing'
    const registered = await api(server.url).post('/api/v1/oauth/register', { redirect_uris: [phish] })
    const res = await authorize({ client_id: registered.body.client_id, redirect_uri: phish, response_type: 'token' })
    await expectErrorPage(res, /unsupported_response_type/)
  })

  test('each described resource may be asked for: the base URL, /api/v1, /api/v1/mcp', async () => {
    for (const resource of [server.url, `${server.url}/api/v1`, `${server.url}/api/v1/mcp`])
      expect((await authorize({ ...valid(), resource })).status).toBe(200)
  })

  // RFC 8252 §8.3: exact match except the port; a URI that merely parses to the same place is another URI.
  const lookalikes = [
    'http://evil@127.0.0.1:8765/callback',
    'http://127.0.0.1:8765/x/../callback',
    'http://2130706433:8765/callback',
    'http://0x7f.0.0.1:8765/callback',
    'http://127.1:8765/callback',
    ' http://127.0.0.1:8765/callback',
    'http://127.0.0.1:8765/callback\t',
    'http://127.0.0.1:8765/callback%09',
    'http://127.0.0.1:8765/Callback',
    'http://127.0.0.1:8765/callback/',
    'http://127.0.0.1:8765/callback?x=1',
    'http://localhost:8765/callback',
    'https://127.0.0.1:8765/callback',
  ]
  for (const uri of lookalikes) {
    test(`redirect URI ${JSON.stringify(uri)} does not match the registered ${REDIRECT}`, async () => {
      await expectErrorPage(await authorize({ ...valid(), redirect_uri: uri }), /not registered/)
    })
  }

  test('the loopback port may vary for 127.0.0.1, localhost and [::1], each matched to its own registration', async () => {
    const uris = ['http://127.0.0.1/cb', 'http://localhost:1/cb', 'http://[::1]/cb']
    const registered = await api(server.url).post('/api/v1/oauth/register', { redirect_uris: uris })
    for (const host of ['127.0.0.1', 'localhost', '[::1]']) {
      expect(
        (await authorize({ ...valid(), client_id: registered.body.client_id, redirect_uri: `http://${host}:8765/cb` }))
          .status,
      ).toBe(200)
    }
  })
})
