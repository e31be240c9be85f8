// The MCP endpoint's own rules, over HTTP with the official 2.x client (revision 2026-07-28) and
// raw requests: the 401's challenge and the document it names, the audiences a token may have,
// the Origin check, GET and DELETE, refusals as tool errors (a viewer's write, a read-scope
// token's write, bad arguments, the graph's own rules) that leave nothing behind, the limits and
// cursors of lists, and two instances on one PostgreSQL answering alternate requests of one
// conversation.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { tokenKey } from '../../src/http/tokens.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, registerAccount, uniqueEmail } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'
import { call, conversation, type ToolResult } from '../helpers/mcp-host.ts'
import { rejected } from '../helpers/promises.ts'

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

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
})
const post = (headers: Record<string, string>, body = INITIALIZE) =>
  fetch(mcp, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  })

const converse = (token: string, url = mcp, fetchVia?: typeof fetch) => conversation(url, token, fetchVia)
/** Rows of `table` in the test's repository. */
const rows = async (table: string) => {
  const sql = await server.context.pools.forRepository(repository.id)
  const [row] = await sql`SELECT count(*)::int AS n FROM ${sql(table)}`
  return row!.n as number
}

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
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/api/v1/mcp", scope="write"`,
      )
      expect(await res.json()).toEqual({ error: 'authentication required' })
    }
    const document = await (await fetch(`${server.url}/.well-known/oauth-protected-resource/api/v1/mcp`)).json()
    expect(document).toMatchObject({ resource: mcp, authorization_servers: [server.url] })
  })

  test('tokens for the MCP endpoint, the API and the base URL are accepted, session tokens too; a token for another audience is refused', async () => {
    for (const audience of [mcp, `${server.url}/api/v1`, server.url])
      expect({
        audience,
        status: (await post({ authorization: `Bearer ${await accessToken(audience)}` })).status,
      }).toEqual({ audience, status: 200 })
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
      const res = await fetch(mcp, {
        method,
        headers: { authorization: `Bearer ${ownerToken}`, accept: 'text/event-stream' },
      })
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
      expect(refused.content[0]!.text).toBe(
        `permission denied: graph:export needs the curator, editor or repoadmin role in repository ${repository.slug}; a repoadmin of it can grant it`,
      )
      // A repository the caller holds no role in is not found, as over REST.
      const stranger = await registerAccount(http)
      const hidden = await call(await converse(stranger.token), 'list_facts', { repository: repository.slug })
      expect(hidden).toMatchObject({ isError: true, content: [{ type: 'text', text: 'repository not found' }] })
      // A graph write too: refused naming the permission, nothing written.
      const write = await call(client, 'create_fact', {
        repository: repository.slug,
        text: 'A viewer may not write this.',
      })
      expect(write).toMatchObject({
        isError: true,
        content: [
          {
            text: `permission denied: fact:write needs the editor or repoadmin role in repository ${repository.slug}; a repoadmin of it can grant it`,
          },
        ],
      })
      const remove = await call(client, 'delete', {
        repository: repository.slug,
        kind: 'report',
        id: crypto.randomUUID(),
      })
      expect(remove).toMatchObject({
        isError: true,
        content: [
          {
            text: `permission denied: report:write needs the curator, editor or repoadmin role in repository ${repository.slug}; a repoadmin of it can grant it`,
          },
        ],
      })
    } finally {
      await client.close()
    }
    expect((await http.get(`/${repository.slug}/jobs`, ownerToken)).body).toEqual([])
    expect(await rows('facts')).toBe(0)
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
      expect(refused.content[0]!.text).toContain(
        'insufficient scope: graph:export needs a token with the write scope (this one has read)',
      )
      const write = await call(conversation, 'create_concept', {
        repository: repository.slug,
        canonical_name: 'Read-only',
      })
      expect(write).toMatchObject({
        isError: true,
        content: [
          {
            text: 'insufficient scope: concept:write needs a token with the write scope (this one has read); authorize again with write',
          },
        ],
      })
      expect(await rows('concepts')).toBe(0)
      const owners = await converse(ownerToken)
      const badCalls: [string, Record<string, unknown>][] = [
        ['export_graph', { repository: repository.slug, name: 5 }],
        ['export_graph', { repository: repository.slug, include_bodies: 'yes' }],
        ['export_graph', { repository: repository.slug, unknown: true }],
        ['export_graph', {}],
      ]
      for (const [name, args] of badCalls)
        expect({ name, args, isError: (await call(owners, name, args)).isError }).toEqual({ name, args, isError: true })
      await owners.close()
      const outOfRange = await call(conversation, 'list_facts', { repository: repository.slug, limit: 1000 })
      expect(outOfRange.isError).toBe(true)
      const badCursor = await call(conversation, 'list_facts', { repository: repository.slug, cursor: 'nonsense' })
      expect(badCursor).toMatchObject({
        isError: true,
        content: [{ text: 'invalid cursor: pass next_cursor of the previous page as it was' }],
      })
    } finally {
      await conversation.close()
    }
    expect((await api(server.url).get(`/${repository.slug}/jobs`, ownerToken)).body).toEqual([])
  })
})

describe(`the MCP write tools' refusals (${BACKEND})`, () => {
  test('bad arguments, missing references, a taken natural key: tool errors naming what is wrong, nothing written', async () => {
    const client = await converse(ownerToken)
    const at = { repository: repository.slug }
    try {
      const concept = (await call(client, 'create_concept', { ...at, canonical_name: 'Refusals' })).structuredContent!
      const before = {
        sources: await rows('sources'),
        facts: await rows('facts'),
        concepts: await rows('concepts'),
        concept_summaries: await rows('concept_summaries'),
        reports: await rows('reports'),
      }
      const missing = crypto.randomUUID()
      const refusals: [string, Record<string, unknown>, string | RegExp][] = [
        // Refused by the input schema, before anything runs.
        ['create_fact', { ...at, text: 5 }, /text/],
        ['create_fact', { ...at, text: 'x', unknown: true }, /unknown|additional/i],
        ['create_fact', { ...at, text: 'x', sources: [{ source_id: 'not-a-uuid' }] }, /source_id/],
        ['create_source', { ...at, url: 'https://example.org/a' }, /kind/],
        [
          'update',
          { ...at, kind: 'tea', id: missing, changes: { text: 'x' } },
          /kind: expected one of source, fact, concept, summary, synthesis, investigation, report/,
        ],
        // Refused by the write's own rules, naming the row.
        [
          'create_fact',
          { ...at, text: 'Cites nothing real.', sources: [{ source_id: missing }] },
          `sources: source ${missing} does not exist in this repository`,
        ],
        [
          'write_summary',
          { ...at, concept_id: concept.id, sequence_num: 0, content: `See [this](<fact:${missing}>).` },
          `content cites a fact that does not exist: fact ${missing} does not exist in this repository`,
        ],
        [
          'write_report',
          { ...at, title: 'R', annotations: [{ sentence_index: 0, fact_id: missing, score: 1 }] },
          `annotations: fact ${missing} does not exist in this repository`,
        ],
        [
          'create_concept',
          { ...at, canonical_name: 'REFUSALS' },
          `a concept of this name and context exists already (compared case-insensitively): existing id ${concept.id}`,
        ],
        // update: the changes are checked against the kind's fields.
        [
          'update',
          { ...at, kind: 'concept', id: concept.id, changes: { canonical_name: 5 } },
          /^changes\.canonical_name: .*the fields of a concept/,
        ],
        [
          'update',
          { ...at, kind: 'concept', id: concept.id, changes: { text: 'a fact field' } },
          /^changes\.text: Unexpected property \(the fields of a concept/,
        ],
        ['update', { ...at, kind: 'concept', id: concept.id, changes: {} }, /^changes: /],
        ['update', { ...at, kind: 'summary', id: missing, changes: { is_complete: true } }, /^concept_id: /],
        ['update', { ...at, kind: 'fact', id: missing, changes: { status: 'stable' } }, 'fact not found'],
        ['delete', { ...at, kind: 'concept', id: missing, confirm: true }, 'concept not found'],
      ]
      for (const [name, args, message] of refusals) {
        const result = await call(client, name, args)
        expect({ name, args, isError: result.isError }).toEqual({ name, args, isError: true })
        if (typeof message === 'string') expect(result.content[0]!.text).toBe(message)
        else expect(result.content[0]!.text).toMatch(message)
      }
      // A tool that does not exist: the SDK's own refusal, whichever tools the request's server was built with.
      expect(await rejected(client.callTool({ name: 'no_such_tool', arguments: {} }))).toThrow(
        'Tool no_such_tool not found',
      )
      const after = {
        sources: await rows('sources'),
        facts: await rows('facts'),
        concepts: await rows('concepts'),
        concept_summaries: await rows('concept_summaries'),
        reports: await rows('reports'),
      }
      expect(after).toEqual(before)
      expect((await call(client, 'get_concept', { ...at, concept_id: concept.id })).structuredContent).toMatchObject({
        canonical_name: 'Refusals',
      })
      expect(
        (await call(client, 'delete', { ...at, kind: 'concept', id: concept.id, confirm: true })).isError ?? false,
      ).toBe(false)
    } finally {
      await client.close()
    }
  })

  test('limits: 10 by default, at most 200, a cursor to go on', async () => {
    const client = await converse(ownerToken)
    const at = { repository: repository.slug }
    try {
      for (let i = 0; i < 12; i++)
        expect((await call(client, 'create_concept', { ...at, canonical_name: `Paged ${i}` })).isError ?? false).toBe(
          false,
        )
      const first = (await call(client, 'list_concepts', { ...at, prefix: 'paged' })).structuredContent!
      expect((first.items as unknown[]).length).toBe(10)
      const rest = (await call(client, 'list_concepts', { ...at, prefix: 'paged', cursor: first.next_cursor }))
        .structuredContent!
      expect((rest.items as unknown[]).length).toBe(2)
      expect(rest.next_cursor).toBeUndefined()
      expect((await call(client, 'list_concepts', { ...at, limit: 200 })).isError ?? false).toBe(false)
      expect((await call(client, 'list_concepts', { ...at, limit: 201 })).isError).toBe(true)
      // Search pages too: keyword hits of every Paged concept, 5 at a time.
      const hits = async (cursor?: string) =>
        (
          await call(client, 'search', {
            ...at,
            kind: 'concepts',
            mode: 'keyword',
            query: 'paged',
            limit: 5,
            ...(cursor ? { cursor } : {}),
          })
        ).structuredContent!
      const pages = [await hits()]
      while (pages.at(-1)!.next_cursor) pages.push(await hits(pages.at(-1)!.next_cursor as string))
      expect(pages.map((p) => (p.hits as unknown[]).length)).toEqual([5, 5, 2])
      expect(new Set(pages.flatMap((p) => (p.hits as { id: string }[]).map((h) => h.id))).size).toBe(12)
    } finally {
      await client.close()
    }
  })
})

describe.skipIf(BACKEND !== 'postgres')('two kgs instances on one PostgreSQL', () => {
  let second: TestServer
  beforeAll(async () => {
    second = await startTestServer({
      env: { DATABASE_URL: server.env.DATABASE_URL!, JWT_SECRET: server.env.JWT_SECRET!, BASE_URL: server.url },
    })
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
    await legacy.connect(
      new TransportV1(new URL(mcp), {
        requestInit: { headers: { authorization: `Bearer ${access_token}` } },
        fetch: alternate,
      }),
    )
    try {
      for (let i = 0; i < 3; i++) {
        expect((await call(modern, 'list_repositories', {})).structuredContent!.items).toEqual([
          expect.objectContaining({ id: repository.id }),
        ])
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
