// Every route the server registers declares its access rule (src/http/access.ts) on its
// declaration, public ones included, and the OpenAPI document says the same: the rule, the
// security requirement it implies, and the 401/403 it can answer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { RULE } from '../../src/http/access.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

interface Operation {
  [RULE]?: string
  security?: Record<string, string[]>[]
  responses?: Record<string, unknown>
}

let server: TestServer
let paths: Record<string, Record<string, Operation>>
let routes: { at: string; rule: unknown; hidden: boolean }[]

beforeAll(async () => {
  server = await startTestServer()
  paths = ((await (await server.request('/swagger/json')).json()) as { paths: typeof paths }).paths
  routes = createApp(server.context).routes.map((route) => {
    const detail = (route.hooks.detail ?? {}) as Record<string, unknown>
    return {
      at: `${route.method.toLowerCase()} ${route.path.replace(/:([^/]+)/g, '{$1}')}`,
      rule: detail[RULE],
      hidden: detail.hide === true,
    }
  })
})
afterAll(() => server.stop())

/** The rules of src/http/access.ts, as they are written into the document. */
const VOCABULARY =
  /^(public|authenticated|session-token|session-token-or-first-party-client|system [a-z]+:[a-z]+|self-or-system [a-z]+:[a-z]+|owner-or-sysadmin|repository-or-system [a-z]+:[a-z]+|repository [a-z]+:[a-z]+( \([a-z]+=[a-z]+\)( or [a-z]+:[a-z]+ \([a-z]+=[a-z]+\))*|(; system [a-z]+:[a-z]+ \([a-z ]+\))+)?)$/

const operation = (at: string) => {
  const [method, path] = at.split(' ') as [string, string]
  return paths[path]?.[method]
}

describe(`access rules (${BACKEND})`, () => {
  test('every registered route declares one rule of the vocabulary, public ones explicitly', () => {
    expect(routes.length).toBeGreaterThan(50)
    const undeclared = routes
      .filter(({ rule }) => typeof rule !== 'string' || !VOCABULARY.test(rule))
      .map(({ at, rule }) => `${at}: ${JSON.stringify(rule)}`)
    expect(undeclared).toEqual([])
    // Left out of the document, not out of the rules: the Swagger UI's own routes (public), and
    // the /api/v1 form of a repository-scoped route, whose /{repoID} twin is documented with its rule.
    const hidden = routes.filter((route) => route.hidden)
    expect(hidden.filter(({ rule }) => rule === 'public').length).toBeGreaterThan(0)
    for (const { at, rule } of hidden.filter(({ rule }) => rule !== 'public')) {
      const twin = at.replace(' /api/v1/', ' /{repoID}/')
      expect({ at, twin: routes.find((route) => route.at === twin && !route.hidden)?.rule }).toEqual({ at, twin: rule })
    }
  })

  test("the document states each route's rule, its security requirement and the 401/403 it can answer", () => {
    const mismatches: string[] = []
    for (const { at, rule } of routes.filter(({ hidden }) => !hidden)) {
      const documented = operation(at)
      if (!documented) {
        mismatches.push(`${at}: not documented`)
        continue
      }
      if (documented[RULE] !== rule) mismatches.push(`${at}: rule ${rule}, documented ${documented[RULE]}`)
      const statuses = Object.keys(documented.responses ?? {})
      if (rule === 'public') {
        if (documented.security) mismatches.push(`${at}: public, but documents security`)
        continue
      }
      if (!documented.security?.some((requirement) => 'bearer' in requirement))
        mismatches.push(`${at}: ${rule}, but documents no bearer requirement`)
      if (!statuses.includes('401')) mismatches.push(`${at}: ${rule}, but documents no 401`)
      if (rule !== 'authenticated' && !statuses.includes('403')) mismatches.push(`${at}: ${rule}, but documents no 403`)
    }
    expect(mismatches).toEqual([])
  })

  test('a request without a token is challenged for the scope the rule declares', async () => {
    const mismatches: string[] = []
    for (const { at, rule } of routes.filter((route) => !route.hidden && route.rule !== 'public')) {
      const [method, path] = at.split(' ') as [string, string]
      const response = await server.request(
        path.replace(/\{[^}]+\}/g, () => crypto.randomUUID()),
        { method: method.toUpperCase() },
      )
      await response.arrayBuffer()
      const challenged = /scope="([^"]+)"/.exec(response.headers.get('www-authenticate') ?? '')?.[1]
      // Any token will do for these; the challenge asks for the least scope, read.
      const declared = operation(at)?.security?.find((requirement) => 'oauth2' in requirement)?.oauth2?.[0] ?? 'read'
      if (response.status !== 401 || challenged !== declared)
        mismatches.push(`${at} (${rule}): ${response.status}, challenged for ${challenged}, declares ${declared}`)
    }
    expect(mismatches).toEqual([])
  })

  test('the rules a reader looks for are on the routes that need them', () => {
    const ruleOf = (at: string) => routes.find((route) => route.at === at)?.rule
    expect(ruleOf('post /api/v1/auth/login')).toBe('public')
    expect(ruleOf('get /healthz')).toBe('public')
    expect(ruleOf('get /api/v1/users/me')).toBe('authenticated')
    // Each tool checks its own permission and scope; a 401 asks for write, which hosts then request.
    expect(ruleOf('post /api/v1/mcp')).toBe('authenticated')
    expect(operation('post /api/v1/mcp')?.security).toEqual([{ bearer: [] }, { oauth2: ['write'] }])
    expect(ruleOf('get /api/v1/auth/sessions')).toBe('session-token')
    expect(ruleOf('delete /api/v1/oauth/grants/{grantID}')).toBe('session-token-or-first-party-client')
    expect(ruleOf('get /api/v1/users/{userID}')).toBe('self-or-system user:read')
    expect(ruleOf('put /api/v1/users/{userID}')).toBe('self-or-system user:manage')
    expect(ruleOf('delete /api/v1/graphs/{id}')).toBe('owner-or-sysadmin')
    expect(ruleOf('put /api/v1/admin/users/roles')).toBe('system role:manage')
    expect(ruleOf('get /{repoID}/facts')).toBe('repository fact:read')
    expect(ruleOf('post /{repoID}/sources/{sourceID}/process')).toBe('repository fact:write')
    expect(ruleOf('post /{repoID}/process')).toBe('repository fact:write')
    expect(ruleOf('post /{repoID}/concepts/{conceptID}/merge')).toBe('repository concept:write')
    expect(ruleOf('post /{repoID}/concepts/{conceptID}/split')).toBe('repository concept:write')
    expect(ruleOf('post /{repoID}/reports/{reportID}/annotate')).toBe('repository report:write')
    expect(ruleOf('post /api/v1/reports/{reportID}/annotate')).toBe('repository report:write')
    expect(ruleOf('get /{repoID}/facts/{factID}/merges')).toBe('repository fact:read')
    expect(ruleOf('get /api/v1/fact-merges')).toBe('repository fact:read')
    expect(ruleOf('post /{repoID}/facts/{factID}/unmerge')).toBe('repository fact:write')
    expect(ruleOf('post /api/v1/facts/{factID}/unmerge')).toBe('repository fact:write')
    expect(ruleOf('get /api/v1/jobs')).toBe('repository-or-system job:read')
    expect(ruleOf('get /api/v1/search')).toBe('repository fact:read (kind=facts) or concept:read (kind=concepts)')
    expect(ruleOf('post /{repoID}/import-graph')).toBe(
      'repository graph:import; system registry:pull (to import from the registry)',
    )
    expect(operation('put /api/v1/users/{userID}')?.security).toEqual([{ bearer: [] }, { oauth2: ['write'] }])
  })
})
