// Load: 200 concurrent clients for 30 s on a mix of what a deployment serves (login 5%, refresh
// 5%, GET /api/v1/users/me 40%, repository reads 40%, job polling 10%) against a `kgs serve`
// child process on PostgreSQL (a fresh database from PG_URL, dropped at the end), three
// consecutive runs against the same process. Per run: requests/s; per operation class the
// p50/p99 latency and errors as the clients saw them, and as kgs logged them (its `ms`, from the
// request's arrival to its response: without the queueing in sockets and in the clients); the CPU
// each process used; the kgs process's VmRSS/VmHWM before and after. Then the RSS growth across
// the runs, against MEMORY_GROWTH_LIMIT_MB, and p50/p99 by route.
//
// Set-up: a sysadmin (promoted with `kgs promote-sysadmin`, as an operator does) creates the
// repositories, fills them with gen-graph, and gives the users roles in them (each user holds
// a role in two, so every repository is shared among viewers, curators and editors), and
// queues embed_facts and embed_concepts in each (the vectors the search route reads; the jobs
// the polling reads), waiting for them and the optimize_vectors jobs they queue to finish, so that
// no job runs during the load. Each client is a user with a session of its own (clients share
// users); it logs in during set-up.
// Reads spread uniformly over the repository's read routes (the repository, the lists with and
// without their filters, a second page, one row of each kind, search), job polling over one job,
// the job list and the header-addressed form. Every client draws its steps from its own seeded
// stream. A warm-up precedes the first run; each run waits for the requests still running at its
// end, so the next starts from idle.
//
// The clients run in a child process (scripts/lib/load-clients.ts), not in this one: this
// process holds the set-up's state and talks to PostgreSQL, and its garbage collections and
// timers would otherwise land inside the clients' measured latencies. One process suffices: a
// Bun client drives kgs at over 40,000 req/s on this machine (scripts/bench/http.ts), ten times
// what kgs serves of this mix, and the report prints the CPU the clients used next to kgs's
// (0.01 to 0.2 of a core). The clients still share the two cores with kgs and PostgreSQL:
// latencies include that contention.
//
// What bounds the mix: a login is an argon2id verification (64 MiB, t=2: about 130 ms of a core),
// and kgs hashes on all cores but one (src/accounts/passwords.ts), so on two cores it completes
// about 7 logins/s. In a closed loop in which 5% of the requests are logins, logins come faster
// than that: within about 3 s of a run's start most clients wait in the login queue (the login
// latency is that queue, tens of seconds), and the reads see a few clients at a time. The slow
// reads of a run are those of its first seconds, when all 200 clients are busy (kgs's log shows
// it). `--mix login=0,refresh=0,me=45,reads=45,jobs=10` keeps all 200 clients on the reads.
//
// `--ramp N` starts the clients of each run one after another over its first N seconds instead of
// all at once (default 0: the issue's measurement); the samples of the ramp count.
//
// Usage: bun scripts/bench/load.ts [--clients 200] [--seconds 30] [--runs 3] [--warmup 5] [--ramp 0]
//          [--users 20] [--repositories 3] [--facts 2000] [--mix login=5,refresh=5,me=40,reads=40,jobs=10]
// PG_URL names a maintenance database (default postgres://postgres@127.0.0.1:5432/postgres).
// BENCH_VERBOSE=1 prints every failed request; BENCH_LOG=<file> keeps kgs's log there.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Pools } from '../../src/db/pools.ts'
import { generateGraph } from '../gen-graph.ts'
import { createBenchDatabase } from '../lib/scratch-database.ts'
import {
  OPERATION_CLASSES,
  type ClientMessage,
  type MixPlan,
  type OperationClass,
  type ParentMessage,
  type Route,
  type RouteRequest,
} from '../lib/load-clients.ts'
import {
  cpuSecondsOf,
  format,
  mapConcurrently,
  memoryOf,
  percentile,
  settledMemoryOf,
  summarize,
  spawnKgs,
  type OperationSamples,
  type ServerProcess,
} from '../lib/load.ts'
import { WORDS } from '../lib/synthetic.ts'

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '30' },
    runs: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '5' },
    ramp: { type: 'string', default: '0' },
    users: { type: 'string', default: '20' },
    repositories: { type: 'string', default: '3' },
    facts: { type: 'string', default: '2000' },
    mix: { type: 'string', default: 'login=5,refresh=5,me=40,reads=40,jobs=10' },
  },
  strict: true,
})
const count = (name: keyof typeof args, minimum: number) => {
  const n = Number(args[name])
  if (!Number.isInteger(n) || n < minimum) throw new Error(`--${name}: expected an integer of at least ${minimum}`)
  return n
}
const clientCount = count('clients', 1)
const seconds = count('seconds', 1)
const runs = count('runs', 1)
const warmupSeconds = count('warmup', 0)
const rampSeconds = count('ramp', 0)
if (rampSeconds >= seconds) throw new Error('--ramp: must be shorter than --seconds')
const userCount = count('users', 1)
const repositoryCount = count('repositories', 1)
const facts = count('facts', 20)
const weights = parseMix(args.mix!)

const LABELS: Record<OperationClass, string> = {
  login: 'login',
  refresh: 'refresh',
  me: 'users/me',
  reads: 'repository reads',
  jobs: 'job polling',
}
/** The classes the latency target applies to: the reads. Login and refresh are bound by argon2id and by a transaction, by design. */
const READ_CLASSES: ReadonlySet<OperationClass> = new Set(['me', 'reads', 'jobs'])
const READ_P99_TARGET_MS = 100
/**
 * Memory: the settled RSS after each run. The first runs grow caches, connection pools, JIT code
 * and the heap to their working size, in steps (trials, 15 s runs at 4,000 req/s: +53, +69, +6,
 * then -25, -10, +12 MB; at this mix's 250 req/s: +3, +16, +4). A leak instead sets a new high
 * after every run. So the check is the last run's RSS against the highest after any run before it
 * (from the first on), with a limit: 16 MB is 2 KB per request at this mix's 7,500 requests a run.
 * Settled readings, because freed memory goes back to the system a moment after a burst: right
 * at a run's end the RSS can still hold an argon2id verification's 64 MiB.
 */
const MEMORY_GROWTH_LIMIT_MB = 16
const ROLES = ['viewer', 'curator', 'editor'] as const
const PASSWORD = 'correct horse battery staple'
/** Registrations in flight at set-up: each is an argon2id hash, which kgs runs a few at a time anyway. */
const REGISTRATIONS_AT_ONCE = 4
/** Set-up waits: the sysadmin promotion reaching the server, the embedding jobs finishing. */
const PROMOTION_DEADLINE_MS = 10_000
const JOBS_DEADLINE_MS = 300_000
const LOG_DEADLINE_MS = 5_000

function parseMix(mix: string): Record<OperationClass, number> {
  const weights = Object.fromEntries(OPERATION_CLASSES.map((c) => [c, 0])) as Record<OperationClass, number>
  for (const part of mix.split(',')) {
    const [name, value] = part.split('=')
    if (!OPERATION_CLASSES.includes(name as OperationClass) || !(Number(value) >= 0))
      throw new Error(
        `--mix: expected class=weight pairs of ${OPERATION_CLASSES.join(', ')}; got ${JSON.stringify(part)}`,
      )
    weights[name as OperationClass] = Number(value)
  }
  if (OPERATION_CLASSES.every((c) => weights[c] === 0)) throw new Error('--mix: every weight is 0')
  return weights
}

const classOf = (operation: string) => operation.slice(0, operation.indexOf(' ')) as OperationClass

/** The class of a request the server logged, by its path (the clients' routes, see load-clients.ts). */
function classOfPath(path: string): OperationClass {
  if (path === '/api/v1/auth/login') return 'login'
  if (path === '/api/v1/auth/refresh') return 'refresh'
  if (path === '/api/v1/users/me') return 'me'
  return /\/jobs(\/|$)/.test(path) ? 'jobs' : 'reads'
}

/** Polls `check` until it returns a value, or fails after `ms`. */
async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = performance.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

function api(base: string) {
  const send = async (method: string, path: string, token?: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`)
    return { json: JSON.parse(text) as any, link: res.headers.get('link') }
  }
  return {
    send,
    call: async (method: string, path: string, token?: string, body?: unknown) =>
      (await send(method, path, token, body)).json,
  }
}

/** Everything the clients need, made through the API (and gen-graph for the rows). */
async function setUpService(url: string, env: Record<string, string>, dataDir: string): Promise<MixPlan> {
  const { send, call } = api(url)
  const run = `${Date.now().toString(36)}`
  const adminEmail = `admin-${run}@bench.example`
  const { token: admin } = await call('POST', '/api/v1/auth/register', undefined, {
    email: adminEmail,
    password: PASSWORD,
  })
  const promote = Bun.spawn(
    [process.execPath, join(import.meta.dir, '../../src/main.ts'), 'promote-sysadmin', adminEmail],
    { env: { ...process.env, ...env }, stdout: 'ignore', stderr: 'inherit' },
  )
  if ((await promote.exited) !== 0) throw new Error('kgs promote-sysadmin failed')
  await waitFor('the sysadmin role', PROMOTION_DEADLINE_MS, async () =>
    (await fetch(`${url}/api/v1/admin/permissions`, { headers: { authorization: `Bearer ${admin}` } })).ok
      ? true
      : undefined,
  )

  const repositories: { id: string; slug: string }[] = []
  for (let r = 0; r < repositoryCount; r++)
    repositories.push(await call('POST', '/api/v1/repositories', admin, { name: `Load ${r}` }))
  const pools = await Pools.open({ databaseUrl: env.DATABASE_URL, dataDir })
  try {
    for (const [r, repository] of repositories.entries()) {
      const sql = await pools.forRepository(repository.id)
      await generateGraph(sql, repository.id, { facts, seed: r + 1 })
      await sql`ANALYZE`
    }
  } finally {
    await pools.close()
  }

  const jobs = await Promise.all(
    repositories.map(async (repository) => [
      await call('POST', `/${repository.slug}/jobs`, admin, { kind: 'embed_facts' }),
      await call('POST', `/${repository.slug}/jobs`, admin, { kind: 'embed_concepts' }),
    ]),
  )
  // The embedding jobs, and the optimize_vectors jobs they queue.
  await waitFor('the embedding jobs and their follow-ups', JOBS_DEADLINE_MS, async () => {
    const listed = await Promise.all(
      repositories.map(
        async (repository) =>
          (await call('GET', `/${repository.slug}/jobs?limit=100`, admin)) as { kind: string; status: string }[],
      ),
    )
    const failed = listed.flat().find((job) => job.status === 'failed' || job.status === 'cancelled')
    if (failed) throw new Error(`a ${failed.kind} job ended ${failed.status}`)
    return listed.flat().every((job) => job.status === 'succeeded') ? true : undefined
  })

  const users = await mapConcurrently(
    Array.from({ length: userCount }, (_, u) => u),
    REGISTRATIONS_AT_ONCE,
    async (u) => {
      const email = `user-${u}-${run}@bench.example`
      const { user } = await call('POST', '/api/v1/auth/register', undefined, { email, password: PASSWORD })
      const held = [...new Set([u % repositoryCount, (u + 1) % repositoryCount])]
      for (const [k, r] of held.entries()) {
        await call('PUT', '/api/v1/admin/users/roles', admin, {
          user_id: user.id,
          role: ROLES[(u + k) % ROLES.length],
          domain: repositories[r]!.id,
        })
      }
      return { email, password: PASSWORD, repositories: held }
    },
  )

  const plan = await Promise.all(
    repositories.map(async (repository, r) =>
      readRoutes(
        repository,
        jobs[r]!.map((j) => j.id as string),
        admin,
        send,
      ),
    ),
  )
  return { url, clients: clientCount, weights, users, repositories: plan, seed: 1 }
}

/** The read and job-polling routes of a repository, with ids, filters and a cursor taken from its own lists. */
async function readRoutes(
  repository: { id: string; slug: string },
  jobIds: string[],
  token: string,
  send: ReturnType<typeof api>['send'],
): Promise<{ reads: Route[]; jobs: Route[] }> {
  const base = `/${repository.slug}`
  const list = async (kind: string) => (await send('GET', `${base}/${kind}?limit=500`, token)).json as { id: string }[]
  const [sources, factRows, concepts, investigations, reports] = await Promise.all(
    ['sources', 'facts', 'concepts', 'investigations', 'reports'].map(list),
  )
  // The second page of the facts, as a client following the Link header asks for it.
  const { link } = await send('GET', `${base}/facts`, token)
  const secondPage = /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1]
  if (!secondPage) throw new Error('the facts list has no second page: use more --facts')
  const one = (route: string, rows: { id: string }[]) => ({
    route: `GET /{repoID}/${route}`,
    requests: rows.map((row) => ({ path: `${base}/${route.split('/')[0]}/${row.id}` })),
  })
  const paths = (route: string, list: string[]): Route => ({ route, requests: list.map((path) => ({ path })) })
  const words = WORDS.slice(0, 20)
  const reads: Route[] = [
    paths('GET /{repoID}', [base]),
    paths('GET /api/v1/repositories/{repoID}', [`/api/v1/repositories/${repository.id}`]),
    {
      route: 'GET /api/v1/repository (X-Repository-ID)',
      requests: [{ path: '/api/v1/repository', repositoryHeader: repository.slug }],
    },
    paths('GET /{repoID}/sources', [`${base}/sources`]),
    one('sources/{sourceID}', sources!),
    paths('GET /{repoID}/facts', [`${base}/facts`]),
    paths('GET /{repoID}/facts?cursor=', [secondPage]),
    paths(
      'GET /{repoID}/facts?status=',
      ['new', 'stable'].map((s) => `${base}/facts?status=${s}`),
    ),
    paths(
      'GET /{repoID}/facts?source_id=',
      sources!.map((s) => `${base}/facts?source_id=${s.id}`),
    ),
    {
      route: 'GET /api/v1/facts (X-Repository-ID)',
      requests: [{ path: '/api/v1/facts', repositoryHeader: repository.id }],
    },
    one('facts/{factID}', factRows!),
    paths('GET /{repoID}/concepts', [`${base}/concepts`]),
    paths(
      'GET /{repoID}/concepts?prefix=',
      words.map((w) => `${base}/concepts?prefix=${w.slice(0, 3)}`),
    ),
    one('concepts/{conceptID}', concepts!),
    paths('GET /{repoID}/investigations', [`${base}/investigations`]),
    one('investigations/{investigationID}', investigations!),
    paths('GET /{repoID}/reports', [`${base}/reports`, `${base}/reports?parent_id=none`]),
    one('reports/{reportID}', reports!),
    paths(
      'GET /{repoID}/search?kind=facts',
      words.map((w, i) => `${base}/search?kind=facts&q=${w}+${words[(i + 7) % words.length]}`),
    ),
    paths(
      'GET /{repoID}/search?kind=concepts',
      words.map((w) => `${base}/search?kind=concepts&q=${w}`),
    ),
  ]
  const jobs: Route[] = [
    paths(
      'GET /{repoID}/jobs/{jobID}',
      jobIds.map((id) => `${base}/jobs/${id}`),
    ),
    paths('GET /{repoID}/jobs', [`${base}/jobs`]),
    {
      route: 'GET /api/v1/jobs/{jobID} (X-Repository-ID)',
      requests: jobIds.map((id): RouteRequest => ({ path: `/api/v1/jobs/${id}`, repositoryHeader: repository.slug })),
    },
  ]
  return { reads, jobs }
}

/** The clients' process: setup and runs as requests over IPC, one at a time. */
function startClients() {
  let pending: { resolve(message: ClientMessage): void } | undefined
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '../lib/load-clients.ts')], {
    stdout: 'inherit',
    stderr: 'inherit',
    ipc(message: ClientMessage) {
      pending?.resolve(message)
    },
  })
  const request = async (message: ParentMessage): Promise<ClientMessage> => {
    const answer = new Promise<ClientMessage>((resolve) => (pending = { resolve }))
    child.send(message)
    const reply = await Promise.race([
      answer,
      child.exited.then((code) => ({ type: 'failed' as const, error: `the clients' process exited (${code})` })),
    ])
    if (reply.type === 'failed') throw new Error(`clients: ${reply.error}`)
    return reply
  }
  return {
    pid: child.pid,
    setUp: (plan: MixPlan) => request({ type: 'setup', plan }),
    async run(runSeconds: number, rampSeconds = 0): Promise<Map<string, OperationSamples>> {
      const reply = await request({ type: 'run', seconds: runSeconds, rampSeconds })
      return new Map(reply.type === 'result' ? reply.samples : [])
    },
    async stop() {
      child.kill()
      await child.exited
    },
  }
}

/** The `ms` of the request lines kgs logged past `offset`, by class; waits until `expected` lines are there (the log is flushed every 20 ms). */
async function serverLatencies(
  logFile: string,
  offset: number,
  expected: number,
): Promise<Map<OperationClass, number[]>> {
  const read = () => {
    const lines = readFileSync(logFile).subarray(offset).toString('utf8').split('\n')
    return lines
      .filter((line) => line.includes('"msg":"request"'))
      .map((line) => JSON.parse(line) as { path: string; ms: number })
  }
  let logged = read()
  try {
    logged = await waitFor('the request log', LOG_DEADLINE_MS, async () =>
      (logged = read()).length >= expected ? logged : undefined,
    )
  } catch {
    console.log(
      `  (the log holds ${format(logged.length)} of ${format(expected)} request lines: requests that failed before reaching kgs are not in it)`,
    )
  }
  const byClass = new Map<OperationClass, number[]>()
  for (const { path, ms } of logged) {
    const cls = classOfPath(path)
    const list = byClass.get(cls)
    if (list) list.push(ms)
    else byClass.set(cls, [ms])
  }
  return byClass
}

const ms = (n: number) => n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)
const mb = (n: number) => `${n.toFixed(0)} MB`

interface RunFigures {
  /** Settled VmRSS before and after the run; VmRSS and VmHWM at its end. */
  rssBefore: number
  rssAfter: number
  rssAtEnd: number
  peakAfter: number
  requests: number
  requestsPerSecond: number
  errors: number
  readP99: number
  samples: Map<string, OperationSamples>
}

function report(
  run: number,
  samples: Map<string, OperationSamples>,
  server: Map<OperationClass, number[]>,
  cpu: { kgs: number; clients: number; wall: number },
) {
  const all = summarize([...samples.values()], seconds)
  console.log(
    `\nrun ${run} of ${runs}: ${seconds} s, ${clientCount} clients, ${format(all.requests)} requests, ${format(all.requestsPerSecond)} req/s, ${all.errors} errors; CPU over ${cpu.wall.toFixed(1)} s: kgs ${(cpu.kgs / cpu.wall).toFixed(2)} cores, clients ${(cpu.clients / cpu.wall).toFixed(2)} cores`,
  )
  console.log(
    `  ${'class'.padEnd(18)}${'share'.padStart(7)}${'requests'.padStart(10)}${'req/s'.padStart(8)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(8)}${'kgs p50/p99 ms'.padStart(17)}   target`,
  )
  let readP99 = 0
  for (const cls of OPERATION_CLASSES) {
    const groups = [...samples].filter(([operation]) => classOf(operation) === cls).map(([, s]) => s)
    if (groups.length === 0) continue
    const figures = summarize(groups, seconds)
    const logged = (server.get(cls) ?? []).sort((a, b) => a - b)
    const target = READ_CLASSES.has(cls)
      ? `p99 < ${READ_P99_TARGET_MS} ms, 0 errors: ${figures.p99 < READ_P99_TARGET_MS && figures.errors === 0 ? 'met' : 'MISSED'}`
      : `0 errors: ${figures.errors === 0 ? 'met' : 'MISSED'}`
    if (READ_CLASSES.has(cls)) readP99 = Math.max(readP99, figures.p99)
    console.log(
      `  ${LABELS[cls].padEnd(18)}${`${((100 * figures.requests) / all.requests).toFixed(1)}%`.padStart(7)}${format(figures.requests).padStart(10)}${format(figures.requestsPerSecond).padStart(8)}${ms(figures.p50).padStart(9)}${ms(figures.p99).padStart(9)}${String(figures.errors).padStart(8)}${`${ms(percentile(logged, 0.5))} / ${ms(percentile(logged, 0.99))}`.padStart(17)}   ${target}`,
    )
  }
  for (const [operation, s] of samples)
    for (const failure of s.failures) console.log(`  failed: ${operation}: ${failure}`)
  return { requestsPerSecond: all.requestsPerSecond, errors: all.errors, readP99 }
}

/** p50/p99 of each read and job route over every run: where to look when a class misses its target. */
function reportRoutes(results: RunFigures[]) {
  const byOperation = new Map<string, OperationSamples[]>()
  for (const result of results)
    for (const [operation, s] of result.samples) byOperation.set(operation, [...(byOperation.get(operation) ?? []), s])
  console.log(`\nby route, all ${results.length} runs (client-side ms):`)
  const rows = [...byOperation]
    .map(([operation, groups]) => ({ operation, ...summarize(groups, seconds * results.length) }))
    .sort((a, b) => b.p99 - a.p99)
  for (const row of rows)
    console.log(
      `  ${row.operation.padEnd(62)}${format(row.requests).padStart(8)}  p50 ${ms(row.p50).padStart(6)}  p99 ${ms(row.p99).padStart(6)}  errors ${row.errors}`,
    )
}

function reportMemory(results: RunFigures[]): string {
  console.log(`\nkgs memory (settled VmRSS): ${mb(results[0]!.rssBefore)} before the first run`)
  for (const [i, result] of results.entries()) {
    const growth = result.rssAfter - result.rssBefore
    console.log(
      `  after run ${i + 1}: ${mb(result.rssAfter)} (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB, ${format((growth * 1024 * 1024) / result.requests)} bytes/request); at the run's end VmRSS ${mb(result.rssAtEnd)}, VmHWM ${mb(result.peakAfter)}`,
    )
  }
  if (results.length < 2) return ''
  const newHigh = results.at(-1)!.rssAfter - Math.max(...results.slice(0, -1).map((r) => r.rssAfter))
  const verdict = `last run ${newHigh >= 0 ? '+' : ''}${newHigh.toFixed(1)} MB over the highest before it (limit ${MEMORY_GROWTH_LIMIT_MB} MB): ${newHigh > MEMORY_GROWTH_LIMIT_MB ? 'MISSED' : 'met'}`
  console.log(`  ${verdict}`)
  return `; memory ${verdict}`
}

const database = await createBenchDatabase()
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-load-'))
const logFile = join(dataDir, 'kgs.log')
let kgs: ServerProcess | undefined
let clients: ReturnType<typeof startClients> | undefined
try {
  // Request logs at info, to a file, as in production; they also give the server-side timings.
  const env = {
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    LOG_LEVEL: 'info',
    JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
  }
  kgs = await spawnKgs(env, logFile)
  let started = performance.now()
  const plan = await setUpService(kgs.url, env, dataDir)
  clients = startClients()
  await clients.setUp(plan)
  console.log(
    `set-up: ${repositoryCount} repositories of ${format(facts)} facts, ${userCount} users, ${clientCount} clients logged in, in ${((performance.now() - started) / 1000).toFixed(1)} s; mix ${OPERATION_CLASSES.map((c) => `${LABELS[c]} ${weights[c]}`).join(', ')}`,
  )
  if (warmupSeconds > 0) await clients.run(warmupSeconds)
  console.log(
    rampSeconds > 0
      ? `clients start one after another over the first ${rampSeconds} s of each run (--ramp)`
      : 'clients start all at once at the beginning of each run',
  )
  console.log(
    `targets: zero errors; p99 < ${READ_P99_TARGET_MS} ms for reads (${[...READ_CLASSES].map((c) => LABELS[c]).join(', ')}); no memory growth across the runs`,
  )
  console.log(
    'latencies: as the clients saw them (p50, p99), and as kgs logged them (from arrival to response: without the queueing in sockets and the clients)',
  )

  const results: RunFigures[] = []
  let rssBefore = (await settledMemoryOf(kgs.pid)).rssMB
  for (let run = 1; run <= runs; run++) {
    const offset = statSync(logFile).size
    const cpuBefore = { kgs: cpuSecondsOf(kgs.pid), clients: cpuSecondsOf(clients.pid) }
    started = performance.now()
    const samples = await clients.run(seconds, rampSeconds)
    const cpu = {
      kgs: cpuSecondsOf(kgs.pid) - cpuBefore.kgs,
      clients: cpuSecondsOf(clients.pid) - cpuBefore.clients,
      wall: (performance.now() - started) / 1000,
    }
    const { rssMB: rssAtEnd, peakMB: peakAfter } = memoryOf(kgs.pid)
    const requests = [...samples.values()].reduce((sum, s) => sum + s.latencies.length, 0)
    const figures = report(run, samples, await serverLatencies(logFile, offset, requests), cpu)
    const rssAfter = (await settledMemoryOf(kgs.pid)).rssMB
    console.log(
      `  kgs VmRSS ${mb(rssBefore)} before (settled), ${mb(rssAtEnd)} at the end, ${mb(rssAfter)} settled; VmHWM ${mb(peakAfter)}`,
    )
    results.push({ rssBefore, rssAfter, rssAtEnd, peakAfter, requests, samples, ...figures })
    rssBefore = rssAfter
  }
  reportRoutes(results)
  const memory = reportMemory(results)
  console.log(
    `\nsummary: ${results.map((r) => format(r.requestsPerSecond)).join(' / ')} req/s; errors ${results.map((r) => r.errors).join(' / ')} (target 0); worst read p99 ${ms(Math.max(...results.map((r) => r.readP99)))} ms (target < ${READ_P99_TARGET_MS} ms)${memory}`,
  )
} finally {
  await clients?.stop()
  await kgs?.stop()
  await database.drop()
  if (process.env.BENCH_LOG) copyFileSync(logFile, process.env.BENCH_LOG)
  rmSync(dataDir, { recursive: true, force: true })
}
