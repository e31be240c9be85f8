// The embedded default: PostgreSQL itself (PGlite, compiled to wasm) running in this process,
// one PGlite per database under DATA_DIR/pg/<name>, each served over a Unix socket by our
// PGliteServer so the same postgres.js code runs against it as against a real server.
// Unix sockets in a 0700 directory keep other local users out (PGlite has no passwords).
import { runtime } from '../runtime/index.ts'
import { PGlite } from '@electric-sql/pglite'
import { createHash, randomBytes } from 'node:crypto'
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { loadPGliteAssets } from './pglite-assets.ts'
import { PGliteServer } from './pglite-server.ts'
import { INITDB_WORKER_URL } from '../workers.ts'

/** sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL. */
const MAX_SOCKET_PATH = 100
const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/

class DataDirLockedError extends Error {}

interface OpenDatabase {
  server: PGliteServer
  socketPath: string
}

/**
 * How many databases may be open at once and how long an unused one stays open. A PGlite holds
 * tens of megabytes (docs/benchmarks.md); a closed database keeps only its socket, and its next
 * query reopens it.
 */
export interface EmbeddedLimits {
  /** Databases open at once, the system database aside. */
  maxOpen: number
  /** Milliseconds after its last query that a database is closed. */
  idleMs: number
}

const DEFAULT_EMBEDDED_LIMITS: EmbeddedLimits = { maxOpen: 8, idleMs: 60_000 }

/** The system database is used by every request: never closed. */
const ALWAYS_OPEN = 'system'
/** How often the cluster looks for idle databases, and for room when it is full. */
const SWEEP_MS = 1_000
const ROOM_POLL_MS = 20
/** How long an opening waits for room before it fails (every open database busy all along). */
const ROOM_TIMEOUT_MS = 30_000

/** Where the Unix socket of database `name` lives; deterministic so other processes can find it. */
export function embeddedSocketPath(pgRoot: string, name: string): string {
  const preferred = join(pgRoot, 'run', `${name}.sock`)
  if (preferred.length <= MAX_SOCKET_PATH) return preferred
  const short = createHash('sha256').update(pgRoot).digest('hex').slice(0, 16)
  return join(tmpdir(), `kgs-${short}`, `${name}.sock`)
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export class EmbeddedCluster {
  private readonly databases = new Map<string, Promise<OpenDatabase>>()
  private templateReady: Promise<void> | undefined
  private readonly lockPath: string
  private readonly sweeper: Timer
  /** Openings of PGlites, one at a time: each makes room first. */
  private openings: Promise<unknown> = Promise.resolve()

  private constructor(
    readonly root: string,
    private readonly limits: EmbeddedLimits,
  ) {
    this.lockPath = join(root, 'kgs.lock')
    this.sweeper = setInterval(() => void this.closeIdle(), Math.min(SWEEP_MS, limits.idleMs))
    runtime.unref(this.sweeper)
  }

  /**
   * Takes the data directory for this process. A second process gets DataDirLockedError
   * instead of a second writer on the same files (which would corrupt them).
   */
  static start(pgRoot: string, limits: EmbeddedLimits = DEFAULT_EMBEDDED_LIMITS): EmbeddedCluster {
    mkdirSync(pgRoot, { recursive: true, mode: 0o700 })
    const cluster = new EmbeddedCluster(pgRoot, limits)
    cluster.acquireLock()
    return cluster
  }

  private acquireLock(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.lockPath, 'wx', 0o600)
        writeSync(fd, JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() }))
        closeSync(fd)
        return
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      const holder = readLock(this.lockPath)
      if (holder && holder.pid !== process.pid && processAlive(holder.pid)) {
        throw new DataDirLockedError(
          `data directory ${dirname(this.root)} is in use by another kgs process (pid ${holder.pid}); stop it or set another DATA_DIR`,
        )
      }
      // The holder is gone (crash, or a container restart that reused our pid): the lock is stale.
      rmSync(this.lockPath, { force: true })
    }
    throw new DataDirLockedError(`could not lock data directory ${this.root}`)
  }

  /** Opens (creating from the template if needed) database `name` and returns its socket path. */
  async socketFor(name: string): Promise<string> {
    if (!NAME.test(name) || name === 'template' || name === 'run')
      throw new Error(`invalid embedded database name ${JSON.stringify(name)}`)
    let opening = this.databases.get(name)
    if (!opening) {
      opening = this.openDatabase(name)
      this.databases.set(name, opening)
      opening.catch(() => this.databases.delete(name))
    }
    return (await opening).socketPath
  }

  private async openDatabase(name: string): Promise<OpenDatabase> {
    const dir = join(this.root, name)
    if (!existsSync(dir)) {
      await this.ensureTemplate()
      // Copy then rename, so a crash mid-copy never leaves a half database under the real name.
      const staging = `${dir}.partial-${randomBytes(4).toString('hex')}`
      cpSync(join(this.root, 'template'), staging, { recursive: true })
      renameSync(staging, dir)
    }
    const socketPath = embeddedSocketPath(this.root, name)
    mkdirSync(join(socketPath, '..'), { recursive: true, mode: 0o700 })
    if ((statSync(join(socketPath, '..')).mode & 0o077) !== 0)
      throw new Error(`socket directory ${join(socketPath, '..')} must not be accessible to others`)
    rmSync(socketPath, { force: true })
    const server = new PGliteServer({ open: () => this.openPGlite(name, dir) }, socketPath)
    await server.start()
    return { server, socketPath }
  }

  private openPGlite(name: string, dir: string): Promise<PGlite> {
    const opened = this.openings.then(async () => {
      if (name !== ALWAYS_OPEN) await this.makeRoom()
      return PGlite.create(dir, { ...(await loadPGliteAssets()) })
    })
    this.openings = opened.catch(() => {})
    return opened
  }

  /** The open servers, the system database aside. */
  private async openServers(): Promise<PGliteServer[]> {
    const entries = await Promise.all(
      [...this.databases].filter(([name]) => name !== ALWAYS_OPEN).map(([, opening]) => opening.catch(() => undefined)),
    )
    return entries.flatMap((entry) => (entry?.server.isOpen ? [entry.server] : []))
  }

  /** Below maxOpen: closes the least recently used idle database, or waits for one to be idle. */
  private async makeRoom(): Promise<void> {
    const deadline = performance.now() + ROOM_TIMEOUT_MS
    for (;;) {
      const open = await this.openServers()
      if (open.length < this.limits.maxOpen) return
      open.sort((a, b) => a.lastActive - b.lastActive)
      for (const server of open) if (await this.closeServer(server)) return
      if (performance.now() > deadline)
        throw new Error(
          `all ${this.limits.maxOpen} open embedded databases stayed busy for ${ROOM_TIMEOUT_MS / 1000} s (EMBEDDED_MAX_OPEN)`,
        )
      await runtime.sleep(ROOM_POLL_MS)
    }
  }

  /** Closes the databases unused for idleMs. */
  private async closeIdle(): Promise<void> {
    const now = performance.now()
    for (const server of await this.openServers())
      if (now - server.lastActive >= this.limits.idleMs) await this.closeServer(server)
  }

  /** A PGlite's memory (a WebAssembly heap) goes back only once collected: collected now, not whenever the heap next fills. */
  private async closeServer(server: PGliteServer): Promise<boolean> {
    const closed = await server.closeIfIdle()
    if (closed) runtime.gc(true)
    return closed
  }

  /**
   * initdb is the slow part of a new database (seconds, and several times the memory of an open
   * one); it runs once per data directory into `template`, and every database after that starts
   * as a copy of it. The compiled binary carries initdb's result, made when it was built.
   */
  private ensureTemplate(): Promise<void> {
    this.templateReady ??= (async () => {
      const template = join(this.root, 'template')
      if (existsSync(template)) return
      const staging = `${template}.partial-${randomBytes(4).toString('hex')}`
      if (!(await runtime.extractPGliteTemplate(staging))) await initdb(staging)
      renameSync(staging, template)
    })()
    this.templateReady.catch(() => (this.templateReady = undefined))
    return this.templateReady
  }

  async drop(name: string): Promise<void> {
    await this.closeDatabase(name)
    rmSync(join(this.root, name), { recursive: true, force: true })
  }

  private async closeDatabase(name: string): Promise<void> {
    const opening = this.databases.get(name)
    if (!opening) return
    this.databases.delete(name)
    const open = await opening.catch(() => undefined)
    if (!open) return
    await open.server.stop()
    rmSync(open.socketPath, { force: true })
  }

  /** Closes every database cleanly (PGlite flushes on close) and releases the lock. */
  async close(): Promise<void> {
    clearInterval(this.sweeper)
    await Promise.all([...this.databases.keys()].map((name) => this.closeDatabase(name)))
    const holder = readLock(this.lockPath)
    if (holder?.pid === process.pid) unlinkSync(this.lockPath)
  }
}

/** Runs initdb into `dir` (a new directory) on a worker thread. */
export function initdb(dir: string): Promise<void> {
  const worker = runtime.startWorker(INITDB_WORKER_URL)
  return new Promise<void>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<{ ok: boolean; error?: string }>) =>
      event.data.ok ? resolve() : reject(new Error(`initdb of ${dir} failed: ${event.data.error}`))
    worker.onerror = (event) => reject(new Error(`initdb of ${dir} failed: ${event.message}`))
    worker.postMessage({ dir })
  }).finally(() => worker.terminate())
}

/** The pid of the live process holding the embedded data directory `pgRoot`, if any. */
export function runningHolder(pgRoot: string): number | undefined {
  const holder = readLock(join(pgRoot, 'kgs.lock'))
  return holder && holder.pid !== process.pid && processAlive(holder.pid) ? holder.pid : undefined
}

function readLock(path: string): { pid: number } | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { pid?: unknown }
    return typeof parsed.pid === 'number' ? { pid: parsed.pid } : undefined
  } catch {
    return undefined
  }
}
