// The job system end to end: jobs run on the server's worker threads, and the job routes of
// docs/spec/bundle.md §6 over HTTP, on the selected backend.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { type api, expectError, type Account } from '../helpers/api.ts'
import { TEST_JOB_KINDS_URL } from '../helpers/job-kinds.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { finished, waitForJob as pollJob } from '../helpers/jobs.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { createLogger } from '../../src/log.ts'
import { rejected } from '../helpers/promises.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let owner: Account
let viewer: Account
let stranger: Account
let repo: { id: string; slug: string }
let other: { id: string; slug: string }
/** What the server's main thread (the job runner) logged, warnings and up. */
const runnerLines: string[] = []
const runnerLog = createLogger('warn', (text) => runnerLines.push(...text.split('\n').filter(Boolean)))

const enqueue = (kind: string, params: Record<string, unknown> = {}, repositoryId = repo.id) =>
  server.context.jobs.enqueue({ kind, repositoryId, params })

/** Polls the job (by default through the repository's route, as its owner) until `done` holds. */
const waitForJob = (
  id: string,
  done: (job: Job) => boolean = finished,
  path = `/${repo.slug}/jobs/${id}`,
  token = owner.token,
) => pollJob(http, path, token, done, 20_000)

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, owner, viewer, stranger },
    repositories: { repo, other },
  } = await fixture({
    server: {
      env: { WORKERS: '2' },
      log: runnerLog,
      jobs: {
        timing: { leaseMs: 5_000, heartbeatMs: 50, pollMs: 200, backoffBaseMs: 20 },
        extraKindModules: [TEST_JOB_KINDS_URL],
      },
    },
    users: { admin: 'sysadmin', owner: 'member', viewer: 'member', stranger: 'member' },
    repositories: {
      repo: { by: 'owner', name: 'Jobs', roles: { viewer: 'viewer' } },
      other: { by: 'owner', name: 'Other' },
    },
  }))
})
afterAll(() => server.stop())

describe(`jobs on worker threads (${BACKEND})`, () => {
  test('a job runs on a worker thread: result, progress, attempts and times recorded', async () => {
    const queued = await enqueue('test_echo', { value: 'héllo' })
    expect(queued.status).toBe('queued')
    const job = await waitForJob(queued.id)
    expect(job).toEqual({
      id: queued.id,
      kind: 'test_echo',
      repository_id: repo.id,
      status: 'succeeded',
      progress: { phase: 'succeeded', done: 1, total: 1, bytes: 5, percent: 100 },
      result: { value: 'héllo', attempt: 1, facts: 0 },
      error: null,
      attempts: 1,
      created_at: queued.created_at,
      started_at: expect.any(String),
      finished_at: expect.any(String),
    })
    expect(Date.parse(job.finished_at!)).toBeGreaterThanOrEqual(Date.parse(job.started_at!))
  })

  test('a finished job keeps its last progress: no heartbeat sent before the end lands after it', async () => {
    const queued = await Promise.all(Array.from({ length: 12 }, () => enqueue('test_progress', { ms: 120 })))
    const jobs = await Promise.all(queued.map((job) => waitForJob(job.id)))
    for (const job of jobs) {
      const { done } = job.result as { done: number }
      expect(job).toMatchObject({ status: 'succeeded', progress: { done, total: done, percent: 100 } })
    }
  })

  test('a failing job is retried with backoff until it succeeds', async () => {
    const job = await waitForJob((await enqueue('test_flaky', { succeed_on: 3 })).id)
    // The failures are behind it: a job that succeeded carries no error.
    expect(job).toMatchObject({ status: 'succeeded', attempts: 3, result: { attempt: 3 }, error: null })
  })

  test('a job that keeps failing fails after its last attempt', async () => {
    const job = await waitForJob((await enqueue('test_flaky', { succeed_on: 9 })).id)
    expect(job).toMatchObject({
      status: 'failed',
      attempts: 3,
      result: null,
      error: 'flaked on attempt 3 (gave up after 3 attempts)',
    })
  })

  test('a permanent failure is not retried', async () => {
    const job = await waitForJob((await enqueue('test_permanent')).id)
    expect(job).toMatchObject({ status: 'failed', attempts: 1, error: 'input is broken: facts[2]: missing text' })
  })

  test('parameters are checked on enqueue', async () => {
    expect(await rejected(enqueue('test_echo', { value: 5 }))).toThrow('invalid job parameters: value: Expected string')
    expect(await rejected(enqueue('no_such_kind'))).toThrow('unknown job kind "no_such_kind"')
  })

  test('a worker thread that dies mid-job is replaced and the job is retried', async () => {
    const before = server.context.jobs
    const { id } = await enqueue('test_crash')
    const job = await waitForJob(id)
    // Attempt 1's transaction died with its thread, uncommitted.
    expect(job).toMatchObject({ status: 'succeeded', attempts: 2, result: { attempt: 2, survived: 0 } })
    expect(server.context.jobs).toBe(before)
    // The thread really exited holding the job, which the runner handed back at once (not at its
    // lease's expiry), and another thread ran attempt 2.
    const exited = () => {
      runnerLog.flush()
      return runnerLines
        .map((line) => JSON.parse(line))
        .filter((line) => line.msg === 'job worker thread exited while running a job; the job was re-queued')
    }
    for (const deadline = Date.now() + 10_000; exited().length === 0 && Date.now() < deadline; ) await Bun.sleep(20)
    const [crashed, ...others] = exited()
    expect(others).toEqual([])
    expect(crashed?.worker).toEqual(expect.any(String))
    const db = server.systemSql()
    const [row] = await db<{ claimed_by: string }[]>`SELECT claimed_by FROM jobs WHERE id = ${id}`
    await db.end()
    expect(row!.claimed_by).not.toBe(crashed.worker)
    // The replacement thread takes work like the others.
    expect((await waitForJob((await enqueue('test_echo', { value: 'after' })).id)).status).toBe('succeeded')
  })

  test('cancel: a running job stops at once and ends cancelled', async () => {
    const queued = await enqueue('test_block')
    await waitForJob(queued.id, (job) => job.progress.phase === 'blocking')
    const res = await http.post(`/${repo.slug}/jobs/${queued.id}/cancel`, undefined, owner.token)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: queued.id, status: 'running' })
    expect(await waitForJob(queued.id)).toMatchObject({
      status: 'cancelled',
      error: 'cancelled',
      progress: { phase: 'cancelled' },
    })
    expectError(
      await http.post(`/${repo.slug}/jobs/${queued.id}/cancel`, undefined, owner.token),
      409,
      'job already cancelled',
    )
  })
})

describe(`job routes (${BACKEND})`, () => {
  test('list pages in creation order with a Link to the next page, and filters', async () => {
    const mine = [
      await enqueue('test_permanent', {}, other.id),
      await enqueue('test_permanent', {}, other.id),
      await enqueue('test_permanent', {}, other.id),
    ]
    await Promise.all(mine.map((j) => waitForJob(j.id, finished, `/api/v1/jobs/${j.id}`, admin.token)))
    const first = await http.get(`/${other.slug}/jobs?limit=2`, owner.token)
    expect(first.status).toBe(200)
    expect(first.body).toHaveLength(2)
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')![1]!
    const second = await http.get(next, owner.token)
    expect(second.body).toHaveLength(1)
    expect(second.headers.get('link')).toBeNull()
    // Jobs enqueued within one clock tick tie on created_at and come in id order: the pages
    // must follow (created_at, id) exactly and hold each job once.
    const paged = [...first.body, ...second.body].map((j: Job) => j.id)
    const db = server.systemSql()
    const ordered = (
      await db<{ id: string }[]>`SELECT id FROM jobs WHERE repository_id = ${other.id} ORDER BY created_at, id`
    ).map((r) => r.id)
    await db.end()
    expect(paged).toEqual(ordered)
    expect(new Set(paged)).toEqual(new Set(mine.map((j) => j.id)))
    expect((await http.get(`/${other.slug}/jobs?status=failed&kind=test_permanent`, owner.token)).body).toHaveLength(3)
    expect((await http.get(`/${other.slug}/jobs?status=succeeded`, owner.token)).body).toEqual([])
    expectError(await http.get(`/${other.slug}/jobs?status=done`, owner.token), 400, /status/)
    expectError(await http.get(`/${other.slug}/jobs?limit=0`, owner.token), 400, /limit/)
    expectError(await http.get(`/${other.slug}/jobs?cursor=zzz`, owner.token), 400, /cursor/)
  })

  test('the same job through the header, the system route, and not through another repository', async () => {
    const job = await enqueue('test_echo', { value: 'x' })
    expect(
      (
        await http.call('GET', `/api/v1/jobs/${job.id}`, {
          token: owner.token,
          headers: { 'x-repository-id': repo.slug },
        })
      ).body.id,
    ).toBe(job.id)
    expect((await http.get(`/api/v1/jobs/${job.id}`, admin.token)).body.id).toBe(job.id)
    expectError(await http.get(`/${other.slug}/jobs/${job.id}`, owner.token), 404, 'job not found')
    expectError(
      await http.call('GET', `/api/v1/jobs/${job.id}`, {
        token: owner.token,
        headers: { 'x-repository-id': other.id },
      }),
      404,
      'job not found',
    )
    expectError(await http.get(`/${repo.slug}/jobs/${crypto.randomUUID()}`, owner.token), 404, 'job not found')
    expectError(await http.get(`/${repo.slug}/jobs/not-a-uuid`, owner.token), 400, /jobID/)
    const headerList = await http.call('GET', '/api/v1/jobs', {
      token: viewer.token,
      headers: { 'x-repository-id': repo.id },
    })
    expect(headerList.body.every((j: Job) => j.repository_id === repo.id)).toBe(true)
    expect(headerList.body.some((j: Job) => j.id === job.id)).toBe(true)
    const all = await http.get('/api/v1/jobs?limit=500', admin.token)
    expect(new Set(all.body.map((j: Job) => j.repository_id))).toEqual(new Set([repo.id, other.id]))
  })

  test('permissions: viewers read, editors cancel, only sysadmins see every job; no token, no jobs', async () => {
    const job = await enqueue('test_block')
    expectError(
      await http.get('/api/v1/jobs', owner.token),
      403,
      'permission denied: job:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(
      await http.get(`/api/v1/jobs/${job.id}`, owner.token),
      403,
      'permission denied: job:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(
      await http.post(`/api/v1/jobs/${job.id}/cancel`, undefined, owner.token),
      403,
      'permission denied: job:cancel needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(await http.get(`/${repo.slug}/jobs`, stranger.token), 404, 'repository not found')
    expectError(await http.get(`/${repo.slug}/jobs`), 401, 'authentication required')
    expect((await http.get(`/${repo.slug}/jobs/${job.id}`, viewer.token)).status).toBe(200)
    expectError(
      await http.post(`/${repo.slug}/jobs/${job.id}/cancel`, undefined, viewer.token),
      403,
      'permission denied: job:cancel needs the editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
    const cancelled = await http.post(`/api/v1/jobs/${job.id}/cancel`, undefined, admin.token)
    expect(cancelled.status).toBe(200)
    expect((await waitForJob(job.id)).status).toBe('cancelled')
  })

  test('POST /{repoID}/jobs starts an embedding or media fetch job; only startable kinds, well-formed', async () => {
    const res = await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts' }, owner.token)
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ kind: 'embed_facts', repository_id: repo.id, status: 'queued' })
    expect(await waitForJob(res.body.id)).toMatchObject({
      status: 'succeeded',
      result: { embedded: 0, model: 'kgs-hash-v1' },
    })
    const fetch = await http.post(`/${repo.slug}/jobs`, { kind: 'fetch_media' }, owner.token)
    expect(fetch.status).toBe(202)
    expect(await waitForJob(fetch.body.id)).toMatchObject({
      status: 'succeeded',
      result: { images: { stored: 0 }, bodies: { stored: 0 } },
    })
    expectError(
      await http.post(`/${repo.slug}/jobs`, { kind: 'fetch_media', params: { ids: [] } }, owner.token),
      400,
      'invalid job parameters: ids: Unexpected property',
    )
    expectError(await http.post(`/${repo.slug}/jobs`, { kind: 'test_echo' }, owner.token), 400, /kind/)
    expectError(await http.post(`/${repo.slug}/jobs`, {}, owner.token), 400, /kind/)
    expectError(
      await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts', params: { ids: ['nope'] } }, owner.token),
      400,
      /ids/,
    )
    expectError(await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts', extra: 1 }, owner.token), 400, /extra/)
    expectError(
      await http.call('POST', `/${repo.slug}/jobs`, {
        token: owner.token,
        raw: '{"kind":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      /JSON/i,
    )
    expectError(
      await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts' }, viewer.token),
      403,
      'permission denied: graph:import needs the editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
    expectError(await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts' }), 401, 'authentication required')
  })
})
