// add_source and process_source over HTTP with the official 2.x MCP client, as an agent uses
// them: a web page by URL from a loopback document server (INGEST_FETCH_ALLOW_PRIVATE, so that it
// is reachable) and a Markdown text given inline, each followed with get_job to its end (progress,
// then the result) and read back; then the refusals (a viewer, a read-scope token, a bad URL,
// both or neither of url and text, a text past MEDIA_UPLOAD_MAX_BYTES), each a tool error leaving
// nothing written. process_source draws a source's facts, then every parsed source's, each job
// followed with get_job; a source that is not there or not parsed, and a viewer, are refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import type { Client } from '@modelcontextprotocol/client'
import { repositoryBlobPrefix } from '../../src/blobs/store.ts'
import type { Job } from '../../src/jobs/queue.ts'
import type { Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { blobKeys } from '../helpers/blobs.ts'
import { fixture } from '../helpers/fixture.ts'
import { KETTLES_PAGE } from '../ingest/documents.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'
import type { TestServer } from '../helpers/server.ts'

const MAX_BYTES = 50_000
const MARKDOWN = '# Teapots\n\nA teapot brews tea.\n\n## Glazes\n\nGlazed pots keep no taste.\n'

let docs: ReturnType<typeof Bun.serve>
let docsUrl: string
let server: TestServer
let owner: Account
let viewer: Account
let repo: { id: string; slug: string }
let sql: Sql
let agent: Client

beforeAll(async () => {
  docs = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) =>
      new URL(request.url).pathname === '/kettles.html'
        ? new Response(KETTLES_PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } })
        : new Response('not here', { status: 404 }),
  })
  docsUrl = `http://127.0.0.1:${docs.port}`
  ;({
    server,
    users: { owner, viewer },
    repositories: { repo },
  } = await fixture({
    server: {
      env: { WORKERS: '1', INGEST_FETCH_ALLOW_PRIVATE: 'true', MEDIA_UPLOAD_MAX_BYTES: String(MAX_BYTES) },
    },
    users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
    repositories: { repo: { by: 'owner', name: 'MCP ingest', roles: { viewer: 'viewer' } } },
  }))
  sql = await server.context.pools.forRepository(repo.id)
  agent = await conversation(`${server.url}/api/v1/mcp`, owner.token)
})
afterAll(async () => {
  await agent?.close()
  await server?.stop()
  docs?.stop(true)
})

const addSource = (args: Record<string, unknown>, client = agent) =>
  call(client, 'add_source', { repository: repo.slug, ...args })

/** Calls get_job until the job has ended, as an agent would; every answer seen on the way. */
async function followJob(id: string): Promise<Job[]> {
  const seen: Job[] = []
  const deadline = Date.now() + 30_000
  for (;;) {
    const result = await call(agent, 'get_job', { repository: repo.slug, job_id: id })
    expect(result.isError ?? false).toBe(false)
    const job = result.structuredContent!.job as Job
    seen.push(job)
    if (['succeeded', 'failed', 'cancelled'].includes(job.status)) return seen
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status}`)
    await Bun.sleep(20)
  }
}

/**
 * What a refused call must leave as it was: sources, ingest jobs and the uploads waiting in blob
 * storage. The jobs that earlier sources set off (their processing, its embeddings) may still be
 * queueing more; an add_source queues an ingest_source job.
 */
async function written() {
  const [{ sources }] = (await sql`SELECT count(*)::int AS sources FROM sources`) as unknown as [{ sources: number }]
  const [{ jobs }] = (await server.context.pools
    .system`SELECT count(*)::int AS jobs FROM jobs WHERE repository_id = ${repo.id} AND kind = 'ingest_source'`) as unknown as [
    { jobs: number },
  ]
  const uploads = await blobKeys(server.context.blobs, `${repositoryBlobPrefix(repo.id)}ingest/uploads/`)
  return { sources, jobs, uploads }
}

const source = async (id: string) =>
  (
    await server.request(`/${repo.slug}/sources/${id}`, { headers: { authorization: `Bearer ${owner.token}` } })
  ).json() as Promise<Record<string, any>>

describe(`add_source, process_source and get_job (${BACKEND})`, () => {
  test('tools/list shows add_source with its schemas and annotations', async () => {
    const { tools } = await agent.listTools()
    const tool = tools.find((t) => t.name === 'add_source')!
    expect(tool.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    })
    expect(tool.outputSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['job', 'source_id']) })
  })

  test('a web page by URL: the job is answered queued, get_job follows it to parsed, the Markdown reads back', async () => {
    // Not processed: the source is read back as the parse left it.
    const added = await addSource({ url: `${docsUrl}/kettles.html`, process: false })
    expect(added.isError ?? false).toBe(false)
    expect(JSON.parse(added.content[0]!.text!)).toEqual(added.structuredContent!)
    const { job, source_id } = added.structuredContent as { job: Job; source_id: string }
    expect(job).toMatchObject({ kind: 'ingest_source', status: 'queued', repository_id: repo.id })
    const seen = await followJob(job.id)
    const last = seen.at(-1)!
    expect(last).toMatchObject({
      status: 'succeeded',
      progress: { percent: 100 },
      result: { source_id, status: 'parsed', kind: 'web' },
      error: null,
    })
    expect(await source(source_id)).toMatchObject({
      url: `${docsUrl}/kettles.html`,
      kind: 'web',
      status: 'parsed',
      parsed_title: 'Kettles',
    })
    expect((await source(source_id)).parsed_markdown).toContain('## Kinds')
    // The same URL again is the same source.
    const again = await addSource({ url: `${docsUrl}/kettles.html#kinds` })
    expect(again.structuredContent!.source_id).toBe(source_id)
    expect((await followJob(again.structuredContent!.job.id)).at(-1)!.status).toBe('succeeded')
  })

  test('a Markdown text: kept as an upload of its bytes (upload://sha256/…), parsed, its chunks cited by heading', async () => {
    const added = await addSource({ text: MARKDOWN, process: false })
    expect(added.isError ?? false).toBe(false)
    const { job, source_id } = added.structuredContent as { job: Job; source_id: string }
    expect((await followJob(job.id)).at(-1)).toMatchObject({
      status: 'succeeded',
      result: { source_id, status: 'parsed', kind: 'markdown' },
    })
    const hex = new Bun.CryptoHasher('sha256').update(MARKDOWN).digest('hex')
    const row = await source(source_id)
    expect(row).toMatchObject({
      url: `upload://sha256/${hex}`,
      kind: 'markdown',
      status: 'parsed',
      parsed_title: 'Teapots',
      has_stored_body: true,
    })
    expect(row.parsed_markdown).toContain('## Glazes')
    const chunks = (await (
      await server.request(`/${repo.slug}/sources/${source_id}/chunks`, {
        headers: { authorization: `Bearer ${owner.token}` },
      })
    ).json()) as { heading_path: string[] }[]
    expect(chunks.some((chunk) => chunk.heading_path.includes('Glazes'))).toBe(true)
    // The same text as plain text: the same bytes, so the same source, now read as text.
    const plain = await addSource({ text: MARKDOWN, format: 'text' })
    expect(plain.structuredContent!.source_id).toBe(source_id)
    expect((await followJob(plain.structuredContent!.job.id)).at(-1)).toMatchObject({
      status: 'succeeded',
      result: { status: 'parsed', kind: 'text' },
    })
  })

  test('a URL whose document cannot be had: the job fails with the reason, on the source too', async () => {
    const added = await addSource({ url: `${docsUrl}/missing.html` })
    const { job, source_id } = added.structuredContent as { job: Job; source_id: string }
    const last = (await followJob(job.id)).at(-1)!
    expect(last.status).toBe('failed')
    expect(last.error).toContain('404')
    expect(await source(source_id)).toMatchObject({ status: 'failed' })
  })

  test('refusals are tool errors and write nothing: a viewer, a read-scope token, bad arguments, a text too large', async () => {
    const before = await written()
    const asViewer = await conversation(`${server.url}/api/v1/mcp`, viewer.token)
    const client = await registerClient(server.url, { scope: 'read write' })
    const { access_token } = await obtainTokens(
      server.url,
      client,
      { email: owner.email, password: 'correct horse battery' },
      'read',
    )
    const readOnly = await conversation(`${server.url}/api/v1/mcp`, access_token)
    try {
      const refusals = [
        [
          await addSource({ text: MARKDOWN }, asViewer),
          `permission denied: source:write needs the editor or repoadmin role in repository ${repo.slug}; a repoadmin of it can grant it`,
        ],
        [
          await addSource({ url: `${docsUrl}/kettles.html` }, readOnly),
          'insufficient scope: source:write needs a token with the write scope (this one has read)',
        ],
        [
          await addSource({ url: 'ftp://example.org/file.txt' }),
          'invalid body: "ftp://example.org/file.txt" is not an http(s) URL',
        ],
        [await addSource({ url: 'not a url' }), 'invalid body: "not a url" is not an http(s) URL'],
        [
          await addSource({ url: `${docsUrl}/kettles.html`, text: MARKDOWN }),
          'give either url (a document to fetch) or text (the document itself), not both',
        ],
        [await addSource({}), 'give either url (a document to fetch) or text (the document itself), not both'],
        [
          await addSource({ text: 'x'.repeat(MAX_BYTES + 1) }),
          `the text is ${MAX_BYTES + 1} bytes, more than the limit of ${MAX_BYTES} bytes (MEDIA_UPLOAD_MAX_BYTES)`,
        ],
      ] as const
      for (const [result, message] of refusals)
        expect({ isError: result.isError, text: result.content[0]!.text }).toEqual({
          isError: true,
          text: expect.stringContaining(message),
        })
      // Past the schema's bound: refused by the SDK before the tool runs.
      const schema = await addSource({ text: MARKDOWN, format: 'html' })
      expect(schema.isError).toBe(true)
      expect(schema.content[0]!.text).toContain('Input validation error')
    } finally {
      await asViewer.close()
      await readOnly.close()
    }
    expect(await written()).toEqual(before)
  })

  test('process_source: one source, then the whole repository, each job followed with get_job; its refusals queue nothing', async () => {
    const { tools } = await agent.listTools()
    expect(tools.find((t) => t.name === 'process_source')!.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    })
    const added = await addSource({ text: '# Stoves\n\nA stove heats the kettle quickly.\n', process: false })
    const { job: ingest, source_id } = added.structuredContent as { job: Job; source_id: string }
    expect((await followJob(ingest.id)).at(-1)!.status).toBe('succeeded')
    const facts = async () =>
      (await sql`SELECT count(*)::int AS n FROM fact_sources WHERE source_id = ${source_id}`)[0]!.n as number
    expect(await facts()).toBe(0)

    const one = await call(agent, 'process_source', { repository: repo.slug, source_id })
    expect(one.isError ?? false).toBe(false)
    const { job } = one.structuredContent as { job: Job }
    expect(job).toMatchObject({ kind: 'process_source', status: 'queued', repository_id: repo.id })
    const seen = await followJob(job.id)
    expect(seen.at(-1)).toMatchObject({ status: 'succeeded', result: { sources: 1, facts: { added: 1 } } })
    expect(await facts()).toBe(1)

    const all = await call(agent, 'process_source', { repository: repo.slug })
    expect(all.isError ?? false).toBe(false)
    const whole = (await followJob(all.structuredContent!.job.id)).at(-1)!
    expect(whole).toMatchObject({ status: 'succeeded', result: { facts: { added: 0 } } })
    expect((whole.result as { sources: number }).sources).toBeGreaterThan(1)

    const before = await written()
    const asViewer = await conversation(`${server.url}/api/v1/mcp`, viewer.token)
    const failed = (await sql`SELECT id::text FROM sources WHERE status = 'failed' LIMIT 1`)[0]!.id as string
    try {
      const refusals = [
        [
          await call(agent, 'process_source', { repository: repo.slug, source_id: crypto.randomUUID() }),
          'source not found',
        ],
        [
          await call(agent, 'process_source', { repository: repo.slug, source_id: failed }),
          'the source failed and has nothing to process',
        ],
        [
          await call(asViewer, 'process_source', { repository: repo.slug, source_id }),
          `permission denied: fact:write needs the editor or repoadmin role in repository ${repo.slug}`,
        ],
      ] as const
      for (const [result, message] of refusals)
        expect({ isError: result.isError, text: result.content[0]!.text }).toEqual({
          isError: true,
          text: expect.stringContaining(message),
        })
    } finally {
      await asViewer.close()
    }
    expect(await written()).toEqual(before)
  })
})
