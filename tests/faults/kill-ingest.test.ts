// SIGKILL while a `kgs serve` runs an ingest_source job (in the middle of downloading the
// document): the source is left as it was added (pending, nothing parsed, no chunks, no body),
// and once its lease runs out the next instance retries the job and finishes the source.
import { describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, registerAccount } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { readStoppedInstance, serveInstances } from '../helpers/imports.ts'
import { startServerProcess } from '../helpers/server.ts'

const PAGE =
  '<!doctype html><html><head><title>Interrupted</title></head><body><article><h1>Interrupted</h1><p>The first download of this page never ends; the second one does.</p></article></body></html>'

describe(`SIGKILL during an ingest (${BACKEND})`, () => {
  const instances = serveInstances('kgs-ingest-kill-')

  test('leaves no partial source, and the retried job finishes it', async () => {
    let downloads = 0
    let firstDownload: () => void = () => {}
    const started = new Promise<void>((resolve) => {
      firstDownload = resolve
    })
    const docs = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      idleTimeout: 0,
      fetch() {
        if (++downloads > 1) return new Response(PAGE, { headers: { 'content-type': 'text/html' } })
        // Half the page, then nothing: the job is inside its download when it is killed.
        firstDownload()
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode(PAGE.slice(0, 40)))
            },
          }),
          { headers: { 'content-type': 'text/html' } },
        )
      },
    })
    const env = { ...instances.env, INGEST_FETCH_ALLOW_PRIVATE: 'true', MEDIA_FETCH_TIMEOUT: '60s' }
    const url = `http://127.0.0.1:${docs.port}/interrupted.html`
    try {
      const kgs = await startServerProcess(env)
      const http = api(kgs.url)
      const owner = await registerAccount(http)
      const repo = (await http.post('/api/v1/repositories', { name: 'Killed ingest' }, owner.token)).body as {
        id: string
        slug: string
      }
      // Not processed: what is checked is the source the retried ingest leaves.
      const added = await http.post(`/${repo.slug}/ingest`, { url, process: false }, owner.token)
      expect(added.status).toBe(202)
      const { id: jobId, source_id: sourceId } = added.body.jobs[0]
      await started
      expect(await kgs.stop('SIGKILL')).not.toBe(0)

      const left = await readStoppedInstance(env, async (pools) => {
        const sql = await pools.forRepository(repo.id)
        const [source] =
          await sql`SELECT status, parsed_text, parsed_markdown, has_stored_body, content_hash FROM sources WHERE id = ${sourceId}`
        const [{ chunks }] = (await sql`SELECT count(*)::int AS chunks FROM source_chunks`) as unknown as [
          { chunks: number },
        ]
        const [{ bodies }] = (await sql`SELECT count(*)::int AS bodies FROM source_bodies`) as unknown as [
          { bodies: number },
        ]
        const [job] = await pools.system`SELECT status, attempts FROM jobs WHERE id = ${jobId}`
        return { source, chunks, bodies, job }
      })
      expect(left).toEqual({
        source: { status: 'pending', parsed_text: '', parsed_markdown: '', has_stored_body: false, content_hash: '' },
        chunks: 0,
        bodies: 0,
        job: { status: 'running', attempts: 1 },
      })

      const next = await startServerProcess(env)
      try {
        // A new port, so a new issuer: sign in again.
        const again = api(next.url)
        const { token } = (
          await again.post('/api/v1/auth/login', { email: owner.email, password: 'correct horse battery' })
        ).body
        const job = await waitForJob(again, `/${repo.slug}/jobs/${jobId}`, token)
        expect(job).toMatchObject({ status: 'succeeded', attempts: 2, result: { status: 'parsed', kind: 'web' } })
        const source = (await again.get(`/${repo.slug}/sources/${sourceId}`, token)).body
        expect(source).toMatchObject({ status: 'parsed', parsed_title: 'Interrupted', has_stored_body: true })
        expect(source.parsed_text).toContain('the second one does')
        expect((await again.get(`/${repo.slug}/sources/${sourceId}/chunks`, token)).body.length).toBeGreaterThan(0)
        expect(downloads).toBe(2)
      } finally {
        await next.stop()
      }
    } finally {
      docs.stop(true)
    }
  })
})
