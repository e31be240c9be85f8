// A small closed-loop HTTP load generator shared by the benchmarks: `concurrency` clients, each
// sending its next request when the previous answer arrived, for a fixed time.
export interface LoadResult {
  requestsPerSecond: number
  errors: number
  p50: number
  p99: number
}

export async function measure(
  request: () => Promise<Response>,
  { seconds, concurrency, warmupSeconds = 1 }: { seconds: number; concurrency: number; warmupSeconds?: number },
): Promise<LoadResult> {
  const run = async (duration: number, latencies: number[] | undefined) => {
    let errors = 0
    const end = performance.now() + duration * 1000
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) {
          const started = performance.now()
          try {
            const response = await request()
            const body = await response.text()
            if (!response.ok) {
              errors++
              if (process.env.BENCH_VERBOSE) console.error(`HTTP ${response.status}: ${body.slice(0, 200)}`)
            }
          } catch (error) {
            errors++
            if (process.env.BENCH_VERBOSE) console.error(String(error))
          }
          latencies?.push(performance.now() - started)
        }
      }),
    )
    return errors
  }
  await run(warmupSeconds, undefined)
  const latencies: number[] = []
  const errors = await run(seconds, latencies)
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
  return { requestsPerSecond: latencies.length / seconds, errors, p50: at(0.5), p99: at(0.99) }
}

/** Starts a server process that prints a JSON line {"msg":"ready","url":...} and returns its URL. */
export async function spawnServer(command: string[], env: Record<string, string>): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
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
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

/** Starts `kgs serve` from source with its log written to a file, and waits for /readyz. */
export async function spawnKgs(env: Record<string, string>, logFile: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  const root = new URL('../..', import.meta.url).pathname
  const child = Bun.spawn([process.execPath, `${root}src/main.ts`, 'serve'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdout: Bun.file(logFile),
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false)
    if (ready) break
    if (child.exitCode !== null || attempt > 600) throw new Error(`kgs did not become ready (see ${logFile})`)
    await Bun.sleep(50)
  }
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

export const format = (n: number) => Math.round(n).toLocaleString('en-US')
