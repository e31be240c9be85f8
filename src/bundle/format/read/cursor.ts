// What the reader's decoding stages (document.ts, media.ts, vectors.ts) see of the scanner
// (scanner.ts) they share: the JsonCursor interface, and the bytes of JSON's punctuation.
import type { BundleError } from './errors.ts'
import type { ReaderLimits } from './items.ts'

export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const COMMA = 0x2c
export const COLON = 0x3a
export const OPEN_BRACE = 0x7b
export const CLOSE_BRACE = 0x7d
export const OPEN_BRACKET = 0x5b
export const CLOSE_BRACKET = 0x5d

export const isWhitespace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * What the decoding stages (document.ts, media.ts, vectors.ts) use of the scanner they share, and
 * all they may: a cursor over the decompressed bytes, the JSON read at it, the row arrays found in
 * it, and where the reading is, for messages. The bytes are open to read (buf, view, pos, len) for
 * the stages that decode values in place (base64 media, arrays of numbers); the cursor moves only
 * through the scanner's reads and seek(). fill() may replace buf and view and shift every
 * position, so a stage reads them again after it.
 */
export interface JsonCursor {
  readonly limits: ReaderLimits

  // --- the bytes: live, unread data is buf[pos, len)
  readonly buf: Uint8Array
  /** buf[0, len), for indexOf (which must not see stale bytes past len). */
  readonly view: Uint8Array
  readonly pos: number
  readonly len: number
  /** Moves the cursor to buf[at], past bytes the stage has read itself. */
  seek(at: number): void
  /** Appends the next decompressed chunk, keeping buf[pos, len). False at the end. */
  fill(): Promise<boolean>
  /** The offset in the decompressed stream of buf[at] (by default, of the cursor). */
  offset(at?: number): number
  /** Bytes as text, as the scanner decodes them (invalid UTF-8 becomes U+FFFD). */
  decode(bytes: Uint8Array): string

  // --- JSON at the cursor (depthBase: the depth of the value's container)
  next(): Promise<number>
  peekByte(): Promise<number>
  readKey(depthBase: number): Promise<string>
  readValue(depthBase: number, maxBytes: number, maxString?: number): Promise<unknown>
  skipValue(depthBase: number): Promise<void>
  objectOpen(what: string): Promise<boolean>
  objectMore(what: string): Promise<boolean>
  nullOr(open: number, what: string): Promise<boolean>

  // --- a row array: the spans of the complete rows found since the last holdRow()
  readonly rowIndex: number
  readonly rowStarts: readonly number[]
  readonly rowEnds: readonly number[]
  beginRows(): void
  scanRows(strings: boolean): boolean
  /** Drops the spans found so far, once their rows are decoded. */
  clearRows(): void
  holdRow(): void
  countRow(): void

  // --- where the reading is, for messages
  setContext(section?: string, position?: number, key?: string): void
  /** What the reading is inside, for the message of a truncated document. */
  setInside(what: string): void
  /** The error for a problem at the current context, not thrown. */
  error(problem: string): BundleError
  fail(problem: string): never
  failBundle(problem: string): never
  truncated(): never
  /** Stops the chunks' source. */
  close(): Promise<void>
}
