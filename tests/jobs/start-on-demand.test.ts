// Job worker threads start with the first work, not with the process (src/jobs/runner.ts): an
// instance that runs no job holds none, its first job starts them, and so does a job found
// waiting when the process starts (queued while no instance ran jobs).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'
import { api, registerAccount } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { Pools } from '../../src/db/pools.ts'
import { enqueueJob } from '../../src/jobs/queue.ts'

const STARTED = /"msg":"job worker threads started","workers":(\d+)/g
const started = (server: ServerProcess) => [...server.output().matchAll(STARTED)].map((match) => Number(match[1]))

let instance: Awaited<ReturnType<typeof instanceEnvironment>>
let server: ServerProcess | undefined

beforeAll(async () => {
  instance = await instanceEnvironment()
})
afterAll(async () => {
  await server?.stop()
  await instance.cleanup()
})

describe(`job worker threads start on demand (${BACKEND})`, () => {
  test('a job queued while no instance ran jobs is run by the next that starts', async () => {
    const pools = await Pools.open({ databaseUrl: instance.env.DATABASE_URL, dataDir: instance.dataDir })
    await pools.migrate()
    const job = await enqueueJob(pools.system, { kind: 'embed_facts', params: {}, maxAttempts: 1 })
    await pools.close()

    server = await startServerProcess({ ...instance.env, WORKERS: '1' })
    await server.waitFor(new RegExp(`"msg":"job started".*"${job.id}"`))
    expect(started(server)).toEqual([1])
    expect(await server.stop()).toBe(0)
    server = undefined
  })

  test('an idle instance has no worker threads; its first job starts them, once', async () => {
    server = await startServerProcess({ ...instance.env, WORKERS: '2' })
    const http = api(server.url)
    const owner = await registerAccount(http)
    const repo = (await http.post('/api/v1/repositories', { name: 'Idle' }, owner.token)).body
    expect(started(server)).toEqual([])
    for (let i = 0; i < 2; i++) {
      const queued = await http.post(`/${repo.slug}/jobs`, { kind: 'embed_facts' }, owner.token)
      expect(queued.status).toBe(202)
      expect((await waitForJob(http, `/${repo.slug}/jobs/${queued.body.id}`, owner.token)).status).toBe('succeeded')
    }
    // The log line is read from the process's output, which may arrive after the jobs' answers.
    await server.waitFor(/"msg":"job worker threads started"/)
    expect(started(server)).toEqual([2])
  })
})
