// Quotas and the repository-creation throttle (SECURITY.md, "Bounded by design", finding 5): what
// one self-registered user can make the service store or queue. Past a quota of stock: 403; past
// the queue quota: 429.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, registerAccount } from '../helpers/api.ts'
import { gzipBundle, validBundleJson } from '../helpers/broken-bundles.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

describe(`quotas without workers (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  beforeAll(async () => {
    server = await startTestServer({
      env: { QUOTA_REPOSITORIES: '2', QUOTA_QUEUED_JOBS: '2', THROTTLE_REPOSITORY_CREATE_PER_IP: '3/1h' },
    })
    http = api(server.url)
  })
  afterAll(() => server.stop())

  test('repositories owned: 403 past the quota; the per-address throttle counts every creation: 429 past it', async () => {
    const [user, other] = [await registerAccount(http), await registerAccount(http)]
    const first = await http.post('/api/v1/repositories', { name: 'One' }, user.token)
    expect(first.status).toBe(201)
    expect((await http.post('/api/v1/repositories', { name: 'Two' }, user.token)).status).toBe(201)
    expectError(
      await http.post('/api/v1/repositories', { name: 'Three' }, user.token),
      403,
      'quota reached: you own 2 repositories, at most 2 (QUOTA_REPOSITORIES); delete one first',
    )
    expect(first.body.owner_id).toBe(user.id)
    // Three creations from this address this hour: the fourth waits, whoever asks.
    const throttled = await http.post('/api/v1/repositories', { name: 'Other' }, other.token)
    expectError(throttled, 429, /^too many repositories created; retry after \d+ seconds?$/)
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('queued jobs per repository: 429 with Retry-After past the quota, for every way to queue one', async () => {
    const admin = await registerAccount(http)
    expect((await server.promote(admin.email)).code).toBe(0)
    // Made directly: this address has used its creations (the test above).
    const repo = await server.context.repositories.create(admin.id, { name: 'Queue' })
    for (let i = 0; i < 2; i++)
      expect((await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts' }, admin.token)).status).toBe(202)
    const message =
      'quota reached: this repository has 2 jobs queued, at most 2 (QUOTA_QUEUED_JOBS); retry once some have run'
    const refused = [
      await http.post(`/${repo.slug}/jobs`, { kind: 'embed_concepts' }, admin.token),
      await http.post(`/${repo.slug}/export-graph`, {}, admin.token),
      await uploadBundle(http, repo.slug, admin.token, gzipBundle(validBundleJson())),
    ]
    for (const res of refused) {
      expectError(res, 429, message)
      expect(res.headers.get('retry-after')).toBe('30')
    }
    expect((await http.get(`/${repo.slug}/jobs`, admin.token)).body).toHaveLength(2)
  })
})

describe(`registry quota (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  beforeAll(async () => {
    server = await startTestServer({ env: { WORKERS: '1', QUOTA_REGISTRY_GRAPHS: '1' } })
    http = api(server.url)
  })
  afterAll(() => server.stop())

  test("graphs a user's exports stored count as theirs: the next export is 403", async () => {
    const user = await registerAccount(http)
    const repo = (await http.post('/api/v1/repositories', { name: 'Exporter' }, user.token)).body
    const started = await http.post(`/${repo.slug}/export-graph`, { name: 'mine' }, user.token)
    expect(started.status).toBe(202)
    const job = await waitForJob(http, `/${repo.slug}/jobs/${started.body.id}`, user.token)
    expect({ status: job.status, new: (job.result as { new: boolean }).new }).toEqual({
      status: 'succeeded',
      new: true,
    })
    expectError(
      await http.post(`/${repo.slug}/export-graph`, { name: 'another' }, user.token),
      403,
      'quota reached: you own 1 registry graphs, at most 1 (QUOTA_REGISTRY_GRAPHS); delete one first',
    )
    // Another user's quota is their own.
    const other = await registerAccount(http)
    const theirs = (await http.post('/api/v1/repositories', { name: 'Theirs' }, other.token)).body
    expect((await http.post(`/${theirs.slug}/export-graph`, { name: 'theirs' }, other.token)).status).toBe(202)
  })
})
