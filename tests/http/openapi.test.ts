// The OpenAPI document at /swagger/json against the server that serves it: the same operations
// as the routes the server answers, security exactly where a request without a token is refused,
// and the details a client generator relies on (servers, integer types, one media type).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'
import { FormatRegistry } from '@sinclair/typebox'
import { isUuid } from '../../src/uuid.ts'

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
  components: {
    securitySchemes: Record<
      string,
      {
        type: string
        flows?: { authorizationCode?: { authorizationUrl: string; tokenUrl: string; scopes: Record<string, string> } }
      }
    >
  }
}

let server: TestServer
let document: Document
const operations: { method: string; path: string; operation: Operation }[] = []

beforeAll(async () => {
  server = await startTestServer()
  document = (await (await server.request('/swagger/json')).json()) as Document
  for (const [path, methods] of Object.entries(document.paths))
    for (const [method, operation] of Object.entries(methods)) operations.push({ method, path, operation })
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
    for (const path of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource',
      '/healthz',
      '/readyz',
    ])
      expect(document.paths[path]?.get).toBeDefined()
  })

  test('declares security exactly on the operations that refuse a request without a token', async () => {
    const mismatches: string[] = []
    for (const { method, path, operation } of operations) {
      const response = await server.request(concrete(path), { method: method.toUpperCase(), redirect: 'manual' })
      await response.arrayBuffer()
      const refused = response.status === 401 && (response.headers.get('www-authenticate') ?? '').startsWith('Bearer')
      if (refused !== Boolean(operation.security))
        mismatches.push(
          `${method.toUpperCase()} ${path}: ${response.status}, security ${JSON.stringify(operation.security)}`,
        )
    }
    expect(mismatches).toEqual([])
  })

  test('the scopes are the ones enforced: where a read-only OAuth token is refused for its scope, the scope it lacks is the one declared', async () => {
    const account = { email: uniqueEmail('scopes'), password: 'correct horse battery' }
    const session = (await api(server.url).post('/api/v1/auth/register', account)).body.token as string
    const repo = (await api(server.url).post('/api/v1/repositories', { name: 'Scopes' }, session)).body as {
      id: string
    }
    const { access_token } = await obtainTokens(server.url, await registerClient(server.url), account, 'read')
    const mismatches: string[] = []
    let refused = 0
    for (const { method, path, operation } of operations.filter((o) => o.operation.security)) {
      // The caller's own repository, so that the role check passes and the scope decides.
      const url = concrete(path.replace('{repoID}', repo.id))
      const response = await server.request(url, {
        method: method.toUpperCase(),
        redirect: 'manual',
        headers: { authorization: `Bearer ${access_token}`, 'x-repository-id': repo.id },
      })
      await response.arrayBuffer()
      const declared = operation.security![1]!.oauth2![0]
      const challenge = response.headers.get('www-authenticate') ?? ''
      if (response.status !== 403 || !challenge.includes('insufficient_scope')) continue
      refused++
      const wanted = /scope="([^"]+)"/.exec(challenge)?.[1]
      if (wanted !== declared)
        mismatches.push(`${method.toUpperCase()} ${path}: wants scope ${wanted}, declares ${declared ?? 'none'}`)
    }
    expect(mismatches).toEqual([])
    // Routes without a body reach the scope check (with one, validation answers first).
    expect(refused).toBeGreaterThanOrEqual(5)
  })

  test('every protected operation accepts a bearer token or an OAuth token with a scope kgs knows', () => {
    for (const { method, path, operation } of operations.filter((o) => o.operation.security)) {
      expect({
        at: `${method} ${path}`,
        schemes: operation.security!.map((requirement) => Object.keys(requirement)[0]),
      }).toEqual({ at: `${method} ${path}`, schemes: ['bearer', 'oauth2'] })
      for (const scope of operation.security![1]!.oauth2!) expect(['read', 'write', 'admin']).toContain(scope)
    }
  })

  test('integers are integers, and each answer has one media type', () => {
    for (const { method, path, operation } of operations) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.name === 'limit' || parameter.name === 'k')
          expect({ at: `${method} ${path} ${parameter.name}`, type: parameter.schema.type }).toEqual({
            at: `${method} ${path} ${parameter.name}`,
            type: 'integer',
          })
        expect(parameter.schema.anyOf).toBeUndefined()
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        expect({ at: `${method} ${path} ${status}`, types: Object.keys(response.content ?? {}).length <= 1 }).toEqual({
          at: `${method} ${path} ${status}`,
          types: true,
        })
      }
      if (operation.requestBody) expect(Object.keys(operation.requestBody.content).length).toBeGreaterThan(0)
    }
  })

  test('JSON bodies are documented as JSON only; the OAuth endpoints that read forms as forms', () => {
    expect(Object.keys(document.paths['/api/v1/auth/login']!.post!.requestBody!.content)).toEqual(['application/json'])
    expect(Object.keys(document.paths['/api/v1/oauth/token']!.post!.requestBody!.content)).toEqual([
      'application/x-www-form-urlencoded',
    ])
  })

  test('parameters are listed once; a route addressed by X-Repository-ID documents that header', () => {
    for (const { method, path, operation } of operations) {
      const keys = (operation.parameters ?? []).map((p) => `${p.in} ${p.name.toLowerCase()}`)
      expect({ at: `${method} ${path}`, keys }).toEqual({ at: `${method} ${path}`, keys: [...new Set(keys)] })
      // The same route with the repository in the path instead (/api/v1/facts and /{repoID}/facts).
      const twin = path.startsWith('/api/v1/') && document.paths[path.replace('/api/v1/', '/{repoID}/')]?.[method]
      if (twin)
        expect({ at: `${method} ${path}`, keys }).toEqual({
          at: `${method} ${path}`,
          keys: expect.arrayContaining(['header x-repository-id']),
        })
    }
  })

  test('every 202 documents the Location of its job', () => {
    const accepted = operations.filter(({ operation }) => operation.responses?.['202'])
    expect(accepted.map(({ method, path }) => `${method} ${path}`)).toContain('post /{repoID}/export-graph')
    for (const { operation } of accepted)
      expect(operation.responses!['202']).toMatchObject({ headers: { location: expect.any(Object) } })
  })

  test('each route family answers its errors with statuses its operations list', async () => {
    const http = api(server.url)
    const owner = { email: uniqueEmail('answers'), password: 'correct horse battery' }
    const token = (await http.post('/api/v1/auth/register', owner)).body.token as string
    const other = (
      await http.post('/api/v1/auth/register', { email: uniqueEmail('other'), password: 'correct horse battery' })
    ).body.user.id as string
    const repo = (await http.post('/api/v1/repositories', { name: 'Answers' }, token)).body as {
      id: string
      slug: string
    }
    const { access_token: readOnly } = await obtainTokens(server.url, await registerClient(server.url), owner, 'read')
    const id = () => crypto.randomUUID()
    const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    const form = (fields: Record<string, string>) => ({
      body: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    const text = { body: 'x', headers: { 'content-type': 'text/plain' } }
    interface Sample {
      /** The documented operation, `method path`. */
      at: string
      url: string
      status: number
      init?: { body?: string; headers?: Record<string, string> }
      /** Whose token: the repository owner's session (default), a read-only OAuth token, or none. */
      as?: 'owner' | 'read-only' | 'anonymous'
    }
    const r = `/${repo.id}`
    const samples: Sample[] = [
      // accounts and OAuth
      {
        at: 'post /api/v1/auth/register',
        url: '/api/v1/auth/register',
        init: json({ email: 'x' }),
        status: 400,
        as: 'anonymous',
      },
      {
        at: 'post /api/v1/auth/register',
        url: '/api/v1/auth/register',
        init: json(owner),
        status: 409,
        as: 'anonymous',
      },
      {
        at: 'post /api/v1/auth/login',
        url: '/api/v1/auth/login',
        init: json({ ...owner, password: 'not the password' }),
        status: 401,
        as: 'anonymous',
      },
      { at: 'post /api/v1/auth/login', url: '/api/v1/auth/login', init: text, status: 415, as: 'anonymous' },
      { at: 'post /api/v1/auth/logout', url: '/api/v1/auth/logout', status: 400, as: 'read-only' },
      { at: 'get /api/v1/auth/sessions', url: '/api/v1/auth/sessions?limit=0', status: 400 },
      { at: 'get /api/v1/auth/sessions', url: '/api/v1/auth/sessions', status: 403, as: 'read-only' },
      { at: 'delete /api/v1/auth/sessions/{sessionID}', url: `/api/v1/auth/sessions/${id()}`, status: 404 },
      { at: 'get /api/v1/users/{userID}', url: '/api/v1/users/not-a-uuid', status: 400 },
      { at: 'get /api/v1/users/{userID}', url: `/api/v1/users/${other}`, status: 403 },
      { at: 'get /api/v1/users/{userID}', url: `/api/v1/users/${id()}`, status: 404 },
      { at: 'put /api/v1/users/{userID}', url: `/api/v1/users/${other}`, init: json({ name: 'x' }), status: 403 },
      {
        at: 'post /api/v1/oauth/token',
        url: '/api/v1/oauth/token',
        init: form({ grant_type: 'password' }),
        status: 401,
        as: 'anonymous',
      },
      {
        at: 'post /api/v1/oauth/token',
        url: '/api/v1/oauth/token',
        init: json({ grant_type: 'password' }),
        status: 400,
        as: 'anonymous',
      },
      {
        at: 'post /api/v1/oauth/register',
        url: '/api/v1/oauth/register',
        init: json({}),
        status: 400,
        as: 'anonymous',
      },
      { at: 'get /api/v1/oauth/authorize', url: '/api/v1/oauth/authorize', status: 400, as: 'anonymous' },
      { at: 'delete /api/v1/oauth/grants/{grantID}', url: `/api/v1/oauth/grants/${id()}`, status: 404 },
      // administration
      { at: 'get /api/v1/admin/users', url: '/api/v1/admin/users', status: 403 },
      {
        at: 'put /api/v1/admin/users/roles',
        url: '/api/v1/admin/users/roles',
        init: json({ user_id: other, role: 'viewer', domain: repo.id }),
        status: 403,
      },
      { at: 'delete /api/v1/admin/users/{userID}/sessions', url: `/api/v1/admin/users/${other}/sessions`, status: 403 },
      { at: 'get /api/v1/admin/permissions', url: '/api/v1/admin/permissions', status: 401, as: 'anonymous' },
      {
        at: 'get /api/v1/permissions',
        url: '/api/v1/permissions',
        init: { headers: { 'x-repository-id': id() } },
        status: 404,
      },
      // repositories
      { at: 'post /api/v1/repositories', url: '/api/v1/repositories', init: json({ name: '' }), status: 400 },
      {
        at: 'post /api/v1/repositories',
        url: '/api/v1/repositories',
        init: json({ name: 'Taken', slug: repo.slug }),
        status: 409,
      },
      { at: 'get /api/v1/repositories', url: '/api/v1/repositories?cursor=x', status: 400 },
      { at: 'get /api/v1/repositories/{repoID}', url: `/api/v1/repositories/${id()}`, status: 404 },
      {
        at: 'put /api/v1/repositories/{repoID}',
        url: `/api/v1/repositories/${repo.id}`,
        init: json({ name: 'Renamed' }),
        status: 403,
        as: 'read-only',
      },
      { at: 'delete /api/v1/repositories/{repoID}', url: `/api/v1/repositories/${repo.id}`, status: 428 },
      {
        at: 'delete /api/v1/repositories/{repoID}',
        url: `/api/v1/repositories/${repo.id}`,
        init: { headers: { 'if-match': '"stale"' } },
        status: 412,
      },
      { at: 'get /api/v1/repository', url: '/api/v1/repository', status: 400 },
      // the graph, search and media
      { at: 'get /{repoID}/facts', url: `${r}/facts?limit=0`, status: 400 },
      { at: 'get /{repoID}/facts/{factID}', url: `${r}/facts/${id()}`, status: 404 },
      { at: 'get /{repoID}/concepts', url: '/api/v1/concepts', status: 400 },
      { at: 'get /{repoID}/sources/{sourceID}', url: `${r}/sources/not-a-uuid`, status: 400 },
      {
        at: 'get /{repoID}/reports',
        url: '/api/v1/reports',
        init: { headers: { 'x-repository-id': id() } },
        status: 404,
      },
      { at: 'get /{repoID}/search', url: `${r}/search`, status: 400 },
      { at: 'get /{repoID}/search', url: `${r}/search?q=x&limit=1000`, status: 400 },
      { at: 'get /{repoID}/search', url: `${r}/search?q=x&mode=fuzzy`, status: 400 },
      { at: 'get /{repoID}/concepts/{conceptID}/related', url: `${r}/concepts/${id()}/related`, status: 404 },
      { at: 'get /{repoID}/facts/{factID}/citations', url: `${r}/facts/${id()}/citations`, status: 404 },
      { at: 'get /{repoID}/images/{imageID}', url: `${r}/images/${id()}`, status: 404 },
      // the write API
      { at: 'post /{repoID}/facts', url: `${r}/facts`, init: json({ text: '' }), status: 400 },
      { at: 'post /{repoID}/facts', url: `${r}/facts`, init: text, status: 415 },
      { at: 'post /{repoID}/facts', url: `${r}/facts`, init: json({ text: 'x' }), status: 403, as: 'read-only' },
      { at: 'patch /{repoID}/facts/{factID}', url: `${r}/facts/${id()}`, init: json({ status: 'new' }), status: 404 },
      { at: 'delete /{repoID}/sources/{sourceID}', url: `${r}/sources/${id()}`, status: 404 },
      {
        at: 'post /{repoID}/concepts/{conceptID}/summaries',
        url: `${r}/concepts/${id()}/summaries`,
        init: json({ sequence_num: 0 }),
        status: 404,
      },
      {
        at: 'put /{repoID}/facts/{factID}/concepts/{conceptID}',
        url: `${r}/facts/${id()}/concepts/${id()}`,
        status: 404,
      },
      { at: 'post /{repoID}/reports', url: `${r}/reports`, init: json({ title: 'x', parent_id: id() }), status: 400 },
      {
        at: 'put /{repoID}/sources/{sourceID}/body',
        url: `${r}/sources/${id()}/body`,
        init: { body: 'x', headers: { 'content-type': 'application/pdf' } },
        status: 404,
      },
      {
        at: 'post /{repoID}/sources/{sourceID}/images',
        url: `${r}/sources/${id()}/images`,
        init: { body: 'x', headers: { 'content-type': 'image/png' } },
        status: 400,
      },
      {
        at: 'get /{repoID}/sources/{sourceID}/body',
        url: `/api/v1/sources/${id()}/body`,
        init: { headers: { 'x-repository-id': repo.id } },
        status: 404,
      },
      // jobs
      { at: 'get /api/v1/jobs/{jobID}', url: `/api/v1/jobs/${id()}`, status: 403 },
      { at: 'get /{repoID}/jobs', url: `${r}/jobs?status=bogus`, status: 400 },
      { at: 'get /{repoID}/jobs/{jobID}', url: `${r}/jobs/${id()}`, status: 404 },
      { at: 'post /{repoID}/jobs/{jobID}/cancel', url: `${r}/jobs/${id()}/cancel`, status: 404 },
      { at: 'post /{repoID}/jobs', url: `${r}/jobs`, init: json({ kind: 'bogus' }), status: 400 },
      { at: 'post /{repoID}/jobs', url: `${r}/jobs`, init: text, status: 415 },
      // export, import and the registry
      { at: 'get /{repoID}/export-graph/download', url: `${r}/export-graph/download`, status: 404 },
      { at: 'get /{repoID}/export-graph/{jobID}/download', url: `${r}/export-graph/not-a-uuid/download`, status: 400 },
      { at: 'get /{repoID}/export-graph/{jobID}/download', url: `${r}/export-graph/${id()}/download`, status: 404 },
      { at: 'post /{repoID}/export-graph', url: `${r}/export-graph`, init: text, status: 415 },
      { at: 'post /{repoID}/import-graph', url: `${r}/import-graph`, init: text, status: 415 },
      // A member may pull from the registry, not push to it.
      {
        at: 'post /api/v1/graphs',
        url: '/api/v1/graphs',
        init: { body: 'x', headers: { 'content-type': 'application/gzip', 'x-graph-name': 'Answers' } },
        status: 403,
      },
      { at: 'get /api/v1/graphs', url: '/api/v1/graphs?limit=abc', status: 400 },
      { at: 'get /api/v1/graphs/{id}', url: `/api/v1/graphs/${id()}`, status: 404 },
      { at: 'get /api/v1/graphs/{id}/bundle', url: '/api/v1/graphs/not-a-uuid/bundle', status: 400 },
      { at: 'delete /api/v1/graphs/{id}', url: `/api/v1/graphs/${id()}`, status: 404 },
    ]
    const tokens = { owner: token, 'read-only': readOnly, anonymous: undefined }
    const wrong: string[] = []
    for (const { at, url, status, init, as = 'owner' } of samples) {
      const [method, path] = at.split(' ') as [string, string]
      const bearer = tokens[as]
      const response = await server.request(url, {
        method: method.toUpperCase(),
        redirect: 'manual',
        body: init?.body,
        headers: { ...init?.headers, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      })
      await response.arrayBuffer()
      const listed = Object.keys(document.paths[path]?.[method]?.responses ?? {})
      if (response.status !== status || !listed.includes(String(status)))
        wrong.push(
          `${method.toUpperCase()} ${url}: answered ${response.status} (sample expects ${status}); ${path} lists ${listed.join(', ')}`,
        )
    }
    expect(wrong).toEqual([])
  })

  test('an error a route cannot give is not listed: no 404 for /users/me, no 415 without a body', () => {
    const me = document.paths['/api/v1/users/me']!.get!.responses!
    expect(Object.keys(me)).toContain('401')
    expect(Object.keys(me)).not.toContain('404')
    expect(Object.keys(me)).not.toContain('415')
  })

  test("the schemas' uuid format is kgs's compiled pattern, not the per-call Zod schema @elysiajs/openapi installs", () => {
    // The server above has loaded the plugin; whoever set the format last is what every schema checks.
    expect(FormatRegistry.Get('uuid')).toBe(isUuid)
    expect(isUuid(crypto.randomUUID())).toBe(true)
    expect(isUuid('not-a-uuid')).toBe(false)
    expect(isUuid(`urn:uuid:${crypto.randomUUID()}`)).toBe(false)
  })
})
