// The footprint of the one binary on a laptop (docs/benchmarks.md, "Footprint"): its size, how fast
// it starts, and how much memory it holds, each printed beside its target. It runs the compiled
// binary (building dist/kgs first when there is none, or with --build) as a person would: `kgs
// serve` on a fresh data directory, then again on the same one, then with repositories opened one
// by one.
//
// What each part costs is found by switching it off (WORKERS=0; PostgreSQL instead of the
// embedded system database) or by bringing it in (a sign-up starts a hashing thread, a search
// loads the vector store, a job starts the job workers) and reading the resident set before
// and after. Memory is VmRSS/VmHWM of the process (every thread counts); start-up is wall time
// to /readyz and the CPU seconds the process used until then (the steadier figure on a busy machine).
//
// Usage: bun scripts/bench/footprint.ts [--binary dist/kgs] [--build] [--no-postgres]
// PostgreSQL: PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), a scratch database.
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { cpuSecondsOf, memoryOf, settledMemoryOf } from '../lib/load.ts'
import { createBenchDatabase } from '../lib/scratch-database.ts'

const { values: args } = parseArgs({
  options: {
    binary: { type: 'string', default: join(import.meta.dir, '..', '..', 'dist', 'kgs') },
    build: { type: 'boolean', default: false },
    'no-postgres': { type: 'boolean', default: false },
  },
})
const binary = resolve(args.binary)
if (args.build || !existsSync(binary)) {
  const build = Bun.spawnSync([process.execPath, join(import.meta.dir, '..', 'build.ts')], {
    stdout: 'inherit',
    stderr: 'inherit',
  })
  if (build.exitCode !== 0) throw new Error('the build failed')
}

const TARGETS = {
  binaryMiB: 200,
  firstStartSeconds: 3,
  warmStartSeconds: 1,
  peakMB: 400,
  idleMB: 250,
  perRepositoryMB: 60,
}
const PASSWORD = 'correct horse battery'
const print = (label: string, value: string, target?: string) =>
  console.log(`${label.padEnd(46)} ${value.padStart(9)}${target ? `   ${target}` : ''}`)
const mb = (value: number) => `${Math.round(value)} MB`
const verdict = (value: number, limit: number, unit: string) =>
  `(target <= ${limit} ${unit}: ${value <= limit ? 'met' : 'NOT met'})`

interface Running {
  url: string
  pid: number
  readySeconds: number
  readyCpuSeconds: number
  peakMB: number
  stop(): Promise<void>
}

/** Starts `kgs serve` and waits for /readyz, watching its peak resident set all the way. */
async function serve(dataDir: string, env: Record<string, string> = {}): Promise<Running> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  const started = performance.now()
  const child = Bun.spawn([binary, 'serve'], {
    cwd: dataDir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dataDir,
      TMPDIR: process.env.TMPDIR ?? tmpdir(),
      DATA_DIR: join(dataDir, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      ...env,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  for (;;) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ready) break
    if (child.exitCode !== null) throw new Error(`kgs exited with ${child.exitCode} before it was ready`)
    if (performance.now() - started > 120_000) throw new Error('kgs was not ready within 120 s')
    await Bun.sleep(10)
  }
  const readySeconds = (performance.now() - started) / 1000
  return {
    url,
    pid: child.pid,
    readySeconds,
    readyCpuSeconds: cpuSecondsOf(child.pid),
    peakMB: memoryOf(child.pid).peakMB,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

async function call(url: string, method: string, path: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(url + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text ? JSON.parse(text) : undefined
}

const idle = async (pid: number) => (await settledMemoryOf(pid, { deadlineMs: 30_000 })).rssMB
const threadsOf = (pid: number) => Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1])

const work = mkdtempSync(join(tmpdir(), 'kgs-footprint-'))
try {
  const sizeMiB = statSync(binary).size / 2 ** 20
  print('binary size', `${sizeMiB.toFixed(0)} MiB`, verdict(sizeMiB, TARGETS.binaryMiB, 'MiB'))

  // ---- first start, then warm start, on the embedded default
  let kgs = await serve(work)
  print(
    'first start to /readyz (fresh data directory)',
    `${kgs.readySeconds.toFixed(2)} s`,
    verdict(kgs.readySeconds, TARGETS.firstStartSeconds, 's'),
  )
  print('  CPU used until then', `${kgs.readyCpuSeconds.toFixed(2)} s`)
  print('  peak RSS until then', mb(kgs.peakMB), verdict(kgs.peakMB, TARGETS.peakMB, 'MB'))
  const firstIdle = await idle(kgs.pid)
  print('  idle RSS after it', mb(firstIdle))
  await kgs.stop()

  // Repositories stay open for the whole measurement (they close after a minute unused otherwise).
  kgs = await serve(work, { EMBEDDED_IDLE_TIMEOUT: '1h' })
  print(
    'warm start to /readyz',
    `${kgs.readySeconds.toFixed(2)} s`,
    verdict(kgs.readySeconds, TARGETS.warmStartSeconds, 's'),
  )
  print('  CPU used until then', `${kgs.readyCpuSeconds.toFixed(2)} s`)
  print('  peak RSS until then', mb(kgs.peakMB), verdict(kgs.peakMB, TARGETS.peakMB, 'MB'))
  const idleMB = await idle(kgs.pid)
  print('idle RSS, no repository (embedded)', mb(idleMB), verdict(idleMB, TARGETS.idleMB, 'MB'))
  print('  threads', String(threadsOf(kgs.pid)))

  // ---- parts brought in one at a time
  const { token } = await call(kgs.url, 'POST', '/api/v1/auth/register', {
    email: 'footprint@example.com',
    password: PASSWORD,
  })
  const afterHash = await idle(kgs.pid)
  print('+ hashing thread (a sign-up)', mb(afterHash - idleMB))

  const repositories: { slug: string }[] = []
  const openRepository = async () => {
    const repository = await call(
      kgs.url,
      'POST',
      '/api/v1/repositories',
      { name: `footprint ${repositories.length + 1}` },
      token,
    )
    await call(kgs.url, 'GET', `/${repository.slug}/facts`, undefined, token)
    repositories.push(repository)
  }
  await openRepository()
  const oneOpen = await idle(kgs.pid)
  print('+ 1 open repository', mb(oneOpen - afterHash))

  await call(kgs.url, 'GET', `/${repositories[0]!.slug}/search?q=ice`, undefined, token)
  const afterSearch = await idle(kgs.pid)
  print('+ vector store (a search)', mb(afterSearch - oneOpen))

  let job = await call(kgs.url, 'POST', `/${repositories[0]!.slug}/jobs`, { kind: 'embed_facts' }, token)
  while (job.status === 'queued' || job.status === 'running') {
    await Bun.sleep(50)
    job = await call(kgs.url, 'GET', `/${repositories[0]!.slug}/jobs/${job.id}`, undefined, token)
  }
  if (job.status !== 'succeeded') throw new Error(`embed_facts ended ${job.status}`)
  const afterJob = await idle(kgs.pid)
  print('+ job workers (a job)', mb(afterJob - afterSearch))

  const opened: Record<number, number> = { 1: afterJob }
  for (const count of [4, 8]) {
    while (repositories.length < count) await openRepository()
    opened[count] = await idle(kgs.pid)
  }
  print('RSS with 1 open repository', mb(opened[1]!))
  print('RSS with 4 open repositories', mb(opened[4]!))
  print('RSS with 8 open repositories', mb(opened[8]!))
  const perRepository = (opened[8]! - opened[1]!) / 7
  print('  each open repository', mb(perRepository), verdict(perRepository, TARGETS.perRepositoryMB, 'MB'))
  await kgs.stop()

  // ---- switched off: the job workers, then the embedded system database
  kgs = await serve(mkdtempSync(join(work, 'no-workers-')), { WORKERS: '0' })
  const noWorkers = await idle(kgs.pid)
  print('idle RSS, WORKERS=0 (embedded)', mb(noWorkers))
  await kgs.stop()

  if (!args['no-postgres']) {
    const database = await createBenchDatabase()
    try {
      kgs = await serve(mkdtempSync(join(work, 'postgres-')), { DATABASE_URL: database.url })
      print('start to /readyz on PostgreSQL', `${kgs.readySeconds.toFixed(2)} s`)
      const onPostgres = await idle(kgs.pid)
      print('idle RSS, no repository (PostgreSQL)', mb(onPostgres))
      print('  so the embedded system database costs', mb(idleMB - onPostgres))
      print('  and the rest (runtime, code, HTTP, pools)', mb(onPostgres))
      await kgs.stop()
    } finally {
      await database.drop()
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
