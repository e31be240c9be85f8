// Following a job as a client and as an operator does: the 202 says where the job is, lists come
// newest first on request, progress has a percent, and the log has one line as a job starts and
// one as it ends. A `kgs serve` process, so that its worker threads' log lines can be read.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { Job } from '../../src/jobs/queue.ts'

let instance: Awaited<ReturnType<typeof instanceEnvironment>>
let server: ServerProcess
let http: ReturnType<typeof api>
let owner: Account
let repo: { id: string; slug: string }

beforeAll(async () => {
  instance = await instanceEnvironment()
  server = await startServerProcess({ ...instance.env, WORKERS: '1' })
  http = api(server.url)
  owner = await registerAccount(http)
  repo = (await http.post('/api/v1/repositories', { name: 'Follow' }, owner.token)).body
})
afterAll(async () => {
  await server?.stop()
  await instance.cleanup()
})

/** The log lines (JSON) with this message about this job. */
const logged = (msg: string, job: string) =>
  server
    .output()
    .split('\n')
    .filter((line) => line.includes(job))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === msg)

describe(`following jobs (${BACKEND})`, () => {
  test('a 202 carries the Location of its job; the job is logged as it starts and as it succeeds', async () => {
    for (const [path, body] of [
      [`/${repo.slug}/jobs`, { kind: 'embed_facts' }],
      [`/${repo.slug}/export-graph`, {}],
    ] as const) {
      const res = await http.post<Job>(path, body, owner.token)
      expect(res.status).toBe(202)
      expect(res.headers.get('location')).toBe(`/${repo.id}/jobs/${res.body.id}`)
      const job = await waitForJob(http, res.headers.get('location')!, owner.token)
      expect(job).toMatchObject({ id: res.body.id, status: 'succeeded' })
      expect(job.progress.percent).toBe(100)
      await server.waitFor(new RegExp(`"msg":"job succeeded","job":"${job.id}"`))
      expect(logged('job started', job.id)).toEqual([
        expect.objectContaining({ level: 'info', kind: job.kind, repository: repo.id, attempt: 1 }),
      ])
      const [finished] = logged('job succeeded', job.id)
      expect(finished).toMatchObject({ level: 'info', kind: job.kind, ms: expect.any(Number) })
    }
    // The export's result counts are in its line.
    const exported = (await http.get<Job[]>(`/${repo.slug}/jobs?kind=export_graph`, owner.token)).body[0]!
    expect(logged('job succeeded', exported.id)[0]).toMatchObject({ bytes: expect.any(Number), facts: 0, sources: 0 })
  })

  test('a job that fails is logged with its error', async () => {
    const res = await http.call<Job>('POST', `/${repo.slug}/import-graph`, {
      token: owner.token,
      headers: { 'content-type': 'application/gzip' },
      raw: Bun.gzipSync(new TextEncoder().encode('{"not": "a bundle"')),
    })
    expect(res.status).toBe(202)
    const job = await waitForJob(http, res.headers.get('location')!, owner.token)
    expect(job.status).toBe('failed')
    await server.waitFor(new RegExp(`"msg":"job failed","job":"${job.id}"`))
    expect(logged('job failed', job.id)[0]).toMatchObject({
      kind: 'import_graph',
      status: 'failed',
      error: job.error!.split(' (gave up')[0],
      ms: expect.any(Number),
    })
  })

  test('?order=desc lists the newest first, and its pages continue in that order', async () => {
    const ascending = (await http.get<Job[]>(`/${repo.slug}/jobs?limit=100`, owner.token)).body.map((job) => job.id)
    expect(ascending.length).toBeGreaterThanOrEqual(3)
    const descending = (await http.get<Job[]>(`/${repo.slug}/jobs?order=desc&limit=100`, owner.token)).body.map(
      (job) => job.id,
    )
    expect(descending).toEqual([...ascending].reverse())
    const first = await http.get<Job[]>(`/${repo.slug}/jobs?order=desc&limit=1`, owner.token)
    const next = first.headers.get('link')!.match(/<([^>]+)>/)![1]!
    expect([first.body[0]!.id, (await http.get<Job[]>(next, owner.token)).body[0]!.id]).toEqual(descending.slice(0, 2))
    const bad = await http.get(`/${repo.slug}/jobs?order=newest`, owner.token)
    expect(bad.status).toBe(400)
  })
})
