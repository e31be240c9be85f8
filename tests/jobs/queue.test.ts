// The job queue's functions against the system database: claiming, leases, retries with
// backoff, expiry, release and cancellation. Time is moved by editing the rows, never by waiting.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import type { Pools } from '../../src/db/pools.ts'
import {
  claimJob,
  enqueueJob,
  failAttempt,
  finishJob,
  getJob,
  listJobs,
  handBackOnShutdown,
  releaseWorkerJobs,
  renewLease,
  reportProgress,
  requestCancel,
  requeueExpiredLeases,
  retryDelayMs,
} from '../../src/jobs/queue.ts'
import { BACKEND, openTestPools } from '../helpers/backend.ts'

let pools: Pools
let sql: Sql
let opened: Awaited<ReturnType<typeof openTestPools>>
const LEASE = 60_000

beforeAll(async () => {
  opened = await openTestPools()
  pools = opened.pools
  await pools.migrate()
  sql = pools.system
})
afterAll(() => opened?.close())
// Each test sees only its own jobs.
beforeEach(async () => {
  await sql`DELETE FROM jobs`
})

const enqueue = (kind = 'noop', maxAttempts = 3) => enqueueJob(sql, { kind, maxAttempts })
const row = async (id: string) =>
  (
    await sql`SELECT status, attempts, lease_owner, claimed_by, error, cancel_requested, run_after > now() AS delayed, run_after - now() AS delay FROM jobs WHERE id = ${id}`
  )[0]!
const expireLease = (id: string) => sql`UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ${id}`
const makeReady = (id: string) => sql`UPDATE jobs SET run_after = now() - interval '1 second' WHERE id = ${id}`

describe(`job queue (${BACKEND})`, () => {
  test('enqueue gives the API job object, queued', async () => {
    const job = await enqueueJob(sql, { kind: 'noop', maxAttempts: 2, params: { a: 1 } })
    expect(job).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      kind: 'noop',
      repository_id: null,
      status: 'queued',
      progress: { phase: 'queued', done: 0, total: 0, bytes: 0, percent: null },
      result: null,
      error: null,
      attempts: 0,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      started_at: null,
      finished_at: null,
    })
  })

  test('claim takes the oldest ready job of a known kind, once', async () => {
    const first = await enqueue()
    const second = await enqueue()
    await enqueue('other_kind')
    const claimed = await claimJob(sql, 'w1', LEASE, ['noop'])
    expect(claimed).toEqual({
      id: first.id,
      kind: 'noop',
      repositoryId: null,
      params: {},
      createdBy: null,
      attempts: 1,
      maxAttempts: 3,
    })
    expect((await claimJob(sql, 'w2', LEASE, ['noop']))?.id).toBe(second.id)
    expect(await claimJob(sql, 'w3', LEASE, ['noop'])).toBeUndefined()
    expect(await row(first.id)).toMatchObject({ status: 'running', attempts: 1, lease_owner: 'w1', claimed_by: 'w1' })
    expect((await getJob(sql, first.id))?.started_at).toEqual(expect.any(String))
  })

  test('concurrent claimers never take the same job', async () => {
    const ids = new Set((await Promise.all(Array.from({ length: 60 }, () => enqueue()))).map((j) => j.id))
    const taken: string[] = []
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let job; (job = await claimJob(sql, `w${w}`, LEASE, ['noop'])); ) taken.push(job.id)
      }),
    )
    expect(taken.length).toBe(60)
    expect(new Set(taken)).toEqual(ids)
    const [{ n }] =
      (await sql`SELECT count(*)::int AS n FROM jobs WHERE attempts = 1 AND status = 'running'`) as unknown as [
        { n: number },
      ]
    expect(n).toBe(60)
  })

  test('only the lease holder may report, renew or finish', async () => {
    const job = await enqueue()
    await claimJob(sql, 'owner', LEASE, ['noop'])
    expect(await renewLease(sql, job.id, 'intruder', LEASE)).toEqual({ held: false, cancelRequested: false })
    expect(await reportProgress(sql, job.id, 'intruder', LEASE, { done: 5 })).toEqual({
      held: false,
      cancelRequested: false,
    })
    expect(await finishJob(sql, job.id, 'intruder', { status: 'succeeded', result: 1 })).toBe(false)
    expect(await failAttempt(sql, job.id, 'intruder', 'x', true)).toBeUndefined()
    expect(await reportProgress(sql, job.id, 'owner', LEASE, { phase: 'copying', done: 5, total: 10 })).toEqual({
      held: true,
      cancelRequested: false,
    })
    expect(await finishJob(sql, job.id, 'owner', { status: 'succeeded', result: { copied: 10 } })).toBe(true)
    expect(await getJob(sql, job.id)).toMatchObject({
      status: 'succeeded',
      result: { copied: 10 },
      error: null,
      progress: { phase: 'succeeded', done: 5, total: 10, bytes: 0, percent: 100 },
      finished_at: expect.any(String),
    })
    expect(await row(job.id)).toMatchObject({ lease_owner: null, claimed_by: 'owner' })
  })

  test('a failed attempt is retried after a backoff, then fails for good', async () => {
    const job = await enqueue('noop', 2)
    await claimJob(sql, 'w', LEASE, ['noop'])
    expect(await failAttempt(sql, job.id, 'w', 'disk hiccup', true, 60_000)).toBe('queued')
    expect(await row(job.id)).toMatchObject({
      status: 'queued',
      attempts: 1,
      lease_owner: null,
      error: 'disk hiccup',
      delayed: true,
    })
    expect(await claimJob(sql, 'w', LEASE, ['noop'])).toBeUndefined() // not before its backoff
    await makeReady(job.id)
    expect((await claimJob(sql, 'w', LEASE, ['noop']))?.attempts).toBe(2)
    expect(await failAttempt(sql, job.id, 'w', 'disk hiccup', true)).toBe('failed')
    expect(await getJob(sql, job.id)).toMatchObject({
      status: 'failed',
      error: 'disk hiccup (gave up after 2 attempts)',
      attempts: 2,
      finished_at: expect.any(String),
    })
  })

  test('a permanent failure is not retried', async () => {
    const job = await enqueue('noop', 5)
    await claimJob(sql, 'w', LEASE, ['noop'])
    expect(await failAttempt(sql, job.id, 'w', 'bundle: facts[3]: missing text', false)).toBe('failed')
    expect(await getJob(sql, job.id)).toMatchObject({
      status: 'failed',
      error: 'bundle: facts[3]: missing text',
      attempts: 1,
    })
  })

  test('backoff doubles per attempt, with jitter, up to a cap', () => {
    for (let i = 0; i < 50; i++) {
      const first = retryDelayMs(1, 1000)
      const third = retryDelayMs(3, 1000)
      expect(first).toBeGreaterThanOrEqual(800)
      expect(first).toBeLessThanOrEqual(1200)
      expect(third).toBeGreaterThanOrEqual(3200)
      expect(third).toBeLessThanOrEqual(4800)
      expect(retryDelayMs(40, 1000, 300_000)).toBeLessThanOrEqual(360_000)
    }
  })

  test('a job whose lease expired is re-queued, and its old worker can no longer touch it', async () => {
    const job = await enqueue()
    await claimJob(sql, 'dead', LEASE, ['noop'])
    expect(await requeueExpiredLeases(sql)).toBe(0) // the lease is still good
    await expireLease(job.id)
    expect(await requeueExpiredLeases(sql, 0)).toBe(1)
    expect(await row(job.id)).toMatchObject({
      status: 'queued',
      lease_owner: null,
      error: 'lease expired: the worker stopped responding',
    })
    expect(await claimJob(sql, 'alive', LEASE, ['noop'])).toMatchObject({ id: job.id, attempts: 2 })
    expect(await renewLease(sql, job.id, 'dead', LEASE)).toEqual({ held: false, cancelRequested: false })
    expect(await finishJob(sql, job.id, 'dead', { status: 'succeeded', result: 'stale' })).toBe(false)
    expect(await finishJob(sql, job.id, 'alive', { status: 'succeeded', result: 'fresh' })).toBe(true)
    expect((await getJob(sql, job.id))?.result).toBe('fresh')
  })

  test('an expired lease on the last attempt fails the job', async () => {
    const job = await enqueue('noop', 1)
    await claimJob(sql, 'dead', LEASE, ['noop'])
    await expireLease(job.id)
    expect(await requeueExpiredLeases(sql)).toBe(1)
    expect(await getJob(sql, job.id)).toMatchObject({
      status: 'failed',
      error: 'lease expired: the worker stopped responding (gave up after 1 attempts)',
    })
  })

  test("a gone worker's jobs are released at once, others' are not", async () => {
    const mine = await enqueue()
    const theirs = await enqueue()
    await claimJob(sql, 'gone', LEASE, ['noop'])
    await claimJob(sql, 'other', LEASE, ['noop'])
    expect(await releaseWorkerJobs(sql, 'gone', 'the worker thread running it exited', 0)).toBe(1)
    expect(await row(mine.id)).toMatchObject({ status: 'queued', error: 'the worker thread running it exited' })
    expect(await row(theirs.id)).toMatchObject({ status: 'running', lease_owner: 'other' })
  })

  test('a job handed back on shutdown is ready at once and gets its attempt back, even its last one', async () => {
    const job = await enqueue('noop', 1)
    expect(await claimJob(sql, 'stopping', LEASE, ['noop'])).toMatchObject({ id: job.id, attempts: 1 })
    expect(await handBackOnShutdown(sql, 'stopping', 'the instance shut down while it ran')).toBe(1)
    expect(await row(job.id)).toMatchObject({
      status: 'queued',
      attempts: 0,
      lease_owner: null,
      delayed: false,
      error: 'the instance shut down while it ran',
    })
    expect(await claimJob(sql, 'next', LEASE, ['noop'])).toMatchObject({ id: job.id, attempts: 1 })
  })

  test('cancel: a queued job at once; a running one is asked; a finished one is left alone', async () => {
    const queued = await enqueue()
    expect(await requestCancel(sql, queued.id)).toMatchObject({
      status: 'cancelled',
      error: 'cancelled',
      finished_at: expect.any(String),
      progress: { phase: 'cancelled' },
    })
    expect(await claimJob(sql, 'w', LEASE, ['noop'])).toBeUndefined()

    const running = await enqueue()
    await claimJob(sql, 'w', LEASE, ['noop'])
    expect(await requestCancel(sql, running.id)).toMatchObject({ status: 'running' })
    expect(await renewLease(sql, running.id, 'w', LEASE)).toEqual({ held: true, cancelRequested: true })
    expect(await finishJob(sql, running.id, 'w', { status: 'cancelled', error: 'cancelled' })).toBe(true)

    const done = await enqueue()
    await claimJob(sql, 'w', LEASE, ['noop'])
    await finishJob(sql, done.id, 'w', { status: 'succeeded', result: null })
    expect(await requestCancel(sql, done.id)).toMatchObject({ status: 'succeeded' })
    expect(await row(done.id)).toMatchObject({ cancel_requested: false })
    expect(await requestCancel(sql, crypto.randomUUID())).toBeUndefined()
  })

  test('a running job asked to stop whose worker died ends cancelled, not re-queued', async () => {
    const job = await enqueue()
    await claimJob(sql, 'dead', LEASE, ['noop'])
    await requestCancel(sql, job.id)
    await expireLease(job.id)
    expect(await requeueExpiredLeases(sql)).toBe(1)
    expect(await getJob(sql, job.id)).toMatchObject({ status: 'cancelled', error: 'cancelled' })
  })

  test('lists page by (created_at, id) and filter by status and kind', async () => {
    const jobs = []
    for (let i = 0; i < 5; i++) jobs.push(await enqueue(i % 2 ? 'other_kind' : 'noop'))
    await claimJob(sql, 'w', LEASE, ['noop'])
    const seen: string[] = []
    let after
    for (;;) {
      const rows = await listJobs(sql, {}, 2, after)
      seen.push(...rows.slice(0, 2).map((r) => r.id))
      if (rows.length <= 2) break
      after = rows[1]!.page_key
    }
    // Jobs created within one clock tick tie on created_at; the id breaks the tie.
    expect(seen).toEqual((await sql<{ id: string }[]>`SELECT id FROM jobs ORDER BY created_at, id`).map((r) => r.id))
    expect(new Set(seen)).toEqual(new Set(jobs.map((j) => j.id)))
    expect(new Set((await listJobs(sql, { kind: 'other_kind' }, 10, undefined)).map((r) => r.id))).toEqual(
      new Set([jobs[1]!.id, jobs[3]!.id]),
    )
    const [claimedId] = (await sql<{ id: string }[]>`SELECT id FROM jobs WHERE status = 'running'`).map((r) => r.id)
    expect((await listJobs(sql, { status: 'running' }, 10, undefined)).map((r) => r.id)).toEqual([claimedId!])
  })
})
