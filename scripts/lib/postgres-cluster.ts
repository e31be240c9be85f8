// A throwaway PostgreSQL cluster of our own (initdb into a temporary directory, its own port),
// for tests and benchmarks that stop, restart or break the database under a running kgs: the
// shared server must never be touched that way. PostgreSQL refuses to run as root, so as root
// (CI) the cluster belongs to the `postgres` account and its commands run through runuser.
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'

export interface PostgresCluster {
  port: number
  /** A URL of database `name` on this cluster (the maintenance database by default). */
  url(name?: string): string
  /** Fast shutdown: sessions are disconnected, the cluster stops accepting connections (no-op if stopped). */
  stop(): Promise<void>
  /** Starts it again on the same port; resolves once it accepts connections. */
  start(): Promise<void>
  /** The server's log so far. */
  log(): string
  /** Stops it (if running) and removes its directory. */
  destroy(): Promise<void>
}

/** The directory of initdb and pg_ctl: PG_BINDIR, else PATH, else the newest Debian install. */
function binDir(): string {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR
  const onPath = Bun.which('initdb')
  if (onPath) return join(onPath, '..')
  const base = '/usr/lib/postgresql'
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  if (!newest)
    throw new Error('PostgreSQL server binaries not found: set PG_BINDIR to the directory holding initdb and pg_ctl')
  return join(base, newest, 'bin')
}

/** The account the cluster runs as, and the command prefix that runs a program as it. */
function owner(): { uid: number; gid: number; prefix: string[] } {
  const me = userInfo()
  if (me.uid !== 0) return { uid: me.uid, gid: me.gid, prefix: [] }
  const id = (flag: string) => Number(Bun.spawnSync(['id', flag, 'postgres']).stdout.toString().trim())
  return { uid: id('-u'), gid: id('-g'), prefix: ['runuser', '-u', 'postgres', '--'] }
}

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

export async function createPostgresCluster(): Promise<PostgresCluster> {
  const bin = binDir()
  const { uid, gid, prefix } = owner()
  const dir = mkdtempSync(join(tmpdir(), 'kgs-pg-'))
  chownSync(dir, uid, gid)
  const data = join(dir, 'data')
  const port = await freePort()
  const run = async (args: string[]) => {
    const child = Bun.spawn([...prefix, ...args], { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    if (code !== 0) throw new Error(`${args.join(' ')} exited with ${code}: ${stderr}${stdout}`)
  }
  // A process that dies without afterAll must not leave a server running.
  const stopNow = () =>
    Bun.spawnSync([...prefix, join(bin, 'pg_ctl'), '-D', data, 'stop', '-m', 'immediate', '-w'], {
      stdout: 'ignore',
      stderr: 'ignore',
    })
  process.on('exit', stopNow)
  // Durability is worthless here, and its fsyncs would slow every test run.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off`
  const start = () =>
    run([join(bin, 'pg_ctl'), '-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start'])
  let running = false
  try {
    await run([
      join(bin, 'initdb'),
      '-D',
      data,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ])
    await start()
    running = true
  } catch (error) {
    process.off('exit', stopNow)
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    port,
    url: (name = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${name}`,
    async stop() {
      if (!running) return
      await run([join(bin, 'pg_ctl'), '-D', data, 'stop', '-m', 'fast', '-w'])
      running = false
    },
    async start() {
      await start()
      running = true
    },
    log: () => readFileSync(join(dir, 'log'), 'utf8'),
    async destroy() {
      if (running) stopNow()
      running = false
      process.off('exit', stopNow)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
