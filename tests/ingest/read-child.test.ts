// The ingest job reads a document in a child process of its own (src/ingest/read-child.ts): a
// long PDF whose reading passes a small INGEST_READ_MAX_MEMORY is refused with the limit in the
// reason while the server goes on answering, and a reader killed in the middle of a read fails
// the source with nothing of it written. Both read the same 2,000-page PDF, which takes its
// reader past the limit here and seconds to read.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { blobKeys } from '../helpers/blobs.ts'
import { fixture } from '../helpers/fixture.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { makePdf } from './documents.ts'
import { childProcesses, memoryOfLive } from '../../scripts/lib/load.ts'
import { repositoryBlobPrefix } from '../../src/blobs/store.ts'
import { READ_DOCUMENT_COMMAND } from '../../src/ingest/read-child.ts'

// Above a reader's resident memory at its start, below what it reaches reading the long PDF.
const MAX_MEMORY = 128 * 1024 ** 2
const PAGES = 2000

/** Resident memory of a reader well into the long PDF, and still under MAX_MEMORY. */
const MID_READ_MB = 100

/** The reader processes this process (the server runs in it) has running now. */
const readerPids = () => childProcesses(process.pid, READ_DOCUMENT_COMMAND)

describe(`reading a document in a child process (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }
  let sql: Sql
  let longPdf: Uint8Array

  beforeAll(async () => {
    longPdf = await makePdf({
      pages: Array.from({ length: PAGES }, (_, i) => [`Page ${i + 1} tells of river ${i + 1}.`]),
    })
    ;({
      server,
      http,
      users: { owner },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1', INGEST_READ_MAX_MEMORY: String(MAX_MEMORY) } },
      users: { owner: 'member' },
      repositories: { repo: { by: 'owner', name: 'Read in a child' } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
  })
  afterAll(() => server.stop())

  const upload = async (name: string, type: string, bytes: Uint8Array | string) => {
    const form = new FormData()
    form.append('file', new File([bytes], name, { type }))
    const res = await http.call<{ jobs: { id: string; source_id: string }[] }>('POST', `/${repo.slug}/ingest`, {
      raw: form,
      token: owner.token,
    })
    expect(res.status).toBe(202)
    return res.body.jobs[0]!
  }
  const finish = (id: string) => waitForJob(http, `/${repo.slug}/jobs/${id}`, owner.token)
  /** What the source left: its row's ingest columns, its chunks, bodies and images, and its blobs. */
  const leftOf = async (sourceId: string) => ({
    source: (
      await sql`SELECT status, parsed_text, parsed_markdown, content_hash FROM sources WHERE id = ${sourceId}`
    )[0],
    rows: (
      await sql`SELECT (SELECT count(*)::int FROM source_chunks WHERE source_id = ${sourceId}) AS chunks,
        (SELECT count(*)::int FROM source_bodies WHERE source_id = ${sourceId}) AS bodies,
        (SELECT count(*)::int FROM source_images WHERE source_id = ${sourceId}) AS images`
    )[0],
    blobs: [
      ...(await blobKeys(server.context.blobs, `${repositoryBlobPrefix(repo.id)}ingest/bodies/${sourceId}-`)),
      ...(await blobKeys(server.context.blobs, `${repositoryBlobPrefix(repo.id)}ingest/images/${sourceId}-`)),
    ],
  })
  const nothingLeft = (reason: RegExp) => ({
    source: { status: 'failed', parsed_text: '', parsed_markdown: '', content_hash: '' },
    rows: { chunks: 0, bodies: 0, images: 0 },
    blobs: [],
    reason: expect.stringMatching(reason),
  })

  test('a PDF whose reading passes the memory limit is refused, naming the limit; the server goes on answering and reading', async () => {
    const { id, source_id } = await upload('long.pdf', 'application/pdf', longPdf)
    const job = await finish(id)
    expect(job).toMatchObject({ status: 'failed', attempts: 1 })
    const reason = `reading the document took more than the memory limit of ${MAX_MEMORY} bytes`
    expect(job.error).toBe(reason)
    const [{ status_reason }] = (await sql`SELECT status_reason FROM sources WHERE id = ${source_id}`) as unknown as [
      { status_reason: string },
    ]
    expect({ ...(await leftOf(source_id)), reason: status_reason }).toEqual(nothingLeft(new RegExp(`^${reason}$`)))
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    // A small document is read as ever.
    const small = await upload('notes.md', 'text/markdown', '# Notes\n\nRivers carve valleys.\n')
    expect(await finish(small.id)).toMatchObject({
      status: 'succeeded',
      result: { status: 'parsed', kind: 'markdown' },
    })
    expect(readerPids()).toEqual([])
  })

  test('a reader killed in the middle of a read fails the source with the reason, and nothing of it is written', async () => {
    const { id, source_id } = await upload('long-again.pdf', 'application/pdf', longPdf.slice(0, -1))
    // In the middle of the read: its memory has grown well past a reader's at its start.
    const deadline = Date.now() + 30_000
    let reading: number | undefined
    while (reading === undefined) {
      if (Date.now() > deadline) throw new Error('no reader process got into the read')
      await Bun.sleep(10)
      reading = readerPids().find((pid) => (memoryOfLive(pid)?.rssMB ?? 0) > MID_READ_MB)
    }
    process.kill(reading, 'SIGKILL')
    const job = await finish(id)
    expect(job).toMatchObject({ status: 'failed', attempts: 1 })
    expect(job.error).toMatch(/^the process reading the document was killed \(SIGKILL\) before it answered/)
    const [{ status_reason }] = (await sql`SELECT status_reason FROM sources WHERE id = ${source_id}`) as unknown as [
      { status_reason: string },
    ]
    expect({ ...(await leftOf(source_id)), reason: status_reason }).toEqual(nothingLeft(/killed \(SIGKILL\)/))
  })
})
