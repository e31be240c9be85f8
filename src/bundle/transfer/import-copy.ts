// Binary COPY for the bulk load of an import on PostgreSQL (import-rows.ts, COPY_SECTIONS): a
// section's rows stream into one `COPY … FROM STDIN (FORMAT binary)` for as long as the section
// lasts. Written by hand: postgres.js hands over the raw stream and encodes nothing for it.
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import type { TransactionSql } from 'postgres'

/** `PGCOPY\n\377\r\n\0`, a flags word and the length of a header extension (both 0). */
const HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
/** The field count -1 that ends the data. */
const TRAILER = Buffer.from([0xff, 0xff])

/** Binary COPY tuples: each a field count, then each field framed by its length (-1 for NULL). */
export class CopyData {
  private buffer = Buffer.allocUnsafe(64 * 1024)
  private at = 0

  private room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + bytes))
    this.buffer.copy(grown, 0, 0, this.at)
    this.buffer = grown
  }

  tuple(fields: number): this {
    this.room(2)
    this.buffer.writeInt16BE(fields, this.at)
    this.at += 2
    return this
  }

  text(value: string): this {
    this.room(4 + value.length * 3) // UTF-8 takes at most 3 bytes per UTF-16 unit
    const length = this.buffer.write(value, this.at + 4, 'utf8')
    this.buffer.writeInt32BE(length, this.at)
    this.at += 4 + length
    return this
  }

  null(): this {
    this.room(4)
    this.buffer.writeInt32BE(-1, this.at)
    this.at += 4
    return this
  }

  /** The UUID of the 16 bytes of `source` at `from`. */
  uuid(source: Uint8Array, from: number): this {
    this.room(20)
    const buffer = this.buffer
    buffer.writeInt32BE(16, this.at)
    // Byte by byte: a subarray per UUID costs more than the copy.
    for (let i = 0, at = this.at + 4; i < 16; i++) buffer[at + i] = source[from + i]!
    this.at += 20
    return this
  }

  int4(value: number): this {
    this.room(8)
    this.buffer.writeInt32BE(4, this.at)
    this.buffer.writeInt32BE(value, this.at + 4)
    this.at += 8
    return this
  }

  /** The tuples so far. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.at)
  }
}

/** One COPY into `table`, open until end(): nothing else may run on the connection meanwhile. */
export class CopyStream {
  private constructor(private readonly stream: Writable) {}

  static async open(tx: TransactionSql, table: string, columns: readonly string[]): Promise<CopyStream> {
    const stream = (await tx`COPY ${tx(table)} (${tx(columns as string[])}) FROM STDIN (FORMAT binary)`.writable()) as unknown as Writable
    // An error before end() (the server refused a row) is awaited there.
    stream.on('error', () => {})
    const copy = new CopyStream(stream)
    await copy.write(HEADER)
    return copy
  }

  /** Sends tuples; waits while the socket's buffer is full. */
  async write(tuples: Buffer): Promise<void> {
    if (this.stream.errored) throw this.stream.errored
    if (!this.stream.write(tuples)) await once(this.stream, 'drain')
  }

  /** Gives the COPY up (CopyFail): the connection is free again, the transaction failed. */
  abort(): void {
    this.stream.destroy(new Error('the import stopped'))
  }

  /** Ends the data and waits for the server to have taken every row. */
  async end(): Promise<void> {
    this.stream.end(TRAILER)
    await finished(this.stream)
  }
}
