// The export's second connection (PostgreSQL only; docs/bundles.md, "Export"). One connection
// takes turns with the encoder: while the server sorts or looks rows up, the encoder waits, and
// while the encoder works, the server does. So the sections the file writes last and that cost
// the server most per row (the links' sorts, the summaries' and syntheses' position lookups, the
// annotations' joins) are read ahead by a second transaction that shares the export's snapshot
// (pg_export_snapshot): after the metadata's promptset hashes, which the first connection waits
// for, it ranks the positions those sections need in tables of its own, and spools each
// section's binary COPY into a file beside the export file while the first connection reads the
// sections before it. The writer then decodes the spool (export-copy.ts) where it would have
// read a cursor. The spool files are scratch files of the job (scratch.ts): removed at the end,
// swept after a kill.
import { open, rm } from 'node:fs/promises'
import { createReadStream } from 'node:fs'
import type { PendingQuery, Row as SqlRow, Sql, TransactionSql } from 'postgres'
import type { RowSection } from '../format/schema.ts'
import { copyOut, decodeCopiedRows } from './export-copy.ts'
import { queryPromptsetHashes, rankPositions, type Positioned } from './export-positions.ts'
import { writeAll } from '../scratch.ts'

/** A prefetched section and its query on the second transaction, whose columns are the section's fields in order. */
export interface PrefetchedSection {
  section: RowSection
  query(tx: TransactionSql): PendingQuery<SqlRow[]>
}

export interface PrefetchOptions {
  /** From pg_export_snapshot() in the export's transaction, which stays open meanwhile. */
  snapshot: string
  /** The position tables the queries join to. */
  positions: readonly Positioned[]
  /** The sections, in the order they are read. */
  sections: readonly PrefetchedSection[]
  /** The export file's path: each spool is this path and `.section`. */
  path: string
  /** As the export's transaction: work_mem, or the server's. */
  workMem?: string
  signal?: AbortSignal
}

/** What pg_export_snapshot() returns (hexadecimal words and dashes): interpolated into SET TRANSACTION SNAPSHOT, which takes no parameters. */
const SNAPSHOT_ID = /^[0-9A-F]+(-[0-9A-F]+)+$/

/** Sections read ahead by a second transaction of the same snapshot, into spool files. */
export class Prefetch {
  /**
   * The metadata's promptset hashes, queried first: the export's own transaction needs them before
   * its first row and ranks its positions meanwhile.
   */
  readonly promptsetHashes: Promise<string[]>
  private readonly spooled = new Map<RowSection, { path: string; ready: Promise<void> }>()
  private readonly finished: Promise<unknown>
  /** Stops the second transaction at its next batch: the export ended without it (it failed, or was cancelled). */
  private readonly stop = new AbortController()

  constructor(sql: Sql, options: PrefetchOptions) {
    const signal = options.signal ? AbortSignal.any([options.signal, this.stop.signal]) : this.stop.signal
    if (!SNAPSHOT_ID.test(options.snapshot))
      throw new Error(`export: unexpected snapshot id ${JSON.stringify(options.snapshot)}`)
    const marks = new Map<RowSection, { resolve(): void; reject(error: unknown): void }>()
    for (const { section } of options.sections) {
      const ready = new Promise<void>((resolve, reject) => marks.set(section, { resolve, reject }))
      ready.catch(() => {})
      this.spooled.set(section, { path: `${options.path}.${section}`, ready })
    }
    let hashed: { resolve(hashes: string[]): void; reject(error: unknown): void }
    this.promptsetHashes = new Promise((resolve, reject) => (hashed = { resolve, reject }))
    this.promptsetHashes.catch(() => {})
    const transaction = sql.begin('ISOLATION LEVEL REPEATABLE READ', async (tx) => {
      await tx.unsafe(`SET TRANSACTION SNAPSHOT '${options.snapshot}'`)
      await tx`SET LOCAL jit = off`
      if (options.workMem) await tx`SELECT set_config('work_mem', ${options.workMem}, true)`
      hashed.resolve(await queryPromptsetHashes(tx))
      await rankPositions(tx, options.positions)
      for (const { section, query } of options.sections) {
        signal.throwIfAborted()
        await spool(tx, query(tx), this.spooled.get(section)!.path, signal)
        marks.get(section)!.resolve()
      }
    })
    this.finished = transaction.catch((error) => {
      hashed.reject(error)
      for (const mark of marks.values()) mark.reject(error)
    })
  }

  /** The rows of a prefetched section as objects, `batchRows` at a time, once its spool is complete. */
  rows(section: RowSection, batchRows: number): AsyncGenerator<SqlRow[]> {
    return decodeCopiedRows(section, this.copied(section), batchRows)
  }

  /** The binary COPY data of a prefetched section, once its spool is complete. */
  async *copied(section: RowSection): AsyncGenerator<Uint8Array[]> {
    const { path, ready } = this.spooled.get(section)!
    await ready
    const chunks = createReadStream(path, { highWaterMark: 256 * 1024 })
    try {
      for await (const chunk of chunks) yield [chunk]
    } finally {
      chunks.destroy()
    }
  }

  /** Stops the second transaction if it still runs, waits for its end, and removes the spools. */
  async close(): Promise<void> {
    this.stop.abort(new Error('the export ended'))
    await this.finished
    await Promise.all([...this.spooled.values()].map(({ path }) => rm(path, { force: true })))
  }
}

/** Writes a query's binary COPY into the file at `path`. */
async function spool(
  tx: TransactionSql,
  query: PendingQuery<SqlRow[]>,
  path: string,
  signal?: AbortSignal,
): Promise<void> {
  const file = await open(path, 'w', 0o600)
  try {
    let position = 0
    // A batch is many small chunks (one per row): written as one.
    for await (const batch of copyOut(tx, query, signal)) {
      const bytes = Buffer.concat(batch)
      await writeAll(file, bytes, position)
      position += bytes.byteLength
    }
  } finally {
    await file.close()
  }
}
