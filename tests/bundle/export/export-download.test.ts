// The export download says what is happening (docs/bundles.md, "Export"): while the export asked
// for is queued or running, 503 with its job and Retry-After; the newest succeeded export, named
// by its job, sha256 and time; one export by its job; the older bundles pruned. The one worker
// thread is held by a blocking test job, so that an export stays queued as long as the test needs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../../helpers/backend.ts'
import { api, expectError, registerAccount, type Account } from '../../helpers/api.ts'
import { TEST_JOB_KINDS_URL } from '../../helpers/job-kinds.ts'
import { waitForJob } from '../../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../../helpers/server.ts'
import { EXPORTS_KEPT } from '../../../src/bundle/export/export-job.ts'
import { repositoryBlobPrefix } from '../../../src/blobs/store.ts'
import type { Job } from '../../../src/jobs/queue.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let viewer: Account
let repo: { id: string; slug: string }

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' }, jobs: { extraKindModules: [TEST_JOB_KINDS_URL] } })
  http = api(server.url)
  let admin: Account
  ;[admin, owner, viewer] = await Promise.all([registerAccount(http), registerAccount(http), registerAccount(http)])
  expect((await server.promote(admin.email)).code).toBe(0)
  repo = (await http.post('/api/v1/repositories', { name: 'Downloads' }, owner.token)).body
  expect(
    (await http.put('/api/v1/admin/users/roles', { user_id: viewer.id, role: 'viewer', domain: repo.id }, admin.token))
      .status,
  ).toBe(200)
})
afterAll(() => server.stop())

const download = (path: string, token = owner.token, headers: Record<string, string> = {}) =>
  fetch(server.url + path, { headers: { authorization: `Bearer ${token}`, ...headers } })
const job = (id: string) => `/${repo.slug}/jobs/${id}`

async function startExport(exportedAt: string): Promise<string> {
  const started = await http.post(`/${repo.slug}/export-graph`, { exported_at: exportedAt }, owner.token)
  expect(started.status).toBe(202)
  return started.body.id
}
const succeeded = async (id: string) =>
  (await waitForJob(http, job(id), owner.token)) as Job & { result: { sha256: string; exported_at: string } }

/** Holds the only worker thread until the returned function is called. */
async function holdWorker(): Promise<() => Promise<void>> {
  const blocker = await server.context.jobs.enqueue({ kind: 'test_block', repositoryId: repo.id, params: {} })
  await waitForJob(http, job(blocker.id), owner.token, (j) => j.progress.phase === 'blocking')
  return async () => {
    expect((await http.post(`${job(blocker.id)}/cancel`, {}, owner.token)).status).toBe(200)
  }
}

async function expectPending(res: Response, id: string, status: 'queued' | 'running') {
  expect(res.status).toBe(503)
  expect(res.headers.get('retry-after')).toBe('2')
  expect(res.headers.get('location')).toBe(job(id))
  const body = (await res.json()) as { error: string; job: Job }
  expect(Object.keys(body)).toEqual(['error', 'job'])
  expect(body.error).toStartWith(`export ${id} is ${status} (`)
  expect(body.error).toEndWith(`): download it once it has succeeded; GET ${job(id)} follows it`)
  expect(body.job).toMatchObject({ id, kind: 'export_graph', status })
}

async function expectBundle(res: Response, exported: Awaited<ReturnType<typeof succeeded>>) {
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('application/gzip')
  expect(res.headers.get('x-export-job')).toBe(exported.id)
  expect(res.headers.get('x-graph-sha256')).toBe(exported.result.sha256)
  expect(res.headers.get('x-graph-exported-at')).toBe(exported.result.exported_at)
  expect(res.headers.get('last-modified')).toBe(new Date(exported.finished_at!).toUTCString())
  const bytes = Buffer.from(await res.arrayBuffer())
  expect(bytes[0]).toBe(0x1f) // gzip
  return bytes
}

describe(`export download (${BACKEND})`, () => {
  test('before any export: 404 saying how to start one; a bad or unknown job: 400, 404', async () => {
    expectError(
      await http.get(`/${repo.slug}/export-graph/download`, owner.token),
      404,
      `no export yet: POST /${repo.slug}/export-graph starts one`,
    )
    expectError(
      await http.get(`/${repo.slug}/export-graph/not-a-uuid/download`, owner.token),
      400,
      'invalid path parameter: jobID: expected a UUID (got "not-a-uuid")',
    )
    expectError(
      await http.get(`/${repo.slug}/export-graph/${crypto.randomUUID()}/download`, owner.token),
      404,
      'export not found',
    )
    expectError(
      await http.call('GET', `/${repo.slug}/export-graph/${crypto.randomUUID()}/download`),
      401,
      'authentication required',
    )
    expectError(
      await http.get(`/${repo.slug}/export-graph/${crypto.randomUUID()}/download`, viewer.token),
      403,
      'permission denied: graph:export needs the curator, editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
    expectError(
      await http.get(`/${repo.slug}/export-graph/download`, viewer.token),
      403,
      'permission denied: graph:export needs the curator, editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
  })

  test('while an export is queued, and once it ran: 503 with its job, then the bundle named in headers', async () => {
    const release = await holdWorker()
    const first = await startExport('2026-01-01T00:00:00Z')
    await expectPending(await download(`/${repo.slug}/export-graph/download`), first, 'queued')
    await expectPending(await download(`/${repo.slug}/export-graph/${first}/download`), first, 'queued')
    await expectPending(
      await download('/api/v1/export-graph/download', owner.token, { 'x-repository-id': repo.id }),
      first,
      'queued',
    )
    await release()
    const done = await succeeded(first)
    expect(done.result.exported_at).toBe('2026-01-01T00:00:00Z')
    const newest = await expectBundle(await download(`/${repo.slug}/export-graph/download`), done)
    const byJob = await expectBundle(
      await download(`/api/v1/export-graph/${first}/download`, owner.token, { 'x-repository-id': repo.slug }),
      done,
    )
    expect(byJob.equals(newest)).toBe(true)
  })

  test('a newer export on its way: the newest download waits for it (never the older bundle); the older stays downloadable by its job', async () => {
    const [older] = (
      await http.get<Job[]>(`/${repo.slug}/jobs?kind=export_graph&status=succeeded&order=desc`, owner.token)
    ).body
    const release = await holdWorker()
    const newer = await startExport('2026-01-02T00:00:00Z')
    await expectPending(await download(`/${repo.slug}/export-graph/download`), newer, 'queued')
    await expectBundle(
      await download(`/${repo.slug}/export-graph/${older!.id}/download`),
      (await succeeded(older!.id)) as never,
    )
    // A cancelled export: 409 by its job; it does not hide the newest succeeded one.
    const cancelled = await startExport('2026-01-03T00:00:00Z')
    expect((await http.post(`${job(cancelled)}/cancel`, {}, owner.token)).body.status).toBe('cancelled')
    expectError(
      await http.get(`/${repo.slug}/export-graph/${cancelled}/download`, owner.token),
      409,
      /^export [0-9a-f-]{36} cancelled: .+; nothing to download$/,
    )
    await release()
    const done = await succeeded(newer)
    await expectBundle(await download(`/${repo.slug}/export-graph/download`), done)
    // A job of another kind is not an export.
    const other = (await http.get<Job[]>(`/${repo.slug}/jobs?kind=test_block`, owner.token)).body[0]!
    expectError(await http.get(`/${repo.slug}/export-graph/${other.id}/download`, owner.token), 404, 'export not found')
  })

  test(`the newest ${EXPORTS_KEPT} exports keep their bundle; an older one is 410`, async () => {
    const exported: string[] = []
    for (let i = 0; i < EXPORTS_KEPT; i++)
      exported.push((await succeeded(await startExport(`2026-02-0${i + 1}T00:00:00Z`))).id)
    const all = (
      await http.get<Job[]>(`/${repo.slug}/jobs?kind=export_graph&status=succeeded&order=desc&limit=100`, owner.token)
    ).body
    expect(all.length).toBeGreaterThan(EXPORTS_KEPT)
    const keys: string[] = []
    for await (const key of server.context.blobs.list(`${repositoryBlobPrefix(repo.id)}exports/`)) keys.push(key)
    expect(keys.sort()).toEqual(exported.map((id) => `${repositoryBlobPrefix(repo.id)}exports/${id}.json.gz`).sort())
    const oldest = all.at(-1)!
    expectError(
      await http.get(`/${repo.slug}/export-graph/${oldest.id}/download`, owner.token),
      410,
      `export ${oldest.id} is no longer kept: a newer export replaced it; GET /${repo.slug}/export-graph/download serves the newest`,
    )
  })
})
