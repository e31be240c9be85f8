// The MCP endpoint as real hosts meet it, end to end over HTTP, with the official SDK clients as
// the judges: @modelcontextprotocol/sdk 1.x (protocol revision 2025-11-25, what most hosts speak)
// and @modelcontextprotocol/client 2.x pinned to 2026-07-28 (session-less, no initialize). Each
// discovers the server from the 401, registers, has the person sign in and consent in headless
// Chromium, lists the tools and calls every one on a repository imported from a generated bundle
// (each write then seen by the reads); its access token is revoked mid-conversation (the SDK
// refreshes and goes on), then its grant (the conversation ends).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UnauthorizedError as UnauthorizedV1 } from '@modelcontextprotocol/sdk/client/auth.js'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
  UnauthorizedError as UnauthorizedV2,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/client'
import type { Browser } from 'playwright-core'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { BACKEND, tempDir } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { launchBrowser, listenOnLoopback, signInAndDecide, type LoopbackListener } from '../helpers/browser.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { InMemoryHostProvider } from '../helpers/mcp-host.ts'
import { rejected } from '../helpers/promises.ts'

const account = { email: uniqueEmail('mcp-user'), password: 'correct horse battery' }
let server: TestServer
let browser: Browser
let listener: LoopbackListener
let mcpUrl: URL
/** The repository the tools are called on, and ids of each kind in it. */
const repo = { id: '', slug: '', fact: '', concept: '', investigation: '', report: '', factText: '', factConcept: '' }
/** Empty repositories the registry's graph is imported into, one per revision. */
const targets: Record<string, string> = {}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  mcpUrl = new URL(`${server.url}/api/v1/mcp`)
  const http = api(server.url)
  const registered = await http.post('/api/v1/auth/register', account)
  expect(registered.status).toBe(201)
  const token = registered.body.token as string
  const created = await http.post('/api/v1/repositories', { name: 'MCP graph' }, token)
  Object.assign(repo, { id: created.body.id, slug: created.body.slug })
  for (const revision of ['2025-11-25', '2026-07-28'])
    targets[revision] = (await http.post('/api/v1/repositories', { name: `MCP import ${revision}` }, token)).body.slug
  const path = join(tempDir('kgs-mcp-'), 'bundle.json.gz')
  await generateBundle(path, { facts: 40, vectors: 'kgs-hash-v1' })
  const started = await uploadBundle(http, repo.slug, token, new Uint8Array(await Bun.file(path).arrayBuffer()))
  expect(started.status).toBe(202)
  expect((await waitForJob(http, `/${repo.slug}/jobs/${started.body.id}`, token)).status).toBe('succeeded')
  const first = async (list: string) => (await http.get(`/${repo.slug}/${list}?limit=1`, token)).body[0]
  const fact = await first('facts')
  repo.factConcept = (await http.get(`/${repo.slug}/facts/${fact.id}`, token)).body.concepts[0].id
  Object.assign(repo, {
    fact: fact.id,
    factText: fact.text,
    concept: (await first('concepts')).id,
    investigation: (await first('investigations')).id,
    report: (await first('reports')).id,
  })
  listener = listenOnLoopback('127.0.0.1')
  browser = await launchBrowser()
}, 120_000)
afterAll(async () => {
  await browser?.close()
  listener?.stop()
  await server?.stop()
})

/** An MCP host's OAuth state, in memory; the 2.x SDK also keeps what it discovered. */
class HostProvider extends InMemoryHostProvider {
  constructor(redirectUrl: string) {
    super(redirectUrl, 'MCP host')
  }
  // What the 2.x SDK binds the callback to (the authorization server it discovered).
  discovery?: OAuthDiscoveryState
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state
  }
  discoveryState() {
    return this.discovery
  }
}

/** The person's part: the authorization page in a fresh browser context, sign in, Allow; the redirect's parameters the host's listener caught. */
async function consentInBrowser(url: URL): Promise<URLSearchParams> {
  const redirect = listener.nextRedirect()
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    await page.goto(url.href)
    await signInAndDecide(page, account, 'Allow')
    return (await redirect).searchParams
  } finally {
    await context.close()
  }
}

interface Conversation {
  listTools(): Promise<{
    tools: { name: string; annotations?: Record<string, unknown>; outputSchema?: unknown; description?: string }[]
  }>
  callTool(request: { name: string; arguments: Record<string, unknown> }): Promise<unknown>
  readResource(request: { uri: string }): Promise<{ contents: { uri: string; text?: unknown }[] }>
  listResources(): Promise<{ resources: { uri: string }[] }>
  listPrompts(): Promise<{ prompts: { name: string }[] }>
  close(): Promise<void>
}
interface ToolResult {
  isError?: boolean
  content: { type: string; text?: string; uri?: string }[]
  structuredContent?: Record<string, any>
}

/** Each revision's client: connecting through the SDK's own auth, as a host does. */
const REVISIONS = [
  {
    revision: '2025-11-25',
    sdk: '@modelcontextprotocol/sdk 1.x',
    unauthorized: UnauthorizedV1,
    connect: async (provider: HostProvider): Promise<Conversation> => {
      const client = new ClientV1({ name: 'e2e host', version: '1' })
      await client.connect(new TransportV1(mcpUrl, { authProvider: provider }))
      expect(client.getInstructions()).toContain('list_repositories')
      return client
    },
    finishAuth: (provider: HostProvider, callback: URLSearchParams) =>
      new TransportV1(mcpUrl, { authProvider: provider }).finishAuth(callback.get('code')!),
  },
  {
    revision: '2026-07-28',
    sdk: '@modelcontextprotocol/client 2.x',
    unauthorized: UnauthorizedV2,
    connect: async (provider: HostProvider): Promise<Conversation> => {
      const client = new ClientV2(
        { name: 'e2e host', version: '1' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      )
      await client.connect(new TransportV2(mcpUrl, { authProvider: provider }))
      expect(client.getInstructions()).toContain('list_repositories')
      return client
    },
    // With the whole callback, so that the SDK checks its iss (RFC 9207).
    finishAuth: (provider: HostProvider, callback: URLSearchParams) =>
      new TransportV2(mcpUrl, { authProvider: provider }).finishAuth(callback),
  },
]

/** Every tool, called as a model would on the imported repository, and what its answer must hold. */
const CALLS: { name: string; arguments: () => Record<string, unknown>; check(result: ToolResult): void }[] = [
  {
    name: 'list_repositories',
    arguments: () => ({}),
    check: (r) =>
      expect(r.structuredContent!.items).toContainEqual(
        expect.objectContaining({ id: repo.id, slug: repo.slug, role: 'repoadmin' }),
      ),
  },
  {
    name: 'search',
    arguments: () => ({ repository: repo.slug, query: repo.factText, mode: 'vector', limit: 3 }),
    check: (r) => {
      expect(r.structuredContent).toMatchObject({ mode: 'vector', kind: 'facts' })
      expect(r.structuredContent!.hits).toHaveLength(3)
      // The fact whose very text was asked for comes first.
      expect(r.structuredContent!.hits[0]).toMatchObject({ id: repo.fact, kind: 'fact' })
      expect(r.structuredContent!.hits[0].score).toBeGreaterThan(0.99)
      expect(r.content.filter((c) => c.type === 'resource_link').map((c) => c.uri)[0]).toBe(
        `kgs://${repo.id}/facts/${repo.fact}`,
      )
    },
  },
  {
    name: 'search',
    arguments: () => ({ repository: repo.slug, query: repo.factText }),
    check: (r) => {
      // The default, hybrid: keyword and vector fused; the very text asked for ranks first.
      expect(r.structuredContent).toMatchObject({ mode: 'hybrid', kind: 'facts' })
      expect(r.structuredContent!.hits[0]).toMatchObject({ id: repo.fact, kind: 'fact' })
    },
  },
  {
    name: 'list_facts',
    arguments: () => ({ repository: repo.id, limit: 5 }),
    check: (r) => {
      expect(r.structuredContent!.items).toHaveLength(5)
      expect(r.structuredContent!.items[0].id).toBe(repo.fact)
      expect(typeof r.structuredContent!.next_cursor).toBe('string')
    },
  },
  {
    name: 'list_facts',
    arguments: () => ({ repository: repo.slug, concept_ids: [repo.factConcept], limit: 100 }),
    check: (r) => expect(r.structuredContent!.items.map((f: { id: string }) => f.id)).toContain(repo.fact),
  },
  {
    name: 'related_concepts',
    arguments: () => ({ repository: repo.slug, concept_id: repo.factConcept }),
    check: (r) => {
      expect(r.structuredContent!.total).toBeGreaterThanOrEqual(r.structuredContent!.items.length)
      for (const c of r.structuredContent!.items) expect(c.shared_facts).toBeGreaterThan(0)
    },
  },
  {
    name: 'get_fact',
    arguments: () => ({ repository: repo.slug, fact_id: repo.fact }),
    check: (r) => {
      expect(r.structuredContent).toMatchObject({ id: repo.fact, text: repo.factText })
      expect(r.structuredContent!.sources.length).toBeGreaterThan(0)
    },
  },
  {
    name: 'list_concepts',
    arguments: () => ({ repository: repo.slug }),
    check: (r) => expect(r.structuredContent!.items.length).toBeGreaterThan(0),
  },
  {
    name: 'get_concept',
    arguments: () => ({ repository: repo.slug, concept_id: repo.concept }),
    check: (r) =>
      expect(r.structuredContent).toMatchObject({
        id: repo.concept,
        aliases: expect.any(Array),
        summaries: expect.any(Array),
      }),
  },
  {
    name: 'list_investigations',
    arguments: () => ({ repository: repo.slug }),
    check: (r) => expect(r.structuredContent!.items[0].id).toBe(repo.investigation),
  },
  {
    name: 'get_investigation',
    arguments: () => ({ repository: repo.slug, investigation_id: repo.investigation }),
    check: (r) => expect(r.structuredContent).toMatchObject({ id: repo.investigation, sources: expect.any(Array) }),
  },
  {
    name: 'list_reports',
    arguments: () => ({ repository: repo.slug, top_level: true }),
    check: (r) => expect(r.structuredContent!.items[0].id).toBe(repo.report),
  },
  {
    name: 'get_report',
    arguments: () => ({ repository: repo.slug, report_id: repo.report }),
    check: (r) =>
      expect(r.structuredContent).toMatchObject({
        id: repo.report,
        body_md: expect.any(String),
        annotations: expect.any(Array),
      }),
  },
]

/**
 * add_source of a Markdown text, followed with get_job until it is parsed; export_graph, then
 * get_job until the export is pushed, then browse_registry finds it; then import_graph of it into
 * an empty repository, and once that job is done list_facts sees its facts.
 */
async function exportAndImport(conversation: Conversation, revision: string) {
  const call = async (tool: string, args: Record<string, unknown>) => {
    const result = (await conversation.callTool({ name: tool, arguments: args })) as ToolResult
    expect({ tool, isError: result.isError ?? false }).toEqual({ tool, isError: false })
    return result.structuredContent!
  }
  const finished = async (repository: string, job: { id: string; status: string }) => {
    let state = job
    while (!['succeeded', 'failed', 'cancelled'].includes(state.status)) {
      await Bun.sleep(50)
      state = (await call('get_job', { repository, job_id: job.id })).job
    }
    return state
  }
  const added = await call('add_source', { repository: repo.slug, text: `# Kettles ${revision}\n\nThey boil water.\n` })
  expect(added.job).toMatchObject({ kind: 'ingest_source', status: 'queued' })
  expect(await finished(repo.slug, added.job)).toMatchObject({
    status: 'succeeded',
    result: { source_id: added.source_id, status: 'parsed', kind: 'markdown' },
  })
  const name = `mcp export ${revision}`
  const { job } = await call('export_graph', { repository: repo.slug, name })
  expect(job).toMatchObject({ kind: 'export_graph', status: 'queued', repository_id: repo.id })
  expect((await finished(repo.slug, job)).status).toBe('succeeded')
  const { items } = await call('browse_registry', { q: name })
  expect(items).toEqual([expect.objectContaining({ name, fact_count: 40 })])
  const target = targets[revision]!
  expect((await call('list_facts', { repository: target })).items).toEqual([])
  const imported = (await call('import_graph', { repository: target, graph_id: items[0].id })).job
  expect(imported).toMatchObject({ kind: 'import_graph', status: 'queued' })
  expect((await finished(target, imported)).status).toBe('succeeded')
  expect((await call('list_facts', { repository: target, limit: 100 })).items).toHaveLength(40)
}

/** The tools that build the graph, each called once by writeAndRead. */
const WRITE_TOOLS = [
  'create_source',
  'create_fact',
  'create_concept',
  'link_concept',
  'write_summary',
  'write_synthesis',
  'create_investigation',
  'write_report',
  'merge_concepts',
  'split_concept',
  'update',
  'delete',
]

/**
 * A small graph built through every write tool, each write seen by the read tools (search finds
 * a new fact once its embedding job ran, as it does for one written over REST), then changed and
 * taken apart again with update and delete.
 */
async function writeAndRead(conversation: Conversation, revision: string) {
  const call = async (tool: string, args: Record<string, unknown>) => {
    const result = (await conversation.callTool({
      name: tool,
      arguments: { repository: repo.slug, ...args },
    })) as ToolResult
    expect({ tool, isError: result.isError ?? false, text: result.isError ? result.content[0]!.text : '' }).toEqual({
      tool,
      isError: false,
      text: '',
    })
    expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent!)
    return result
  }
  const links = (result: ToolResult) => result.content.filter((c) => c.type === 'resource_link').map((c) => c.uri)
  const source = (
    await call('create_source', {
      url: `https://example.org/mcp/${revision}`,
      kind: 'web',
      status: 'parsed',
      parsed_title: 'Kettles',
      parsed_text: 'k'.repeat(5000),
    })
  ).structuredContent!
  // The long text just written comes back as a preview.
  expect(source).toMatchObject({ url: `https://example.org/mcp/${revision}`, parsed_title: 'Kettles', fact_count: 0 })
  expect(source.parsed_text.length).toBeLessThan(400)

  const text = `A kettle written over MCP ${revision} boils water quickly.`
  const created = await call('create_fact', { text, sources: [{ source_id: source.id, chunk_index: 2 }] })
  const fact = created.structuredContent!
  expect(fact).toMatchObject({ text, created: true, sources: [{ id: source.id, chunk_index: 2 }], concepts: [] })
  expect(links(created)).toEqual([`kgs://${repo.id}/facts/${fact.id}`])
  expect((await call('get_fact', { fact_id: fact.id })).structuredContent).toMatchObject({ id: fact.id, text })

  const concept = (
    await call('create_concept', { canonical_name: `Kettle ${revision}`, context: 'kitchen', aliases: ['boiler'] })
  ).structuredContent!
  expect((await call('list_concepts', { prefix: `kettle ${revision}` })).structuredContent!.items).toEqual([
    expect.objectContaining({ id: concept.id }),
  ])
  const linked = await call('link_concept', { fact_id: fact.id, concept_id: concept.id })
  expect(linked.structuredContent!.concepts).toEqual([expect.objectContaining({ id: concept.id })])
  expect(links(linked)).toEqual([`kgs://${repo.id}/facts/${fact.id}`, `kgs://${repo.id}/concepts/${concept.id}`])
  expect((await call('list_facts', { concept_ids: [concept.id] })).structuredContent!.items).toEqual([
    expect.objectContaining({ id: fact.id }),
  ])

  const summary = (
    await call('write_summary', {
      concept_id: concept.id,
      sequence_num: 0,
      content: `Kettles [boil water](<fact:${fact.id}>).`,
      covered_fact_ids: [fact.id],
    })
  ).structuredContent!
  const synthesis = (
    await call('write_synthesis', {
      canonical_name: `Kettle ${revision}`,
      content: `About [kettles](<concept:${concept.id}>).`,
      covered_concept_ids: [concept.id],
    })
  ).structuredContent!
  const detail = (await call('get_concept', { concept_id: concept.id })).structuredContent!
  expect(detail).toMatchObject({
    aliases: ['boiler'],
    summaries: [expect.objectContaining({ id: summary.id })],
    synthesis: expect.objectContaining({ id: synthesis.id }),
    fact_count: 1,
  })

  const investigation = (await call('create_investigation', { title: `Kettles ${revision}`, source_ids: [source.id] }))
    .structuredContent!
  expect((await call('get_investigation', { investigation_id: investigation.id })).structuredContent!.sources).toEqual([
    expect.objectContaining({ id: source.id }),
  ])
  const report = await call('write_report', {
    title: `Kettle report ${revision}`,
    body_md: `Kettles boil water [fast](<fact:${fact.id}>).`,
    status: 'annotated',
    annotations: [
      {
        sentence_index: 0,
        sentence_text: 'Kettles boil water fast.',
        fact_id: fact.id,
        score: 0.9,
        posture: 'supports',
      },
    ],
  })
  expect(links(report)).toEqual([`kgs://${repo.id}/reports/${report.structuredContent!.id}`])
  expect(
    (await call('get_report', { report_id: report.structuredContent!.id })).structuredContent!.annotations,
  ).toEqual([expect.objectContaining({ fact_id: fact.id, score: 0.9 })])

  // The new fact is embedded by the job its write queued: vector search finds it by its text.
  const deadline = Date.now() + 30_000
  let hits: { id: string }[] = []
  while (Date.now() < deadline && hits[0]?.id !== fact.id) {
    hits = (await call('search', { query: text, mode: 'vector', limit: 1 })).structuredContent!.hits
    if (hits[0]?.id !== fact.id) await Bun.sleep(100)
  }
  expect(hits[0]?.id).toBe(fact.id)

  const updated = (await call('update', { kind: 'fact', id: fact.id, changes: { status: 'stable', concepts: [] } }))
    .structuredContent!
  expect(updated).toMatchObject({ kind: 'fact', row: { id: fact.id, status: 'stable', concepts: [] } })
  expect(
    (await call('update', { kind: 'summary', id: summary.id, concept_id: concept.id, changes: { is_complete: true } }))
      .structuredContent!.row,
  ).toMatchObject({ is_complete: true })
  expect((await call('get_fact', { fact_id: fact.id })).structuredContent).toMatchObject({
    status: 'stable',
    concepts: [],
  })

  const deleted = (await call('delete', { kind: 'fact', id: fact.id, confirm: true })).structuredContent!
  expect(deleted).toEqual({
    kind: 'fact',
    deleted: {
      id: fact.id,
      removed: { sources: 1, concepts: 0, annotations: 1 },
      broken_citations: expect.arrayContaining([{ kind: 'report', id: report.structuredContent!.id }]),
    },
  })
  const gone = (await conversation.callTool({
    name: 'get_fact',
    arguments: { repository: repo.slug, fact_id: fact.id },
  })) as ToolResult
  expect(gone).toMatchObject({ isError: true, content: [{ type: 'text', text: 'fact not found' }] })
  for (const [kind, id] of [
    ['report', report.structuredContent!.id],
    ['investigation', investigation.id],
    ['synthesis', synthesis.id],
    ['concept', concept.id],
    ['source', source.id],
  ])
    expect((await call('delete', { kind, id, confirm: true })).structuredContent).toMatchObject({
      kind,
      deleted: { id },
    })
}

for (const { revision, sdk, connect, finishAuth, unauthorized } of REVISIONS) {
  describe(`MCP ${revision} with ${sdk} (${BACKEND})`, () => {
    test('discovery from the 401, registration, consent in Chromium; tools/list; every tool on an imported repository; a resource', async () => {
      const provider = new HostProvider(`http://127.0.0.1:${listener.port}/callback`)
      // No token: the SDK meets the 401, discovers, registers and sends the person to the authorization page.
      expect(await rejected(connect(provider))).toThrow(unauthorized)
      const asked = provider.authorizationUrl!
      expect(asked.searchParams.get('resource')).toBe(mcpUrl.href)
      expect(asked.searchParams.get('scope')).toBe('write')
      await finishAuth(provider, await consentInBrowser(asked))
      const claims = JSON.parse(Buffer.from(provider.saved!.access_token.split('.')[1]!, 'base64url').toString())
      expect(claims.aud).toBe(mcpUrl.href)

      const conversation = await connect(provider)
      try {
        const { tools } = await conversation.listTools()
        expect(tools.map((t) => t.name).sort()).toEqual(
          [...new Set(CALLS.map((c) => c.name))]
            .concat(
              'export_graph',
              'import_graph',
              'get_job',
              'browse_registry',
              'add_source',
              'process_source',
              'annotate_report',
            )
            .concat(WRITE_TOOLS)
            .sort(),
        )
        expect(tools.length).toBeLessThanOrEqual(30)
        const destructive = tools.filter((t) => t.annotations!.destructiveHint).map((t) => t.name)
        expect(destructive.sort()).toEqual(['delete', 'merge_concepts', 'split_concept', 'update'])
        for (const tool of tools) {
          expect(Object.keys(tool.annotations ?? {}).sort()).toEqual([
            'destructiveHint',
            'idempotentHint',
            'openWorldHint',
            'readOnlyHint',
          ])
          expect(tool.outputSchema).toMatchObject({ type: 'object' })
          expect(tool.description!.length).toBeLessThan(200)
        }
        for (const call of CALLS) {
          const result = (await conversation.callTool({ name: call.name, arguments: call.arguments() })) as ToolResult
          expect({ tool: call.name, isError: result.isError ?? false }).toEqual({ tool: call.name, isError: false })
          // The same answer as text, for hosts that read only that.
          expect(JSON.parse(result.content[0]!.text!)).toEqual(result.structuredContent!)
          call.check(result)
        }
        await writeAndRead(conversation, revision)
        await exportAndImport(conversation, revision)
        const resource = await conversation.readResource({ uri: `kgs://${repo.id}/facts/${repo.fact}` })
        expect(JSON.parse(String(resource.contents[0]!.text))).toMatchObject({ id: repo.fact, text: repo.factText })
        expect((await conversation.listResources()).resources.map((r) => r.uri)).toContain(
          `kgs://${repo.id}/facts/${repo.fact}`,
        )
        expect((await conversation.listPrompts()).prompts.map((p) => p.name)).toEqual(['about_concept'])
      } finally {
        await conversation.close()
      }
    })

    test('an access token revoked mid-conversation is refreshed by the SDK; a revoked grant ends the conversation', async () => {
      const provider = new HostProvider(`http://127.0.0.1:${listener.port}/callback`)
      expect(await rejected(connect(provider))).toThrow(unauthorized)
      await finishAuth(provider, await consentInBrowser(provider.authorizationUrl!))
      const conversation = await connect(provider)
      const list = async () =>
        ((await conversation.callTool({ name: 'list_repositories', arguments: {} })) as ToolResult).structuredContent!
          .items
      const revoke = (token: string) =>
        fetch(`${server.url}/api/v1/oauth/revoke`, {
          method: 'POST',
          body: new URLSearchParams({ token, client_id: provider.client!.client_id }),
        })
      expect(await list()).toHaveLength(3)
      const first = provider.saved!
      expect((await revoke(first.access_token)).status).toBe(200)
      expect(await list()).toHaveLength(3)
      expect(provider.saved!.access_token).not.toBe(first.access_token)
      expect(provider.saved!.refresh_token).not.toBe(first.refresh_token)

      // The grant goes (its refresh token revokes the whole family): the access token stops at once and cannot be renewed.
      expect((await revoke(provider.saved!.refresh_token!)).status).toBe(200)
      const stale = provider.saved!.access_token
      expect(await rejected(list())).toThrow()
      const refused = await fetch(mcpUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${stale}`, 'content-type': 'application/json' },
        body: '{}',
      })
      expect(refused.status).toBe(401)
      await conversation.close()
    })
  })
}
