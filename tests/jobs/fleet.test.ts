// Two kgs processes, two worker threads each, on one PostgreSQL queue: every job runs exactly
// once, and both instances take a share. A job claimed twice would show attempts = 2 (each
// claim counts one), so attempts = 1 on every job is the proof.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { randomBytes } from 'node:crypto'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'

const JOBS = 1000

describe.if(BACKEND === 'postgres')('job fleet (postgres)', () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let a: ServerProcess
  let b: ServerProcess
  let sql: postgres.Sql

  beforeAll(async () => {
    instance = await instanceEnvironment()
    const env = {
      ...instance.env,
      JWT_SECRET: randomBytes(32).toString('hex'),
      BASE_URL: 'https://kgs.fleet.test',
      WORKERS: '2',
    }
    ;[a, b] = await Promise.all([
      startServerProcess(env),
      startServerProcess({ ...env, DATA_DIR: `${instance.dataDir}/b` }),
    ])
    sql = postgres(instance.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    await sql?.end()
    await Promise.all([a?.stop(), b?.stop()])
    await instance.cleanup()
  })

  test(`${JOBS} jobs through two instances: each runs exactly once`, async () => {
    await sql`
      INSERT INTO jobs (id, kind, max_attempts)
      SELECT gen_random_uuid(), 'noop', 1 FROM generate_series(1, ${JOBS})`
    await sql`SELECT pg_notify('kgs_jobs_queued', 'noop')`
    const deadline = Date.now() + 60_000
    for (;;) {
      const [{ open }] =
        (await sql`SELECT count(*)::int AS open FROM jobs WHERE status IN ('queued', 'running')`) as unknown as [
          { open: number },
        ]
      if (open === 0) break
      if (Date.now() > deadline) throw new Error(`${open} jobs still open`)
      await Bun.sleep(50)
    }
    const outcome = await sql<
      { status: string; attempts: number; jobs: number }[]
    >`SELECT status, attempts, count(*)::int AS jobs FROM jobs GROUP BY 1, 2`
    expect([...outcome]).toEqual([{ status: 'succeeded', attempts: 1, jobs: JOBS }])
    const byInstance = await sql<
      { pid: string; jobs: number }[]
    >`SELECT split_part(claimed_by, ':', 2) AS pid, count(*)::int AS jobs FROM jobs GROUP BY 1 ORDER BY 1`
    expect(byInstance.map((r) => Number(r.pid)).sort()).toEqual([a.process.pid, b.process.pid].sort())
    expect(byInstance.every((r) => r.jobs > 0)).toBe(true)
  })
})
