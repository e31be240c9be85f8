// PostgreSQL restarts under load: `kgs serve` answers 503 {"error"} while it is down (never a
// 500, a hang or a reset connection), is back by itself within 5 s of the database accepting
// connections (pools, the LISTEN connection, the job workers), and exits promptly on SIGTERM while
// the database is gone. It stops a cluster of its own, so it runs once per CI run: in the
// PostgreSQL pass.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { BACKEND, tempDir } from '../helpers/backend.ts'
import { runKgs, startServerProcess, untilSysadmin, type ServerProcess } from '../helpers/server.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { createPostgresCluster, type PostgresCluster } from '../../scripts/lib/postgres-cluster.ts'

/** Longer than any request may take: a connection attempt gives up after 5 s (src/db/pools.ts). */
const REQUEST_TIMEOUT_MS = 10_000
const CLIENTS = 20

interface Outcome {
  path: string
  status?: number
  body?: string
  failure?: string
}

describe.if(BACKEND === 'postgres')('database restart (postgres)', () => {
  let cluster: PostgresCluster
  let kgs: ServerProcess
  let env: Record<string, string>
  let owner: Account
  let slug: string
  const dataDir = tempDir('kgs-restart-')

  beforeAll(async () => {
    cluster = await createPostgresCluster()
    env = {
      DATABASE_URL: cluster.url(),
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      JWT_SECRET: randomBytes(32).toString('hex'),
      WORKERS: '1',
    }
    kgs = await startServerProcess(env)
    const http = api(kgs.url)
    owner = await registerAccount(http)
    const created = await http.post('/api/v1/repositories', { name: 'Restart' }, owner.token)
    expect(created.status).toBe(201)
    slug = created.body.slug
  })

  afterAll(async () => {
    if (kgs && kgs.process.exitCode === null) {
      kgs.process.kill('SIGKILL')
      await kgs.process.exited
    }
    await cluster?.destroy()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('under load, a restart is answered 503 and recovered from within 5 s, without restarting kgs', async () => {
    const http = api(kgs.url)
    const outcomes: Outcome[] = []
    let loading = true
    const send = async (path: string, init: RequestInit = {}): Promise<Outcome> => {
      const outcome: Outcome = { path }
      try {
        const res = await fetch(kgs.url + path, {
          ...init,
          headers: { authorization: `Bearer ${owner.token}`, ...init.headers },
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        })
        outcome.status = res.status
        outcome.body = await res.text()
      } catch (error) {
        outcome.failure = (error as Error).message
      }
      return outcome
    }
    const clients = Array.from({ length: CLIENTS }, async (_, i) => {
      const path = i % 2 === 0 ? '/api/v1/users/me' : `/${slug}/facts`
      while (loading) outcomes.push(await send(path))
    })
    const until = async (what: string, done: () => Promise<boolean>, timeoutMs: number) => {
      const deadline = performance.now() + timeoutMs
      while (!(await done())) {
        if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
        await Bun.sleep(20)
      }
    }
    const readsOk = async () =>
      (await send(`/${slug}/facts`)).status === 200 && (await send('/api/v1/users/me')).status === 200

    await until(
      'reads under load',
      async () => outcomes.some((o) => o.status === 200 && o.path.endsWith('/facts')),
      5_000,
    )
    await cluster.stop()
    await until(
      '503 on the repository read',
      async () => outcomes.some((o) => o.status === 503 && o.path.endsWith('/facts')),
      5_000,
    )
    const readyDown = await http.get('/readyz')
    expect(readyDown.status).toBe(503)
    expect(Object.keys(readyDown.body)).toEqual(['error'])
    // Enqueueing needs the database: refused cleanly, not lost.
    const enqueueDown = await send(`/${slug}/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'embed_facts' }),
    })
    expect(enqueueDown.status).toBe(503)
    expect(JSON.parse(enqueueDown.body!)).toEqual({ error: expect.any(String) })

    await cluster.start()
    const backAt = performance.now()
    await until('service answering again', readsOk, 5_000)
    await until(
      '/readyz 200',
      async () => (await http.get('/readyz')).status === 200,
      5_000 - (performance.now() - backAt),
    )
    const recoveredMs = performance.now() - backAt
    // A moment more of load on the recovered service, then every answer of the whole run is checked.
    await Bun.sleep(300)
    loading = false
    await Promise.all(clients)

    const bad = outcomes.filter((o) => {
      if (o.failure !== undefined) return true
      if (o.status === 200) return false
      if (o.status !== 503) return true
      const body = JSON.parse(o.body!) as Record<string, unknown>
      return Object.keys(body).join() !== 'error' || typeof body.error !== 'string'
    })
    expect(bad.slice(0, 5)).toEqual([])
    expect(recoveredMs).toBeLessThan(5_000)

    // The job workers claim again: a job enqueued now runs.
    const enqueued = await http.post(`/${slug}/jobs`, { kind: 'embed_facts' }, owner.token)
    expect(enqueued.status).toBe(202)
    const job = await waitForJob(http, `/${slug}/jobs/${enqueued.body.id}`, owner.token, undefined, 15_000)
    expect(job.status).toBe('succeeded')

    // The LISTEN connection listens again: a role change made elsewhere arrives by NOTIFY, well
    // before the periodic catch-up (every 5 s) would find it.
    const promoted = await runKgs(['promote-sysadmin', owner.email], env)
    expect(promoted.code).toBe(0)
    await untilSysadmin({ request: (path, init) => fetch(kgs.url + path, init) }, owner.token, 1_500)
  })

  test('SIGTERM while the database is down: the process exits within 4 s', async () => {
    await cluster.stop()
    const signalled = performance.now()
    const code = await kgs.stop('SIGTERM')
    expect(performance.now() - signalled).toBeLessThan(4_000)
    expect(code).toBe(0)
  })
})
