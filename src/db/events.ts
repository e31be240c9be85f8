// Change notifications between kgs instances (session revocations, role changes). On PostgreSQL
// they travel by LISTEN/NOTIFY, so every instance on the same database hears them within
// milliseconds; the embedded database belongs to one process, so there they stay in-process.
// Subscribers must also catch up periodically from the tables themselves: NOTIFY is not
// delivered to an instance whose listening connection was down at the time.
import type { Sql } from 'postgres'
import { EventEmitter } from 'node:events'
import type { Logger } from '../log.ts'
import type { Db } from './sql.ts'
import type { Pools } from './pools.ts'
import { describeError } from '../log.ts'

export interface EventBus {
  /** Publishes on `sql` (pass a transaction to publish only if it commits). */
  publish(sql: Db, channel: string, payload: string): Promise<void>
  subscribe(channel: string, listener: (payload: string) => void): Promise<void>
  close(): Promise<void>
}

const CHANNEL = /^kgs_[a-z_]{1,40}$/

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`invalid event channel ${JSON.stringify(channel)}`)
}

/** In-process delivery, after the publishing transaction (if any) has had its chance to fail. */
export class LocalEventBus implements EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0)

  async publish(_sql: Db, channel: string, payload: string): Promise<void> {
    checkChannel(channel)
    queueMicrotask(() => this.emitter.emit(channel, payload))
  }

  async subscribe(channel: string, listener: (payload: string) => void): Promise<void> {
    checkChannel(channel)
    this.emitter.on(channel, listener)
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners()
  }
}

/** Waits between attempts to LISTEN again after the listening connection was lost: doubling, capped. */
const RESUBSCRIBE_FIRST_MS = 100
const RESUBSCRIBE_MAX_MS = 1_000

/**
 * LISTEN/NOTIFY on a connection of its own, opened on the first subscription. postgres.js's own
 * sql.listen() is not used: it issues a new LISTEN per channel whenever its connection closes,
 * every failed reconnection closes it again, and against a server that refuses the session
 * outright (its database dropped) there is no backoff: an attempt every 10 ms or so, and the heap
 * grew by over 1 MB a second for as long as the database was gone (scripts/bench/db-outage.ts).
 * Here one LISTEN of every channel is retried at a time, with a backoff.
 */
export class PostgresEventBus implements EventBus {
  private readonly listeners = new Map<string, Set<(payload: string) => void>>()
  private connection: Sql | undefined
  private retry: Timer | undefined
  private resubscribing = false
  private failures = 0
  private closed = false

  constructor(
    private readonly pools: Pick<Pools, 'listener'>,
    private readonly log: Logger,
  ) {}

  async publish(sql: Db, channel: string, payload: string): Promise<void> {
    checkChannel(channel)
    await sql`SELECT pg_notify(${channel}, ${payload})`
  }

  async subscribe(channel: string, listener: (payload: string) => void): Promise<void> {
    checkChannel(channel)
    const known = this.listeners.get(channel)
    if (known) {
      known.add(listener)
      return
    }
    this.listeners.set(channel, new Set([listener]))
    this.connection ??= this.pools.listener({
      onnotify: (c, payload) => this.deliver(c, payload),
      onclose: () => this.resubscribe(),
    })
    await this.connection.unsafe(listenStatement([channel]))
  }

  private deliver(channel: string, payload: string): void {
    for (const listener of this.listeners.get(channel) ?? []) {
      try {
        listener(payload)
      } catch (error) {
        this.log.error('event listener failed', { channel, ...describeError(error) })
      }
    }
  }

  /** The listening connection closed (or an attempt to reopen it failed): LISTEN again, once at a time. */
  private resubscribe(): void {
    if (this.closed || this.resubscribing) return
    this.resubscribing = true
    const delay = Math.min(RESUBSCRIBE_FIRST_MS * 2 ** this.failures, RESUBSCRIBE_MAX_MS)
    this.retry = setTimeout(async () => {
      try {
        await this.connection!.unsafe(listenStatement([...this.listeners.keys()]))
        if (this.failures > 0) this.log.info('listening again', { channels: this.listeners.size })
        this.failures = 0
        this.resubscribing = false
      } catch (error) {
        if (this.failures++ === 0) this.log.warn('event bus lost its connection; retrying', describeError(error))
        this.resubscribing = false
        this.resubscribe()
      }
    }, delay)
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.retry)
    this.listeners.clear()
    await this.connection?.end({ timeout: 0 })
  }
}

/** Channel names are checked against CHANNEL, so quoting them is enough. */
const listenStatement = (channels: string[]) => channels.map((channel) => `LISTEN "${channel}"`).join('; ')
