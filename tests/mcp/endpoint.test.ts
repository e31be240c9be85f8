// The MCP endpoint's own rules, over HTTP with the official 2.x client (revision 2026-07-28) and
// raw requests: the 401's challenge and the document it names, the audiences a token may have,
// the Origin check, GET and DELETE, refusals as tool errors (a viewer's write, a read-scope
// token's write, bad arguments) that leave nothing behind, and two instances on one PostgreSQL
// answering alternate requests of one conversation.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { tokenKey } from '../../src/http/tokens.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, registerAccount, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'

const owner = { email: uniqueEmail('mcp-owner'), password: 'correct horse battery' }
const ALLOWED_ORIGIN = 'http://localhost:6274'
let server: TestServer
let mcp: string
let ownerToken: string
let repository: { id: string; slug: string }

beforeAll(async () => {
  server = await startTestServer({ env: { MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN } })
  mcp = `${server.url}/api/v1/mcp`
  const http = api(server.url)
  ownerToken = (await http.post('/api/v1/auth/register', owner)).body.token
  repository = (await http.post('/api/v1/repositories', { name: 'Endpoint graph' }, ownerToken)).body
})
afterAll(() => server?.stop())

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
const post = (headers: Record<string, string>, body = INITIALIZE) =>
  fetch(mcp, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body })

/** A 2026-07-28 conversation as `token`'s holder. */
async function converse(token: string, url = mcp, fetchVia?: typeof fetch): Promise<Client> {
  const client = new Client({ name: 'endpoint test', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } }, ...(fetchVia ? { fetch: fetchVia } : {}) }))
  return client
}

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: Record<string, unknown> }
const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult

/** An access token as this server signs them, for `audience`. */
const accessToken = (audience: string) =>
  new SignJWT({ client_id: 'c', scope: 'read write', fam: crypto.randomUUID(), jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .setIssuer(server.url)
    .setSubject(crypto.randomUUID())
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(tokenKey(server.env.JWT_SECRET!, 'oauth-access'))

describe(`the MCP endpoint (${BACKEND})`, () => {
  test("without a token: 401 naming the MCP endpoint's own protected-resource document and the write scope, whatever the body", async () => {
    for (const body of [INITIALIZE, '{not json', '']) {
      const res = await post({}, body)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/api/v1/mcp", scope="write"`)
      expect(await res.json()).toEqual({ error: 'authentication required' })
    }
    const document = await (await fetch(`${server.url}/.well-known/oauth-protected-resource/api/v1/mcp`)).json()
    expect(document).toMatchObject({ resource: mcp, authorization_servers: [server.url] })
  })

  test('tokens for the MCP endpoint, the API and the base URL are accepted, session tokens too; a token for another audience is refused', async () => {
    for (const audience of [mcp, `${server.url}/api/v1`, server.url])
      expect({ audience, status: (await post({ authorization: `Bearer ${await accessToken(audience)}` })).status }).toEqual({ audience, status: 200 })
    expect((await post({ authorization: `Bearer ${ownerToken}` })).status).toBe(200)
    const refused = await post({ authorization: `Bearer ${await accessToken('https://elsewhere.example/api/v1/mcp')}` })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"')
  })

  test("Origin: none, the service's own and an allowed one pass; any other is 403", async () => {
    const auth = { authorization: `Bearer ${ownerToken}` }
    expect((await post(auth)).status).toBe(200)
    expect((await post({ ...auth, origin: new URL(server.url).origin })).status).toBe(200)
    expect((await post({ ...auth, origin: ALLOWED_ORIGIN })).status).toBe(200)
    const refused = await post({ ...auth, origin: 'http://evil.example' })
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as { error: string }).error).toContain('MCP_ALLOWED_ORIGINS')
  })

  test('stateless: GET and DELETE answer 405', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(mcp, { method, headers: { authorization: `Bearer ${ownerToken}`, accept: 'text/event-stream' } })
      expect({ method, status: res.status }).toEqual({ method, status: 405 })
    }
  })

  test("a viewer's write is a tool error naming the permission, and queues nothing", async () => {
    const http = api(server.url)
    const viewer = await registerAccount(http)
    await server.context.rbac.assign({ user_id: viewer.id, role: 'viewer', domain: repository.id })
    const client = await converse(viewer.token)
    try {
      expect((await call(client, 'list_facts', { repository: repository.slug })).isError ?? false).toBe(false)
      const refused = await call(client, 'export_graph', { repository: repository.slug })
      expect(refused.isError).toBe(true)
      expect(refused.content[0]!.text).toBe(`permission denied: graph:export in repository ${repository.slug}; ask an administrator for a role that has it`)
      // A repository the caller holds no role in is not found, as over REST.
      const stranger = await registerAccount(http)
      const hidden = await call(await converse(stranger.token), 'list_facts', { repository: repository.slug })
      expect(hidden).toMatchObject({ isError: true, content: [{ type: 'text', text: 'repository not found' }] })
    } finally {
      await client.close()
    }
    expect((await http.get(`/${repository.slug}/jobs`, ownerToken)).body).toEqual([])
  })

  test("a read-scope token's write is a tool error naming the scope; bad arguments are refused; nothing is queued", async () => {
    const client = await registerClient(server.url, { scope: 'read write' })
    const { access_token, scope } = await obtainTokens(server.url, client, owner, 'read')
    expect(scope).toBe('read')
    const conversation = await converse(access_token)
    try {
      expect((await call(conversation, 'list_repositories', {})).structuredContent!.items).toHaveLength(1)
      const refused = await call(conversation, 'export_graph', { repository: repository.slug })
      expect(refused.isError).toBe(true)
      expect(refused.content[0]!.text).toContain('insufficient scope: graph:export needs a token with the write scope (this one has read)')
      const owners = await converse(ownerToken)
      const badCalls: [string, Record<string, unknown>][] = [
        ['export_graph', { repository: repository.slug, name: 5 }],
        ['export_graph', { repository: repository.slug, include_bodies: 'yes' }],
        ['export_graph', { repository: repository.slug, unknown: true }],
        ['export_graph', {}],
      ]
      for (const [name, args] of badCalls) expect({ name, args, isError: (await call(owners, name, args)).isError }).toEqual({ name, args, isError: true })
      await owners.close()
      const outOfRange = await call(conversation, 'list_facts', { repository: repository.slug, limit: 1000 })
      expect(outOfRange.isError).toBe(true)
      const badCursor = await call(conversation, 'list_facts', { repository: repository.slug, cursor: 'nonsense' })
      expect(badCursor).toMatchObject({ isError: true, content: [{ text: 'invalid cursor: pass next_cursor of the previous page as it was' }] })
    } finally {
      await conversation.close()
    }
    expect((await api(server.url).get(`/${repository.slug}/jobs`, ownerToken)).body).toEqual([])
  })
})

describe.skipIf(BACKEND !== 'postgres')('two kgs instances on one PostgreSQL', () => {
  let second: TestServer
  beforeAll(async () => {
    second = await startTestServer({ env: { DATABASE_URL: server.env.DATABASE_URL!, JWT_SECRET: server.env.JWT_SECRET!, BASE_URL: server.url } })
  })
  afterAll(() => second?.stop())

  test('answer alternate requests of one conversation, for both revisions', async () => {
    const client = await registerClient(server.url, { scope: 'read write' })
    const { access_token } = await obtainTokens(server.url, client, owner, 'write')
    const seen: string[] = []
    let turn = 0
    // A load balancer: every other request goes to the second instance.
    const alternate = ((input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input)
      if (turn++ % 2 === 1) url.host = new URL(second.url).host
      seen.push(url.host)
      return fetch(url, init)
    }) as typeof fetch
    const modern = await converse(access_token, mcp, alternate)
    const legacy = new ClientV1({ name: 'fleet host', version: '1' })
    await legacy.connect(new TransportV1(new URL(mcp), { requestInit: { headers: { authorization: `Bearer ${access_token}` } }, fetch: alternate }))
    try {
      for (let i = 0; i < 3; i++) {
        expect((await call(modern, 'list_repositories', {})).structuredContent!.items).toEqual([expect.objectContaining({ id: repository.id })])
        const listed = (await legacy.callTool({ name: 'list_repositories', arguments: {} })) as ToolResult
        expect(listed.structuredContent!.items).toEqual([expect.objectContaining({ id: repository.id })])
      }
    } finally {
      await modern.close()
      await legacy.close()
    }
    expect(new Set(seen)).toEqual(new Set([new URL(server.url).host, new URL(second.url).host]))
  })
})
