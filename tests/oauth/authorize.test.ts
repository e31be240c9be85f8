// GET /api/v1/oauth/authorize: request validation (page errors before the client is trusted,
// redirect errors with state and iss after), and the sign-in page with its security headers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api } from '../helpers/api.ts'

let server: TestServer
let clientId: string
const REDIRECT = 'http://127.0.0.1:41234/callback'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'

beforeAll(async () => {
  server = await startTestServer()
  const registered = await api(server.url).post('/api/v1/oauth/register', { redirect_uris: [REDIRECT, 'https://agent.example/cb'], client_name: '<b>Agent</b> & "friends"' })
  clientId = registered.body.client_id
})
afterAll(() => server.stop())

function authorize(params: Record<string, string | string[] | undefined>) {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) for (const v of [value].flat()) if (v !== undefined) query.append(key, v)
  return fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { redirect: 'manual' })
}

const valid = () => ({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 'xyz-state', scope: 'read' })

async function expectRedirectError(res: Response, error: string, description?: RegExp) {
  expect(res.status).toBe(302)
  const location = new URL(res.headers.get('location')!)
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT)
  expect(location.searchParams.get('error')).toBe(error)
  expect(location.searchParams.get('state')).toBe('xyz-state')
  expect(location.searchParams.get('iss')).toBe(server.url)
  if (description) expect(location.searchParams.get('error_description')).toMatch(description)
}

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
    expect((await authorize({ ...valid(), redirect_uri: 'http://127.0.0.1:5555/callback', scope: undefined })).status).toBe(200)
  })

  test('errors before the client and redirect URI are trusted: a 400 page, never a redirect', async () => {
    await expectErrorPage(await authorize({ ...valid(), client_id: 'no-such-client-id-000000' }), /Unknown client/)
    await expectErrorPage(await authorize({ ...valid(), client_id: undefined }), /client_id is missing/)
    await expectErrorPage(await authorize({ ...valid(), redirect_uri: 'https://evil.example/cb' }), /not registered/)
    await expectErrorPage(await authorize({ ...valid(), redirect_uri: 'http://127.0.0.1:41234/other' }), /not registered/)
    await expectErrorPage(await authorize({ ...valid(), redirect_uri: undefined }), /no redirect_uri/)
  })

  test('missing PKCE: invalid_request back to the client with state and iss', async () => {
    await expectRedirectError(await authorize({ ...valid(), code_challenge: undefined, code_challenge_method: undefined }), 'invalid_request', /PKCE is required/)
  })

  test('plain PKCE: invalid_request', async () => {
    await expectRedirectError(await authorize({ ...valid(), code_challenge_method: 'plain' }), 'invalid_request', /S256/)
  })

  test('a malformed code challenge: invalid_request', async () => {
    await expectRedirectError(await authorize({ ...valid(), code_challenge: 'too-short' }), 'invalid_request', /code_challenge/)
  })

  test('response_type other than code: unsupported_response_type', async () => {
    await expectRedirectError(await authorize({ ...valid(), response_type: 'token' }), 'unsupported_response_type')
  })

  test('a scope the client was not registered for: invalid_scope', async () => {
    await expectRedirectError(await authorize({ ...valid(), scope: 'read admin' }), 'invalid_scope', /"admin"/)
  })

  test('another resource (RFC 8707): invalid_target', async () => {
    await expectRedirectError(await authorize({ ...valid(), resource: 'https://other.example/api' }), 'invalid_target')
  })

  test('a repeated parameter: invalid_request', async () => {
    await expectRedirectError(await authorize({ ...valid(), scope: ['read', 'write'] }), 'invalid_request', /scope appears more than once/)
  })
})
