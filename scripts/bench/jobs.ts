// The job system's throughput on PostgreSQL, in a fresh database:
// 1. noop jobs through a kgs process's worker threads (target >= 500 jobs/s), next to the bare
//    queue SQL (claim + finish, the same functions) driven by as many loops in this script:
//    the ratio is what the worker machinery costs over the queue itself.
// 2. embed_facts with the built-in kgs-hash-v1 embedder on a generated graph: facts/s through
//    the job (read, embed, LanceDB upsert), next to embedding the same texts in this process.
// Usage: bun scripts/bench/jobs.ts [jobs=10000] [facts=50000] [workers=2]
// PG_URL names a maintenance database on the server (default postgres://postgres@127.0.0.1:5432/postgres).
import postgres from 'postgres'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { claimJob, finishJob } from '../../src/jobs/queue.ts'
import { Pools } from '../../src/db/pools.ts'
import { hashEmbedding } from '../../src/vectors/embedder.ts'
import { generateGraph } from '../gen-graph.ts'
import { createBenchDatabase } from '../lib/scratch-database.ts'
import { format, spawnKgs } from '../lib/load.ts'

const [jobs = 10_000, facts = 50_000, workers = 2] = process.argv.slice(2).map(Number)
const database = await createBenchDatabase()
const databaseUrl = database.url
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-jobs-'))
const sql = postgres(databaseUrl, { max: workers + 2, onnotice: () => {} })

async function waitUntilDone(): Promise<void> {
  for (;;) {
    const [{ open }] =
      (await sql`SELECT count(*)::int AS open FROM jobs WHERE status IN ('queued', 'running')`) as unknown as [
        { open: number },
      ]
    if (open === 0) return
    await Bun.sleep(5)
  }
}

// ANALYZE after the burst: the steady state that autovacuum keeps (within its one-minute nap);
// without statistics the planner sorts every queued row per claim instead of walking the index.
const insertNoops = async (n: number) => {
  await sql`INSERT INTO jobs (id, kind, max_attempts) SELECT gen_random_uuid(), 'noop', 1 FROM generate_series(1, ${n})`
  await sql`ANALYZE jobs`
}

try {
  const kgs = await spawnKgs(
    {
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      WORKERS: String(workers),
      JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
    },
    join(dataDir, 'kgs.log'),
  )

  // 1. The queue.
  await insertNoops(jobs)
  let started = performance.now()
  await sql`SELECT pg_notify('kgs_jobs_queued', 'noop')`
  await waitUntilDone()
  const throughKgs = jobs / ((performance.now() - started) / 1000)
  await kgs.stop()
  await sql`DELETE FROM jobs`
  await insertNoops(jobs)
  started = performance.now()
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let job; (job = await claimJob(sql, `bench-${w}`, 30_000, ['noop'])); )
        await finishJob(sql, job.id, `bench-${w}`, { status: 'succeeded', result: {} })
    }),
  )
  const bare = jobs / ((performance.now() - started) / 1000)
  console.log(
    `noop jobs, ${workers} workers: kgs ${format(throughKgs)} jobs/s, bare queue SQL ${format(bare)} jobs/s, ratio ${(throughKgs / bare).toFixed(2)} (target >= 500 jobs/s)`,
  )

  // 2. embed_facts on a generated graph.
  const kgs2 = await spawnKgs(
    {
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      WORKERS: String(workers),
      JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
    },
    join(dataDir, 'kgs2.log'),
  )
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${kgs2.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, any>>)
  const { token } = await post('/api/v1/auth/register', {
    email: `bench-${crypto.randomUUID()}@example.com`,
    password: 'correct horse battery',
  })
  const repository = await post('/api/v1/repositories', { name: 'bench' }, token)
  const pools = await Pools.open({ databaseUrl, dataDir })
  const repoSql = await pools.forRepository(repository.id)
  await generateGraph(repoSql, repository.id, { facts, seed: 1 })
  const texts = (await repoSql<{ text: string }[]>`SELECT text FROM facts`).map((r) => r.text)
  await pools.close()
  const job = await post(`/${repository.slug}/jobs`, { kind: 'embed_facts' }, token)
  started = performance.now()
  await waitUntilDone()
  const jobSeconds = (performance.now() - started) / 1000
  const [row] = await sql<
    { status: string; result: { embedded: number } }[]
  >`SELECT status, result FROM jobs WHERE id = ${job.id}`
  await kgs2.stop()
  if (row?.status !== 'succeeded') throw new Error(`embed_facts ended ${row?.status}`)
  started = performance.now()
  for (const text of texts) hashEmbedding(text)
  const embedOnly = texts.length / ((performance.now() - started) / 1000)
  const throughJob = row.result.embedded / jobSeconds
  console.log(
    `embed_facts, ${format(row.result.embedded)} facts: job ${format(throughJob)} facts/s, kgs-hash-v1 alone in this process ${format(embedOnly)} facts/s, ratio ${(throughJob / embedOnly).toFixed(2)}`,
  )
} finally {
  await sql.end()
  await database.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
