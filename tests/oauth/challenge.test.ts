// The bearer challenge as clients meet it (docs/spec/decisions.md §5a, RFC 6750 §3, RFC 9728 §5.1): every
// protected route authenticates before it looks at its body or query, and the 401 names the
// resource's document and the scope the route needs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, registerAccount } from '../helpers/api.ts'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

const BODIES: [string, RequestInit][] = [
  [
    'a valid-looking JSON body',
    { headers: { 'content-type': 'application/json' }, body: '{"name":"x","kind":"embed","format":"jsonl"}' },
  ],
  ['a JSON body the schema refuses', { headers: { 'content-type': 'application/json' }, body: '{"unknown":1}' }],
  ['malformed JSON', { headers: { 'content-type': 'application/json' }, body: '{"x":' }],
  ['an unsupported media type', { headers: { 'content-type': 'text/plain' }, body: 'hello' }],
  ['no body', {}],
]

describe(`the bearer challenge (${BACKEND})`, () => {
  for (const path of [
    '/api/v1/repositories',
    '/api/v1/jobs',
    '/api/v1/export-graph',
    '/api/v1/repositories?limit=nope',
  ]) {
    test(`POST ${path} without credentials: 401 with the challenge, whatever the body`, async () => {
      for (const [what, init] of BODIES) {
        const res = await fetch(server.url + path, { method: 'POST', ...init })
        expect({ what, status: res.status }).toEqual({ what, status: 401 })
        expect(res.headers.get('www-authenticate')).toBe(
          `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/api/v1", scope="write"`,
        )
        expect(await res.json()).toEqual({ error: 'authentication required' })
      }
    })
  }

  test('a presented but invalid token: 401 invalid_token, before the body is looked at', async () => {
    const res = await fetch(`${server.url}/api/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer nope' },
      body: '{"x":',
    })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/api/v1", scope="write", error="invalid_token", error_description="the access token is invalid or revoked; sign in again"`,
    )
  })

  test('the challenge names the least scope the route needs: read for reads, admin for role changes', async () => {
    const scopeOf = async (method: string, path: string) =>
      /scope="([^"]+)"/.exec((await fetch(server.url + path, { method })).headers.get('www-authenticate') ?? '')?.[1]
    expect(await scopeOf('GET', '/api/v1/repositories')).toBe('read')
    expect(await scopeOf('GET', '/api/v1/users/me')).toBe('read')
    expect(await scopeOf('PUT', '/api/v1/admin/users/roles')).toBe('admin')
  })

  test('once authenticated, a bad body is still the 400 it was', async () => {
    const http = api(server.url)
    const account = await registerAccount(http)
    const malformed = await http.call('POST', '/api/v1/repositories', {
      token: account.token,
      raw: '{"x":',
      headers: { 'content-type': 'application/json' },
    })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error).toMatch(/malformed JSON body/)
    const unsupported = await http.call('POST', '/api/v1/repositories', {
      token: account.token,
      raw: 'x',
      headers: { 'content-type': 'text/plain' },
    })
    expect(unsupported.status).toBe(415)
    const refused = await http.post('/api/v1/repositories', { unknown: 1 }, account.token)
    expect(refused.status).toBe(400)
  })
})
