// Starts the real kgs server on a free port, on the selected backend, with a temporary data
// directory: in this process (startTestServer) or as a child process (startServerProcess).
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { embeddedSocketPath } from '../../src/db/embedded.ts'
import { join } from 'node:path'
import { loadConfig } from '../../src/config.ts'
import { createLogger, type Logger } from '../../src/log.ts'
import { startServer, type ServerOptions } from '../../src/server.ts'
import type { AppContext } from '../../src/app.ts'
import { instanceEnvironment } from './backend.ts'

export const ROOT = join(import.meta.dir, '..', '..')
export const MAIN = join(ROOT, 'src', 'main.ts')

export interface TestServer {
  url: string
  dataDir: string
  env: Record<string, string>
  /** fetch relative to the server's URL. */
  request(path: string, init?: RequestInit): Promise<Response>
  /** A connection to the server's system database, to set up states (an expired code) without waiting. */
  systemSql(): postgres.Sql
  /** The services the in-process server runs on (its pools, stores, queue), to set up and inspect state directly. */
  context: AppContext
  /**
   * Makes the account with this e-mail sysadmin, the way an operator does (kgs promote-sysadmin),
   * and has this server read the roles again before answering: the NOTIFY that would tell it
   * arrives a moment after the command exits (tests of that path wait with untilSysadmin).
   */
  promote(email: string): Promise<ProcessResult>
  stop(): Promise<void>
}

export type Instance = Awaited<ReturnType<typeof instanceEnvironment>>

/**
 * `instance`: run on that data (another server's, stopped: a restart), which stop() then leaves
 * for its owner to clean up; a new instance of its own otherwise.
 */
export async function startTestServer(
  options: { env?: Record<string, string>; log?: Logger; instance?: Instance } & ServerOptions = {},
): Promise<TestServer> {
  const instance = options.instance ?? (await instanceEnvironment())
  const cleanup = options.instance ? async () => {} : () => instance.cleanup()
  // No job worker threads unless a test asks for them: most tests never run a job.
  const env: Record<string, string> = {
    JWT_SECRET: randomBytes(32).toString('hex'),
    WORKERS: '0',
    ...instance.env,
    ...options.env,
  }
  const config = loadConfig(env)
  const server = await startServer(
    config,
    options.log ?? createLogger((process.env.KGS_TEST_LOG as 'info' | undefined) ?? 'silent'),
    { jobs: options.jobs },
  )
  let context: AppContext
  try {
    context = await server.ready
  } catch (error) {
    await server.stop()
    await cleanup()
    throw error
  }
  return {
    url: server.url,
    dataDir: instance.dataDir,
    env,
    context,
    request: (path, init) => fetch(server.url + path, init),
    async promote(email) {
      const result = await runKgs(['promote-sysadmin', email], env)
      await context.rbac.reload()
      return result
    },
    systemSql: () =>
      env.DATABASE_URL
        ? postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} })
        : postgres({
            path: embeddedSocketPath(join(instance.dataDir, 'pg'), 'system'),
            user: 'postgres',
            database: 'postgres',
            max: 1,
            onnotice: () => {},
          }),
    async stop() {
      await server.stop()
      await cleanup()
    },
  }
}

export interface ProcessResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs `kgs <args>` from the source checkout `cwd` (this one by default), in it, to completion. */
export async function runKgs(
  args: string[],
  env: Record<string, string>,
  cwd = ROOT,
  stdin?: Uint8Array,
): Promise<ProcessResult> {
  const child = Bun.spawn([process.execPath, join(cwd, 'src', 'main.ts'), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdin: stdin ? new Blob([stdin]) : 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, stdout, stderr }
}

export interface ServerProcess {
  url: string
  process: Bun.Subprocess<'ignore', 'pipe', 'pipe'>
  /** Everything the process wrote to stdout so far (its JSON log lines). */
  output(): string
  /** Resolves when every process holding the output has closed it (the command and whatever it started). */
  outputClosed: Promise<void>
  /** Resolves once the output matches `pattern`; rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<void>
  stop(signal?: NodeJS.Signals): Promise<number>
}

/** The command that runs `kgs serve` from source. */
const SERVE = [process.execPath, MAIN, 'serve']

/** Starts `kgs serve` (or `command`, such as `npm start`) as a child process and waits until it is ready. */
export async function startServerProcess(
  env: Record<string, string>,
  logLevel: 'info' | 'debug' = 'info',
  command = SERVE,
): Promise<ServerProcess> {
  const child = Bun.spawn(command, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, LOG_LEVEL: logLevel },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let stdout = ''
  let stderr = ''
  const decoder = new TextDecoder()
  const watchers = new Set<() => void>()
  const outputClosed = (async () => {
    for await (const chunk of child.stdout) {
      stdout += decoder.decode(chunk)
      for (const watcher of watchers) watcher()
    }
  })()
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(stdout)) return
        watchers.delete(check)
        resolve()
      }
      watchers.add(check)
      check()
      void child.exited.then((code) => {
        watchers.delete(check)
        reject(new Error(`${command.join(' ')} exited with ${code} before printing ${pattern}: ${stderr}${stdout}`))
      })
    })
  void (async () => {
    for await (const chunk of child.stderr) stderr += decoder.decode(chunk)
  })()
  const ready = /"msg":"ready","url":"([^"]+)"/
  await waitFor(ready)
  return {
    url: ready.exec(stdout)![1]!,
    process: child,
    output: () => stdout,
    outputClosed,
    waitFor,
    async stop(signal = 'SIGTERM') {
      child.kill(signal)
      return child.exited
    },
  }
}

/**
 * Waits until the server treats the holder of `token` as sysadmin: on PostgreSQL a role made by
 * `kgs promote-sysadmin` reaches a running server by NOTIFY, a moment after the command exits.
 */
export async function untilSysadmin(
  server: Pick<TestServer, 'request'>,
  token: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await server.request('/api/v1/permissions', { headers: { authorization: `Bearer ${token}` } })
    if (res.ok && ((await res.json()) as { system_admin: boolean }).system_admin) return
    if (Date.now() > deadline) throw new Error('the promoted account never became sysadmin on the server')
    await Bun.sleep(20)
  }
}
