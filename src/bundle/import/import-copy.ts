// Binary COPY for the bulk load of an import on PostgreSQL: which sections take it and how their
// rows are encoded (COPY_SECTIONS), and the stream a section's rows go into, one
// `COPY … FROM STDIN (FORMAT binary)` for as long as the section lasts (import-transaction.ts
// opens and ends it). The statements of every other case are import-rows.ts's. Written by hand:
// postgres.js hands over the raw stream and encodes nothing for it.
import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import type { TransactionSql } from 'postgres'
import { factContentHash } from '../../graph/rules.ts'
import { portableFactIdBytes } from '../format/citations.ts'
import type { Row, RowSection } from '../format/schema.ts'
import type { LocalIds } from './import-ids.ts'
import { createdAt, imageUrl, type Batch, type RowContext } from './import-rows.ts'

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
    const stream =
      (await tx`COPY ${tx(table)} (${tx(columns as string[])}) FROM STDIN (FORMAT binary)`.writable()) as unknown as Writable
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

/** A section a bulk load on PostgreSQL streams in by one binary COPY. */
export interface CopiedSection<S extends RowSection = RowSection> {
  /** Where the COPY goes: the section's table, or a table of the transaction that finish() empties. */
  table: string
  columns: readonly string[]
  /** Before the COPY: creates its table, if it is the transaction's. */
  prepare?(context: RowContext): Promise<void>
  /** A batch's tuples, encoded ahead of its turn; records the batch's local UUIDs. */
  encode(context: RowContext, batch: Batch<S>, data: CopyData): void
  /** After the COPY: moves the rows to their table. */
  finish?(context: RowContext): Promise<void>
}

/** Random (version 4) UUIDs, 16 bytes each. */
function randomIds(count: number): Uint8Array {
  const ids = crypto.getRandomValues(new Uint8Array(count * 16))
  for (let at = 0; at < ids.length; at += 16) {
    ids[at + 6] = (ids[at + 6]! & 0x0f) | 0x40
    ids[at + 8] = (ids[at + 8]! & 0x3f) | 0x80
  }
  return ids
}

/** A link section copied straight into its table: the fact's UUID, the other row's, a third field. */
function copiedLinks<S extends 'fact_sources' | 'fact_concepts'>(
  table: S,
  columns: readonly [string, string, string],
  others: (ids: RowContext['ids']) => LocalIds,
  other: (row: Row<S>) => number,
  third: (data: CopyData, row: Row<S>) => void,
): CopiedSection<S> {
  return {
    table,
    columns,
    encode({ ids }, { rows }, data) {
      for (const row of rows as (Row<S> & { fact_idx: number })[]) {
        ids.facts.copyTo(data.tuple(columns.length), row.fact_idx)
        others(ids).copyTo(data, other(row))
        third(data, row)
      }
    },
  }
}

/**
 * The sections a bulk load on PostgreSQL streams in by binary COPY, one per section: the largest,
 * which no statement deduplicates then (no unique index, import-indexes.ts). The server takes
 * their rows as they are, without the parsing of array parameters, the unnest and the
 * data-modifying CTE that cost it most of an INSERT's time. Facts go through a table of the
 * transaction first: their mapping rows (import_facts) are written from it in one statement, as
 * the facts themselves, with their source images, created_at and the counting trigger as the
 * INSERT above has them.
 */
export const COPY_SECTIONS: { [S in RowSection]?: CopiedSection<S> } = {
  facts: {
    table: 'import_facts_copied',
    columns: [
      'pos',
      'id',
      'text',
      'fact_kind',
      'image_url',
      'content_hash',
      'portable',
      'promptset_hash',
      'status',
      'image_pos',
    ],
    prepare: ({ tx }) =>
      tx`
      CREATE TEMP TABLE import_facts_copied (
        pos int NOT NULL, id uuid NOT NULL, text text NOT NULL, fact_kind text NOT NULL, image_url text NOT NULL, content_hash text NOT NULL,
        portable uuid NOT NULL, promptset_hash text NOT NULL, status text NOT NULL, image_pos int NOT NULL
      ) ON COMMIT DROP`.then(() => {}),
    encode({ ids }, { positions, rows }, data) {
      const sent = randomIds(rows.length)
      for (let index = 0; index < rows.length; index++) {
        const row = rows[index]!
        const pos = positions[index]!
        const hash = factContentHash(row.text)
        data
          .tuple(10)
          .int4(pos)
          .uuid(sent, index * 16)
          .text(row.text)
          .text(row.fact_kind)
          .text(row.image_url ?? '')
          .text(hash)
        data
          .uuid(portableFactIdBytes(hash), 0)
          .text(row.promptset_hash ?? '')
          .text(row.status)
          .int4(row.source_image_idx ?? -1)
        ids.facts.setBytes(pos, sent, index * 16)
      }
    },
    async finish(context) {
      const { tx } = context
      await tx`
        INSERT INTO facts (id, text, fact_kind, image_url, content_hash, promptset_hash, status, source_image_id, created_at)
        SELECT b.id, b.text, b.fact_kind, ${imageUrl(context, tx`b.image_url`)}, b.content_hash, b.promptset_hash, b.status, si.id, ${createdAt(tx, tx`b.pos`)}
        FROM import_facts_copied b LEFT JOIN import_images m ON m.pos = b.image_pos LEFT JOIN source_images si ON si.id = m.id`
      await tx`INSERT INTO import_facts (pos, id, portable, is_new, image_pos) SELECT pos, id, portable, true, image_pos FROM import_facts_copied`
      await tx`DROP TABLE import_facts_copied`
    },
  },

  fact_sources: copiedLinks<'fact_sources'>(
    'fact_sources',
    ['fact_id', 'source_id', 'chunk_index'],
    (ids) => ids.sources,
    (row) => row.source_idx,
    (data, row) => data.int4(row.chunk_index),
  ),
  fact_concepts: copiedLinks<'fact_concepts'>(
    'fact_concepts',
    ['fact_id', 'concept_id', 'promptset_hash'],
    (ids) => ids.concepts,
    (row) => row.concept_idx,
    (data, row) => data.text(row.promptset_hash ?? ''),
  ),
}
