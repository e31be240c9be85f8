// The registry routes of docs/spec/bundle.md §7 over HTTP against the real server, on the selected
// backend: push (dedup, owner, headers, limits, broken uploads), list, get, download, delete.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, registerAccount, type Account } from '../helpers/api.ts'
import { startTestServer, untilSysadmin, type TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { generateBundle, type GenerateResult } from '../../scripts/gen-bundle.ts'
import { countGraphs } from '../../src/registry/store.ts'
import { filenameSlug } from '../../src/registry/routes.ts'
import {
  call,
  expectRecordShape,
  headersOf,
  push,
  rawRequest,
  sha,
  smallBundle,
  startUpload,
  whenDirectory,
} from './helpers.ts'
import { blobKeys } from '../helpers/blobs.ts'

const MAX_BYTES = 1024 * 1024

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let otherAdmin: Account
let member: Account
let dir: string
let bundle: GenerateResult
let bundleBytes: Uint8Array

const tmpFiles = () => readdirSync(join(server.dataDir, 'blobs', '.tmp'))
const rows = () => countGraphs(server.context.pools.system)
/** The blob keys, temporary files and index rows, to compare before and after a failed push. */
const storage = async () => ({ keys: await blobKeys(server.context.blobs), tmp: tmpFiles(), rows: await rows() })

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, otherAdmin, member },
  } = await fixture({
    server: { env: { REGISTRY_MAX_BYTES: String(MAX_BYTES) } },
    users: { admin: 'sysadmin', otherAdmin: 'sysadmin', member: 'member' },
  }))
  dir = mkdtempSync(join(tmpdir(), 'kgs-registry-'))
  bundle = await generateBundle(join(dir, 'bundle.json.gz'), { facts: 40, dimensions: 4 })
  bundleBytes = readFileSync(bundle.path)
})

afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe(`registry push (${BACKEND})`, () => {
  test('a push is stored whole: 201 new, the record echoes every header, the download is byte-identical', async () => {
    const name = `Push ${crypto.randomUUID().slice(0, 8)}`
    const before = await blobKeys(server.context.blobs)
    const res = await push(
      server,
      admin.token,
      bundleBytes,
      headersOf(bundle, name, { 'x-graph-description': 'a generated graph', 'x-graph-tags': '["physics","test"]' }),
    )
    expect(res.status).toBe(201)
    expect(res.body).toEqual({ graph_id: expect.any(String), new: true })
    expect(res.headers.get('location')).toBe(`/api/v1/graphs/${res.body.graph_id}`)
    expect(await blobKeys(server.context.blobs)).toEqual(
      [...before, `registry/graphs/${res.body.graph_id}.json.gz`].sort(),
    )

    const record = await call(server, 'GET', `/api/v1/graphs/${res.body.graph_id}`, admin.token)
    expect(record.status).toBe(200)
    expectRecordShape(record.body)
    expect(record.body).toEqual({
      id: res.body.graph_id,
      name,
      description: 'a generated graph',
      owner: admin.email,
      owner_id: admin.id,
      tags: ['physics', 'test'],
      sha256: bundle.sha256,
      schema_version: 2,
      bytes: bundleBytes.byteLength,
      source_count: bundle.counts.sources,
      fact_count: 40,
      concept_count: bundle.counts.concepts,
      summary_count: bundle.counts.concept_summaries,
      synthesis_count: bundle.counts.concept_syntheses,
      report_count: bundle.counts.reports,
      investigation_count: bundle.counts.investigations,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: record.body.created_at,
    })

    const download = await fetch(`${server.url}/api/v1/graphs/${res.body.graph_id}/bundle`, {
      headers: { authorization: `Bearer ${admin.token}` },
    })
    expect(download.status).toBe(200)
    expect(download.headers.get('content-type')).toBe('application/gzip')
    expect(download.headers.get('content-length')).toBe(String(bundleBytes.byteLength))
    expect(download.headers.get('content-disposition')).toBe(`attachment; filename="${filenameSlug(name)}.json.gz"`)
    expect(filenameSlug(name)).toMatch(/^push-[0-9a-f]{8}$/)
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bundleBytes))).toBe(true)
  })

  test('a re-push of the same (name, sha256) answers 200 new:false and stores nothing; another sha256 or name is a new graph', async () => {
    const name = `Dedup ${crypto.randomUUID().slice(0, 8)}`
    const first = await push(server, admin.token, bundleBytes, headersOf(bundle, name))
    expect(first.status).toBe(201)
    const stored = await storage()

    const again = await push(server, otherAdmin.token, bundleBytes, headersOf(bundle, name))
    expect(again.status).toBe(200)
    expect(again.body).toEqual({ graph_id: first.body.graph_id, new: false })
    expect(await storage()).toEqual(stored)
    // The first pusher stays the owner.
    expect((await call(server, 'GET', `/api/v1/graphs/${first.body.graph_id}`, admin.token)).body).toMatchObject({
      owner: admin.email,
      owner_id: admin.id,
    })

    const otherHash = await push(
      server,
      admin.token,
      bundleBytes,
      headersOf(bundle, name, { 'x-graph-sha256': sha(name) }),
    )
    expect(otherHash.status).toBe(201)
    expect(otherHash.body.graph_id).not.toBe(first.body.graph_id)
    const otherName = await push(server, admin.token, bundleBytes, headersOf(bundle, `${name} (copy)`))
    expect(otherName.status).toBe(201)
    expect(await rows()).toBe(stored.rows + 2)
    expect((await blobKeys(server.context.blobs)).length).toBe(stored.keys.length + 2)
  })

  test('without X-Graph-SHA256 nothing can be matched: every push is new, with sha256 null; optional headers default', async () => {
    const name = `No hash ${crypto.randomUUID().slice(0, 8)}`
    const a = await push(server, admin.token, smallBundle(name), { 'x-graph-name': name })
    const b = await push(server, admin.token, smallBundle(name), { 'x-graph-name': name })
    expect([a.status, b.status]).toEqual([201, 201])
    expect(a.body.graph_id).not.toBe(b.body.graph_id)
    const record = (await call(server, 'GET', `/api/v1/graphs/${a.body.graph_id}`, admin.token)).body
    expect(record).toMatchObject({
      name,
      description: '',
      tags: [],
      sha256: null,
      schema_version: null,
      source_count: 0,
      fact_count: 0,
      investigation_count: 0,
    })
  })

  test('each count header lands in its own field', async () => {
    const name = `Counts ${crypto.randomUUID().slice(0, 8)}`
    const headers = ['source', 'fact', 'concept', 'summary', 'synthesis', 'report', 'investigation'].map((kind, i) => [
      `x-graph-${kind}-count`,
      String((i + 1) * 11),
    ])
    const res = await push(server, admin.token, smallBundle(name), {
      'x-graph-name': name,
      ...Object.fromEntries(headers),
    })
    expect((await call(server, 'GET', `/api/v1/graphs/${res.body.graph_id}`, admin.token)).body).toMatchObject({
      source_count: 11,
      fact_count: 22,
      concept_count: 33,
      summary_count: 44,
      synthesis_count: 55,
      report_count: 66,
      investigation_count: 77,
    })
  })

  test('the owner is the pusher by e-mail, as Go records it, with owner_id their id; X-Graph-Owner changes nothing', async () => {
    const name = `Owner ${crypto.randomUUID().slice(0, 8)}`
    const res = await push(server, otherAdmin.token, smallBundle(name), {
      'x-graph-name': name,
      'x-graph-owner': admin.email,
    })
    expect(res.status).toBe(201)
    expect((await call(server, 'GET', `/api/v1/graphs/${res.body.graph_id}`, admin.token)).body).toMatchObject({
      owner: otherAdmin.email,
      owner_id: otherAdmin.id,
    })
  })

  test('non-ASCII names and descriptions travel as raw UTF-8 header bytes and survive a push and a get', async () => {
    const name = `Café Zürich 東京 ${crypto.randomUUID().slice(0, 8)}`
    const description = 'Ørsted — «naïve» 😀 façade'
    const res = await rawRequest(
      server,
      'POST',
      '/api/v1/graphs',
      [
        ['Authorization', `Bearer ${admin.token}`],
        ['Content-Type', 'application/gzip'],
        ['X-Graph-Name', name],
        ['X-Graph-Description', description],
        ['X-Graph-Tags', '["géologie","東京"]'],
      ],
      smallBundle(name),
    )
    expect(res.status).toBe(201)
    const record = await call(server, 'GET', `/api/v1/graphs/${res.body.graph_id}`, admin.token)
    expect(record.body).toMatchObject({ name, description, tags: ['géologie', '東京'] })
    const download = await fetch(`${server.url}/api/v1/graphs/${res.body.graph_id}/bundle`, {
      headers: { authorization: `Bearer ${admin.token}` },
    })
    expect(download.headers.get('content-disposition')).toBe(
      `attachment; filename="cafe-zurich-${name.slice(-8)}.json.gz"`,
    )
    await download.arrayBuffer()

    // Bytes that are not UTF-8 (here latin1 é) are refused, not stored as mojibake.
    const latin1 = await rawRequest(
      server,
      'POST',
      '/api/v1/graphs',
      [
        ['Authorization', `Bearer ${admin.token}`],
        ['Content-Type', 'application/gzip'],
        ['X-Graph-Name', Buffer.from('caf\xe9', 'latin1')],
      ],
      smallBundle('latin1'),
    )
    expectError(latin1, 400, 'invalid header: X-Graph-Name: expected UTF-8 text')
  })

  test('malformed headers are 400 naming the header, and nothing is stored', async () => {
    const stored = await storage()
    const bad = async (headers: Record<string, string>, message: string | RegExp) =>
      expectError(
        await push(server, admin.token, smallBundle('bad'), { 'x-graph-name': 'Bad headers', ...headers }),
        400,
        message,
      )
    expectError(
      await push(server, admin.token, smallBundle('bad'), {}),
      400,
      'invalid header: X-Graph-Name: required: the graph name',
    )
    await bad({ 'x-graph-name': '   ' }, 'invalid header: X-Graph-Name: required: the graph name')
    await bad({ 'x-graph-name': 'x'.repeat(256) }, /^invalid header: X-Graph-Name: expected at most 255 characters/)
    await bad(
      { 'x-graph-tags': 'physics' },
      'invalid header: X-Graph-Tags: expected a JSON array of strings of 1-100 characters (got "physics")',
    )
    await bad({ 'x-graph-tags': '{"a":1}' }, /^invalid header: X-Graph-Tags: expected a JSON array/)
    await bad({ 'x-graph-tags': '["a",2]' }, /^invalid header: X-Graph-Tags: expected a JSON array/)
    await bad({ 'x-graph-tags': '[""]' }, /^invalid header: X-Graph-Tags: expected a JSON array/)
    await bad(
      { 'x-graph-tags': JSON.stringify(Array.from({ length: 65 }, (_, i) => `t${i}`)) },
      /^invalid header: X-Graph-Tags: expected at most 64 tags/,
    )
    await bad(
      { 'x-graph-fact-count': '1.5' },
      'invalid header: X-Graph-Fact-Count: expected a non-negative integer (got "1.5")',
    )
    await bad(
      { 'x-graph-source-count': '-1' },
      'invalid header: X-Graph-Source-Count: expected a non-negative integer (got "-1")',
    )
    await bad(
      { 'x-graph-investigation-count': 'many' },
      'invalid header: X-Graph-Investigation-Count: expected a non-negative integer (got "many")',
    )
    await bad(
      { 'x-graph-sha256': 'abc' },
      'invalid header: X-Graph-SHA256: expected 64 lowercase hexadecimal digits (got "abc")',
    )
    await bad(
      { 'x-graph-sha256': sha('upper').toUpperCase() },
      /^invalid header: X-Graph-SHA256: expected 64 lowercase hexadecimal digits/,
    )
    await bad(
      { 'x-graph-schema-version': '0' },
      'invalid header: X-Graph-Schema-Version: expected a positive integer (got "0")',
    )
    expect(await storage()).toEqual(stored)
  })

  test('bodies that are not a gzip bundle: 415 for another type or non-gzip bytes, 400 when empty', async () => {
    const stored = await storage()
    const headers = { 'x-graph-name': 'Not a bundle' }
    expectError(
      await push(server, admin.token, JSON.stringify({ a: 1 }), headers, 'application/json'),
      415,
      'unsupported Content-Type "application/json"; expected application/gzip',
    )
    expectError(
      await push(server, admin.token, '{"schema_version":2}', headers),
      415,
      'request body is not gzip: push a .json.gz bundle',
    )
    expectError(
      await push(server, admin.token, new Uint8Array([0x1f]), headers),
      415,
      'request body is not gzip: push a .json.gz bundle',
    )
    expectError(
      await push(server, admin.token, undefined, headers),
      400,
      'request body is empty: push a .json.gz bundle',
    )
    expect(await storage()).toEqual(stored)
  })

  test('a body over REGISTRY_MAX_BYTES is 413, declared or streamed, and leaves nothing behind', async () => {
    const stored = await storage()
    const oversized = new Uint8Array(MAX_BYTES + 1)
    oversized.set([0x1f, 0x8b])
    const message = `bundle exceeds the registry's limit of ${MAX_BYTES} bytes`
    // Declared in Content-Length: refused before reading.
    expectError(await push(server, admin.token, oversized, { 'x-graph-name': 'Too large' }), 413, message)
    // Streamed without a length: refused as the limit is passed, the partial blob removed.
    const chunks = [oversized.subarray(0, 600_000), oversized.subarray(600_000)]
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const chunk = chunks.shift()
        if (chunk) controller.enqueue(chunk)
        else controller.close()
      },
    })
    expectError(await push(server, admin.token, stream, { 'x-graph-name': 'Too large' }), 413, message)
    expect(await storage()).toEqual(stored)
    // Exactly the limit is fine.
    const exact = oversized.subarray(0, MAX_BYTES)
    const res = await push(server, admin.token, exact, { 'x-graph-name': 'Exactly the limit' })
    expect(res.status).toBe(201)
    expect((await call(server, 'GET', `/api/v1/graphs/${res.body.graph_id}`, admin.token)).body.bytes).toBe(MAX_BYTES)
  })

  test('a client that aborts mid-upload leaves nothing: no blob, no temporary file, no row', async () => {
    const stored = await storage()
    expect(stored.tmp).toEqual([])
    const socket = await startUpload(
      server,
      [
        ['Authorization', `Bearer ${admin.token}`],
        ['X-Graph-Name', 'Aborted'],
      ],
      500_000,
      bundleBytes.subarray(0, 4096),
    )
    // The server is writing the body: its temporary file exists.
    const tmp = join(server.dataDir, 'blobs', '.tmp')
    await whenDirectory(tmp, () => tmpFiles().length > 0, 'the upload to start')
    socket.destroy()
    await whenDirectory(tmp, () => tmpFiles().length === 0, 'the broken upload to be cleaned up')
    expect(await storage()).toEqual(stored)
  })
})

describe(`registry list (${BACKEND})`, () => {
  test('q matches name or description case-insensitively and literally; tag matches one tag', async () => {
    const run = crypto.randomUUID().slice(0, 8)
    const pushed: Record<string, string> = {}
    for (const [name, description, tags] of [
      [`Alpha ${run}`, 'rocks and minerals', ['geo']],
      [`Beta ${run}`, `about ALPHA ${run} too`, ['bio', 'geo']],
      [`Gamma ${run} 100%`, 'percent', []],
      [`Delta ${run}`, 'nothing in common', ['bio']],
    ] as const) {
      const res = await push(server, admin.token, smallBundle(name), {
        'x-graph-name': name,
        'x-graph-description': description,
        'x-graph-tags': JSON.stringify(tags),
      })
      expect(res.status).toBe(201)
      pushed[name.split(' ')[0]!] = res.body.graph_id
    }
    const names = async (query: string) => {
      const res = await call(server, 'GET', `/api/v1/graphs?${query}`, admin.token)
      expect(res.status).toBe(200)
      for (const record of res.body) expectRecordShape(record)
      return res.body.map((g: { name: string }) => g.name.split(' ')[0])
    }
    expect(await names(`q=${encodeURIComponent(`alpha ${run}`)}`)).toEqual(['Alpha', 'Beta'])
    expect(await names(`q=${run}`)).toEqual(['Alpha', 'Beta', 'Gamma', 'Delta'])
    // % and _ are not wildcards.
    expect(await names(`q=${encodeURIComponent(`${run} 100%`)}`)).toEqual(['Gamma'])
    expect(await names(`q=${encodeURIComponent(`${run} 1_0`)}`)).toEqual([])
    expect(await names(`q=${encodeURIComponent(`${run}%`)}`)).toEqual([])
    expect(await names(`q=${run}&tag=geo`)).toEqual(['Alpha', 'Beta'])
    expect(await names(`q=${run}&tag=bio`)).toEqual(['Beta', 'Delta'])
    expect(await names(`q=${run}&tag=Bio`)).toEqual([])
  })

  test('limit and cursor: walking the Link headers gives every graph once, in (created_at, id) order', async () => {
    const run = crypto.randomUUID().slice(0, 8)
    const ids: string[] = []
    for (let i = 0; i < 7; i++) {
      const res = await push(server, admin.token, smallBundle(`${run}-${i}`), {
        'x-graph-name': `Page ${run} ${i}`,
        'x-graph-tags': `["${run}"]`,
      })
      ids.push(res.body.graph_id)
    }
    const seen: string[] = []
    let path: string | undefined = `/api/v1/graphs?tag=${run}&limit=3`
    let pages = 0
    while (path) {
      const res = await call(server, 'GET', path, admin.token)
      expect(res.status).toBe(200)
      pages++
      expect(res.body.length).toBe(pages < 3 ? 3 : 1)
      seen.push(...res.body.map((g: { id: string }) => g.id))
      const link = res.headers.get('link')
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined
      if (path) expect(path).toContain(`tag=${run}`)
    }
    expect(pages).toBe(3)
    expect(seen).toEqual(ids)

    // All of them on one page: no Link.
    const all = await call(server, 'GET', `/api/v1/graphs?tag=${run}&limit=7`, admin.token)
    expect(all.body.length).toBe(7)
    expect(all.headers.get('link')).toBeNull()
  })

  test('bad list parameters are 400 naming the field', async () => {
    expectError(
      await call(server, 'GET', '/api/v1/graphs?limit=0', admin.token),
      400,
      /^invalid query: limit: expected an integer from 1 to 500/,
    )
    expectError(await call(server, 'GET', '/api/v1/graphs?limit=501', admin.token), 400, /^invalid query: limit/)
    expectError(
      await call(server, 'GET', '/api/v1/graphs?cursor=nonsense', admin.token),
      400,
      'invalid query: cursor: expected a cursor from a Link header',
    )
    expectError(
      await call(server, 'GET', `/api/v1/graphs?q=${'x'.repeat(256)}`, admin.token),
      400,
      /^invalid query: q: expected at most 255 characters/,
    )
  })
})

describe(`registry list in the Go client's form (${BACKEND})`, () => {
  const run = crypto.randomUUID().slice(0, 8)
  const COUNT = 22
  /** Graph ids in push order, oldest first. */
  const ids: string[] = []
  const goList = async (query: string) => {
    const res = await call(server, 'GET', `/api/v1/graphs?${query}`, admin.token)
    expect(res.status).toBe(200)
    expect(res.headers.get('link')).toBeNull()
    expect(Object.keys(res.body)).toEqual(['graphs', 'total'])
    for (const record of res.body.graphs ?? []) expectRecordShape(record)
    return res.body as { graphs: { id: string }[] | null; total: number }
  }
  const idsOf = (page: { graphs: { id: string }[] | null }) => page.graphs?.map((g) => g.id)
  /** The ids newest first, as Go orders them. */
  const newest = () => ids.toReversed()

  beforeAll(async () => {
    for (let i = 0; i < COUNT; i++) {
      const res = await push(server, admin.token, smallBundle(`go ${run} ${i}`), {
        'x-graph-name': `Go ${run} ${i}`,
        'x-graph-tags': JSON.stringify([run]),
      })
      expect(res.status).toBe(201)
      ids.push(res.body.graph_id)
    }
  })

  test('offset pages newest first, with the total of matching graphs; past the end graphs is null', async () => {
    expect(await goList(`tag=${run}&limit=5&offset=0`)).toEqual({ graphs: expect.any(Array), total: COUNT })
    expect(idsOf(await goList(`tag=${run}&limit=5&offset=0`))).toEqual(newest().slice(0, 5))
    expect(idsOf(await goList(`tag=${run}&limit=5&offset=5`))).toEqual(newest().slice(5, 10))
    expect(idsOf(await goList(`tag=${run}&limit=5&offset=20`))).toEqual(newest().slice(20))
    expect(await goList(`tag=${run}&limit=5&offset=${COUNT}`)).toEqual({ graphs: null, total: COUNT })
    expect(await goList(`tag=no-such-tag-${run}&offset=0`)).toEqual({ graphs: null, total: 0 })
    // Without offset: kgs's own form, oldest first.
    const own = await call(server, 'GET', `/api/v1/graphs?tag=${run}&limit=3`, admin.token)
    expect(own.body.map((g: { id: string }) => g.id)).toEqual(ids.slice(0, 3))
    expect(own.headers.get('link')).toContain('cursor=')
  })

  test('limit: 1 to 200 as asked; 0 or less, over 200 or none means 20', async () => {
    expect(idsOf(await goList(`tag=${run}&limit=1&offset=0`))).toEqual(newest().slice(0, 1))
    expect(idsOf(await goList(`tag=${run}&limit=200&offset=0`))).toEqual(newest())
    for (const limit of ['limit=0&', 'limit=-3&', 'limit=201&', 'limit=100000&', '']) {
      const page = await goList(`tag=${run}&${limit}offset=0`)
      expect({ limit, ids: idsOf(page), total: page.total }).toEqual({
        limit,
        ids: newest().slice(0, 20),
        total: COUNT,
      })
    }
  })

  test('tag takes precedence over q; q alone matches name or description', async () => {
    expect(await goList(`tag=${run}&q=matches-nothing-${run}&limit=200&offset=0`)).toMatchObject({ total: COUNT })
    const page = await goList(`q=${encodeURIComponent(`go ${run} 1`)}&offset=0`)
    // Go 1, Go 10..19, newest first.
    expect(page.total).toBe(11)
    expect(idsOf(page)).toEqual([...ids.slice(10, 20).toReversed(), ids[1]!])
  })

  test('a bad offset or limit is 400 naming it; offset with a cursor too', async () => {
    expectError(
      await call(server, 'GET', '/api/v1/graphs?offset=-1', admin.token),
      400,
      /^invalid query: offset: expected a non-negative integer/,
    )
    expectError(await call(server, 'GET', '/api/v1/graphs?offset=two', admin.token), 400, /^invalid query: offset/)
    expectError(
      await call(server, 'GET', '/api/v1/graphs?offset=0&limit=ten', admin.token),
      400,
      /^invalid query: limit: expected an integer/,
    )
    const own = await call(server, 'GET', `/api/v1/graphs?tag=${run}&limit=3`, admin.token)
    const cursor = new URL(/<([^>]+)>/.exec(own.headers.get('link')!)![1]!, server.url).searchParams.get('cursor')
    expectError(
      await call(server, 'GET', `/api/v1/graphs?offset=0&cursor=${cursor}`, admin.token),
      400,
      /^invalid query: cursor: not with offset/,
    )
  })
})

describe(`registry delete (${BACKEND})`, () => {
  test('the owner and sysadmins delete; others get 403; the row goes, then the blob', async () => {
    const owned = async (token: string, name: string) =>
      (await push(server, token, smallBundle(name), { 'x-graph-name': name })).body.graph_id as string
    const first = await owned(admin.token, `Delete ${crypto.randomUUID()}`)
    const second = await owned(admin.token, `Delete ${crypto.randomUUID()}`)

    expectError(
      await call(server, 'DELETE', `/api/v1/graphs/${first}`, member.token),
      403,
      'permission denied: only the owner of a graph or a sysadmin may delete it',
    )

    // A sysadmin deletes another's graph: 200 with the record, then it is gone everywhere.
    const byAdmin = await call(server, 'DELETE', `/api/v1/graphs/${first}`, otherAdmin.token)
    expect(byAdmin.status).toBe(200)
    expectRecordShape(byAdmin.body)
    expect(byAdmin.body).toMatchObject({ id: first, owner: admin.email, owner_id: admin.id })
    expectError(await call(server, 'GET', `/api/v1/graphs/${first}`, admin.token), 404, 'graph not found')
    expectError(await call(server, 'GET', `/api/v1/graphs/${first}/bundle`, admin.token), 404, 'graph not found')
    expect(await blobKeys(server.context.blobs)).not.toContain(`registry/graphs/${first}.json.gz`)
    expectError(await call(server, 'DELETE', `/api/v1/graphs/${first}`, admin.token), 404, 'graph not found')

    // The owner deletes its graph by ownership alone: no longer sysadmin, it still may.
    const demoted = await http.call('DELETE', '/api/v1/admin/users/roles', {
      token: otherAdmin.token,
      body: { user_id: admin.id, role: 'sysadmin', domain: 'system' },
    })
    expect(demoted.status).toBe(200)
    try {
      const byOwner = await call(server, 'DELETE', `/api/v1/graphs/${second}`, admin.token)
      expect(byOwner.status).toBe(200)
      expect(byOwner.body.id).toBe(second)
      expect(await blobKeys(server.context.blobs)).not.toContain(`registry/graphs/${second}.json.gz`)
    } finally {
      expect(
        (
          await http.put(
            '/api/v1/admin/users/roles',
            { user_id: admin.id, role: 'sysadmin', domain: 'system' },
            otherAdmin.token,
          )
        ).status,
      ).toBe(200)
    }
  })
})

describe(`registry errors (${BACKEND})`, () => {
  const unknown = '00000000-0000-4000-8000-000000000000'
  const routes = (id: string) => [
    ['GET', '/api/v1/graphs'],
    ['GET', `/api/v1/graphs/${id}`],
    ['GET', `/api/v1/graphs/${id}/bundle`],
    ['DELETE', `/api/v1/graphs/${id}`],
  ]

  test('no token: 401 with WWW-Authenticate on every route; a bad token too', async () => {
    for (const [method, path] of [['POST', '/api/v1/graphs'], ...routes(unknown)] as [string, string][]) {
      const res = await call(server, method, path)
      expectError(res, 401, 'authentication required')
      expect(res.headers.get('www-authenticate')).toStartWith('Bearer resource_metadata=')
      const bad = await call(server, method, path, 'not.a.token')
      expectError(
        bad,
        401,
        'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
      )
      expect(bad.headers.get('www-authenticate')).toContain('error="invalid_token"')
    }
    // A push without a token is refused before its headers or body are looked at.
    expectError(await push(server, undefined, smallBundle('anonymous'), {}), 401, 'authentication required')
  })

  test('a member may pull but not push; a user without member: 403 for push, list, get, download', async () => {
    const graph = (
      await push(server, admin.token, smallBundle('forbidden'), { 'x-graph-name': `Forbidden ${crypto.randomUUID()}` })
    ).body.graph_id
    expectError(
      await push(server, member.token, smallBundle('member'), { 'x-graph-name': 'Member' }),
      403,
      'permission denied: registry:push needs the sysadmin role on this server; a sysadmin can grant it',
    )
    for (const [method, path] of routes(graph).slice(0, 2) as [string, string][])
      expect((await call(server, method, path, member.token)).status).toBe(200)
    expect(
      (
        await fetch(`${server.url}/api/v1/graphs/${graph}/bundle`, {
          headers: { authorization: `Bearer ${member.token}` },
        })
      ).status,
    ).toBe(200)
    const roleless = await registerAccount(http)
    expect(
      (
        await http.call('DELETE', '/api/v1/admin/users/roles', {
          token: admin.token,
          body: { user_id: roleless.id, role: 'member', domain: 'system' },
        })
      ).status,
    ).toBe(200)
    for (const [method, path] of routes(graph).slice(0, 3) as [string, string][])
      expectError(
        await call(server, method, path, roleless.token),
        403,
        'permission denied: registry:pull needs the member or sysadmin role on this server; a sysadmin can grant it',
      )
  })

  test('a malformed id is 400, an unknown one 404', async () => {
    for (const [method, path] of routes('not-a-uuid').slice(1) as [string, string][]) {
      expectError(
        await call(server, method, path, admin.token),
        400,
        'invalid path parameter: id: expected a UUID (got "not-a-uuid")',
      )
    }
    for (const [method, path] of routes(unknown).slice(1) as [string, string][])
      expectError(await call(server, method, path, admin.token), 404, 'graph not found')
  })

  test('wrong methods are 405 with Allow', async () => {
    const res = await call(server, 'PUT', '/api/v1/graphs', admin.token)
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toContain('POST')
  })
})

describe(`bundles past Bun's default body cap of 128 MB (${BACKEND})`, () => {
  test('a 129 MiB push and a 129 MiB import upload reach their routes and are stored whole', async () => {
    const big = await startTestServer()
    const path = join(dir, 'big.json.gz')
    try {
      const size = 129 * 1024 * 1024
      const bytes = new Uint8Array(size)
      bytes.set([0x1f, 0x8b])
      await Bun.write(path, bytes)
      const bigHttp = api(big.url)
      const owner = await registerAccount(bigHttp)
      expect((await big.promote(owner.email)).code).toBe(0)
      await untilSysadmin(big, owner.token)

      const pushed = await push(big, owner.token, Bun.file(path), { 'x-graph-name': 'Large' })
      expect(pushed.status).toBe(201)
      expect((await call(big, 'GET', `/api/v1/graphs/${pushed.body.graph_id}`, owner.token)).body.bytes).toBe(size)

      const repo = await bigHttp.post('/api/v1/repositories', { name: 'Large upload' }, owner.token)
      const upload = await fetch(`${big.url}/${repo.body.slug}/import-graph`, {
        method: 'POST',
        body: Bun.file(path),
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/gzip' },
      })
      expect(upload.status).toBe(202)
      const [key] = await blobKeys(big.context.blobs, 'uploads/')
      expect((await big.context.blobs.stat(key!))?.bytes).toBe(size)
    } finally {
      await big.stop()
      rmSync(path, { force: true })
    }
  })
})
