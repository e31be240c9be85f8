// The real server on the selected backend: health, readiness, routing errors, headers, OpenAPI.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { VERSION } from '../../src/version.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

describe(`server (${BACKEND})`, () => {
  test('GET /healthz is 200 JSON with the version', async () => {
    const res = await server.request('/healthz')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await res.json()).toEqual({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) })
  })

  test('GET /readyz reports the database backend', async () => {
    const res = await server.request('/readyz')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ready', database: BACKEND })
  })

  test('unknown route: 404 {"error"}', async () => {
    const res = await server.request('/no/such/route')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await res.json()).toEqual({ error: 'not found' })
  })

  test('wrong method on a known path: 405 {"error"} with Allow', async () => {
    const res = await server.request('/healthz', { method: 'DELETE' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD')
    expect(await res.json()).toEqual({ error: 'method DELETE not allowed on /healthz' })
  })

  test('every response carries a fresh X-Request-Id; a client-supplied one is not adopted', async () => {
    const ids = new Set<string>()
    for (const path of ['/healthz', '/no-such', '/readyz']) {
      const res = await server.request(path, { headers: { 'x-request-id': 'forged-id' } })
      const id = res.headers.get('x-request-id')!
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      ids.add(id)
    }
    expect(ids.size).toBe(3)
  })

  test('GET / is a small JSON index pointing to the UI, the API and the discovery documents', async () => {
    const res = await server.request('/')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      name: 'kgs',
      version: VERSION,
      links: {
        app: `${server.url}/app`,
        swagger: `${server.url}/swagger`,
        openapi: `${server.url}/swagger/json`,
        api: `${server.url}/api/v1`,
        authorization_server: `${server.url}/.well-known/oauth-authorization-server`,
        protected_resource: `${server.url}/.well-known/oauth-protected-resource/api/v1`,
      },
    })
    for (const link of [
      '/app',
      '/swagger',
      '/swagger/json',
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource/api/v1',
    ])
      expect((await server.request(link)).status).toBe(200)
  })

  test('Swagger UI at /swagger and OpenAPI JSON at /swagger/json listing the routes', async () => {
    const ui = await server.request('/swagger')
    expect(ui.status).toBe(200)
    expect(ui.headers.get('content-type')).toContain('text/html')
    const spec = (await (await server.request('/swagger/json')).json()) as {
      openapi: string
      paths: Record<string, Record<string, unknown>>
    }
    expect(spec.openapi).toMatch(/^3\./)
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/healthz', '/readyz']))
    expect(spec.paths['/healthz']!.get).toBeDefined()
  })
})
