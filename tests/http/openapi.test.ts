// The OpenAPI document at /swagger/json against the server that serves it: the same operations
// as the routes the server answers, security exactly where a request without a token is refused,
// and the details a client generator relies on (servers, integer types, one media type).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'

interface Operation {
  security?: Record<string, string[]>[]
  parameters?: { name: string; in: string; schema: Record<string, unknown> }[]
  requestBody?: { content: Record<string, unknown> }
  responses?: Record<string, { content?: Record<string, unknown> }>
}
interface Document {
  openapi: string
  servers: { url: string }[]
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, { type: string; flows?: { authorizationCode?: { authorizationUrl: string; tokenUrl: string; scopes: Record<string, string> } } }> }
}

let server: TestServer
let document: Document
const operations: { method: string; path: string; operation: Operation }[] = []

beforeAll(async () => {
  server = await startTestServer()
  document = (await (await server.request('/swagger/json')).json()) as Document
  for (const [path, methods] of Object.entries(document.paths)) for (const [method, operation] of Object.entries(methods)) operations.push({ method, path, operation })
})
afterAll(() => server.stop())

/** A concrete URL of a documented path: every parameter a fresh UUID. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, () => crypto.randomUUID())

describe(`OpenAPI document (${BACKEND})`, () => {
  test('names this server and the OAuth 2.0 authorization code flow of its own authorization server', () => {
    expect(document.openapi).toMatch(/^3\.1\./)
    expect(document.servers).toEqual([{ url: server.url }])
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    const flow = document.components.securitySchemes.oauth2!.flows!.authorizationCode!
    expect(flow.authorizationUrl).toBe(`${server.url}/api/v1/oauth/authorize`)
    expect(flow.tokenUrl).toBe(`${server.url}/api/v1/oauth/token`)
    expect(Object.keys(flow.scopes)).toEqual(['read', 'write', 'admin'])
  })

  test('lists exactly the routes the server answers', () => {
    const app = createApp(server.context)
    const served = app.routes
      .filter((route) => !(route.hooks.detail as { hide?: boolean } | undefined)?.hide && route.method !== 'OPTIONS')
      .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:([^/]+)/g, '{$1}')}`)
    const documented = operations.map(({ method, path }) => `${method} ${path}`)
    expect(documented.sort()).toEqual([...new Set(served)].sort())
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource', '/healthz', '/readyz']) expect(document.paths[path]?.get).toBeDefined()
  })

  test('declares security exactly on the operations that refuse a request without a token', async () => {
    const mismatches: string[] = []
    for (const { method, path, operation } of operations) {
      const response = await server.request(concrete(path), { method: method.toUpperCase(), redirect: 'manual' })
      await response.arrayBuffer()
      const refused = response.status === 401 && (response.headers.get('www-authenticate') ?? '').startsWith('Bearer')
      if (refused !== Boolean(operation.security)) mismatches.push(`${method.toUpperCase()} ${path}: ${response.status}, security ${JSON.stringify(operation.security)}`)
    }
    expect(mismatches).toEqual([])
  })

  test('the scopes are the ones enforced: where a read-only OAuth token is refused for its scope, the scope it lacks is the one declared', async () => {
    const account = { email: uniqueEmail('scopes'), password: 'correct horse battery' }
    const session = (await api(server.url).post('/api/v1/auth/register', account)).body.token as string
    const repo = (await api(server.url).post('/api/v1/repositories', { name: 'Scopes' }, session)).body as { id: string }
    const { access_token } = await obtainTokens(server.url, await registerClient(server.url), account, 'read')
    const mismatches: string[] = []
    let refused = 0
    for (const { method, path, operation } of operations.filter((o) => o.operation.security)) {
      // The caller's own repository, so that the role check passes and the scope decides.
      const url = concrete(path.replace('{repoID}', repo.id))
      const response = await server.request(url, { method: method.toUpperCase(), redirect: 'manual', headers: { authorization: `Bearer ${access_token}`, 'x-repository-id': repo.id } })
      await response.arrayBuffer()
      const declared = operation.security![1]!.oauth2![0]
      const challenge = response.headers.get('www-authenticate') ?? ''
      if (response.status !== 403 || !challenge.includes('insufficient_scope')) continue
      refused++
      const wanted = /scope="([^"]+)"/.exec(challenge)?.[1]
      if (wanted !== declared) mismatches.push(`${method.toUpperCase()} ${path}: wants scope ${wanted}, declares ${declared ?? 'none'}`)
    }
    expect(mismatches).toEqual([])
    // Routes without a body reach the scope check (with one, validation answers first).
    expect(refused).toBeGreaterThanOrEqual(5)
  })

  test('every protected operation accepts a bearer token or an OAuth token with a scope kgs knows', () => {
    for (const { method, path, operation } of operations.filter((o) => o.operation.security)) {
      expect({ at: `${method} ${path}`, schemes: operation.security!.map((requirement) => Object.keys(requirement)[0]) }).toEqual({ at: `${method} ${path}`, schemes: ['bearer', 'oauth2'] })
      for (const scope of operation.security![1]!.oauth2!) expect(['read', 'write', 'admin']).toContain(scope)
    }
  })

  test('integers are integers, and each answer has one media type', () => {
    for (const { method, path, operation } of operations) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.name === 'limit' || parameter.name === 'k') expect({ at: `${method} ${path} ${parameter.name}`, type: parameter.schema.type }).toEqual({ at: `${method} ${path} ${parameter.name}`, type: 'integer' })
        expect(parameter.schema.anyOf).toBeUndefined()
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        expect({ at: `${method} ${path} ${status}`, types: Object.keys(response.content ?? {}).length <= 1 }).toEqual({ at: `${method} ${path} ${status}`, types: true })
      }
      if (operation.requestBody) expect(Object.keys(operation.requestBody.content).length).toBeGreaterThan(0)
    }
  })

  test('JSON bodies are documented as JSON only; the OAuth endpoints that read forms as forms', () => {
    expect(Object.keys(document.paths['/api/v1/auth/login']!.post!.requestBody!.content)).toEqual(['application/json'])
    expect(Object.keys(document.paths['/api/v1/oauth/token']!.post!.requestBody!.content)).toEqual(['application/x-www-form-urlencoded'])
  })

  test('parameters are listed once; a route addressed by X-Repository-ID documents that header', () => {
    for (const { method, path, operation } of operations) {
      const keys = (operation.parameters ?? []).map((p) => `${p.in} ${p.name.toLowerCase()}`)
      expect({ at: `${method} ${path}`, keys }).toEqual({ at: `${method} ${path}`, keys: [...new Set(keys)] })
      // The same route with the repository in the path instead (/api/v1/facts and /{repoID}/facts).
      const twin = path.startsWith('/api/v1/') && document.paths[path.replace('/api/v1/', '/{repoID}/')]?.[method]
      if (twin) expect({ at: `${method} ${path}`, keys }).toEqual({ at: `${method} ${path}`, keys: expect.arrayContaining(['header x-repository-id']) })
    }
  })

  test('every 202 documents the Location of its job', () => {
    const accepted = operations.filter(({ operation }) => operation.responses?.['202'])
    expect(accepted.map(({ method, path }) => `${method} ${path}`)).toContain('post /{repoID}/export-graph')
    for (const { operation } of accepted) expect(operation.responses!['202']).toMatchObject({ headers: { location: expect.any(Object) } })
  })

  test('an error a route cannot give is not listed: no 404 for /users/me, no 415 without a body', () => {
    const me = document.paths['/api/v1/users/me']!.get!.responses!
    expect(Object.keys(me)).toContain('401')
    expect(Object.keys(me)).not.toContain('404')
    expect(Object.keys(me)).not.toContain('415')
  })
})
