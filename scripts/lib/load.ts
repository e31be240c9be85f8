// A small closed-loop HTTP load generator shared by the benchmarks: each client sends its next
// request when the previous answer arrived, for a fixed time, and latencies are kept per
// operation. Plus the kgs child process the benchmarks measure, and what /proc says of it.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createBenchDatabase } from './scratch-database.ts'

/** Latency figures in milliseconds. */
export interface LoadResult {
  /** Requests completed within the window, per second of it. */
  requestsPerSecond: number
  /** Requests started within the window (those still running at its end were waited for). */
  requests: number
  errors: number
  p50: number
  p99: number
}

/** What the clients saw of one operation during a run. */
export interface OperationSamples {
  latencies: number[]
  completedInWindow: number
  errors: number
  /** The first few failures, for the report. */
  failures: string[]
}

/** One request of a client: resolves when its answer was read, throws if it failed. */
export interface Step {
  operation: string
  send(): Promise<void>
}

const FAILURES_KEPT = 5

/** Reads the answer; throws with its status and the start of its body if it is not a 2xx. */
export async function expectOk(response: Response): Promise<string> {
  const body = await response.text()
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${body.slice(0, 200)}`)
  return body
}

/**
 * Runs every client in a closed loop for `seconds` (started evenly over the first `rampSeconds`,
 * or all at once): `next` picks a client's next request. The
 * requests still running when time is up are waited for and counted (their latencies too: a
 * slow request dropped at the end would flatter the tail), but not as completed in the window.
 */
export async function runClosedLoop<C>(
  clients: readonly C[],
  next: (client: C) => Step,
  seconds: number,
  rampSeconds = 0,
): Promise<Map<string, OperationSamples>> {
  const samples = new Map<string, OperationSamples>()
  const end = performance.now() + seconds * 1000
  await Promise.all(
    clients.map(async (client, i) => {
      // With a ramp, the clients start one after another, evenly over its first rampSeconds.
      if (rampSeconds > 0) await Bun.sleep((i / clients.length) * rampSeconds * 1000)
      while (performance.now() < end) {
        const step = next(client)
        let entry = samples.get(step.operation)
        if (!entry)
          samples.set(step.operation, (entry = { latencies: [], completedInWindow: 0, errors: 0, failures: [] }))
        const started = performance.now()
        try {
          await step.send()
        } catch (error) {
          entry.errors++
          if (entry.failures.length < FAILURES_KEPT) entry.failures.push(String(error))
          if (process.env.BENCH_VERBOSE) console.error(`${step.operation}: ${String(error)}`)
        }
        const finished = performance.now()
        entry.latencies.push(finished - started)
        if (finished <= end) entry.completedInWindow++
      }
    }),
  )
  return samples
}

/** `work` over every item, at most `atOnce` at a time; the results in the items' order. */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  atOnce: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(atOnce, items.length) }, async () => {
      while (next < items.length) {
        const index = next++
        results[index] = await work(items[index]!, index)
      }
    }),
  )
  return results
}

/** The value below which a fraction `q` of the sorted values fall. */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}

/** The figures of a group of operations (one, or a class of them) over a window of `seconds`. */
export function summarize(groups: readonly OperationSamples[], seconds: number): LoadResult {
  const latencies = groups.flatMap((g) => g.latencies).sort((a, b) => a - b)
  const completed = groups.reduce((sum, g) => sum + g.completedInWindow, 0)
  return {
    requestsPerSecond: completed / seconds,
    requests: latencies.length,
    errors: groups.reduce((sum, g) => sum + g.errors, 0),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
  }
}

/** `concurrency` clients repeating one request: a warm-up, then the measured run. */
export async function measure(
  request: () => Promise<Response>,
  { seconds, concurrency, warmupSeconds = 1 }: { seconds: number; concurrency: number; warmupSeconds?: number },
): Promise<LoadResult> {
  const clients = Array.from({ length: concurrency }, (_, i) => i)
  const step: Step = { operation: 'request', send: async () => void (await expectOk(await request())) }
  await runClosedLoop(clients, () => step, warmupSeconds)
  return summarize([...(await runClosedLoop(clients, () => step, seconds)).values()], seconds)
}

export interface ServerProcess {
  url: string
  pid: number
  /** SIGTERM, and the wait for the exit. */
  stop(): Promise<void>
}

function serverProcess(child: Bun.Subprocess, url: string): ServerProcess {
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

/** Starts a server process that prints a JSON line {"msg":"ready","url":...} and returns its URL. */
export async function spawnServer(command: string[], env: Record<string, string>): Promise<ServerProcess> {
  const child = Bun.spawn(command, { env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'inherit' })
  const reader = child.stdout.getReader()
  let output = ''
  let url: string | undefined
  while (!url) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`${command.join(' ')} exited before it was ready: ${output}`)
    output += new TextDecoder().decode(value)
    url = /"msg":"ready","url":"([^"]+)"/.exec(output)?.[1]
  }
  void (async () => {
    while (!(await reader.read()).done);
  })()
  return serverProcess(child, url)
}

/**
 * Starts `kgs serve` from source with its log written to a file, and waits for /readyz.
 * BENCH_KGS_FLAGS adds flags for bun, e.g. "--cpu-prof-md --cpu-prof-dir=/tmp/prof" (written at exit).
 */
export async function spawnKgs(env: Record<string, string>, logFile: string): Promise<ServerProcess> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  const root = new URL('../..', import.meta.url).pathname
  const flags = process.env.BENCH_KGS_FLAGS?.split(' ').filter(Boolean) ?? []
  const child = Bun.spawn([process.execPath, ...flags, `${root}src/main.ts`, 'serve'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdout: Bun.file(logFile),
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  // An embedded first start (initdb) on a busy machine has taken over a minute.
  const deadline = performance.now() + 180_000
  for (;;) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ready) break
    if (child.exitCode !== null || performance.now() > deadline) {
      child.kill('SIGTERM')
      await child.exited
      throw new Error(`kgs did not become ready (see ${logFile})`)
    }
    await Bun.sleep(50)
  }
  return serverProcess(child, url)
}

/** A process's resident set now (VmRSS) and at its peak so far (VmHWM), in MB; all its threads count. */
export function memoryOf(pid: number): { rssMB: number; peakMB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kB = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)![1])
  return { rssMB: kB('VmRSS') / 1024, peakMB: kB('VmHWM') / 1024 }
}

/** The running processes whose parent is `pid` and whose command line holds `marker` (read from /proc). */
export function childProcesses(pid: number, marker: string): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      // The parent's pid is the fourth field, the second after the name in parentheses.
      const parent = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]!.split(' ')[1])
      if (parent === pid && readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) found.push(Number(name))
    } catch {
      // Ended while listed.
    }
  }
  return found
}

/** memoryOf, or undefined once the process has ended. */
export function memoryOfLive(pid: number): { rssMB: number; peakMB: number } | undefined {
  try {
    return memoryOf(pid)
  } catch {
    return undefined
  }
}

/**
 * The process's memory once VmRSS has settled: freed memory goes back to the system shortly after
 * a burst ends (an argon2id verification's 64 MiB, for one), and a reading taken during that
 * moment or after it would differ by as much. Settled: within 1 MB for a second.
 */
export async function settledMemoryOf(
  pid: number,
  { deadlineMs = 15_000 } = {},
): Promise<{ rssMB: number; peakMB: number }> {
  const deadline = performance.now() + deadlineMs
  let stableSince = performance.now()
  let last = memoryOf(pid)
  while (performance.now() < deadline) {
    await Bun.sleep(100)
    const now = memoryOf(pid)
    if (Math.abs(now.rssMB - last.rssMB) >= 1) {
      stableSince = performance.now()
      last = now
    } else if (performance.now() - stableSince >= 1000) {
      return now
    }
  }
  return last
}

// USER_HZ: 100 on every Linux architecture.
const CLOCK_TICKS_PER_SECOND = 100

/** CPU seconds a process has used so far (user + system, all threads). */
export function cpuSecondsOf(pid: number): number {
  return cpuSecondsIn(`/proc/${pid}/stat`)
}

/** CPU seconds of a process's main thread alone (the one that serves HTTP and runs JavaScript). */
export function mainThreadCpuSecondsOf(pid: number): number {
  return cpuSecondsIn(`/proc/${pid}/task/${pid}/stat`)
}

function cpuSecondsIn(statFile: string): number {
  // The fields after the command name, which is in parentheses and may hold spaces itself:
  // utime and stime are fields 14 and 15 of the line, 12th and 13th after the name.
  const stat = readFileSync(statFile, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
}

/** CPU seconds all of the machine's cores have been busy so far (/proc/stat: all but idle and iowait). */
export function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/)
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number)
  return (user! + nice! + system! + irq! + softirq! + steal!) / CLOCK_TICKS_PER_SECOND
}

/** A JSON request to a kgs process: its answer's body, or an error naming the status and body if it is not a 2xx. */
export function jsonClient(baseUrl: () => string) {
  return async (method: string, path: string, token?: string, body?: unknown): Promise<any> => {
    const res = await fetch(baseUrl() + path, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const json = (await res.json()) as any
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
}

/**
 * A kgs process of a benchmark's own, with one job worker thread, on a fresh data directory (and
 * a fresh database on PG_URL's server when `postgres`), `env` added to its environment, with an
 * account registered: its token. stop() ends the process and removes the directory and the database.
 */
/**
 * The environment of a benchmark's kgs: its data directory, PostgreSQL at `databaseUrl` when
 * given, quiet logs, one job worker, a secret of its own, and an access token that outlasts a
 * long run (the default 15 minutes would not).
 */
export const benchKgsEnvironment = (dataDir: string, databaseUrl?: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  LOG_LEVEL: 'warn',
  WORKERS: '1',
  ACCESS_TOKEN_TTL: '12h',
  JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
})

/** Runs `script` again as a child (`--child mode …args`) and answers the JSON of its last line of output. */
export async function runBenchChild<T>(script: string, mode: string, ...args: string[]): Promise<T> {
  const proc = Bun.spawn([process.execPath, script, '--child', mode, ...args], { stdout: 'pipe', stderr: 'inherit' })
  const output = await new Response(proc.stdout).text()
  if ((await proc.exited) !== 0) throw new Error(`child ${mode} failed (exit ${proc.exitCode})`)
  return JSON.parse(output.trim().split('\n').at(-1)!)
}

export async function benchKgs(name: string, postgres: boolean, env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), `kgs-bench-${name}-`))
  const database = postgres ? await createBenchDatabase() : undefined
  const kgs = await spawnKgs({ ...benchKgsEnvironment(dataDir, database?.url), ...env }, join(dataDir, 'kgs.log'))
  const stop = async () => {
    await kgs.stop()
    await database?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const call = jsonClient(() => kgs.url)
  try {
    const { token } = (await call('POST', '/api/v1/auth/register', undefined, {
      email: `bench-${crypto.randomUUID()}@example.com`,
      password: 'correct horse battery',
    })) as { token: string }
    return { kgs, call, token, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

export const format = (n: number) => Math.round(n).toLocaleString('en-US')
