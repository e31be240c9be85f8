// Every route of the OpenAPI document the server serves (/swagger/json) gets hostile requests:
// bodies generated from its schema and then mutated (wrong types, huge numbers, deep nesting,
// long strings, unknown fields), the same as form bodies, invalid UTF-8, huge and deeply nested
// JSON, wrong content types, garbage gzip and multipart, hostile path parameters, query strings
// and headers, other methods; anonymous, as a plain member, as a sysadmin and with broken
// tokens. No answer may be a 5xx (a deliberate 503 with Retry-After aside), none may take long
// (a hang), every error body is {"error": string}, and the server keeps serving. The exceptions
// are the contract's own: the
// OAuth protocol endpoints answer errors as {"error", "error_description"} (RFC 6749 §5.2), the
// MCP endpoint's transport as a JSON-RPC error response (what MCP clients parse; its 401 is
// kgs's own), and the browser endpoints of the authorization flow answer with HTML pages.
// The seed is printed; FUZZ_SEED replays a run, FUZZ_ROUNDS runs more cases (see fuzz.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { api, registerAccount, uniqueEmail, type Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { gzipBundle, validBundleJson } from '../helpers/broken-bundles.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import {
  concat,
  deepNesting,
  fuzzRounds,
  fuzzSeed,
  hostileValue,
  mutateBytes,
  mutateJson,
  Rng,
  stringifyWithRaw,
  type Json,
} from './fuzz.ts'

/** Requests per route and method (times FUZZ_ROUNDS). */
const CASES_PER_ROUTE = 14
/** An answer slower than this counts as a hang (generous: the machine is shared). */
const ANSWER_DEADLINE_MS = 20_000
const BODY_LIMIT = 64 * 1024
/** Bun's limit on a request's target and headers; past it, Bun itself answers a bare 431 (tests/hostile/limits.test.ts). */
const HEADER_LIMIT = 16 * 1024
const OAUTH_PROTOCOL_PATHS = new Set(['/api/v1/oauth/token', '/api/v1/oauth/revoke', '/api/v1/oauth/register'])
const OAUTH_PAGES = new Set(['/api/v1/oauth/authorize', '/api/v1/oauth/authorize/login'])
const MCP_PATH = '/api/v1/mcp'

interface Schema {
  type?: string
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  const?: Json
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  minimum?: number
  maximum?: number
}

interface Operation {
  parameters?: { in: 'path' | 'query' | 'header'; name: string }[]
  requestBody?: { content: Record<string, { schema?: Schema }> }
}

interface Route {
  method: string
  /** OpenAPI form: /{repoID}/facts/{factID}. */
  path: string
  operation: Operation
}

/** Known values, so that some requests get past validation and lookups into the handlers. */
interface Pools {
  ids: string[]
  repositories: string[]
  users: string[]
  graphs: { id: string; name: string; sha256: string }[]
  tokens: { member: string; sysadmin: string }
}

let server: TestServer
let http: ReturnType<typeof api>
let member: Account
let sysadmin: Account
let pools: Pools
let routes: Route[]

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1', BODY_LIMIT: String(BODY_LIMIT) } })
  http = api(server.url)
  member = await registerAccount(http)
  sysadmin = await registerAccount(http)
  expect((await server.promote(sysadmin.email)).code).toBe(0)
  // A repository holding a graph, and the same graph in the registry: ids for the path parameters.
  const repo = (await http.post('/api/v1/repositories', { name: 'Fuzzed', slug: 'fuzzed' }, member.token)).body
  const bundle = gzipBundle(validBundleJson())
  const imported = await http.call('POST', `/${repo.slug}/import-graph`, {
    token: member.token,
    raw: bundle,
    headers: { 'content-type': 'application/gzip' },
  })
  expect(imported.status).toBe(202)
  const job = await waitForJob(http, `/${repo.slug}/jobs/${imported.body.id}`, member.token)
  expect(job.status).toBe('succeeded')
  const pushed = await http.call('POST', '/api/v1/graphs', {
    token: sysadmin.token,
    raw: bundle,
    headers: { 'content-type': 'application/gzip', 'x-graph-name': 'fuzzed', 'x-graph-sha256': 'a'.repeat(64) },
  })
  expect(pushed.status).toBe(201)
  const ids = [job.id, pushed.body.graph_id]
  for (const list of ['sources', 'facts', 'concepts', 'investigations', 'reports']) {
    const rows = (await http.get(`/${repo.slug}/${list}`, member.token)).body as { id: string }[]
    ids.push(...rows.map((row) => row.id))
  }
  pools = {
    ids,
    repositories: [repo.id, repo.slug],
    users: [member.id, sysadmin.id],
    graphs: [{ id: pushed.body.graph_id, name: 'fuzzed', sha256: 'a'.repeat(64) }],
    tokens: { member: member.token, sysadmin: sysadmin.token },
  }
  const spec = (await http.get('/swagger/json')).body as { paths: Record<string, Record<string, Operation>> }
  routes = Object.entries(spec.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  )
  routes.push(
    { method: 'GET', path: '/swagger', operation: {} },
    { method: 'GET', path: '/swagger/json', operation: {} },
  )
  // Deletions last: a deleted repository would turn the rest into 404s.
  routes.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'))
}, 120_000)

afterAll(() => server.stop())

// ---------------------------------------------------------------------------------------------
// Building requests

const HOSTILE_SEGMENTS = [
  'x',
  '0',
  '-1',
  '%00',
  '%FF',
  '%C0%AF',
  '%2F',
  '..',
  '%2e%2e',
  '%20',
  "'",
  '%22',
  '%F0%9F%92%A5',
  '%7B%7D',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF',
  '1e999',
  'a'.repeat(3000),
  'system',
  'api',
  'swagger',
  'healthz',
]
const HOSTILE_QUERY_VALUES = [
  '',
  'x',
  '-1',
  '0',
  '1',
  '500',
  '501',
  '99999999999999999999',
  '1e3',
  'NaN',
  'Infinity',
  '%00',
  '%FF%FE',
  '%C0%AF',
  '%',
  '%%',
  '%ZZ',
  'a'.repeat(5000),
  '%5B%5D',
  '%7B%22a%22%3A1%7D',
  '..%2F..',
  '%F0%9F%92%A5',
  'true',
  'null',
  'eyJhIjoxfQ',
  'W10',
  'WyIiLCIiXQ',
  'WyIyMDI2LTAxLTAxIiwiMDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwIl0',
]
const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'multipart/form-data',
  'text/plain',
  'application/xml',
  'application/gzip',
  'application/octet-stream',
  'application/vnd.api+json',
  '*/*',
  ';',
  'application/json, text/plain',
  'a'.repeat(2000),
]
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']

function pathValue(rng: Rng, name: string): string {
  if (rng.chance(0.4)) return rng.pick(HOSTILE_SEGMENTS)
  if (name === 'repoID') return rng.pick(pools.repositories)
  if (name === 'userID') return rng.pick(pools.users)
  const id = rng.pick(pools.ids)
  return rng.chance(0.2) ? id.toUpperCase() : id
}

function queryString(rng: Rng, names: string[]): string {
  const pairs: string[] = []
  for (const name of names) if (rng.chance(0.6)) pairs.push(`${name}=${rng.pick(HOSTILE_QUERY_VALUES)}`)
  // A repeated parameter, or one nobody expects.
  if (names.length > 0 && rng.chance(0.2)) pairs.push(`${rng.pick(names)}=${rng.pick(HOSTILE_QUERY_VALUES)}`)
  if (rng.chance(0.2))
    pairs.push(
      `${rng.pick(['unknown', '__proto__', 'constructor[prototype]', '%FF', ''])}=${rng.pick(HOSTILE_QUERY_VALUES)}`,
    )
  return pairs.length > 0 ? `?${pairs.join('&')}` : rng.chance(0.1) ? '?' : ''
}

/** A value of a schema, preferring known ones for the fields where those matter. */
function fromSchema(rng: Rng, schema: Schema, field = ''): Json {
  if (schema.anyOf) return fromSchema(rng, rng.pick(schema.anyOf), field)
  if (schema.const !== undefined) return schema.const
  switch (schema.type) {
    case 'object': {
      const out: Record<string, Json> = {}
      for (const [name, property] of Object.entries(schema.properties ?? {}))
        if (schema.required?.includes(name) || rng.chance(0.5)) out[name] = fromSchema(rng, property, name)
      return out
    }
    case 'array':
      return Array.from({ length: rng.between(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)) }, () =>
        fromSchema(rng, schema.items ?? {}, field),
      )
    case 'integer':
      return rng.between(schema.minimum ?? 0, Math.min(schema.maximum ?? 100, 100))
    case 'number':
      return rng.next()
    case 'boolean':
      return rng.chance(0.5)
    case 'string':
      return stringFor(rng, schema, field)
    default:
      return null
  }
}

function stringFor(rng: Rng, schema: Schema, field: string): string {
  const known: Record<string, () => string> = {
    email: () => (rng.chance(0.5) ? uniqueEmail('fuzz') : rng.pick([member.email, sysadmin.email])),
    password: () => 'correct horse battery',
    user_id: () => rng.pick(pools.users),
    domain: () => rng.pick(['system', ...pools.repositories]),
    role: () => rng.pick(['viewer', 'editor', 'curator', 'repoadmin', 'nobody']),
    graph_id: () => rng.pick(pools.graphs).id,
    name: () => (rng.chance(0.5) ? rng.pick(pools.graphs).name : `fuzz ${rng.int(1e6)}`),
    sha256: () => rng.pick(pools.graphs).sha256,
    slug: () => `fuzz-${rng.int(1e6)}`,
    redirect_uris: () => rng.pick(['http://127.0.0.1/callback', 'https://example.com/cb', 'javascript:alert(1)']),
    grant_type: () => rng.pick(['authorization_code', 'refresh_token', 'client_credentials', 'password']),
    token: () => rng.pick([pools.tokens.member, 'x']),
    refresh_token: () => rng.pick(['x', 'a'.repeat(64)]),
  }
  if (known[field]) return known[field]()
  if (schema.format === 'uuid' || schema.pattern?.includes('[0-9a-fA-F]{8}')) return rng.pick(pools.ids)
  const length = rng.between(schema.minLength ?? 0, Math.min(schema.maxLength ?? 30, 30))
  return Array.from({ length }, () => String.fromCharCode(rng.between(0x61, 0x7a))).join('')
}

function formEncode(rng: Rng, value: Json): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return `value=${encodeURIComponent(String(value))}`
  const pairs = Object.entries(value).map(
    ([key, v]) => `${encodeURIComponent(key)}=${encodeURIComponent(typeof v === 'string' ? v : stringifyWithRaw(v))}`,
  )
  if (rng.chance(0.3) && pairs.length > 0) pairs.push(rng.pick(pairs))
  if (rng.chance(0.3))
    pairs.push(rng.pick(['%FF=%FE', 'a=%ZZ', '=', '&&&', 'x', '%00=%00', `big=${'b'.repeat(10_000)}`]))
  return pairs.join('&')
}

function multipart(rng: Rng, boundary: string): Uint8Array {
  const part = (headers: string, data: Uint8Array | string) =>
    concat([
      new TextEncoder().encode(`--${boundary}\r\n${headers}\r\n\r\n`),
      typeof data === 'string' ? new TextEncoder().encode(data) : data,
      new TextEncoder().encode('\r\n'),
    ])
  const parts = [
    part(
      'Content-Disposition: form-data; name="bundle"; filename="b.json.gz"\r\nContent-Type: application/gzip',
      rng.chance(0.5) ? gzipBundle(validBundleJson()) : rng.bytes(rng.between(0, 200)),
    ),
    part('Content-Disposition: form-data; name="bundle"', 'not a file'),
    part('Content-Disposition: form-data; name="other"; filename="x"', rng.bytes(50)),
    part(`Content-Disposition: form-data; name="${'n'.repeat(rng.between(1, 3000))}"`, 'x'),
    part('Content-Disposition: garbage', ''),
  ]
  const chosen = Array.from({ length: rng.between(0, 3) }, () => rng.pick(parts))
  let body = concat([...chosen, new TextEncoder().encode(rng.chance(0.8) ? `--${boundary}--\r\n` : '')])
  if (rng.chance(0.3)) body = mutateBytes(rng, body).bytes
  return body
}

interface Shot {
  method: string
  url: string
  headers: Record<string, string>
  body?: Uint8Array | string
  describe: string
}

function shot(rng: Rng, route: Route): Shot {
  const params = route.operation.parameters ?? []
  const notes: string[] = []
  let method = route.method
  if (rng.chance(0.08)) {
    method = rng.pick(METHODS)
    notes.push(`method ${method}`)
  }
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => pathValue(rng, name))
  const query = queryString(
    rng,
    params.filter((p) => p.in === 'query').map((p) => p.name),
  )
  const headers: Record<string, string> = {}
  const identity = rng.pick(['none', 'member', 'sysadmin', 'sysadmin', 'member', 'garbage'] as const)
  notes.push(identity)
  if (identity === 'member' || identity === 'sysadmin') headers.authorization = `Bearer ${pools.tokens[identity]}`
  if (identity === 'garbage') {
    headers.authorization = rng.pick([
      'Bearer',
      'Bearer x',
      'Basic YTpi',
      `Bearer ${'a'.repeat(4000)}`,
      'Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ4In0.',
      'Bearer eyJ0eXAiOiJhdCtqd3QifQ.e30.e30',
      `Bearer ${pools.tokens.member}x`,
      'bearer  \t ',
    ])
  }
  for (const header of params.filter((p) => p.in === 'header')) {
    if (rng.chance(0.8))
      headers[header.name.toLowerCase()] = rng.chance(0.5)
        ? rng.pick(pools.repositories)
        : rng.pick([...HOSTILE_SEGMENTS.filter((s) => !s.startsWith('%')), '', '[1,2]', '-5', '99999999999999999999'])
  }
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS')
    return { method, url: path + query, headers, describe: notes.join(', ') }

  const content = route.operation.requestBody?.content ?? {}
  const schema = content['application/json']?.schema
  let body: Uint8Array | string | undefined
  let type: string | undefined
  const kind = rng.int(content['application/gzip'] ? 12 : 10)
  if (kind <= 3 && schema) {
    // Held in a wrapper, so that the mutations may replace the whole body too.
    const holder = { body: fromSchema(rng, schema) }
    const mutations = rng.between(0, 3)
    for (let i = 0; i < mutations; i++) notes.push(mutateJson(rng, holder, 20_000))
    body = stringifyWithRaw(holder.body)
    type = 'application/json'
  } else if (kind === 4) {
    body = stringifyWithRaw(hostileValue(rng))
    type = rng.pick(['application/json', 'application/x-www-form-urlencoded', 'text/plain'])
    notes.push('hostile value')
  } else if (kind === 5) {
    body = formEncode(rng, schema ? fromSchema(rng, schema) : { a: 'b' })
    type = 'application/x-www-form-urlencoded'
    notes.push('form')
  } else if (kind === 6) {
    const text = new TextEncoder().encode(schema ? stringifyWithRaw(fromSchema(rng, schema)) : '{"a":"b"}')
    body = mutateBytes(rng, text).bytes
    type = rng.pick(['application/json', 'application/x-www-form-urlencoded'])
    notes.push('damaged bytes')
  } else if (kind === 7) {
    body = rng.pick([
      () => deepNesting(rng.between(1000, 200_000), rng.chance(0.5) ? '[' : '{"a":'),
      () => `{"a":"${'x'.repeat(BODY_LIMIT + rng.between(1, 1000))}"}`,
      () => `[${'1,'.repeat(30_000)}1]`,
      () => '',
      () => ' ',
      () => new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      () => new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
    ])()
    type = rng.pick(['application/json', 'application/x-www-form-urlencoded'])
    notes.push('huge, deep, empty or invalid UTF-8')
  } else if (kind === 8) {
    const boundary = rng.pick(['xyz', '----b', 'a'.repeat(200)])
    body = multipart(rng, boundary)
    type = rng.pick([
      `multipart/form-data; boundary=${boundary}`,
      'multipart/form-data',
      'multipart/form-data; boundary=other',
    ])
    notes.push('multipart')
  } else if (kind === 9) {
    body = rng.bytes(rng.between(0, 2000))
    type = rng.chance(0.8) ? rng.pick(CONTENT_TYPES) : undefined
    notes.push('random bytes')
  } else {
    const bundle = gzipBundle(validBundleJson())
    body = rng.chance(0.5) ? mutateBytes(rng, bundle).bytes : rng.chance(0.5) ? bundle : new Uint8Array([0x1f, 0x8b])
    type = rng.pick(['application/gzip', 'application/x-gzip', 'application/octet-stream'])
    notes.push('gzip')
  }
  if (rng.chance(0.1)) type = rng.pick(CONTENT_TYPES)
  if (type !== undefined) headers['content-type'] = type
  if (route.path === '/api/v1/graphs' && rng.chance(0.8)) {
    for (const header of [
      'x-graph-name',
      'x-graph-tags',
      'x-graph-sha256',
      'x-graph-schema-version',
      'x-graph-fact-count',
      'x-graph-description',
    ]) {
      if (rng.chance(0.5))
        headers[header] = rng.pick([
          '',
          'fuzz',
          '[]',
          '["a","a"]',
          '[1]',
          '{"a":1}',
          '-1',
          '99999999999999999999',
          '1e3',
          'a'.repeat(5000),
          'a'.repeat(64),
          '\u00e9',
          '2',
        ])
    }
  }
  notes.push(`content-type ${type ?? 'none'}`)
  return { method, url: path + query, headers, body, describe: notes.join(', ') }
}

/** Problems with one answer, if any: a 5xx, an error body not of the contract's shape. */
async function judge(route: Route, request: Shot, response: Response): Promise<string | undefined> {
  const text = await response.text()
  // A 503 with Retry-After is a deliberate "not yet" (the download of an export still running,
  // docs/bundles.md), not a failure; its body is the error and the job it waits for.
  const notYet = response.status === 503 && response.headers.has('retry-after')
  if (response.status >= 500 && !notYet) return `${response.status} ${text.slice(0, 300)}`
  const headerBytes =
    request.url.length +
    Object.entries(request.headers).reduce((sum, [name, value]) => sum + name.length + value.length + 4, 0)
  if (response.status === 431 && headerBytes > HEADER_LIMIT) return undefined
  if (response.status < 400 || request.method === 'HEAD') return undefined
  const path = route.path
  const type = response.headers.get('content-type') ?? ''
  if (OAUTH_PAGES.has(path) && type.startsWith('text/html')) return undefined
  if (!type.startsWith('application/json'))
    return `${response.status} with content-type ${JSON.stringify(type)}: ${text.slice(0, 200)}`
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return `${response.status} with a body that is not JSON: ${text.slice(0, 200)}`
  }
  if (path === MCP_PATH && isJsonRpcError(body)) return undefined
  const allowed = OAUTH_PROTOCOL_PATHS.has(path) ? ['error', 'error_description'] : ['error']
  const record =
    body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {}
  const { job, ...rest } = record
  const fields = Object.keys(notYet && typeof job === 'object' && job !== null ? rest : record)
  const shaped =
    fields.includes('error') &&
    fields.every((field) => allowed.includes(field)) &&
    fields.every((field) => typeof record[field] === 'string')
  return shaped ? undefined : `${response.status} with body ${text.slice(0, 200)}`
}

/** A JSON-RPC 2.0 error response: {"jsonrpc": "2.0", "error": {"code": integer, "message": string}, "id": null | number | string}. */
function isJsonRpcError(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false
  const { jsonrpc, error, id, ...rest } = body as Record<string, unknown>
  if (
    jsonrpc !== '2.0' ||
    Object.keys(rest).length > 0 ||
    !(id === null || typeof id === 'number' || typeof id === 'string')
  )
    return false
  const { code, message } = (error ?? {}) as Record<string, unknown>
  return Number.isInteger(code) && typeof message === 'string'
}

function describeBody(body: Shot['body']): string {
  if (body === undefined) return 'none'
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('latin1')
  return JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}... (${text.length} characters)` : text)
}

async function send(request: Shot): Promise<Response> {
  return fetch(server.url + request.url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    redirect: 'manual',
    signal: AbortSignal.timeout(ANSWER_DEADLINE_MS),
  })
}

describe(`every route, fuzzed (${BACKEND})`, () => {
  test('no 5xx, no hang, every error {"error": string}; the server keeps serving', async () => {
    const seed = fuzzSeed('route fuzz')
    const cases = CASES_PER_ROUTE * fuzzRounds()
    expect(routes.length).toBeGreaterThan(70)
    const problems: string[] = []
    let sent = 0
    for (const [r, route] of routes.entries()) {
      for (let i = 0; i < cases; i++) {
        const rng = Rng.forCase(seed, r * 100_000 + i)
        const request = shot(rng, route)
        // Logging out ends the session: a throwaway one, so that the others keep working.
        if (
          route.path === '/api/v1/auth/logout' &&
          [pools.tokens.member, pools.tokens.sysadmin].some(
            (token) => request.headers.authorization === `Bearer ${token}`,
          )
        ) {
          request.headers.authorization = `Bearer ${(await registerAccount(http)).token}`
        }
        // So does an administrator ending a user's sessions: those of a throwaway account.
        if (route.path === '/api/v1/admin/users/{userID}/sessions') {
          const throwaway = await registerAccount(http)
          for (const id of pools.users) request.url = request.url.replace(id, throwaway.id)
        }
        const where = `FUZZ_SEED=${seed} route ${route.method} ${route.path} case ${i}: ${request.method} ${request.url.slice(0, 200)} (${request.describe})`
        let response: Response
        try {
          response = await send(request)
        } catch (error) {
          problems.push(`${where}: no answer: ${(error as Error).message}`)
          continue
        }
        sent++
        const problem = await judge(route, request, response)
        if (problem) problems.push(`${where}: ${problem}; body sent: ${describeBody(request.body)}`)
      }
    }
    console.log(`route fuzz: ${sent} requests to ${routes.length} routes`)
    expect(problems).toEqual([])
    expect((await http.get('/healthz')).status).toBe(200)
    expect((await http.get('/api/v1/users/me', member.token)).status).toBe(200)
  }, 600_000)
})
