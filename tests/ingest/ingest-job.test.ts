// Adding documents end to end on the selected backend: POST /{repoID}/ingest with URLs of a
// loopback document server (INGEST_FETCH_ALLOW_PRIVATE, so that it is reachable) and with
// uploaded files, the ingest_source job run by a worker thread, and the source, its chunks and
// its body and images read back (and exported), and the hostile documents (a scan, a bomb, 2,000
// pages, text in other encodings) through the same route and job. Every document is made here. The address checks themselves (the setting
// off) run the job's kind directly, with only the loopback server's address let through.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { rejectionOf } from '../helpers/promises.ts'
import type { TestServer } from '../helpers/server.ts'
import { gunzipSync } from 'node:zlib'
import { makeBombPdf, makeEncryptedPdf, makePdf, SMALL_PNG } from './documents.ts'
import type { Job } from '../../src/jobs/queue.ts'
import type { JobServices, RunningJob } from '../../src/jobs/kinds.ts'
import { ingestSourceJob } from '../../src/ingest/ingest-job.ts'
import { DEFAULT_READ_LIMITS } from '../../src/ingest/types.ts'
import { registerSource } from '../../src/graph/write/sources.ts'
import { createLogger } from '../../src/log.ts'
import { repositoryBlobPrefix } from '../../src/blobs/store.ts'
import { blobKeys } from '../helpers/blobs.ts'

// Above the size of the long PDF (LONG_PAGES pages), so that it is read; the tests past the limit send more.
const MAX_BYTES = 600_000
const PAGE = `<!doctype html><html><head><title>Kettles</title><meta property="article:published_time" content="2024-03-05T10:00:00Z"></head><body>
<article><h1>Kettles</h1><p>A kettle boils water for tea. The whistle tells when the water boils, and a good kettle pours without dripping.</p>
<img src="/pictures/kettle.png" alt="A steaming kettle" width="300" height="200">
<h2>Kinds</h2><p>Electric kettles heat with an element; stove-top kettles sit on a flame or a hob. Both are common in kitchens everywhere.</p></article>
</body></html>`
const MARKDOWN = '# Teapots\n\nA teapot brews tea.\n\n## Glazes\n\nGlazed pots keep no taste.\n'
const TEXT = 'Cups hold tea.\n\nSaucers catch drips.\n'
const ETAG = '"kettles-1"'

let docs: ReturnType<typeof Bun.serve>
let docsUrl: string
/** Each request the document server had: its path and the If-None-Match it sent. */
const requests: { path: string; ifNoneMatch: string | null }[] = []
let pdf: Uint8Array
/** What /picture.pdf serves: a PDF with an image, changed by a test to see the image replaced. */
let picturePdf: Uint8Array
const documents: Record<string, { bytes: Uint8Array; type: string }> = {}
const LONG_PAGES = 2000
/** The line of page `n` (from 1) of the long PDF. */
const longLine = (n: number) => `Page ${n} tells of river ${n}.`

/** `text` in windows-1252: Latin-1 but for the few characters it puts at 0x80 to 0x9f. */
function windows1252(text: string): Uint8Array {
  const high: Record<string, number> = { '€': 0x80, '–': 0x96, '—': 0x97, '‘': 0x91, '’': 0x92 }
  return Uint8Array.from([...text], (char) => high[char] ?? char.charCodeAt(0))
}
const ascii = (text: string) => new TextEncoder().encode(text)
/** 日本語 ("Japanese") in Shift_JIS. */
const NIHONGO_SJIS = [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea]
/** Resolved when the test ends: the slow server's answer never comes before. */
let release: () => void = () => {}

beforeAll(async () => {
  pdf = await makePdf({ pages: [['Page one says hello.'], ['Page two says goodbye.']], title: 'Two pages' })
  picturePdf = await makePdf({ pages: [['A picture of a kettle.']], image: { png: SMALL_PNG, page: 1 } })
  const pdfs = {
    '/scan.pdf': await makePdf({ title: 'Scan', pages: [[], []], image: { png: SMALL_PNG, page: 2 } }),
    // 80 MiB of spaces, deflated into one stream: past the reader's maxStreamBytes.
    '/bomb.pdf': await makeBombPdf(80),
    '/long.pdf': await makePdf({ pages: Array.from({ length: LONG_PAGES }, (_, i) => [longLine(i + 1)]) }),
  }
  for (const [path, bytes] of Object.entries(pdfs)) documents[path] = { bytes, type: 'application/pdf' }
  documents['/latin.html'] = {
    bytes: windows1252(
      '<!doctype html><html><head><title>Café crème</title></head><body><p>A café crème – naïve, but déjà vu.</p></body></html>',
    ),
    type: 'text/html; charset=windows-1252',
  }
  documents['/japanese.html'] = {
    bytes: Uint8Array.from([
      ...ascii('<!doctype html><html><head><meta charset="shift_jis"><title>'),
      ...NIHONGO_SJIS,
      ...ascii('</title></head><body><p>'),
      ...NIHONGO_SJIS,
      ...ascii(' is the word for the language.</p></body></html>'),
    ]),
    // No charset here: the page's meta tag says it.
    type: 'text/html',
  }
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  docs = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      requests.push({ path, ifNoneMatch: request.headers.get('if-none-match') })
      switch (path) {
        case '/kettles.html':
          if (request.headers.get('if-none-match') === ETAG)
            return new Response(null, { status: 304, headers: { etag: ETAG } })
          return new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8', etag: ETAG } })
        case '/paper.pdf':
          return new Response(pdf, { headers: { 'content-type': 'application/pdf' } })
        case '/picture.pdf':
          return new Response(picturePdf, { headers: { 'content-type': 'application/pdf' } })
        case '/teapots.md':
          return new Response(MARKDOWN, { headers: { 'content-type': 'text/markdown' } })
        case '/cups.txt':
          return new Response(TEXT, { headers: { 'content-type': 'text/plain' } })
        case '/huge.txt':
          return new Response('x'.repeat(MAX_BYTES + 1), { headers: { 'content-type': 'text/plain' } })
        case '/redirect-private':
          return new Response(null, { status: 302, headers: { location: 'http://10.1.2.3/secret' } })
        case '/slow':
          await held
          return new Response('too late', { headers: { 'content-type': 'text/plain' } })
        default: {
          const document = documents[path]
          if (document) return new Response(document.bytes, { headers: { 'content-type': document.type } })
          return new Response('not here', { status: 404 })
        }
      }
    },
  })
  docsUrl = `http://127.0.0.1:${docs.port}`
})
afterAll(() => {
  release()
  docs.stop(true)
})

describe(`adding documents (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let viewer: Account
  let repo: { id: string; slug: string }
  let sql: Sql

  beforeAll(async () => {
    ;({
      server,
      http,
      users: { owner, viewer },
      repositories: { repo },
    } = await fixture({
      server: {
        env: {
          WORKERS: '1',
          INGEST_FETCH_ALLOW_PRIVATE: 'true',
          MEDIA_FETCH_MAX_BYTES: String(MAX_BYTES),
          MEDIA_UPLOAD_MAX_BYTES: String(MAX_BYTES),
          MEDIA_FETCH_TIMEOUT: '1s',
        },
      },
      users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
      repositories: { repo: { by: 'owner', name: 'Ingest', roles: { viewer: 'viewer' } } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
  })
  afterAll(() => server.stop())

  // Not processed unless a test asks: what is checked here is the parse, which processing would
  // move on to `processed` meanwhile (tests/extract/process-job.test.ts follows the chain).
  const ingest = (body: object, token = owner.token) =>
    http.post<{ jobs: { id: string; source_id: string; status: string }[] }>(
      `/${repo.slug}/ingest`,
      { process: false, ...body },
      token,
    )
  const upload = (
    files: { name: string; type: string; bytes: Uint8Array | string }[],
    fields: Record<string, string> = {},
    token = owner.token,
  ) => {
    const form = new FormData()
    for (const [name, value] of Object.entries({ process: 'false', ...fields })) form.append(name, value)
    for (const file of files) form.append('file', new File([file.bytes], file.name, { type: file.type }))
    return http.call<{ jobs: { id: string; source_id: string; status: string }[] }>('POST', `/api/v1/ingest`, {
      raw: form,
      token,
      headers: { 'x-repository-id': repo.id },
    })
  }
  const finish = (id: string) => waitForJob(http, `/${repo.slug}/jobs/${id}`, owner.token)
  /** Adds one URL and waits for its job. */
  const added = async (url: string): Promise<{ job: Job; sourceId: string }> => {
    const res = await ingest({ url })
    expect(res.status).toBe(202)
    expect(res.body.jobs).toHaveLength(1)
    return { job: await finish(res.body.jobs[0]!.id), sourceId: res.body.jobs[0]!.source_id }
  }
  const source = async (id: string) => (await http.get(`/${repo.slug}/sources/${id}`, owner.token)).body
  const chunks = async (id: string) =>
    (await http.get(`/${repo.slug}/sources/${id}/chunks?limit=100`, owner.token)).body as {
      chunk_index: number
      heading_path: string[]
      page_start: number | null
      page_end: number | null
      text: string
    }[]
  const ingestColumns = async (id: string) =>
    (await sql`SELECT status, status_reason, etag, content_hash FROM sources WHERE id = ${id}`)[0]!
  const sourceCount = async () => (await sql`SELECT count(*)::int AS n FROM sources`)[0]!.n as number
  /** The source's chunks, every page of them (following Link). */
  const allChunks = async (id: string) => {
    const all: Awaited<ReturnType<typeof chunks>> = []
    for (let path: string | undefined = `/${repo.slug}/sources/${id}/chunks?limit=100`; path; ) {
      const res: { status: number; headers: Headers; body: typeof all } = await http.get(path, owner.token)
      expect(res.status).toBe(200)
      all.push(...res.body)
      const next: string | undefined = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
      path = next ? next.replace(/^https?:\/\/[^/]+/, '') : undefined
    }
    return all
  }
  /** A stored medium as the API serves it. */
  const served = (path: string) =>
    fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${owner.token}` } })
  const blobsUnder = (what: 'bodies' | 'images', sourceId: string) =>
    blobKeys(server.context.blobs, `${repositoryBlobPrefix(repo.id)}ingest/${what}/${sourceId}-`)
  const imageRows = async (sourceId: string) => [
    ...(await sql<{ id: string; page_number: number; storage_key: string }[]>`
      SELECT id, page_number, storage_key FROM source_images WHERE source_id = ${sourceId} ORDER BY position`),
  ]
  const written = async () =>
    (
      await sql`SELECT (SELECT count(*)::int FROM sources) AS sources, (SELECT count(*)::int FROM source_chunks) AS chunks, (SELECT count(*)::int FROM source_bodies) AS bodies`
    )[0]

  test('a web page by URL: parsed, chunked, its body kept, its ETag kept; the job answers 202 at once', async () => {
    const res = await ingest({ url: `${docsUrl}/kettles.html` })
    expect(res.status).toBe(202)
    expect(res.body.jobs[0]!.status).toBe('queued')
    // Readable at once, with its status.
    expect(['pending', 'fetched', 'parsed']).toContain((await source(res.body.jobs[0]!.source_id)).status)
    const job = await finish(res.body.jobs[0]!.id)
    expect(job).toMatchObject({ kind: 'ingest_source', status: 'succeeded', result: { status: 'parsed', kind: 'web' } })
    const id = res.body.jobs[0]!.source_id
    const row = await source(id)
    expect(row).toMatchObject({
      url: `${docsUrl}/kettles.html`,
      kind: 'web',
      status: 'parsed',
      parsed_title: 'Kettles',
      published_at: '2024-03-05',
      has_stored_body: true,
    })
    expect(row.parsed_markdown).toContain('## Kinds')
    // Its image by URL: the job does not fetch it (fetch_media would), so it has no stored bytes.
    expect(row.images).toEqual([
      expect.objectContaining({
        kind: 'inline',
        position: 0,
        url: `${docsUrl}/pictures/kettle.png`,
        alt_text: 'A steaming kettle',
        width: 300,
        height: 200,
        bytes: null,
      }),
    ])
    expectError(await http.get(`/${repo.slug}/images/${row.images[0].id}`, owner.token), 404, /image not stored/)
    expect(row.body).toMatchObject({ content_type: 'text/html', bytes: new TextEncoder().encode(PAGE).byteLength })
    const stored = await chunks(id)
    expect(stored.length).toBeGreaterThan(0)
    expect(stored.map((chunk) => chunk.chunk_index)).toEqual(stored.map((_, i) => i))
    expect(stored.some((chunk) => chunk.heading_path.includes('Kinds'))).toBe(true)
    expect(await ingestColumns(id)).toMatchObject({ status: 'parsed', status_reason: '', etag: ETAG })
    expect((await ingestColumns(id)).content_hash).toMatch(/^[0-9a-f]{64}$/)
    // The original bytes are served back.
    const body = await fetch(`${server.url}/${repo.slug}/sources/${id}/body`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect(await body.text()).toBe(PAGE)
  })

  test('the same URL again (host in capitals, a fragment) is the same source; unchanged, it costs one conditional request (304) and changes nothing', async () => {
    const before = await sourceCount()
    const { sourceId } = await added(`${docsUrl}/kettles.html`)
    const first = await source(sourceId)
    const fetchesBefore = requests.length
    const again = await ingest({ url: `${docsUrl.replace('http://', 'HTTP://')}/kettles.html#kinds` })
    expect(again.status).toBe(202)
    expect(again.body.jobs[0]!.source_id).toBe(sourceId)
    const job = await finish(again.body.jobs[0]!.id)
    expect(job).toMatchObject({ status: 'succeeded', result: { status: 'not_modified' } })
    expect(requests.slice(fetchesBefore)).toEqual([{ path: '/kettles.html', ifNoneMatch: ETAG }])
    expect(await source(sourceId)).toEqual(first)
    expect(await sourceCount()).toBe(before)
  })

  test('a PDF, a Markdown file and a text file by URL, several in one request', async () => {
    const res = await ingest({
      urls: [`${docsUrl}/paper.pdf`, `${docsUrl}/teapots.md`, `${docsUrl}/cups.txt`],
      process: false,
    })
    expect(res.status).toBe(202)
    expect(res.body.jobs).toHaveLength(3)
    const jobs = await Promise.all(res.body.jobs.map((job) => finish(job.id)))
    expect(jobs.map((job) => job.error)).toEqual([null, null, null])
    expect(jobs.map((job) => job.status)).toEqual(['succeeded', 'succeeded', 'succeeded'])
    const [paper, teapots, cups] = await Promise.all(res.body.jobs.map((job) => source(job.source_id)))
    expect(paper).toMatchObject({ kind: 'pdf', status: 'parsed', parsed_title: 'Two pages' })
    expect(paper.parsed_text).toContain('Page two says goodbye.')
    const paperChunks = await chunks(res.body.jobs[0]!.source_id)
    // Both short pages in one chunk, which says so.
    expect(paperChunks.map((chunk) => [chunk.page_start, chunk.page_end])).toEqual([[1, 2]])
    expect(teapots).toMatchObject({ kind: 'markdown', status: 'parsed', parsed_title: 'Teapots' })
    expect((await chunks(res.body.jobs[1]!.source_id)).some((chunk) => chunk.heading_path.includes('Glazes'))).toBe(
      true,
    )
    expect(cups).toMatchObject({ kind: 'text', status: 'parsed' })
    expect(cups.parsed_text).toContain('Saucers catch drips.')
    // process: recorded on the job.
    const [{ params }] = (await server.context.pools
      .system`SELECT params FROM jobs WHERE id = ${res.body.jobs[0]!.id}`) as unknown as [{ params: unknown }]
    expect(params).toMatchObject({ process: false })
  })

  test('uploads: streamed, named upload://sha256/<hex>; the same bytes again are the same source', async () => {
    const res = await upload([
      { name: 'teapots.md', type: 'text/markdown', bytes: MARKDOWN },
      { name: 'paper.pdf', type: 'application/pdf', bytes: pdf },
    ])
    expect(res.status).toBe(202)
    expect(res.body.jobs).toHaveLength(2)
    expect((await Promise.all(res.body.jobs.map((job) => finish(job.id)))).map((job) => job.status)).toEqual([
      'succeeded',
      'succeeded',
    ])
    const hex = new Bun.CryptoHasher('sha256').update(MARKDOWN).digest('hex')
    const teapots = await source(res.body.jobs[0]!.source_id)
    expect(teapots).toMatchObject({
      url: `upload://sha256/${hex}`,
      kind: 'markdown',
      status: 'parsed',
      parsed_title: 'Teapots',
      has_stored_body: true,
    })
    expect(await source(res.body.jobs[1]!.source_id)).toMatchObject({ kind: 'pdf', status: 'parsed' })
    const before = await sourceCount()
    const again = await upload([{ name: 'other-name.md', type: 'text/markdown', bytes: MARKDOWN }])
    expect(again.body.jobs[0]!.source_id).toBe(res.body.jobs[0]!.source_id)
    expect((await finish(again.body.jobs[0]!.id)).status).toBe('succeeded')
    expect(await sourceCount()).toBe(before)
    // One body blob: the replaced upload's bytes are gone.
    const keys = await sql`SELECT storage_key FROM source_bodies WHERE source_id = ${res.body.jobs[0]!.source_id}`
    expect(keys).toHaveLength(1)
    expect(await server.context.blobs.get(keys[0]!.storage_key)).toEqual(new TextEncoder().encode(MARKDOWN))
  })

  test('a server too slow, a body past the limit: the job and the source fail with the reason, nothing parsed', async () => {
    const slow = await added(`${docsUrl}/slow`)
    expect(slow.job.status).toBe('failed')
    expect(slow.job.error).toMatch(/no complete answer within 1000 ms/)
    expect(await ingestColumns(slow.sourceId)).toMatchObject({
      status: 'failed',
      status_reason: slow.job.error,
      content_hash: '',
    })
    const huge = await added(`${docsUrl}/huge.txt`)
    expect(huge.job.status).toBe('failed')
    expect(huge.job.error).toMatch(new RegExp(`more than the limit of ${MAX_BYTES}`))
    for (const id of [slow.sourceId, huge.sourceId]) {
      expect(await source(id)).toMatchObject({
        status: 'failed',
        status_reason: expect.stringMatching(new RegExp(`within 1000 ms|limit of ${MAX_BYTES}`)),
        parsed_text: '',
        parsed_markdown: '',
        has_stored_body: false,
        body: null,
      })
      expect(await chunks(id)).toEqual([])
    }
  })

  test('files kgs will not read: an encrypted PDF, bytes that are not their type: failed at once, with the reason, nothing kept', async () => {
    const res = await upload([
      { name: 'locked.pdf', type: 'application/pdf', bytes: makeEncryptedPdf() },
      { name: 'fake.pdf', type: 'application/pdf', bytes: Uint8Array.from({ length: 400 }, (_, i) => (i * 7) % 32) },
    ])
    expect(res.status).toBe(202)
    const [locked, fake] = await Promise.all(res.body.jobs.map((job) => finish(job.id)))
    expect(locked).toMatchObject({ status: 'failed', attempts: 1 })
    expect(locked!.error).toMatch(/encrypt/i)
    expect(fake).toMatchObject({ status: 'failed', attempts: 1 })
    for (const job of res.body.jobs) {
      expect(await source(job.source_id)).toMatchObject({ status: 'failed', parsed_text: '', has_stored_body: false })
      expect(await chunks(job.source_id)).toEqual([])
    }
  })

  test('bad requests: each a clear error, nothing written', async () => {
    const before = await written()
    expectError(await upload([{ name: 'empty.txt', type: 'text/plain', bytes: '' }]), 400, /empty \(0 bytes\)/)
    expectError(
      await upload([{ name: 'big.txt', type: 'text/plain', bytes: 'x'.repeat(MAX_BYTES + 1) }]),
      413,
      new RegExp(`exceeds the limit of ${MAX_BYTES} bytes`),
    )
    // The good file of a request that is refused is not kept either.
    expectError(
      await upload([
        { name: 'ok.txt', type: 'text/plain', bytes: 'fine' },
        { name: 'empty.txt', type: 'text/plain', bytes: '' },
      ]),
      400,
      /empty/,
    )
    expectError(await ingest({ url: 'ftp://example.org/file' }), 400, /not an http\(s\) URL/)
    expectError(await ingest({ urls: [`${docsUrl}/a`, 'not a url'] }), 400, /not an http\(s\) URL/)
    expectError(await ingest({ urls: [] }), 400, /invalid body: urls/)
    expectError(
      await ingest({ urls: Array.from({ length: 101 }, (_, i) => `${docsUrl}/${i}`) }),
      400,
      /invalid body: urls/,
    )
    expectError(await ingest({ url: `${docsUrl}/a`, process: 'yes' }), 400, /invalid body: process/)
    expectError(await upload([{ name: 'x.txt', type: 'text/plain', bytes: 'x' }], { process: 'maybe' }), 400, /process/)
    expectError(
      await http.call('POST', `/${repo.slug}/ingest`, {
        raw: 'url=x',
        token: owner.token,
        headers: { 'content-type': 'text/plain' },
      }),
      415,
    )
    expect(await written()).toEqual(before)
    // Every upload kept is a source's body: a refused one left no bytes behind.
    const kept = await blobKeys(server.context.blobs, `${repositoryBlobPrefix(repo.id)}ingest/uploads/`)
    const bodies = (await sql`SELECT storage_key FROM source_bodies WHERE storage_key LIKE '%/ingest/uploads/%'`).map(
      (row) => row.storage_key as string,
    )
    expect(kept).toEqual(bodies.sort())
  })

  test("a viewer's attempt is 403 and writes nothing; a viewer reads the chunks", async () => {
    const before = await written()
    expectError(await ingest({ url: `${docsUrl}/cups.txt` }, viewer.token), 403, /permission/)
    expectError(await upload([{ name: 'x.txt', type: 'text/plain', bytes: 'x' }], {}, viewer.token), 403, /permission/)
    expect(await written()).toEqual(before)
    const [{ id }] = (await sql`SELECT id FROM sources WHERE status = 'parsed' LIMIT 1`) as unknown as [{ id: string }]
    const res = await http.get(`/${repo.slug}/sources/${id}/chunks?limit=1`, viewer.token)
    expect(res.status).toBe(200)
    expect(res.body).toHaveLength(1)
    expect(Number(res.headers.get('x-total-count'))).toBeGreaterThanOrEqual(1)
    expectError(
      await http.get(`/${repo.slug}/sources/${crypto.randomUUID()}/chunks`, viewer.token),
      404,
      /source not found/,
    )
  })

  test('a PDF with an image: the image is a source image, served and exported; a re-parse replaces it and its bytes; deleting the source deletes them', async () => {
    const url = `${docsUrl}/picture.pdf`
    const first = await added(url)
    expect(first.job).toMatchObject({ status: 'succeeded', result: { kind: 'pdf', images: 1 } })
    const { sourceId } = first
    const row = await source(sourceId)
    expect(row.images).toEqual([
      expect.objectContaining({
        kind: 'inline',
        position: 0,
        page_number: 1,
        url: '',
        width: 3,
        height: 2,
        bytes: SMALL_PNG.byteLength,
        content_type: 'image/png',
      }),
    ])
    const imageId: string = row.images[0].id
    const image = await served(`/${repo.slug}/images/${imageId}`)
    expect(image.headers.get('content-type')).toBe('image/png')
    // pdf.js decodes it to pixels, and kgs encodes them as PNG again: the same PNG.
    expect(Buffer.from(await image.arrayBuffer()).equals(Buffer.from(SMALL_PNG))).toBe(true)
    const [firstRow] = await imageRows(sourceId)
    expect(await blobsUnder('images', sourceId)).toEqual([firstRow!.storage_key])

    // An export of the repository carries its row and its bytes.
    const started = await http.post(`/${repo.slug}/export-graph`, {}, owner.token)
    expect(started.status).toBe(202)
    expect(await finish(started.body.id)).toMatchObject({ status: 'succeeded' })
    const download = await served(`/${repo.slug}/export-graph/download`)
    const bundle = JSON.parse(gunzipSync(Buffer.from(await download.arrayBuffer())).toString())
    const sourceIdx = bundle.sources.find((exported: { url: string }) => exported.url === url).idx
    const exported = bundle.source_images.filter(
      (exported: { source_idx: number }) => exported.source_idx === sourceIdx,
    )
    expect(exported).toEqual([
      expect.objectContaining({
        kind: 'inline',
        page_number: 1,
        width: 3,
        height: 2,
        content_type: 'image/png',
        image_ref: expect.any(String),
      }),
    ])
    expect(bundle.images[exported[0].image_ref]).toEqual({
      content_type: 'image/png',
      data: Buffer.from(SMALL_PNG).toString('base64'),
    })

    // The document changes (the image moves to page 2): the same image row (its id, its URL),
    // its bytes under the new job's key, the previous bytes deleted.
    const original = picturePdf
    picturePdf = await makePdf({
      pages: [['Two pages now.'], ['The picture moved.']],
      image: { png: SMALL_PNG, page: 2 },
    })
    expect((await added(url)).job.status).toBe('succeeded')
    const moved = await imageRows(sourceId)
    expect(moved).toEqual([{ id: imageId, page_number: 2, storage_key: expect.any(String) }])
    expect(moved[0]!.storage_key).not.toBe(firstRow!.storage_key)
    expect(await blobsUnder('images', sourceId)).toEqual([moved[0]!.storage_key])
    // Without an image: no row, no bytes.
    picturePdf = await makePdf({ pages: [['No picture any more.']] })
    expect((await added(url)).job).toMatchObject({ status: 'succeeded', result: { images: 0 } })
    expect(await imageRows(sourceId)).toEqual([])
    expect(await blobsUnder('images', sourceId)).toEqual([])

    // Deleted: its image and body go, rows and bytes.
    picturePdf = original
    expect((await added(url)).job).toMatchObject({ status: 'succeeded', result: { images: 1 } })
    expect(await blobsUnder('images', sourceId)).toHaveLength(1)
    const deleted = await http.call('DELETE', `/${repo.slug}/sources/${sourceId}`, { token: owner.token })
    expect(deleted.status).toBe(200)
    expect(deleted.body.removed).toMatchObject({ images: 1, body: 1 })
    expect(await imageRows(sourceId)).toEqual([])
    expect(await blobsUnder('images', sourceId)).toEqual([])
    expect(await blobsUnder('bodies', sourceId)).toEqual([])
  })

  test('a PDF with no text layer (a scan) is kept: parsed with its image, its status_reason saying it has no text and that kgs does no OCR', async () => {
    const { job, sourceId } = await added(`${docsUrl}/scan.pdf`)
    expect(job).toMatchObject({ status: 'succeeded', result: { status: 'parsed', kind: 'pdf', images: 1 } })
    expect(await source(sourceId)).toMatchObject({
      status: 'parsed',
      status_reason: expect.stringMatching(/no text layer.*does not do OCR/),
      parsed_title: 'Scan',
      parsed_text: '',
      has_stored_body: true,
      images: [expect.objectContaining({ page_number: 2, content_type: 'image/png' })],
    })
    expect((job.result as { warnings: string[] }).warnings).toEqual([(await ingestColumns(sourceId)).status_reason])
  })

  test('a decompression bomb inside a PDF, by URL and uploaded: refused at once, the source failed with the reason, nothing else written, no bytes left', async () => {
    const before = await written()
    const byUrl = await added(`${docsUrl}/bomb.pdf`)
    const res = await upload([{ name: 'bomb.pdf', type: 'application/pdf', bytes: documents['/bomb.pdf']!.bytes }])
    expect(res.status).toBe(202)
    const uploaded = { job: await finish(res.body.jobs[0]!.id), sourceId: res.body.jobs[0]!.source_id }
    for (const { job, sourceId } of [byUrl, uploaded]) {
      expect(job).toMatchObject({ status: 'failed', attempts: 1 })
      expect(job.error).toContain(`inflates past ${DEFAULT_READ_LIMITS.maxStreamBytes} bytes (a decompression bomb?)`)
      expect(await source(sourceId)).toMatchObject({
        status: 'failed',
        status_reason: job.error,
        parsed_text: '',
        parsed_markdown: '',
        has_stored_body: false,
        body: null,
        images: [],
      })
      expect(await blobsUnder('bodies', sourceId)).toEqual([])
      expect(await blobsUnder('images', sourceId)).toEqual([])
    }
    expect(await written()).toEqual({ ...before, sources: before!.sources + 2 })
    // The upload's bytes are gone too: every upload kept is a source's body.
    const kept = await blobKeys(server.context.blobs, `${repositoryBlobPrefix(repo.id)}ingest/uploads/`)
    const bodies = await sql`SELECT storage_key FROM source_bodies WHERE storage_key LIKE '%/ingest/uploads/%'`
    expect(kept).toEqual(bodies.map((row) => row.storage_key as string).sort())
  })

  test('a 2,000-page PDF through the job: parsed, every page in the chunk that cites it', async () => {
    const { job, sourceId } = await added(`${docsUrl}/long.pdf`)
    expect(job).toMatchObject({ status: 'succeeded', result: { status: 'parsed', kind: 'pdf' } })
    const row = await source(sourceId)
    expect(row.parsed_text).toContain(longLine(LONG_PAGES))
    expect(row.parsed_markdown).toContain(`<!-- page ${LONG_PAGES} -->`)
    const stored = await allChunks(sourceId)
    expect(stored.map((chunk) => chunk.chunk_index)).toEqual(stored.map((_, i) => i))
    expect(stored[0]!.page_start).toBe(1)
    expect(stored.at(-1)!.page_end).toBe(LONG_PAGES)
    // Page ranges follow each other, and each page's line is in the chunk whose range holds it.
    for (let i = 1; i < stored.length; i++) expect(stored[i]!.page_start).toBe(stored[i - 1]!.page_end! + 1)
    for (let page = 1; page <= LONG_PAGES; page++) {
      const chunk = stored.find((chunk) => chunk.page_start! <= page && page <= chunk.page_end!)
      expect(chunk?.text).toContain(longLine(page))
    }
  })

  test('text in another encoding: windows-1252 named by the Content-Type, Shift_JIS by a meta tag, both decoded; the body kept as sent', async () => {
    const latin = await added(`${docsUrl}/latin.html`)
    expect(latin.job).toMatchObject({ status: 'succeeded', result: { warnings: [] } })
    expect(await source(latin.sourceId)).toMatchObject({
      parsed_title: 'Café crème',
      parsed_text: expect.stringContaining('A café crème – naïve, but déjà vu.'),
    })
    const body = await served(`/${repo.slug}/sources/${latin.sourceId}/body`)
    expect(Buffer.from(await body.arrayBuffer()).equals(Buffer.from(documents['/latin.html']!.bytes))).toBe(true)
    const japanese = await added(`${docsUrl}/japanese.html`)
    expect(japanese.job.status).toBe('succeeded')
    expect(await source(japanese.sourceId)).toMatchObject({
      parsed_title: '日本語',
      parsed_text: expect.stringContaining('日本語 is the word for the language.'),
    })
  })

  test('with the address check on: a private address, and a redirect to one, are refused; the source fails with a reason that names no address', async () => {
    const run = async (url: string) => {
      const { id } = await registerSource(sql, { url, kind: 'web' })
      const job: RunningJob = {
        id: crypto.randomUUID(),
        repositoryId: repo.id,
        params: { source_id: id, process: true },
        attempt: 1,
        signal: new AbortController().signal,
        progress: () => {},
        repository: async () => sql,
      }
      const config = {
        ...server.context.config,
        baseUrl: server.context.baseUrl,
        ingestFetch: { allowPrivate: false, allowedAddresses: ['127.0.0.1'], maxBytes: MAX_BYTES, timeoutMs: 1000 },
      }
      const services = { blobs: server.context.blobs, config, log: createLogger('silent') } as unknown as JobServices
      return { id, error: (await rejectionOf(ingestSourceJob.run(job, services))) as Error }
    }
    const fetchesBefore = requests.length
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://10.0.0.7/', `${docsUrl}/redirect-private`]) {
      const { id, error } = await run(url)
      expect(error.message).toMatch(/the URL was refused: only http\(s\) URLs .* public addresses only/)
      expect(error.message).not.toMatch(/10\.|169\.254/)
      expect(await ingestColumns(id)).toMatchObject({
        status: 'failed',
        status_reason: error.message,
        content_hash: '',
      })
      expect(await chunks(id)).toEqual([])
    }
    // Only the redirect's first hop, which is let through, reached a server.
    expect(requests.slice(fetchesBefore).map((request) => request.path)).toEqual(['/redirect-private'])
  })
})
