// Change notifications between kgs instances (session revocations, role changes). On PostgreSQL
// they travel by LISTEN/NOTIFY, so every instance on the same database hears them within
// milliseconds; the embedded database belongs to one process, so there they stay in-process.
// Subscribers must also catch up periodically from the tables themselves: NOTIFY is not
// delivered to an instance whose listening connection was down at the time.
import type { Sql } from 'postgres'
import { EventEmitter } from 'node:events'
import type { Logger } from '../log.ts'
import type { Db } from './sql.ts'
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

export class PostgresEventBus implements EventBus {
  private readonly unlisten: (() => Promise<void>)[] = []

  constructor(
    private readonly system: Sql,
    private readonly log: Logger,
  ) {}

  async publish(sql: Db, channel: string, payload: string): Promise<void> {
    checkChannel(channel)
    await sql`SELECT pg_notify(${channel}, ${payload})`
  }

  async subscribe(channel: string, listener: (payload: string) => void): Promise<void> {
    checkChannel(channel)
    const meta = await this.system.listen(
      channel,
      (payload) => {
        try {
          listener(payload)
        } catch (error) {
          this.log.error('event listener failed', { channel, ...describeError(error) })
        }
      },
      // Called on the first LISTEN and again after every reconnect of the listening connection.
      () => this.log.debug('listening', { channel }),
    )
    this.unlisten.push(meta.unlisten)
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.unlisten.map((unlisten) => unlisten()))
  }
}
