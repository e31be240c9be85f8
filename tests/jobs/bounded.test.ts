// The job system under one user's pressure (SECURITY.md, "Bounded by design", findings 4, 5 and
// 10): a claim serves the repository served least recently, so one repository's hundred jobs do not
// starve another's; a job keeps its lease while its thread is too busy to beat; deleting a
// repository cancels its jobs and waits for them before its database goes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { api, Account } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { TEST_JOB_KINDS_URL } from '../helpers/job-kinds.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import type { Job } from '../../src/jobs/queue.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let owner: Account

const LEASE_MS = 1_000
const createRepo = async (name: string) =>
  (await http.post('/api/v1/repositories', { name }, owner.token)).body as { id: string; slug: string }
const enqueue = (repositoryId: string, kind: string, params: Record<string, unknown> = {}) =>
  server.context.jobs.enqueue({ kind, repositoryId, params })

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, owner },
  } = await fixture({
    server: {
      env: { WORKERS: '1' },
      jobs: {
        timing: { leaseMs: LEASE_MS, heartbeatMs: 100, pollMs: 200, backoffBaseMs: 20 },
        extraKindModules: [TEST_JOB_KINDS_URL],
      },
    },
    users: { admin: 'sysadmin', owner: 'member' },
  }))
})
afterAll(() => server.stop())

describe(`bounded jobs (${BACKEND})`, () => {
  test("one repository queues 100 jobs; another repository's job starts next, within one job's time", async () => {
    const [busy, other] = [await createRepo('Busy'), await createRepo('Other')]
    const flood: Job[] = []
    for (let i = 0; i < 100; i++) flood.push(await enqueue(busy.id, 'test_busy', { ms: 30 }))
    await waitForJob(http, `/${busy.slug}/jobs/${flood[0]!.id}`, owner.token, (job) => job.status !== 'queued')
    const mine = await enqueue(other.id, 'test_echo', { value: 'me' })
    const done = await waitForJob(http, `/${other.slug}/jobs/${mine.id}`, owner.token)
    expect(done.status).toBe('succeeded')
    const sql = server.systemSql()
    try {
      // Jobs of the busy repository that started after mine was queued and before it started:
      // at most the one claimed in the instant between (a FIFO would run all 99 first).
      const [row] = await sql<{ ahead: number }[]>`
        SELECT count(*)::int AS ahead FROM jobs
        WHERE repository_id = ${busy.id} AND started_at > ${done.created_at}::timestamptz AND started_at < ${done.started_at}::timestamptz`
      expect(row!.ahead).toBeLessThanOrEqual(1)
    } finally {
      await sql.end()
    }
    await server.context.jobs.stopRepository(busy.id, 'cancelled: test over', 10_000)
  })

  test('a job whose thread is too busy to beat for three leases keeps its lease: one attempt', async () => {
    const repo = await createRepo('Busy thread')
    const queued = await enqueue(repo.id, 'test_busy', { ms: 3 * LEASE_MS })
    const job = await waitForJob(http, `/${repo.slug}/jobs/${queued.id}`, owner.token)
    expect({ status: job.status, attempts: job.attempts, result: job.result }).toEqual({
      status: 'succeeded',
      attempts: 1,
      result: { attempt: 1 },
    })
  })

  test('deleting a repository cancels its jobs and waits for them before its database goes', async () => {
    const repo = await createRepo('Deleted while busy')
    const running = await enqueue(repo.id, 'test_block')
    const queued = await enqueue(repo.id, 'test_echo', { value: 'never' })
    await waitForJob(http, `/${repo.slug}/jobs/${running.id}`, owner.token, (job) => job.progress.phase === 'blocking')
    expect(
      (
        await http.call('DELETE', `/api/v1/repositories/${repo.id}`, {
          token: owner.token,
          body: { confirm: repo.slug },
        })
      ).status,
    ).toBe(200)
    // Ended by the time the deletion answers; the records stay, for sysadmins, as jobs of no repository.
    for (const id of [running.id, queued.id]) {
      const job = (await http.get(`/api/v1/jobs/${id}`, admin.token)).body as Job
      expect({
        status: job.status,
        error: job.error,
        repository_id: job.repository_id,
        attempts: job.attempts,
      }).toEqual({
        status: 'cancelled',
        error: 'cancelled: its repository was deleted',
        repository_id: null,
        attempts: id === running.id ? 1 : 0,
      })
    }
    expect((await http.get(`/${repo.slug}`, owner.token)).status).toBe(404)
  })
})
