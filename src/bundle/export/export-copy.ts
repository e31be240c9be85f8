// The export's wide sections read with `COPY (…) TO STDOUT (FORMAT binary)` and turned straight
// into their bundle JSON, byte for byte what the section's codec (format/compile.ts) writes for
// the same row. Decoding each value into a JavaScript string or number and encoding it back was
// most of an export's CPU (postgres.js's row decoding, then the codec); here the server's bytes
// are copied into the JSON, escaped where Go's encoder would escape them (format/json.ts).
// Binary COPY frames every value with its length, so text needs no unescaping.
import type { Readable } from 'node:stream'
import type { PendingQuery, Row as SqlRow, TransactionSql } from 'postgres'
import { rowFields, type Field } from '../format/compile.ts'
import { encodeString } from '../format/json.ts'
import { ROW_SCHEMAS, type RowSection } from '../format/schema.ts'
import { EncodedRows } from '../format/writer.ts'

/** JSON bytes per block handed to the writer: about its chunk size. */
const BLOCK_BYTES = 64 * 1024
/** `PGCOPY\n\377\r\n\0`, then a flags word and the length of a header extension. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')
const HEADER_BYTES = SIGNATURE.length + 8

/**
 * What a byte of UTF-8 text becomes in JSON when it is not copied as it is: Go's escapes,
 * taken from encodeString itself. 0xE2 starts U+2028 and U+2029, which Go escapes too (checked
 * with the two bytes that follow).
 */
const ESCAPES: (Uint8Array | undefined)[] = Array.from({ length: 256 }, (_, byte) => {
  if (byte >= 0x80) return undefined
  const escaped = encodeString(String.fromCharCode(byte)).slice(1, -1)
  return escaped.length > 1 ? Buffer.from(escaped) : undefined
})
const LINE_SEPARATOR = Buffer.from(encodeString('\u2028').slice(1, -1))
const PARAGRAPH_SEPARATOR = Buffer.from(encodeString('\u2029').slice(1, -1))
/** 1 for a byte that needs a look: one of ESCAPES, or 0xE2. */
const SPECIAL = Uint8Array.from({ length: 256 }, (_, byte) => (ESCAPES[byte] || byte === 0xe2 ? 1 : 0))
/** The longest a text's byte can grow: a control byte becomes `\u00xx`. */
const MAX_GROWTH = 6

const TRUE = Buffer.from('true')
const FALSE = Buffer.from('false')

interface CopyField {
  name: string
  kind: 'integer' | 'string' | 'boolean'
  /** `"name":`, after a comma unless first. */
  key: Uint8Array
  /** Written whatever the value; else omitted when empty (Go's omitempty). */
  required: boolean
  /** The field's default as its codec writes it, for a NULL; undefined: a NULL is an error (required) or omitted. */
  whenNull?: Uint8Array
}

function copyField(field: Field, first: boolean): CopyField {
  if (field.kind !== 'integer' && field.kind !== 'string' && field.kind !== 'boolean')
    throw new Error(`export COPY: field ${field.name} is of a kind it does not encode`)
  const { default: fallback } = field
  const whenNull =
    fallback === undefined || (!field.required && !fallback)
      ? undefined
      : Buffer.from(
          field.kind === 'string'
            ? encodeString(fallback as string)
            : field.kind === 'boolean'
              ? String(Boolean(fallback))
              : String(fallback),
        )
  return {
    name: field.name,
    kind: field.kind,
    key: Buffer.from(`${first ? '{' : ','}${JSON.stringify(field.name)}:`),
    required: field.required,
    whenNull,
  }
}

/** Bytes of JSON being built; `take` hands them over and starts a new buffer. */
class JsonBlock {
  private bytes = Buffer.allocUnsafe(2 * BLOCK_BYTES)
  size = 0
  rows = 0

  reserve(more: number): void {
    if (this.size + more <= this.bytes.length) return
    const grown = Buffer.allocUnsafe(Math.max(2 * this.bytes.length, this.size + more))
    this.bytes.copy(grown, 0, 0, this.size)
    this.bytes = grown
  }

  /**
   * Room must be reserved. Copied byte by byte: the pieces are a few bytes (a key, punctuation),
   * for which TypedArray.set's own cost is several times the copy's.
   */
  put(bytes: Uint8Array): void {
    const out = this.bytes
    let at = this.size
    for (let i = 0; i < bytes.length; i++) out[at++] = bytes[i]!
    this.size = at
  }

  /** A decimal integer; room must be reserved (20 bytes). */
  putInteger(value: number): void {
    const out = this.bytes
    if (value < 0) {
      out[this.size++] = 0x2d
      value = -value
    }
    let digits = 1
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++
    for (let i = this.size + digits - 1; i >= this.size; i--) {
      out[i] = 0x30 + (value % 10)
      value = Math.floor(value / 10)
    }
    this.size += digits
  }

  /** UTF-8 text as a JSON string; room must be reserved (MAX_GROWTH per byte, and 2). */
  putString(source: Uint8Array, start: number, end: number): void {
    const out = this.bytes
    let at = this.size
    out[at++] = 0x22
    for (let i = start; i < end; i++) {
      const byte = source[i]!
      if (SPECIAL[byte] === 0) {
        out[at++] = byte
        continue
      }
      let escaped = ESCAPES[byte]
      if (byte === 0xe2 && source[i + 1] === 0x80 && i + 2 < end) {
        const third = source[i + 2]
        escaped = third === 0xa8 ? LINE_SEPARATOR : third === 0xa9 ? PARAGRAPH_SEPARATOR : undefined
        if (escaped) i += 2
      }
      if (!escaped) {
        out[at++] = byte
        continue
      }
      out.set(escaped, at)
      at += escaped.length
    }
    out[at++] = 0x22
    this.size = at
  }

  take(): EncodedRows {
    const taken = new EncodedRows(this.bytes.subarray(0, this.size), this.rows)
    this.bytes = Buffer.allocUnsafe(2 * BLOCK_BYTES)
    this.size = 0
    this.rows = 0
    return taken
  }
}

const int16 = (bytes: Uint8Array, at: number) => ((bytes[at]! << 24) | (bytes[at + 1]! << 16)) >> 16
const int32 = (bytes: Uint8Array, at: number) =>
  (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!

/** A binary integer column's value (int2, int4 or int8; an int8 beyond 2^53 loses digits, as postgres.js's would). */
function integerAt(bytes: Uint8Array, at: number, length: number, name: string): number {
  if (length === 4) return int32(bytes, at)
  if (length === 8) return int32(bytes, at) * 2 ** 32 + (int32(bytes, at + 4) >>> 0)
  if (length === 2) return int16(bytes, at)
  throw new Error(`export COPY: column ${name} is not an integer (${length} bytes)`)
}

/** A binary double precision column's value; a real (4 bytes) is refused, its text would round differently. */
function float8At(bytes: Uint8Array, at: number, length: number, name: string): number {
  if (length !== 8) throw new Error(`export COPY: column ${name} is not a double precision (${length} bytes)`)
  return new DataView(bytes.buffer, bytes.byteOffset + at, 8).getFloat64(0)
}

/** Where the tuple at `at` ends, or -1 if `bytes` end before it does. */
function tupleEnd(bytes: Uint8Array, at: number, fields: number): number {
  at += 2
  for (let i = 0; i < fields; i++) {
    if (at + 4 > bytes.length) return -1
    const length = int32(bytes, at)
    at += 4 + Math.max(length, 0)
  }
  return at <= bytes.length ? at : -1
}

/** Encodes one tuple (its field count checked already) as a row of the section into `out`. */
function encodeTuple(fields: readonly CopyField[], bytes: Uint8Array, at: number, out: JsonBlock, room: number): void {
  out.reserve(room)
  if (out.rows > 0) out.put(COMMA)
  at += 2
  for (const field of fields) {
    const length = int32(bytes, at)
    at += 4
    if (length < 0) {
      if (field.whenNull) {
        out.put(field.key)
        out.put(field.whenNull)
      } else if (field.required) {
        throw new Error(`export COPY: ${field.name} is NULL`)
      }
      continue
    }
    if (field.kind === 'string') {
      if (length > 0 || field.required) {
        out.put(field.key)
        out.putString(bytes, at, at + length)
      }
    } else if (field.kind === 'integer') {
      const value = integerAt(bytes, at, length, field.name)
      if (value !== 0 || field.required) {
        out.put(field.key)
        out.putInteger(value)
      }
    } else {
      const value = bytes[at] !== 0
      if (value || field.required) {
        out.put(field.key)
        out.put(value ? TRUE : FALSE)
      }
    }
    at += length
  }
  out.put(CLOSE)
  out.rows++
}
const COMMA = Buffer.from(',')
const CLOSE = Buffer.from('}')

/**
 * Walks the tuples of binary COPY data of `fieldCount` columns, calling `onTuple` with each
 * (its bytes and where it starts); yields whenever `onTuple` answers true, for the caller to
 * hand over what it gathered.
 */
async function* copiedTuples(
  copied: AsyncIterable<readonly Uint8Array[]>,
  section: RowSection,
  fieldCount: number,
  onTuple: (bytes: Uint8Array, at: number, end: number) => boolean,
): AsyncGenerator<void> {
  let rest: Uint8Array | undefined
  let started = false
  let ended = false
  for await (const batch of copied)
    for (const chunk of batch) {
      const bytes = rest ? Buffer.concat([rest, chunk]) : chunk
      let at = 0
      if (!started) {
        if (bytes.length < HEADER_BYTES) {
          rest = Buffer.from(bytes)
          continue
        }
        if (!SIGNATURE.equals(bytes.subarray(0, SIGNATURE.length))) throw new Error('export COPY: not binary COPY data')
        at = HEADER_BYTES + int32(bytes, HEADER_BYTES - 4)
        started = true
      }
      while (at + 2 <= bytes.length) {
        const count = int16(bytes, at)
        if (count === -1) {
          ended = true
          at += 2
          break
        }
        if (count !== fieldCount)
          throw new Error(`export COPY: ${count} columns for the ${fieldCount} fields of ${section}`)
        const end = tupleEnd(bytes, at, count)
        if (end < 0) break
        const full = onTuple(bytes, at, end)
        at = end
        if (full) yield
      }
      // A tuple cut between two chunks: kept (copied: the chunk is the driver's) for the next.
      rest = at < bytes.length ? Buffer.from(bytes.subarray(at)) : undefined
    }
  if (!ended || rest) throw new Error('export COPY: the data ended in the middle')
}

/**
 * The rows of binary COPY data as blocks of `section`'s JSON rows. The columns must be the
 * section's fields in order, integers as int2/int4/int8, booleans as boolean, strings as text.
 */
export async function* encodeCopiedRows(
  section: RowSection,
  copied: AsyncIterable<readonly Uint8Array[]>,
): AsyncGenerator<EncodedRows> {
  const fields = rowFields(ROW_SCHEMAS[section]).map((field, i) => copyField(field, i === 0))
  const keyBytes = fields.reduce((sum, field) => sum + field.key.length + 20, 0)
  const out = new JsonBlock()
  // The keys, 20 bytes for an integer or `false`, each byte of text grown MAX_GROWTH times at most.
  const encode = (bytes: Uint8Array, at: number, end: number) => {
    encodeTuple(fields, bytes, at, out, keyBytes + 2 + (end - at) * MAX_GROWTH)
    return out.size >= BLOCK_BYTES
  }
  for await (const _ of copiedTuples(copied, section, fields.length, encode)) yield out.take()
  if (out.rows > 0) yield out.take()
}

/** A one-dimensional int4[] in binary: dimensions, a NULL flag, the element type, length and lower bound, then the elements. */
function integerArrayAt(bytes: Uint8Array, at: number, name: string): (number | null)[] {
  const dimensions = int32(bytes, at)
  if (dimensions === 0) return []
  if (dimensions !== 1) throw new Error(`export COPY: column ${name} has ${dimensions} dimensions`)
  const length = int32(bytes, at + 12)
  const values: (number | null)[] = []
  let element = at + 20
  for (let i = 0; i < length; i++) {
    const size = int32(bytes, element)
    element += 4
    values.push(size < 0 ? null : integerAt(bytes, element, size, name))
    element += Math.max(size, 0)
  }
  return values
}

/**
 * The rows of binary COPY data as objects, `batchRows` at a time, each value as postgres.js
 * would give it (NULL as null): for rows that are rewritten before they are encoded. The columns
 * must be `section`'s fields in order, as for encodeCopiedRows, integer lists as int4[].
 */
export async function* decodeCopiedRows(
  section: RowSection,
  copied: AsyncIterable<readonly Uint8Array[]>,
  batchRows: number,
): AsyncGenerator<SqlRow[]> {
  const fields = rowFields(ROW_SCHEMAS[section])
  for (const { name, kind } of fields) {
    if (kind !== 'integer' && kind !== 'number' && kind !== 'string' && kind !== 'boolean' && kind !== 'integers')
      throw new Error(`export COPY: field ${name} is of a kind it does not decode`)
  }
  let batch: SqlRow[] = []
  const decode = (bytes: Uint8Array, at: number) => {
    const row: SqlRow = {}
    at += 2
    for (const { name, kind } of fields) {
      const length = int32(bytes, at)
      at += 4
      if (length < 0) row[name] = null
      else if (kind === 'string') row[name] = Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString('utf8')
      else if (kind === 'integer') row[name] = integerAt(bytes, at, length, name)
      else if (kind === 'boolean') row[name] = bytes[at] !== 0
      else if (kind === 'number') row[name] = float8At(bytes, at, length, name)
      else row[name] = integerArrayAt(bytes, at, name)
      at += Math.max(length, 0)
    }
    batch.push(row)
    return batch.length >= batchRows
  }
  for await (const _ of copiedTuples(copied, section, fields.length, decode)) {
    yield batch
    batch = []
  }
  if (batch.length > 0) yield batch
}

/** Bytes of COPY data taken from the connection at a time, while the rows before are encoded. */
const BATCH_BYTES = 256 * 1024

/**
 * The binary COPY data of `query` as the server sends it, in batches of chunks (the driver
 * makes a chunk of each row: taking them one by one would cost more than encoding them). Left
 * early (an error, a cancelled job), the rest is read and dropped: the connection must finish
 * the COPY before the transaction can end.
 */
export async function* copyOut(
  tx: TransactionSql,
  query: PendingQuery<SqlRow[]>,
  signal?: AbortSignal,
): AsyncGenerator<Uint8Array[]> {
  // COPY takes no parameters: only queries made of SQL text and identifiers come here.
  const stream = (await tx`COPY (${query}) TO STDOUT (FORMAT binary)`.readable()) as unknown as Readable
  let batch: Uint8Array[] = []
  let bytes = 0
  let ended = false
  let failure: Error | undefined
  let wake: (() => void) | undefined
  stream.on('data', (chunk: Uint8Array) => {
    batch.push(chunk)
    bytes += chunk.byteLength
    if (bytes >= BATCH_BYTES) stream.pause()
    wake?.()
  })
  const done = new Promise<void>((resolve) => {
    stream.on('end', () => {
      ended = true
      resolve()
    })
    stream.on('error', (error) => {
      failure = error
      resolve()
    })
  })
  done.then(() => wake?.())
  try {
    for (;;) {
      if (failure) throw failure
      if (batch.length > 0) {
        const taken = batch
        batch = []
        bytes = 0
        stream.resume()
        signal?.throwIfAborted()
        yield taken
      } else if (ended) {
        return
      } else {
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
      }
    }
  } finally {
    if (!ended && !failure) {
      stream.removeAllListeners('data')
      stream.resume()
      await done
    }
    // postgres.js pauses its socket when the stream's buffer is full and resumes it when the
    // stream asks for more; a stream that ended meanwhile asks for nothing more, and the messages
    // after the COPY's data (its end of query) would never be read. Asking once resumes it.
    stream._read(0)
  }
}
