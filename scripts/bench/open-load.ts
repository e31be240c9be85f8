// Open-model load (docs/limits.md, "Load, open model"): requests arrive at a constant rate whatever
// kgs answers (as wrk2 and k6's constant-arrival-rate do), and each latency counts from the
// request's intended start, so a server that falls behind is charged for the queue it builds (a
// closed loop would slow its clients down instead and measure the machine). The mix: sign-ins 0.5
// %, refresh 2 %, the rest reads (the caller, the repository, lists, a second page, rows, job
// polling, search).
//
// Bare Elysia's throughput (its hello-world under 64 closed-loop clients, the median of three
// runs) is measured first; then, for each backend in turn (PostgreSQL in a scratch database on
// PG_URL's server, then the embedded default), a kgs child with an imported graph: after a 5 s
// warm-up, rates rise by `--factor` from `--start` while every read class keeps p99 < 100 ms
// with zero errors, then `--refine` steps bisect between the last rate that passed and the
// first that failed; the highest rate that passed is reported as a ratio of bare Elysia's, with
// the sign-ins it carried and the CPU split.
// The scheduler and clients run in this process; kgs's log is written to a file as in production.
// With --costs, each backend first measures what one request of each class costs in CPU (kgs,
// this process, the rest of the machine) and the ceiling that puts on the mix's rate.
//
// Usage: bun scripts/bench/open-load.ts [--backend both|postgres|embedded] [--seconds 10] [--start 50]
//          [--factor 1.5] [--refine 3] [--facts 2000] [--no-logins] [--costs]
// PG_URL names a maintenance database (default postgres://postgres@127.0.0.1:5432/postgres).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { generateBundle } from '../gen-bundle.ts'
import { availableParallelism } from 'node:os'
import {
  cpuSecondsOf,
  format,
  machineBusySeconds,
  mainThreadCpuSecondsOf,
  measure,
  percentile,
  runClosedLoop,
  spawnKgs,
  spawnServer,
  type ServerProcess,
} from '../lib/load.ts'
import { createBenchDatabase, type ScratchDatabase } from '../lib/scratch-database.ts'

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    start: { type: 'string', default: '50' },
    factor: { type: 'string', default: '1.5' },
    refine: { type: 'string', default: '3' },
    facts: { type: 'string', default: '2000' },
    'no-logins': { type: 'boolean', default: false },
    costs: { type: 'boolean', default: false },
    backend: { type: 'string', default: 'both' },
  },
})
const SECONDS = Number(args.seconds)
const P99_LIMIT_MS = 100
const PASSWORD = 'correct horse battery'
const READ_CLASSES = ['me', 'reads', 'jobs', 'search'] as const
type OperationClass = 'login' | 'refresh' | (typeof READ_CLASSES)[number]

if (!['both', 'postgres', 'embedded'].includes(args.backend!)) throw new Error('--backend: both, postgres or embedded')
// Each kgs gets its database from the options below, never from this process's environment.
delete process.env.DATABASE_URL

/** One kgs with an account and a repository holding an imported graph (with vectors, for search). */
async function setUp(databaseUrl: string | undefined) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kgs-open-load-'))
  let kgs: ServerProcess | undefined
  try {
    kgs = await spawnKgs(
      { DATA_DIR: dataDir, WORKERS: '1', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) },
      join(dataDir, 'kgs.log'),
    )
    return { kgs, dataDir, ...(await prepare(kgs.url)) }
  } catch (error) {
    await kgs?.stop()
    rmSync(dataDir, { recursive: true, force: true })
    throw error
  }

  async function prepare(url: string) {
    const call = async (method: string, path: string, body?: unknown, token?: string): Promise<any> => {
      const res = await fetch(url + path, {
        method,
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.text()
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
      return text ? JSON.parse(text) : undefined
    }
    const email = `open-load-${crypto.randomUUID().slice(0, 8)}@example.com`
    const { token } = await call('POST', '/api/v1/auth/register', { email, password: PASSWORD })
    const repo = await call('POST', '/api/v1/repositories', { name: 'Open load' }, token)
    const bundle = await generateBundle(join(dataDir, 'graph.json.gz'), {
      facts: Number(args.facts),
      vectors: 'kgs-hash-v1',
      seed: 1,
    })
    const upload = await fetch(`${url}/${repo.slug}/import-graph`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip' },
      body: Bun.file(bundle.path),
    })
    const importJob = (await upload.json()) as { id: string }
    for (;;) {
      const jobs = (await call('GET', `/${repo.slug}/jobs`, undefined, token)) as { status: string }[]
      if (jobs.every((job) => job.status === 'succeeded')) break
      if (jobs.some((job) => job.status === 'failed' || job.status === 'cancelled'))
        throw new Error(`set-up jobs: ${JSON.stringify(jobs)}`)
      await Bun.sleep(200)
    }
    const facts = (await call('GET', `/${repo.slug}/facts?limit=50`, undefined, token)) as { id: string }[]
    const concepts = (await call('GET', `/${repo.slug}/concepts?limit=50`, undefined, token)) as { id: string }[]
    const second = (
      await fetch(`${url}/${repo.slug}/facts?limit=20`, { headers: { authorization: `Bearer ${token}` } })
    ).headers
      .get('link')!
      .slice(1)
      .split('>')[0]!
    /** Refresh tokens are single use: each refresh hands back the next; sessions made at set-up. */
    const refreshTokens: string[] = []
    for (let i = 0; i < 20; i++)
      refreshTokens.push((await call('POST', '/api/v1/auth/login', { email, password: PASSWORD })).refresh_token)
    const reads = [
      () => `/${repo.slug}`,
      () => `/${repo.slug}/facts`,
      () => `/${repo.slug}/facts?status=new`,
      () => second,
      () => `/${repo.slug}/concepts`,
      () => `/${repo.slug}/sources`,
      () => `/${repo.slug}/facts/${pick(facts).id}`,
      () => `/${repo.slug}/concepts/${pick(concepts).id}`,
    ]
    return { email, token, slug: repo.slug as string, importJob, refreshTokens, reads }
  }
}
type Target = Awaited<ReturnType<typeof setUp>>

const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)]!
const SEARCHES = ['rain', 'water cycle', 'frozen', 'energy', 'ocean currents']

/** A read as the caller of the set-up's session. */
const read = ({ kgs, token }: Target, path: string) =>
  fetch(kgs.url + path, { headers: { authorization: `Bearer ${token}` } }).then(consume)

/** The mix: each class's share of the requests, in percent, and one request of it (whether it succeeded; undefined: none sent). */
const MIX: readonly { op: OperationClass; share: number; send(target: Target): Promise<boolean | undefined> }[] = [
  {
    op: 'login',
    share: 0.5,
    send: ({ kgs, email }) =>
      fetch(`${kgs.url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: PASSWORD }),
      }).then(consume),
  },
  {
    op: 'refresh',
    share: 2,
    async send({ kgs, refreshTokens }) {
      const refresh = refreshTokens.shift()
      if (!refresh) return undefined
      const res = await fetch(`${kgs.url}/api/v1/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refresh_token: refresh }),
      })
      if (res.ok) refreshTokens.push(((await res.json()) as { refresh_token: string }).refresh_token)
      else await res.arrayBuffer()
      return res.ok
    },
  },
  { op: 'me', share: 27.5, send: (target) => read(target, '/api/v1/users/me') },
  {
    op: 'jobs',
    share: 10,
    send: (target) => read(target, pick([`/${target.slug}/jobs/${target.importJob.id}`, `/${target.slug}/jobs`])),
  },
  {
    op: 'search',
    share: 10,
    send: (target) =>
      read(
        target,
        `/${target.slug}/search?q=${encodeURIComponent(pick(SEARCHES))}&kind=${pick(['facts', 'concepts'])}`,
      ),
  },
  { op: 'reads', share: 50, send: (target) => read(target, pick(target.reads)()) },
]

/** One request of the mix; resolves to its class and whether it succeeded. */
async function oneRequest(target: Target): Promise<{ op: OperationClass; ok: boolean } | undefined> {
  let draw = Math.random() * 100
  let drawn = MIX.find(({ share }) => (draw -= share) < 0) ?? MIX.at(-1)!
  // --no-logins: the sign-ins' share reads the caller instead, to show what hashing costs the reads.
  if (drawn.op === 'login' && args['no-logins']) drawn = MIX.find(({ op }) => op === 'me')!
  try {
    const ok = await drawn.send(target)
    return ok === undefined ? undefined : { op: drawn.op, ok }
  } catch {
    return { op: drawn.op, ok: false }
  }
}
async function consume(res: Response): Promise<boolean> {
  await res.arrayBuffer()
  return res.ok
}

/** `rate` requests a second for SECONDS, each sent at its intended time; latencies from that time. */
async function runAt(target: Target, rate: number, seconds = SECONDS) {
  const samples = new Map<OperationClass, { latencies: number[]; errors: number }>()
  const total = Math.round(rate * seconds)
  const inFlight: Promise<void>[] = []
  const start = performance.now() + 20
  for (let i = 0; i < total; i++) {
    const intended = start + (i * 1000) / rate
    const wait = intended - performance.now()
    if (wait > 1) await Bun.sleep(wait)
    inFlight.push(
      oneRequest(target).then((result) => {
        if (!result) return
        const entry = samples.get(result.op) ?? { latencies: [], errors: 0 }
        samples.set(result.op, entry)
        entry.latencies.push(performance.now() - intended)
        if (!result.ok) entry.errors++
      }),
    )
  }
  await Promise.all(inFlight)
  return samples
}

/** CPU seconds used so far by kgs, by its main thread, by this process (the load generator) and by the whole machine. */
function cpuNow(kgsPid: number) {
  return {
    kgs: cpuSecondsOf(kgsPid),
    main: mainThreadCpuSecondsOf(kgsPid),
    generator: cpuSecondsOf(process.pid),
    machine: machineBusySeconds(),
  }
}
type CpuSeconds = ReturnType<typeof cpuNow>

/** The CPU seconds each used since `before`. */
function cpuSince(kgsPid: number, before: CpuSeconds): CpuSeconds {
  const now = cpuNow(kgsPid)
  return {
    kgs: now.kgs - before.kgs,
    main: now.main - before.main,
    generator: now.generator - before.generator,
    machine: now.machine - before.machine,
  }
}

/**
 * The highest passing rate on one target, printed step by step; the sign-ins and the CPU split it
 * carried. Rates rise by `--factor` to the first that fails, then `--refine` steps halve the gap
 * between the last that passed and the lowest that failed (the factor alone leaves the answer up
 * to a factor low).
 */
async function ramp(target: Target): Promise<{ best: number; carried: string }> {
  const { kgs } = target
  // A warm-up at the first rate, not counted: JIT, the search index's first load, the pools.
  await runAt(target, Number(args.start), 5)
  let best = 0
  let carried = ''
  const cores = availableParallelism()
  /** One step at `rate`, printed; whether it passed (and if so, what it carried). */
  const step = async (rate: number): Promise<boolean> => {
    const cpuBefore = cpuNow(kgs.pid)
    const started = performance.now()
    const samples = await runAt(target, rate)
    const wall = (performance.now() - started) / 1000
    const busy = (seconds: number) => `${((100 * seconds) / wall).toFixed(0)} %`
    let pass = true
    const lines: string[] = []
    for (const [op, { latencies, errors }] of [...samples].sort(([a], [b]) => a.localeCompare(b))) {
      latencies.sort((a, b) => a - b)
      const p99 = percentile(latencies, 0.99)
      const isRead = (READ_CLASSES as readonly string[]).includes(op)
      if (errors > 0 || (isRead && p99 >= P99_LIMIT_MS)) pass = false
      lines.push(
        `  ${op.padEnd(8)} n=${String(latencies.length).padStart(6)}  p50 ${percentile(latencies, 0.5).toFixed(1).padStart(7)} ms  p99 ${p99.toFixed(1).padStart(7)} ms  errors ${errors}`,
      )
    }
    // Which resource ran out: kgs's main thread (one core at most), or the machine's cores
    // (kgs, this process, and the rest: the database server, the kernel, anything else running).
    const used = cpuSince(kgs.pid, cpuBefore)
    const cpu = `kgs main thread ${busy(used.main)} of a core, kgs ${busy(used.kgs)}, load generator ${busy(used.generator)}, the rest ${busy(used.machine - used.kgs - used.generator)}; machine ${busy(used.machine)} of ${cores} cores`
    console.log(`${format(rate)} req/s for ${SECONDS} s: ${pass ? 'pass' : 'FAIL'} (CPU: ${cpu})\n${lines.join('\n')}`)
    if (pass && rate > best) {
      best = rate
      const signIns = samples.get('login')?.latencies.length ?? 0
      carried = `${(signIns / SECONDS).toFixed(1)} sign-ins/s (${signIns} in ${SECONDS} s), CPU: ${cpu}`
    }
    // A pause between steps: what one left running (collection, the pools' housekeeping) does not count against the next.
    await Bun.sleep(2_000)
    return pass
  }
  let failed = 0
  for (let rate = Number(args.start); ; rate = Math.round(rate * Number(args.factor))) {
    if (!(await step(rate))) {
      failed = rate
      break
    }
  }
  for (let i = 0; i < Number(args.refine) && failed - best > 1; i++) {
    const rate = Math.round((best + failed) / 2)
    if (!(await step(rate))) failed = rate
  }
  return { best, carried }
}

/** Seconds each class is measured for by --costs, after a second of warm-up. */
const COST_SECONDS = 4
const COST_CLIENTS = 8

/**
 * --costs: the CPU one request of each class costs, measured class by class in a closed loop:
 * kgs's, this process's (the load generator's) and the rest of the machine's (the database
 * server, the kernel). Their sum weighted by the mix's shares is what one request of the mix
 * costs the machine, so the cores over it is the arrival rate at which the mix would keep every
 * core busy: a ceiling no scheduling passes, whatever the latencies.
 */
async function costs(target: Target, bareRate: number): Promise<string> {
  const cores = availableParallelism()
  const clients = Array.from({ length: COST_CLIENTS }, (_, i) => i)
  const lines = [
    `CPU per request, by class (${COST_CLIENTS} closed-loop clients, ${COST_SECONDS} s each), in microseconds:`,
  ]
  lines.push(
    `  ${'class'.padEnd(8)} ${'share'.padStart(6)} ${'kgs'.padStart(7)} ${'main'.padStart(7)} ${'load gen'.padStart(9)} ${'rest'.padStart(7)} ${'total'.padStart(7)}`,
  )
  let mix = 0
  for (const { op, share, send } of MIX) {
    const step = {
      operation: op,
      async send() {
        if ((await send(target)) === false) throw new Error(`${op} failed`)
      },
    }
    await runClosedLoop(clients, () => step, 1)
    const before = cpuNow(target.kgs.pid)
    const samples = (await runClosedLoop(clients, () => step, COST_SECONDS)).get(op)!
    if (samples.errors > 0) throw new Error(`--costs: ${op}: ${samples.errors} errors, e.g. ${samples.failures[0]}`)
    const used = cpuSince(target.kgs.pid, before)
    const perRequest = (seconds: number) => (seconds * 1e6) / samples.latencies.length
    const kgs = perRequest(used.kgs)
    const generator = perRequest(used.generator)
    // The machine's counters and the processes' are read at slightly different moments: a class
    // that leaves the rest of the machine idle could otherwise show it a few microseconds below zero.
    const total = Math.max(perRequest(used.machine), kgs + generator)
    mix += (share / 100) * total
    const us = (value: number, width = 7) => value.toFixed(0).padStart(width)
    lines.push(
      `  ${op.padEnd(8)} ${`${share} %`.padStart(6)} ${us(kgs)} ${us(perRequest(used.main))} ${us(generator, 9)} ${us(total - kgs - generator)} ${us(total)}`,
    )
  }
  const ceiling = (cores * 1e6) / mix
  lines.push(
    `  one request of the mix: ${mix.toFixed(0)} us of CPU; all ${cores} cores busy at ${format(ceiling)} req/s, ratio ${(ceiling / bareRate).toFixed(3)} (the ceiling)`,
  )
  return lines.join('\n')
}

// Bare Elysia three times, the median taken: one 5 s run on this 2-core machine has measured
// anywhere from a third to all of another's.
const bare = await spawnServer([process.execPath, join(import.meta.dir, 'baseline-elysia.ts')], {})
const bareRates: number[] = []
for (let i = 0; i < 3; i++)
  bareRates.push((await measure(() => fetch(`${bare.url}/healthz`), { seconds: 5, concurrency: 64 })).requestsPerSecond)
await bare.stop()
const bareRate = [...bareRates].sort((a, b) => a - b)[1]!
console.log(
  `bare Elysia (64 closed-loop clients, 5 s, three runs): ${bareRates.map((rate) => format(rate)).join(', ')} req/s; median ${format(bareRate)}`,
)

const results: { label: string; best: number; carried: string; costTable?: string }[] = []
for (const backend of args.backend === 'both' ? ['postgres', 'embedded'] : [args.backend!]) {
  const label = backend === 'postgres' ? 'PostgreSQL' : 'the embedded database'
  console.log(`\n--- ${label}`)
  let database: ScratchDatabase | undefined
  let target: Target | undefined
  try {
    if (backend === 'postgres') database = await createBenchDatabase()
    target = await setUp(database?.url)
    const costTable = args.costs ? await costs(target, bareRate) : undefined
    if (costTable) console.log(costTable)
    results.push({ label, costTable, ...(await ramp(target)) })
  } finally {
    await target?.kgs.stop()
    if (target) rmSync(target.dataDir, { recursive: true, force: true })
    await database?.drop()
  }
}

console.log(`\nbare Elysia throughput (median of three): ${format(bareRate)} req/s`)
for (const { label, best, carried, costTable } of results) {
  console.log(
    `on ${label}: highest arrival rate with every read class at p99 < ${P99_LIMIT_MS} ms and no errors: ${format(best)} req/s, ratio ${(best / bareRate).toFixed(3)} (target >= 0.05)`,
  )
  console.log(`  at that rate: ${carried || 'no rate passed'}`)
  if (costTable) console.log(costTable)
}
