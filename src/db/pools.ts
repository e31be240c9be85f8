// Owns every database connection of the process: the system pool, and one pool per repository,
// each repository in a database of its own (created on demand, its DSN recorded in the system
// database). Code asks forRepository(id) and never builds a DSN itself.
import postgres, { type Sql } from 'postgres'
import { join } from 'node:path'
import { EmbeddedCluster, type EmbeddedLimits } from './embedded.ts'
import { migrate } from './migrate.ts'
import { isUuid } from '../uuid.ts'

export type Backend = 'embedded' | 'postgres'

export interface PoolsOptions {
  /** Unset: the embedded database under dataDir/pg. */
  databaseUrl?: string
  dataDir: string
  /** Connections per PostgreSQL pool. */
  max?: number
  /**
   * PostgreSQL only: the system pool commits without waiting for the WAL flush. For the job
   * workers' queue bookkeeping, where a commit lost in a crash is repaired by the queue itself
   * (a lost claim leaves the job queued, a lost finish re-runs an idempotent job), and the
   * flush per commit was the whole cost: 409 against 1,513 jobs/s on this machine.
   */
  asyncCommit?: boolean
  /**
   * Embedded only: connect to databases the main thread's cluster serves, instead of starting
   * one (job worker threads; PGlite lives in the main thread).
   */
  embeddedSockets?: EmbeddedSockets
  /** Embedded only: how many repository databases stay open, and for how long unused. */
  embedded?: EmbeddedLimits
}

export interface EmbeddedSockets {
  /** Opens the embedded database `name` if needed; its socket path. */
  socketFor(name: string): Promise<string>
}

/**
 * Connections per embedded pool. PGlite is a single session and its PGliteServer runs one
 * connection's batch or transaction at a time, so more connections add no parallelism; a few let
 * the pool behave as on PostgreSQL (a transaction holds one connection, other queries queue at the
 * server behind it). Code must never use the pool inside its own transaction: the query would
 * wait for that transaction to end, forever.
 */
const EMBEDDED_CONNECTIONS = 4

const EMBEDDED_DSN = 'pglite:'
/** SQLSTATE duplicate_database: another instance created the same database first. */
const DUPLICATE_DATABASE = '42P04'

/**
 * Seconds before another attempt to open a connection after one failed, by failures in a row.
 * postgres.js's default grows to 20 s while the server is down, and a query arriving after it came
 * back waited out that delay; capped at 1 s, the service is back within a second of its database.
 */
const reconnectDelay = (failures: number) => Math.min(0.05 * 2 ** failures, 1)

/**
 * Seconds a connection attempt may take before its queries fail (postgres.js waits 30). Not only
 * for servers that do not answer: under Bun, a connection opened while PostgreSQL restarts
 * sometimes never sees the server's answer to its start-up message (the bytes are read from the
 * socket, no 'data' event follows), and it hangs until this timeout ends it.
 */
const CONNECT_TIMEOUT = 5

/**
 * Seconds close() lets queries still running finish. By then the HTTP server is drained and the job
 * workers have stopped; what is left is background bookkeeping, or a connection attempt to a
 * database that is gone, which must not hold up the exit.
 */
const CLOSE_TIMEOUT = 1

const connectionOptions = (max: number) =>
  ({
    max,
    onnotice: () => {},
    connection: { application_name: 'kgs' },
    idle_timeout: 60,
    backoff: reconnectDelay,
    connect_timeout: CONNECT_TIMEOUT,
  }) as const

/**
 * Every connection to an embedded database shares its one session, so none names prepared
 * statements: they would outlive their connection there, piling up, and share one namespace with
 * every other connection's (postgres.js keeps them apart only by a random prefix).
 */
const embeddedOptions = (path: string) =>
  ({
    path,
    database: 'postgres',
    user: 'postgres',
    ...connectionOptions(EMBEDDED_CONNECTIONS),
    prepare: false,
  }) as const

/** Told of each repository pool this process opens, once it is open (Pools.onRepositoryOpened). */
export type RepositoryOpened = (repositoryId: string, sql: Sql) => void

export class Pools {
  private readonly repositories = new Map<string, Promise<Sql>>()
  private opened: RepositoryOpened | undefined

  private constructor(
    readonly backend: Backend,
    readonly system: Sql,
    private readonly options: PoolsOptions,
    private readonly cluster?: EmbeddedSockets,
    private readonly ownsCluster?: EmbeddedCluster,
  ) {}

  /** Connects, starting the embedded database when no URL is given. Call migrate() next. */
  static async open(options: PoolsOptions): Promise<Pools> {
    const max = options.max ?? 10
    if (options.databaseUrl) {
      const systemOptions = connectionOptions(max)
      const system = postgres(
        options.databaseUrl,
        options.asyncCommit
          ? { ...systemOptions, connection: { ...systemOptions.connection, synchronous_commit: 'off' } }
          : systemOptions,
      )
      return new Pools('postgres', system, options)
    }
    if (options.embeddedSockets) {
      const path = await options.embeddedSockets.socketFor('system')
      return new Pools('embedded', postgres(embeddedOptions(path)), options, options.embeddedSockets)
    }
    const cluster = EmbeddedCluster.start(join(options.dataDir, 'pg'), options.embedded)
    try {
      const path = await cluster.socketFor('system')
      return new Pools('embedded', postgres(embeddedOptions(path)), options, cluster, cluster)
    } catch (error) {
      await cluster.close()
      throw error
    }
  }

  /** Applies pending system migrations; returns their names (empty when up to date). */
  migrate(): Promise<string[]> {
    return migrate(this.system, 'system')
  }

  /**
   * Applies pending repository migrations to every recorded repository database (start-up
   * leaves that to each repository's first use, so a large fleet starts at once).
   */
  async migrateRepositories(): Promise<{ repositories: number; migrated: number }> {
    const rows = await this.system<
      { repository_id: string }[]
    >`SELECT repository_id FROM repository_databases ORDER BY repository_id`
    let migrated = 0
    for (const { repository_id } of rows) {
      const sql = await this.connect((await this.recordedDsn(repository_id))!)
      try {
        if ((await migrate(sql, 'repository')).length > 0) migrated++
      } finally {
        await sql.end({ timeout: 5 })
      }
    }
    return { repositories: rows.length, migrated }
  }

  /** The socket of an embedded database of this process, opening it if needed (for worker threads). */
  embeddedSocket(name: string): Promise<string> {
    if (!this.cluster) throw new Error('this instance runs on PostgreSQL: there are no embedded databases')
    return this.cluster.socketFor(name)
  }

  /**
   * A connection of its own for LISTEN (PostgreSQL only), never closed for being idle or old:
   * closing it would end its subscriptions. `onclose` hears of every loss of the connection and of
   * every failed attempt to reopen it; the next query reopens it.
   */
  listener(handlers: { onnotify(channel: string, payload: string): void; onclose(): void }): Sql {
    if (!this.options.databaseUrl)
      throw new Error('LISTEN/NOTIFY needs PostgreSQL; the embedded database delivers events in-process')
    return postgres(this.options.databaseUrl, {
      ...connectionOptions(1),
      idle_timeout: undefined,
      max_lifetime: null,
      fetch_types: false,
      ...handlers,
    })
  }

  async ping(): Promise<void> {
    await this.system`SELECT 1`
  }

  /**
   * `listener` hears of each repository pool this process opens from now on, before whoever asked
   * for it gets it (the composition root repairs there what a crash of an earlier process may have
   * left undone: db/ knows no feature). It must not throw.
   */
  onRepositoryOpened(listener: RepositoryOpened): void {
    this.opened = listener
  }

  /** The pool of repository `id`, creating and migrating its database on first use. */
  forRepository(id: string): Promise<Sql> {
    const key = canonicalId(id)
    let pool = this.repositories.get(key)
    if (!pool) {
      pool = this.openRepository(key).then((sql) => {
        this.opened?.(key, sql)
        return sql
      })
      this.repositories.set(key, pool)
      pool.catch(() => this.repositories.delete(key))
    }
    return pool
  }

  private async openRepository(id: string): Promise<Sql> {
    const dsn = (await this.recordedDsn(id)) ?? (await this.provision(id))
    const sql = await this.connect(dsn)
    try {
      await migrate(sql, 'repository')
      await sql`INSERT INTO repository_identity (repository_id) VALUES (${id}) ON CONFLICT DO NOTHING`
      const [owner] = await sql<{ repository_id: string }[]>`SELECT repository_id FROM repository_identity`
      if (owner?.repository_id !== id)
        throw new Error(`database for repository ${id} belongs to repository ${owner?.repository_id}`)
      return sql
    } catch (error) {
      await sql.end({ timeout: 1 })
      throw error
    }
  }

  private async recordedDsn(id: string): Promise<string | undefined> {
    const [row] = await this.system<{ dsn: string }[]>`SELECT dsn FROM repository_databases WHERE repository_id = ${id}`
    return row?.dsn
  }

  private async provision(id: string): Promise<string> {
    const name = repositoryDatabaseName(this.systemDatabaseName(), id)
    let dsn: string
    if (this.cluster) {
      dsn = EMBEDDED_DSN + name
    } else {
      try {
        await this.system`CREATE DATABASE ${this.system(name)}`
      } catch (error) {
        if ((error as { code?: string }).code !== DUPLICATE_DATABASE) throw error
      }
      const url = new URL(this.options.databaseUrl!)
      url.pathname = `/${name}`
      dsn = url.toString()
    }
    await this
      .system`INSERT INTO repository_databases (repository_id, dsn) VALUES (${id}, ${dsn}) ON CONFLICT DO NOTHING`
    return (await this.recordedDsn(id))!
  }

  private async connect(dsn: string): Promise<Sql> {
    const max = this.options.max ?? 10
    if (dsn.startsWith(EMBEDDED_DSN)) {
      if (!this.cluster) throw new Error(`repository database ${dsn} is embedded, but this instance runs on PostgreSQL`)
      const path = await this.cluster.socketFor(dsn.slice(EMBEDDED_DSN.length))
      return postgres(embeddedOptions(path))
    }
    return postgres(dsn, connectionOptions(max))
  }

  private systemDatabaseName(): string {
    if (!this.options.databaseUrl) return 'repo'
    return decodeURIComponent(new URL(this.options.databaseUrl).pathname.slice(1)) || 'postgres'
  }

  /** Closes the repository's pool and removes its database and its record. */
  async dropRepository(id: string): Promise<void> {
    const key = canonicalId(id)
    const dsn = await this.recordedDsn(key)
    const pool = this.repositories.get(key)
    this.repositories.delete(key)
    if (pool) await (await pool.catch(() => undefined))?.end({ timeout: 5 })
    if (dsn?.startsWith(EMBEDDED_DSN)) {
      if (!this.ownsCluster) throw new Error('only the thread that runs the embedded databases can drop one')
      await this.ownsCluster.drop(dsn.slice(EMBEDDED_DSN.length))
    } else if (dsn) {
      const name = decodeURIComponent(new URL(dsn).pathname.slice(1))
      await this.system`DROP DATABASE IF EXISTS ${this.system(name)} WITH (FORCE)`
    }
    await this.system`DELETE FROM repository_databases WHERE repository_id = ${key}`
  }

  /** Ends every pool, then stops the embedded database cleanly. */
  async close(): Promise<void> {
    const repositoryPools = await Promise.all([...this.repositories.values()].map((p) => p.catch(() => undefined)))
    this.repositories.clear()
    await Promise.all([
      ...repositoryPools.map((sql) => sql?.end({ timeout: CLOSE_TIMEOUT })),
      this.system.end({ timeout: CLOSE_TIMEOUT }),
    ])
    await this.ownsCluster?.close()
  }
}

function canonicalId(id: string): string {
  if (!isUuid(id)) throw new TypeError(`repository id must be a UUID, got ${JSON.stringify(id)}`)
  return id.toLowerCase()
}

/**
 * PostgreSQL identifiers are at most 63 bytes: a prefix from the system database (so that
 * several kgs installations can share one server) and the repository UUID's 32 hex digits.
 */
export function repositoryDatabaseName(systemDatabase: string, repositoryId: string): string {
  const prefix = systemDatabase
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 30)
  return `${prefix}_${canonicalId(repositoryId).replaceAll('-', '')}`
}
