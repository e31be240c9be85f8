// The reader's second stage: a byte-level scanner over the decompressed chunks. It holds the
// buffer (live data is buf[pos, len), grown geometrically so a long value is never re-scanned),
// walks JSON by hand (keys, punctuation, one value at a time) and finds the byte span of each
// value without parsing it: depth and bracket tracking, strings skipped four bytes at a time,
// then with indexOf, counting the backslashes before a quote. Values it is asked to read are
// decoded (non-fatal TextDecoder: invalid UTF-8 becomes U+FFFD, as in Go) and parsed by
// JSON.parse; the later stages parse the spans it finds in batches. It also knows where the
// reading is, for messages, and enforces the limits on nesting, strings, values and rows. What
// the decoding stages may use of it is JsonCursor (cursor.ts).
import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isWhitespace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
  type JsonCursor,
} from './cursor.ts'
import { BundleError, describeByte } from './errors.ts'
import type { ReaderLimits } from './items.ts'

/** Ends a number or literal. */
const isDelimiter = (c: number) =>
  c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c === COLON || isWhitespace(c)

const INITIAL_BUFFER = 1024 * 1024

/**
 * The first '"' in b[i, end): word at a time (SWAR) over the first bytes, where most strings
 * end; then indexOf, whose call costs more than a short string but runs far faster on a long one.
 */
function findQuote(b: Uint8Array, words: Uint32Array, view: Uint8Array, i: number, end: number): number {
  const near = Math.min(i + 256, end)
  while (i < near && (i & 3) !== 0) {
    if (b[i] === QUOTE) return i
    i++
  }
  if (i < near) {
    let w = i >> 2 // i is aligned here
    const wordsEnd = near >> 2
    for (; w < wordsEnd; w++) {
      const x = words[w]! ^ 0x22222222 // a zero byte where the quote is
      if (((x - 0x01010101) & ~x & 0x80808080) !== 0) break
    }
    i = w << 2
  }
  for (; i < near; i++) if (b[i] === QUOTE) return i
  return near < end ? view.indexOf(QUOTE, near) : -1
}

export class Scanner implements JsonCursor {
  // The decompressed bytes: live data is buf[pos, len); `view` is buf[0, len) (indexOf must not
  // see stale bytes past len). Positions are indices into buf, shifted when it is compacted.
  buf = new Uint8Array(INITIAL_BUFFER)
  view = this.buf.subarray(0, 0)
  /** buf as 32-bit words (buf starts at offset 0 of its own ArrayBuffer), for findQuote. */
  private words = new Uint32Array(this.buf.buffer, 0, this.buf.length >> 2)
  len = 0
  pos = 0
  /** Absolute (decompressed stream) offset of buf[0]. */
  base = 0
  private eof = false
  readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true })

  // One value being scanned (resumable across chunks).
  private vStart = 0
  private vCur = 0
  private vEnd = 0
  private vDepth = 0
  private vDepthBase = 0
  private vPrimitive = false
  private vInString = false
  private vStringStart = 0
  private vEscape = false
  private vMaxString = 0
  private readonly brackets: Uint8Array

  // Where we are, for messages.
  ctxSection: string | undefined
  ctxPosition: number | undefined
  ctxKey: string | undefined
  inside = 'the bundle object'
  /** Rows and vectors counted against maxRows. */
  private totalRows = 0

  // The row array being scanned: its state, the rows found so far, and the spans of the
  // complete rows in the buffer not handed over yet.
  private rowState = 0
  rowIndex = 0
  readonly rowStarts: number[] = []
  readonly rowEnds: number[] = []

  constructor(
    private readonly chunks: AsyncGenerator<Uint8Array, void, undefined>,
    readonly limits: ReaderLimits,
  ) {
    this.brackets = new Uint8Array(limits.maxDepth + 2)
  }

  /** Stops the chunks' source. */
  async close(): Promise<void> {
    await this.chunks.return()
  }

  // --- errors

  error(problem: string): BundleError {
    return new BundleError(problem, { section: this.ctxSection, position: this.ctxPosition, key: this.ctxKey })
  }

  fail(problem: string): never {
    throw this.error(problem)
  }

  failBundle(problem: string): never {
    throw new BundleError(problem)
  }

  truncated(): never {
    this.failBundle(`truncated JSON (ended inside ${this.inside})`)
  }

  setContext(section?: string, position?: number, key?: string): void {
    this.ctxSection = section
    this.ctxPosition = position
    this.ctxKey = key
  }

  setInside(what: string): void {
    this.inside = what
  }

  // --- the buffer

  /** Appends the next decompressed chunk, keeping buf[pos, len). False at the end. */
  async fill(): Promise<boolean> {
    if (this.eof) return false
    const next = await this.chunks.next()
    if (next.done) {
      this.eof = true
      return false
    }
    const chunk = next.value
    if (this.len + chunk.length > this.buf.length) {
      const keep = this.pos
      const live = this.len - keep
      const needed = live + chunk.length
      let target = this.buf
      if (needed > this.buf.length / 2) {
        // Geometric growth: a long row is copied O(log n) times, never re-scanned.
        target = new Uint8Array(Math.max(this.buf.length * 2, needed * 2))
      } else if (this.buf.length > 4 * INITIAL_BUFFER && needed <= INITIAL_BUFFER / 2) {
        target = new Uint8Array(INITIAL_BUFFER) // give back the room a long row needed
      }
      if (target === this.buf) this.buf.copyWithin(0, keep, this.len)
      else target.set(this.buf.subarray(keep, this.len))
      if (target !== this.buf) this.words = new Uint32Array(target.buffer, 0, target.length >> 2)
      this.buf = target
      this.shift(keep)
    }
    this.buf.set(chunk, this.len)
    this.len += chunk.length
    this.view = this.buf.subarray(0, this.len)
    return true
  }

  private shift(by: number): void {
    if (by === 0) return
    this.base += by
    this.len -= by
    this.pos -= by
    this.vStart -= by
    this.vCur -= by
    this.vEnd -= by
    this.vStringStart -= by
  }

  offset(at = this.pos): number {
    return this.base + at
  }

  seek(at: number): void {
    this.pos = at
  }

  decode(bytes: Uint8Array): string {
    return this.decoder.decode(bytes)
  }

  /** Skips whitespace; the next byte (not consumed), filling as needed; -1 at the end. */
  async peekByte(): Promise<number> {
    for (;;) {
      const b = this.buf
      let i = this.pos
      const end = this.len
      while (i < end && isWhitespace(b[i]!)) i++
      this.pos = i
      if (i < end) return b[i]!
      if (!(await this.fill())) return -1
    }
  }

  /** The next non-whitespace byte, which must exist (else the JSON is truncated). */
  async next(): Promise<number> {
    const c = await this.peekByte()
    if (c < 0) this.truncated()
    return c
  }

  private async expect(byte: number, what: string): Promise<void> {
    const c = await this.next()
    if (c !== byte) this.fail(`expected ${what}, found ${describeByte(c)}`)
    this.pos++
  }

  // --- scanning one value

  /** Starts scanning the value whose first byte is at `at`; `depthBase` = depth of its container. */
  private beginValue(at: number, depthBase: number, maxString: number): void {
    const c = this.buf[at]!
    this.vStart = this.vCur = at
    this.vDepth = 0
    this.vDepthBase = depthBase
    this.vInString = false
    this.vEscape = false
    this.vMaxString = maxString
    this.vPrimitive = !(c === OPEN_BRACE || c === OPEN_BRACKET || c === QUOTE)
    if (this.vPrimitive && !(c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e)) {
      this.fail(`expected a value, found ${describeByte(c)}`)
    }
  }

  private stringTooLong(): never {
    this.fail(`a string is longer than ${this.vMaxString} bytes (limit)`)
  }

  /** Advances the scan over the buffered bytes: true when the value ended (at vEnd). */
  private scan(): boolean {
    const b = this.buf
    const end = this.len
    let i = this.vCur
    if (this.vPrimitive) {
      while (i < end && !isDelimiter(b[i]!)) i++
      this.vCur = i
      if (i - this.vStart > this.vMaxString) this.stringTooLong()
      if (i >= end) return false
      this.vEnd = i
      return true
    }
    let depth = this.vDepth
    if (this.vInString) {
      if (this.vEscape) {
        if (i >= end) return false
        i++
        this.vEscape = false
      }
      const q = this.stringEnd(i)
      if (q < 0) return false
      i = q + 1
      if (depth === 0) {
        this.vCur = this.vEnd = i
        return true
      }
    }
    const brackets = this.brackets
    const room = this.limits.maxDepth - this.vDepthBase
    for (;;) {
      for (; i < end; i++) {
        const c = b[i]!
        if (c === QUOTE) break
        if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          if (++depth > room) this.fail(`nesting deeper than ${this.limits.maxDepth} levels (limit)`)
          brackets[depth] = c
        } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
          if (brackets[depth] !== c - 2) this.fail(`mismatched ${describeByte(c)}`)
          if (--depth === 0) {
            this.vCur = this.vEnd = i + 1
            this.vDepth = 0
            return true
          }
        }
      }
      if (i >= end) {
        this.vCur = i
        this.vDepth = depth
        return false
      }
      this.vStringStart = i + 1
      const q = this.stringEnd(i + 1)
      if (q < 0) {
        this.vDepth = depth
        return false
      }
      i = q + 1
      if (depth === 0) {
        this.vCur = this.vEnd = i
        return true
      }
    }
  }

  /**
   * The closing quote of the string being scanned, searched from `from` (not inside an
   * escape), or -1 when it is not in the buffer: then the scan waits inside the string
   * (vInString, vCur, vEscape set). Checks the string limit either way.
   */
  private stringEnd(from: number): number {
    const b = this.buf
    const end = this.len
    let i = from
    for (;;) {
      const q = findQuote(b, this.words, this.view, i, end)
      if (q < 0) {
        if (end - this.vStringStart > this.vMaxString) this.stringTooLong()
        let k = end - 1
        while (k >= from && b[k] === BACKSLASH) k--
        this.vEscape = ((end - 1 - k) & 1) === 1
        this.vInString = true
        this.vCur = end
        return -1
      }
      let k = q - 1
      while (k >= from && b[k] === BACKSLASH) k--
      if (((q - 1 - k) & 1) === 0) {
        if (q - this.vStringStart > this.vMaxString) this.stringTooLong()
        this.vInString = false
        return q
      }
      i = q + 1 // an escaped quote
    }
  }

  /** Scans and parses the value at the cursor (held in memory: up to `maxBytes`). */
  async readValue(depthBase: number, maxBytes: number, maxString = this.limits.maxStringBytes): Promise<unknown> {
    await this.next()
    this.beginValue(this.pos, depthBase, maxString)
    while (!this.scan()) {
      if (this.vCur - this.vStart > maxBytes) this.fail(`value is larger than ${maxBytes} bytes (limit)`)
      this.pos = this.vStart
      if (!(await this.fill())) this.truncated()
    }
    if (this.vEnd - this.vStart > maxBytes) this.fail(`value is larger than ${maxBytes} bytes (limit)`)
    const text = this.decoder.decode(this.buf.subarray(this.vStart, this.vEnd))
    this.pos = this.vEnd
    try {
      return JSON.parse(text)
    } catch (error) {
      this.fail(`invalid JSON (${(error as Error).message})`)
    }
  }

  /** Passes over the value at the cursor without holding it. */
  async skipValue(depthBase: number): Promise<void> {
    await this.next()
    this.beginValue(this.pos, depthBase, this.limits.maxStringBytes)
    while (!this.scan()) {
      this.pos = this.vCur
      if (!(await this.fill())) this.truncated()
    }
    this.pos = this.vEnd
  }

  /** An object key (the cursor is at its opening quote) and the colon after it. */
  async readKey(depthBase: number): Promise<string> {
    const c = await this.next()
    if (c !== QUOTE) this.fail(`expected a key, found ${describeByte(c)}`)
    const key = (await this.readValue(depthBase, this.limits.maxStringBytes)) as string
    await this.expect(COLON, '":" after a key')
    return key
  }

  /** After an object's '{' (consumed here): true if the object is empty (its '}' consumed). */
  async objectOpen(what: string): Promise<boolean> {
    await this.expect(OPEN_BRACE, `an object for ${what}`)
    if ((await this.next()) !== CLOSE_BRACE) return false
    this.pos++
    return true
  }

  /** After a member: true at ',' (another member follows), false at '}' (both consumed). */
  async objectMore(what: string): Promise<boolean> {
    const c = await this.next()
    if (c === COMMA || c === CLOSE_BRACE) {
      this.pos++
      return c === COMMA
    }
    this.fail(`expected "," or "}" in ${what}, found ${describeByte(c)}`)
  }

  /** `null` (consumed: true) or the next byte must be `open`. */
  async nullOr(open: number, what: string): Promise<boolean> {
    const c = await this.next()
    if (c === open) return false
    if (c === 0x6e && (await this.readValue(1, 16)) === null) return true
    this.fail(`expected ${what} or null`)
  }

  /** Counts a row or vector against maxRows (the context names it). */
  countRow(): void {
    if (++this.totalRows > this.limits.maxRows)
      this.fail(`more than ${this.limits.maxRows} rows and vectors in the bundle (limit)`)
  }

  // --- row arrays

  /** After an array's '[' (consumed). */
  beginRows(): void {
    this.rowState = 0
    this.rowIndex = 0
  }

  clearRows(): void {
    this.rowStarts.length = 0
    this.rowEnds.length = 0
  }

  /** Before fill() while rows are scanned: keeps the row being scanned in the buffer. */
  holdRow(): void {
    if (this.rowState === 2) this.pos = this.vStart
  }

  /**
   * Finds the complete rows in the buffer (their spans go to rowStarts/rowEnds); `strings`:
   * a row may be a string as well as an object. Resumable: rowState
   * 0 = after '[', 1 = after ',', 2 = inside a row, 3 = after a row. True at the closing ']'.
   */
  scanRows(strings: boolean): boolean {
    const b = this.buf
    const maxRow = this.limits.maxRowBytes
    for (;;) {
      if (this.rowState === 2) {
        if (!this.scan()) {
          if (this.vCur - this.vStart > maxRow) this.fail(`row is larger than ${maxRow} bytes (limit)`)
          return false
        }
        if (this.vEnd - this.vStart > maxRow) this.fail(`row is larger than ${maxRow} bytes (limit)`)
        this.rowStarts.push(this.vStart)
        this.rowEnds.push(this.vEnd)
        this.rowIndex++
        this.pos = this.vEnd
        this.rowState = 3
        continue
      }
      let i = this.pos
      const end = this.len
      while (i < end && isWhitespace(b[i]!)) i++
      this.pos = i
      if (i >= end) return false
      const c = b[i]!
      if (this.rowState === 3) {
        this.pos = i + 1
        if (c === COMMA) this.rowState = 1
        else if (c === CLOSE_BRACKET) return true
        else {
          this.ctxPosition = this.rowIndex - 1
          this.fail(`expected "," or "]" after the row, found ${describeByte(c)}`)
        }
        continue
      }
      if (c === CLOSE_BRACKET && this.rowState === 0) {
        this.pos = i + 1
        return true
      }
      this.ctxPosition = this.rowIndex
      this.countRow()
      if (c === OPEN_BRACE || (c === QUOTE && strings)) {
        this.beginValue(i, 2, this.limits.maxStringBytes)
        this.rowState = 2
        continue
      }
      if (c === CLOSE_BRACKET) this.fail('expected a row after ","')
      this.fail('expected an object')
    }
  }
}
