// The streaming graph-bundle reader (docs/spec/bundle.md §1–2): gzip bytes in, checked items out, one at
// a time in file order, in memory bounded by one row (or one media chunk) whatever the size.
//
// Pipeline: node:zlib gunzip (streamed; limits on the expanded size and the compression ratio
// enforced as bytes arrive) → a byte-level scanner over the decompressed chunks that walks the
// top-level object by hand and, inside a section, only finds the byte span of each row (depth
// and bracket tracking; strings skipped four bytes at a time, then with indexOf, counting the
// backslashes before a quote) → native JSON.parse on the spans, all the complete rows of the
// buffer in one call → the compiled row validators (codecs.ts). Vector maps likewise: the
// complete `"<index>": [...]` members of the buffer, their arrays in one JSON.parse (see
// vectors); a member in any other form is read on its own. The scan resumes where it
// stopped when a chunk ends inside a row, and the buffer grows geometrically, so a long row is
// never re-scanned. Values are only decoded (non-fatal TextDecoder: invalid UTF-8 becomes
// U+FFFD, as in Go) and parsed by the engine; JavaScript parses nothing itself.
//
// Decisions worth knowing:
// - schema_version must come before the first row, media or embeddings section (every producer
//   writes it first); a bundle without it fails there, or at the end if it has no sections.
// - metadata is required (at the end at the latest: "bundle: metadata is missing").
// - A reference to a section not read yet (v1: facts.source_image_idx before source_images) is
//   checked when that section ends, or at the end of the document (an absent section has 0
//   rows); the largest such index is remembered with the row that made it.
// - Media `data` is streamed and decoded as it arrives. `content_type` must come before `data`
//   (Go's order) to be reported: if it comes after, the item's contentType is ''. A media value
//   of `null`, a `data` of null, or no `data` at all, yields the item with `data: null` (not
//   embedded). Data the consumer did not read is skipped (and still checked) when the reader
//   is resumed.
// - Values skipped without being kept (unknown top-level keys, unknown keys inside media and
//   embeddings objects) are checked for nesting, bracket matching and the string limit, but
//   not parsed. Unknown fields inside rows are parsed with the row (within its size limit) and
//   dropped from it once it is validated: nothing keeps them.
// - A repeated key inside an embeddings map is not detected (the consumer upserts).
import { createGunzip } from 'node:zlib'
import { GarbageMeter } from '../../memory.ts'
import { METADATA_CODEC, ROW_CODECS } from './codecs.ts'
import type { ReferenceCheck, ZeroExists } from './compile.ts'
import { ROW_SCHEMAS, SUPPORTED_SCHEMA_VERSIONS, type MediaSection, type Metadata, type Row, type RowSection } from './schema.ts'

export interface ReaderLimits {
  /** Largest decompressed size of the whole file. */
  maxDecompressedBytes: number
  /** Largest decompressed/compressed ratio, checked once 16 MiB are decompressed. */
  maxCompressionRatio: number
  /** Deepest JSON nesting, counting the bundle object as 1. */
  maxDepth: number
  /** Longest string in bytes as written (escapes included), except media `data`. */
  maxStringBytes: number
  /** Largest row (or metadata, vector, top-level scalar) in bytes: one is held while parsed. */
  maxRowBytes: number
  /** Most rows of all row sections plus vectors together. */
  maxRows: number
}

const DEFAULT_READER_LIMITS: ReaderLimits = Object.freeze({
  maxDecompressedBytes: 16 * 1024 ** 3,
  maxCompressionRatio: 200,
  maxDepth: 32,
  maxStringBytes: 64 * 1024 ** 2,
  // The largest real row is a source carrying a long document twice (parsed_text and
  // parsed_markdown): a 1,000-page book is about 3 MB of text, so 6 MB, and up to twice that
  // with JSON escapes. A row is held parsed while it is checked, at several times its size.
  maxRowBytes: 16 * 1024 ** 2,
  maxRows: 200_000_000,
})

/** The compression ratio is only judged past this many decompressed bytes. */
const RATIO_GRACE_BYTES = 16 * 1024 ** 2

export interface BundleErrorWhere {
  section?: string
  position?: number
  /** A media ref, for problems in `images` / `bodies`. */
  key?: string
  /** The prefix when there is no section: 'bundle' (default) or 'gzip'. */
  scope?: 'bundle' | 'gzip'
}

/**
 * A problem with the bundle's content. message = `section[position]: problem`,
 * `section["ref"]: problem`, `section: problem`, or `bundle: problem` / `gzip: problem`.
 */
export class BundleError extends Error {
  override readonly name = 'BundleError'
  readonly section?: string
  readonly position?: number
  readonly key?: string
  readonly problem: string

  constructor(problem: string, where: BundleErrorWhere = {}) {
    const { section, position, key, scope } = where
    let prefix: string
    if (section === undefined) prefix = scope ?? 'bundle'
    else if (position !== undefined) prefix = `${section}[${position}]`
    else if (key !== undefined) prefix = `${section}[${JSON.stringify(key)}]`
    else prefix = section
    super(`${prefix}: ${problem}`)
    this.problem = problem
    if (section !== undefined) this.section = section
    if (position !== undefined) this.position = position
    if (key !== undefined) this.key = key
  }
}

export type RowItem = { [S in RowSection]: { type: 'row'; section: S; position: number; row: Row<S> } }[RowSection]

export type BundleItem =
  | { type: 'schema_version'; version: 1 | 2 }
  | { type: 'metadata'; metadata: Metadata }
  | RowItem
  /** data: null when the producer wrote a null value (tolerated) or no data: not embedded. */
  | { type: 'media'; section: MediaSection; ref: string; contentType: string; data: AsyncIterable<Uint8Array> | null }
  /** Before the first vector. */
  | { type: 'embeddings'; model: string; dimensions: number }
  | { type: 'vector'; target: 'facts' | 'concepts'; index: number; vector: number[] }

export interface ReaderStats {
  compressedBytes: number
  decompressedBytes: number
  /** Decompressed bytes each top-level value spans, by key. */
  sectionBytes: Record<string, number>
  rows: Partial<Record<RowSection, number>>
  /** Decoded bytes of media data. */
  mediaBytes: number
  vectors: number
}

export function readBundle(source: AsyncIterable<Uint8Array>, limits?: Partial<ReaderLimits>): BundleReader {
  return new BundleReader(source, limits)
}

/** Iterate once; every problem is thrown as a BundleError from the iterator. */
export class BundleReader implements AsyncIterable<BundleItem> {
  readonly stats: ReaderStats = { compressedBytes: 0, decompressedBytes: 0, sectionBytes: {}, rows: {}, mediaBytes: 0, vectors: 0 }
  private readonly limits: ReaderLimits
  private started = false

  constructor(
    private readonly source: AsyncIterable<Uint8Array>,
    limits: Partial<ReaderLimits> = {},
  ) {
    this.limits = { ...DEFAULT_READER_LIMITS }
    for (const [name, value] of Object.entries(limits) as [keyof ReaderLimits, number | undefined][]) {
      if (value === undefined) continue
      if (!(value > 0)) throw new RangeError(`reader limit ${name} must be positive, got ${value}`)
      if (name === 'maxDepth' && !(Number.isInteger(value) && value <= 100_000)) throw new RangeError(`reader limit maxDepth must be an integer up to 100000, got ${value}`)
      this.limits[name] = value
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<BundleItem> {
    if (this.started) throw new Error('a BundleReader can be iterated only once')
    this.started = true
    const batches = new Parser(decompress(this.source, this.limits, this.stats), this.limits, this.stats).run()
    // The parser hands over batches of items (a row batch, or a single item); handing them out
    // one by one here costs less than an async generator step per row. The parser resumes, and
    // so skips unread media data, only when the consumer asks for the item after a batch.
    let queue: BundleItem[] = []
    let k = 0
    let finished = false
    let pending: Promise<IteratorResult<BundleItem>> | undefined
    const done: IteratorReturnResult<undefined> = { value: undefined, done: true }
    const pull = async (): Promise<IteratorResult<BundleItem>> => {
      try {
        while (!finished) {
          const next = await batches.next()
          if (next.done) break
          queue = next.value
          k = 0
          if (queue.length > 0) return { value: queue[k++]!, done: false }
        }
        finished = true
        return done
      } catch (error) {
        finished = true
        throw error
      } finally {
        pending = undefined
      }
    }
    const next = (): Promise<IteratorResult<BundleItem>> => {
      if (pending) return pending.then(next, next)
      if (k < queue.length) return Promise.resolve({ value: queue[k++]!, done: false })
      if (finished) return Promise.resolve(done)
      return (pending = pull())
    }
    return {
      next,
      return: async () => {
        finished = true
        queue = []
        await batches.return(undefined)
        return done
      },
    }
  }
}

// ---------------------------------------------------------------------------------------------
// gzip

const GUNZIP_CHUNK = 64 * 1024

function gzipError(problem: string): BundleError {
  return new BundleError(problem, { scope: 'gzip' })
}

function gzipProblem(error: unknown, consumed: number): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | null)?.code
  if (/unexpected end of file/i.test(message) || code === 'Z_BUF_ERROR') return 'truncated (unexpected end of file)'
  if (/incorrect data check/i.test(message)) return 'corrupt data (checksum mismatch)'
  if (/incorrect length check/i.test(message)) return 'corrupt data (length mismatch)'
  if (/incorrect header check|unknown compression method|header/i.test(message)) {
    return consumed <= 10 ? 'not a gzip file' : `corrupt data after a gzip member (${message})`
  }
  return `corrupt data (${message})`
}

/**
 * The decompressed chunks of `source`. A feeder task writes the compressed bytes into gunzip
 * (with backpressure); this generator takes gunzip's output and checks the limits on every
 * chunk before anyone scans it.
 */
async function* decompress(source: AsyncIterable<Uint8Array>, limits: ReaderLimits, stats: ReaderStats): AsyncGenerator<Uint8Array, void, undefined> {
  const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK })
  const input = source[Symbol.asyncIterator]()
  let feedError: unknown
  let stopped = false
  const magic: number[] = []
  const waitDrain = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        gunzip.off('drain', done)
        gunzip.off('close', done)
        resolve()
      }
      gunzip.on('drain', done)
      gunzip.on('close', done)
    })
  const feeding = (async () => {
    try {
      for (;;) {
        const next = await input.next()
        if (next.done || stopped) break
        const chunk = next.value
        if (!(chunk instanceof Uint8Array)) throw new TypeError('the bundle source must yield Uint8Array chunks')
        if (chunk.length === 0) continue
        stats.compressedBytes += chunk.length
        for (let i = 0; magic.length < 2 && i < chunk.length; i++) magic.push(chunk[i]!)
        if (magic.length >= 1 && magic[0] !== 0x1f) throw gzipError('not a gzip file')
        if (magic.length >= 2 && magic[1] !== 0x8b) throw gzipError('not a gzip file')
        // Slices, so that gunzip's consumed-byte count (the ratio check) stays close to the truth.
        for (let i = 0; i < chunk.length && !stopped; i += GUNZIP_CHUNK) {
          if (!gunzip.write(chunk.subarray(i, i + GUNZIP_CHUNK))) await waitDrain()
          if (gunzip.destroyed) stopped = true
        }
        if (stopped) break
      }
      if (!stopped) {
        if (stats.compressedBytes === 0) throw gzipError('empty input (not a gzip file)')
        gunzip.end()
      }
    } catch (error) {
      feedError = error
      gunzip.destroy(error instanceof Error ? error : new Error(String(error)))
    }
  })()
  const garbage = new GarbageMeter()
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      garbage.add(chunk.length)
      const total = stats.decompressedBytes + chunk.length
      if (total > limits.maxDecompressedBytes) throw gzipError(`bundle expands past ${limits.maxDecompressedBytes} bytes (limit)`)
      stats.decompressedBytes = total
      if (total >= RATIO_GRACE_BYTES) {
        const consumed = Math.max(1, Math.min(stats.compressedBytes, gunzip.bytesWritten || stats.compressedBytes))
        if (total / consumed > limits.maxCompressionRatio) {
          throw gzipError(`bundle expands more than ${limits.maxCompressionRatio} times its compressed size (limit: ${total} bytes from ${consumed})`)
        }
      }
      yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length)
    }
    await feeding
    if (feedError !== undefined) throw feedError
  } catch (error) {
    if (error instanceof BundleError) throw error
    if (feedError !== undefined) throw feedError
    // Only zlib's failures (Z_* codes) are the data's; any other (the runtime's) is reported as itself.
    if (!String((error as { code?: unknown } | null)?.code).startsWith('Z_')) throw error
    throw gzipError(gzipProblem(error, gunzip.bytesWritten || stats.compressedBytes))
  } finally {
    stopped = true
    if (!gunzip.destroyed) gunzip.destroy()
    // Stops a source still being read (a Readable is destroyed); not awaited: a source blocked
    // on the network must not hold the caller.
    try {
      input.return?.()?.catch(() => {})
    } catch {
      // a source that cannot be stopped is left to finish on its own
    }
  }
}

// ---------------------------------------------------------------------------------------------
// the scanner and parser

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

const isWhitespace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
/** Ends a number or literal. */
const isDelimiter = (c: number) => c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c === COLON || isWhitespace(c)

const INITIAL_BUFFER = 1024 * 1024

/** Standard base64 alphabet → 0..63; 64 '='; -1 anything else. */
const BASE64 = new Int8Array(256).fill(-1)
for (let i = 0; i < 64; i++) BASE64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i
BASE64[0x3d] = 64

const VECTOR_MAPS = { fact_vectors: 'facts', concept_vectors: 'concepts' } as const
const INDEX_KEY = /^(0|[1-9][0-9]*)$/
/** What scanVectors stopped at. */
const VECTORS_CLOSED = 0
const VECTORS_MORE = 1
const VECTORS_OTHER = 2
const BODY_REF = /^body-(0|[1-9][0-9]*)$/
/** The fields a row of each section may keep. */
const ROW_FIELDS = Object.fromEntries(Object.entries(ROW_SCHEMAS).map(([section, schema]) => [section, new Set(Object.keys(schema.properties))])) as Record<RowSection, Set<string>>

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`
const describeByte = (c: number) => (c >= 0x20 && c < 0x7f ? JSON.stringify(String.fromCharCode(c)) : `byte 0x${c.toString(16).padStart(2, '0')}`)

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

interface Deferred {
  index: number
  field: string
  section: string
  position: number
}

class Parser {
  // The decompressed bytes: live data is buf[pos, len); `view` is buf[0, len) (indexOf must not
  // see stale bytes past len). Positions are indices into buf, shifted when it is compacted.
  private buf = new Uint8Array(INITIAL_BUFFER)
  private view = this.buf.subarray(0, 0)
  /** buf as 32-bit words (buf starts at offset 0 of its own ArrayBuffer), for findQuote. */
  private words = new Uint32Array(this.buf.buffer, 0, this.buf.length >> 2)
  private len = 0
  private pos = 0
  /** Absolute (decompressed stream) offset of buf[0]. */
  private base = 0
  private eof = false
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true })

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
  private ctxSection: string | undefined
  private ctxPosition: number | undefined
  private ctxKey: string | undefined
  private inside = 'the bundle object'

  // Sections and references.
  private version: 1 | 2 | undefined
  private hasMetadata = false
  private readonly seen = new Set<string>()
  /** Row counts of the sections read completely. */
  private readonly counts = new Map<string, number>()
  private readonly deferred = new Map<string, Deferred>()
  /** The row section being read, and the position being validated (for the check callback). */
  private current: string | undefined
  private currentLabel = ''
  private currentPosition = 0
  private totalRows = 0

  // The row section being scanned.
  private rowState = 0
  private rowIndex = 0
  private readonly batchStarts: number[] = []
  private readonly batchEnds: number[] = []

  // The vector map being scanned: per member, its key, where it starts (its key's '"') and
  // its array's span.
  private readonly vecKeys: number[] = []
  private readonly vecMembers: number[] = []
  private readonly vecStarts: number[] = []
  private readonly vecEnds: number[] = []

  // Media data being streamed.
  private dataActive = false
  /** Which media item's data is being read (an old item's iterable must not read the next). */
  private dataId = 0
  private dataEnded = false
  private dataBusy = false
  private dataAcc = 0
  private dataCount = 0
  private dataPad = 0
  private dataFinal = false
  /** Absolute offset of the data string's first character (for messages). */
  private dataStart = 0
  private dataError: unknown
  /** Output of skipped media data; the text of a vector batch. */
  private scratch = new Uint8Array(0)

  constructor(
    private readonly chunks: AsyncGenerator<Uint8Array, void, undefined>,
    private readonly limits: ReaderLimits,
    private readonly stats: ReaderStats,
  ) {
    this.brackets = new Uint8Array(limits.maxDepth + 2)
  }

  async *run(): AsyncGenerator<BundleItem[], void, undefined> {
    try {
      yield* this.document()
    } finally {
      await this.chunks.return()
    }
  }

  // --- errors

  private fail(problem: string): never {
    throw new BundleError(problem, { section: this.ctxSection, position: this.ctxPosition, key: this.ctxKey })
  }

  private failBundle(problem: string): never {
    throw new BundleError(problem)
  }

  private truncated(): never {
    this.failBundle(`truncated JSON (ended inside ${this.inside})`)
  }

  private setContext(section?: string, position?: number, key?: string): void {
    this.ctxSection = section
    this.ctxPosition = position
    this.ctxKey = key
  }

  // --- the buffer

  /** Appends the next decompressed chunk, keeping buf[pos, len). False at the end. */
  private async fill(): Promise<boolean> {
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

  private offset(): number {
    return this.base + this.pos
  }

  /** Skips whitespace; the next byte (not consumed), filling as needed; -1 at the end. */
  private async peekByte(): Promise<number> {
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
  private async next(): Promise<number> {
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
  private async readValue(depthBase: number, maxBytes: number, maxString = this.limits.maxStringBytes): Promise<unknown> {
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
  private async skipValue(depthBase: number): Promise<void> {
    await this.next()
    this.beginValue(this.pos, depthBase, this.limits.maxStringBytes)
    while (!this.scan()) {
      this.pos = this.vCur
      if (!(await this.fill())) this.truncated()
    }
    this.pos = this.vEnd
  }

  /** An object key (the cursor is at its opening quote) and the colon after it. */
  private async readKey(depthBase: number): Promise<string> {
    const c = await this.next()
    if (c !== QUOTE) this.fail(`expected a key, found ${describeByte(c)}`)
    const key = (await this.readValue(depthBase, this.limits.maxStringBytes)) as string
    await this.expect(COLON, '":" after a key')
    return key
  }

  /** After an object's '{' (consumed here): true if the object is empty (its '}' consumed). */
  private async objectOpen(what: string): Promise<boolean> {
    await this.expect(OPEN_BRACE, `an object for ${what}`)
    if ((await this.next()) !== CLOSE_BRACE) return false
    this.pos++
    return true
  }

  /** After a member: true at ',' (another member follows), false at '}' (both consumed). */
  private async objectMore(what: string): Promise<boolean> {
    const c = await this.next()
    if (c === COMMA || c === CLOSE_BRACE) {
      this.pos++
      return c === COMMA
    }
    this.fail(`expected "," or "}" in ${what}, found ${describeByte(c)}`)
  }

  // --- the document

  private async *document(): AsyncGenerator<BundleItem[], void, undefined> {
    const first = await this.peekByte()
    if (first < 0) this.failBundle('empty document (expected a JSON object)')
    if (first !== OPEN_BRACE) this.failBundle(`expected a JSON object at the top level, found ${describeByte(first)}`)
    if (!(await this.objectOpen('the bundle'))) {
      do {
        this.setContext()
        this.inside = 'the bundle object'
        const key = await this.readKey(1)
        this.inside = key
        await this.next()
        const start = this.offset()
        yield* this.section(key)
        this.stats.sectionBytes[key] = (this.stats.sectionBytes[key] ?? 0) + this.offset() - start
        this.setContext()
        this.inside = 'the bundle object'
      } while (await this.objectMore('the bundle object'))
    }
    // Only whitespace may follow; reading to the end also lets gunzip check its CRC.
    for (;;) {
      const b = this.buf
      for (let i = this.pos; i < this.len; i++) if (!isWhitespace(b[i]!)) this.failBundle('trailing data after the bundle object')
      this.pos = this.len
      if (!(await this.fill())) break
    }
    if (this.version === undefined) this.failBundle('schema_version is missing')
    if (!this.hasMetadata) this.failBundle('metadata is missing')
    for (const [target, deferred] of this.deferred) this.failDangling(target, deferred, 0)
  }

  private async *section(key: string): AsyncGenerator<BundleItem[], void, undefined> {
    const isRows = Object.hasOwn(ROW_SCHEMAS, key)
    const known = isRows || key === 'schema_version' || key === 'metadata' || key === 'images' || key === 'bodies' || key === 'embeddings'
    if (!known) {
      await this.skipValue(1)
      return
    }
    if (this.seen.has(key)) {
      this.setContext(key)
      this.fail('the section appears twice')
    }
    this.seen.add(key)
    if (key === 'schema_version') {
      yield [{ type: 'schema_version', version: await this.schemaVersion() }]
      return
    }
    if (key === 'metadata') {
      yield [{ type: 'metadata', metadata: await this.metadata() }]
      return
    }
    if (this.version === undefined) this.failBundle(`schema_version is missing (it must come before ${key})`)
    if (isRows) yield* this.rows(key as RowSection)
    else if (key === 'embeddings') yield* this.embeddings()
    else yield* this.media(key as MediaSection)
  }

  private async schemaVersion(): Promise<1 | 2> {
    this.setContext()
    const value = await this.readValue(1, this.limits.maxRowBytes)
    if (!Number.isSafeInteger(value)) this.failBundle(`schema_version must be an integer, not ${JSON.stringify(value)}`)
    const version = value as number
    if (!(SUPPORTED_SCHEMA_VERSIONS as readonly number[]).includes(version)) {
      this.failBundle(`schema_version ${version} is not supported (this reader reads versions ${SUPPORTED_SCHEMA_VERSIONS.join(' and ')})`)
    }
    this.version = version as 1 | 2
    return this.version
  }

  private async metadata(): Promise<Metadata> {
    this.setContext('metadata')
    const value = await this.readValue(1, this.limits.maxRowBytes)
    if (value === null || typeof value !== 'object' || Array.isArray(value)) this.fail('expected an object')
    const problem = METADATA_CODEC.validate(value as Record<string, unknown>, 0, () => undefined)
    if (problem) this.fail(problem)
    this.hasMetadata = true
    return value as Metadata
  }

  /** `null` (consumed: true) or the next byte must be `open`. */
  private async nullOr(open: number, what: string): Promise<boolean> {
    const c = await this.next()
    if (c === open) return false
    if (c === 0x6e && (await this.readValue(1, 16)) === null) return true
    this.fail(`expected ${what} or null`)
  }

  // --- references

  private readonly check: ReferenceCheck = (target, index, field) => {
    if (target === this.current) {
      return index < this.currentPosition ? undefined : `${field} ${index} does not refer to an earlier row (parent must precede)`
    }
    const count = this.counts.get(target)
    if (count !== undefined) return index < count ? undefined : dangling(field, index, target, count)
    const deferred = this.deferred.get(target)
    if (deferred === undefined || index > deferred.index) this.deferred.set(target, { index, field, section: this.currentLabel, position: this.currentPosition })
    return undefined
  }

  /**
   * For Go's omitted zeros (schema.ts, x-zero-omitted): row 0 of the current section exists for
   * every row after it; of a section read, if it had rows; of one still to come (version 1's
   * source_images), it may, and the importer links nothing where it turns out not to.
   */
  private readonly zeroExists: ZeroExists = (target) => {
    if (target === this.current) return this.currentPosition > 0
    return (this.counts.get(target) ?? 1) > 0
  }

  private sectionEnded(section: string, count: number): void {
    this.counts.set(section, count)
    const deferred = this.deferred.get(section)
    if (deferred !== undefined) {
      this.deferred.delete(section)
      if (deferred.index >= count) this.failDangling(section, deferred, count)
    }
  }

  private failDangling(target: string, deferred: Deferred, count: number): never {
    throw new BundleError(dangling(deferred.field, deferred.index, target, count), { section: deferred.section, position: deferred.position })
  }

  private countRow(): void {
    if (++this.totalRows > this.limits.maxRows) this.fail(`more than ${this.limits.maxRows} rows and vectors in the bundle (limit)`)
  }

  // --- row sections

  private async *rows(section: RowSection): AsyncGenerator<BundleItem[], void, undefined> {
    this.setContext(section)
    if (await this.nullOr(OPEN_BRACKET, 'an array')) {
      this.sectionEnded(section, 0)
      return
    }
    this.pos++
    this.current = section
    this.currentLabel = section
    this.rowState = 0
    this.rowIndex = 0
    this.stats.rows[section] ??= 0
    for (;;) {
      let closed = false
      let scanError: unknown
      try {
        closed = this.scanRows(section)
      } catch (error) {
        scanError = error
      }
      // Rows before a scanning problem come first: problems are reported in file order.
      if (this.batchStarts.length > 0) {
        const { items, error } = this.decodeBatch(section)
        if (items.length > 0) yield items
        if (error) throw error
      }
      if (scanError !== undefined) throw scanError
      if (closed) break
      if (this.rowState === 2) this.pos = this.vStart
      if (!(await this.fill())) this.truncated()
    }
    this.current = undefined
    this.setContext(section)
    this.sectionEnded(section, this.rowIndex)
  }

  /**
   * Finds the complete rows in the buffer (their spans go to the batch). Resumable: rowState
   * 0 = after '[', 1 = after ',', 2 = inside a row, 3 = after a row. True at the closing ']'.
   */
  private scanRows(section: RowSection): boolean {
    const b = this.buf
    const maxRow = this.limits.maxRowBytes
    for (;;) {
      if (this.rowState === 2) {
        if (!this.scan()) {
          if (this.vCur - this.vStart > maxRow) this.fail(`row is larger than ${maxRow} bytes (limit)`)
          return false
        }
        if (this.vEnd - this.vStart > maxRow) this.fail(`row is larger than ${maxRow} bytes (limit)`)
        this.batchStarts.push(this.vStart)
        this.batchEnds.push(this.vEnd)
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
      if (c === OPEN_BRACE || (c === QUOTE && section === 'source_bodies')) {
        this.beginValue(i, 2, this.limits.maxStringBytes)
        this.rowState = 2
        continue
      }
      if (c === CLOSE_BRACKET) this.fail('expected a row after ","')
      this.fail('expected an object')
    }
  }

  /** Parses, validates and wraps the rows of the batch; stops at the first bad row. */
  private decodeBatch(section: RowSection): { items: BundleItem[]; error?: BundleError } {
    const starts = this.batchStarts
    const ends = this.batchEnds
    const n = starts.length
    const first = this.rowIndex - n
    const items: BundleItem[] = []
    let error: BundleError | undefined
    let values: unknown[] | undefined
    try {
      values = JSON.parse(`[${this.decoder.decode(this.buf.subarray(starts[0], ends[n - 1]))}]`) as unknown[]
    } catch {
      // Find the row to name (the ones before it are good).
      values = []
      for (let k = 0; k < n; k++) {
        try {
          values.push(JSON.parse(this.decoder.decode(this.buf.subarray(starts[k], ends[k]))))
        } catch (e) {
          error = new BundleError(`invalid JSON (${(e as Error).message})`, { section, position: first + k })
          break
        }
      }
    }
    starts.length = 0
    ends.length = 0
    const codec = ROW_CODECS[section]
    const fields = ROW_FIELDS[section]
    const check = this.check
    const zeroExists = this.zeroExists
    let k = 0
    for (; k < values.length; k++) {
      const position = first + k
      let row = values[k]
      if (typeof row === 'string') {
        const match = BODY_REF.exec(row)
        if (!match) {
          error = new BundleError(`expected an object or a body ref "body-<source_idx>", found ${JSON.stringify(row)}`, { section, position })
          break
        }
        row = { source_idx: Number(match[1]), body_ref: row }
      }
      this.currentPosition = position
      const problem = codec.validate(row as Record<string, unknown>, position, check, zeroExists)
      if (problem) {
        error = new BundleError(problem, { section, position })
        break
      }
      for (const field in row as Record<string, unknown>) if (!fields.has(field)) delete (row as Record<string, unknown>)[field]
      items.push({ type: 'row', section, position, row } as RowItem)
    }
    this.stats.rows[section] = (this.stats.rows[section] ?? 0) + k
    return error ? { items, error } : { items }
  }

  // --- media

  private async *media(section: MediaSection): AsyncGenerator<BundleItem[], void, undefined> {
    this.setContext(section)
    if ((await this.nullOr(OPEN_BRACE, 'an object')) || (await this.objectOpen(section))) return
    do {
      this.setContext(section)
      const ref = await this.readKey(2)
      this.setContext(section, undefined, ref)
      if (await this.nullOr(OPEN_BRACE, 'an object')) {
        yield [{ type: 'media', section, ref, contentType: '', data: null }]
        continue
      }
      let contentType = ''
      let yielded = false
      if (!(await this.objectOpen(JSON.stringify(ref)))) {
        do {
          const field = await this.readKey(3)
          if (field === 'content_type') {
            const value = await this.readValue(3, this.limits.maxStringBytes)
            if (typeof value !== 'string') this.fail('content_type must be a string')
            if (!yielded) contentType = value
          } else if (field === 'data' && !yielded) {
            yielded = true
            if ((await this.next()) !== QUOTE) {
              if ((await this.readValue(3, 16)) !== null) this.fail('data must be a base64 string')
              yield [{ type: 'media', section, ref, contentType, data: null }]
              continue
            }
            this.pos++
            this.startData()
            yield [{ type: 'media', section, ref, contentType, data: this.dataIterable() }]
            await this.finishData()
            this.setContext(section, undefined, ref)
          } else {
            await this.skipValue(3)
          }
        } while (await this.objectMore(JSON.stringify(ref)))
      }
      if (!yielded) yield [{ type: 'media', section, ref, contentType, data: null }]
    } while (await this.objectMore(section))
    this.setContext()
  }

  private startData(): void {
    this.dataActive = true
    this.dataEnded = false
    this.dataAcc = 0
    this.dataCount = 0
    this.dataPad = 0
    this.dataFinal = false
    this.dataStart = this.offset()
    this.dataError = undefined
  }

  private dataIterable(): AsyncIterable<Uint8Array> {
    const id = ++this.dataId
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<Uint8Array>> => {
          if (!this.dataActive || this.dataId !== id) throw new Error('media data can only be read before the next bundle item is requested')
          if (this.dataBusy) throw new Error('media data is already being read')
          this.dataBusy = true
          try {
            const chunk = await this.dataNext(true)
            return chunk ? { value: chunk, done: false } : { value: undefined, done: true }
          } finally {
            this.dataBusy = false
          }
        },
        return: async (): Promise<IteratorResult<Uint8Array>> => ({ value: undefined, done: true }),
      }),
    }
  }

  /** Called when the reader resumes after a media item: skips (and checks) what was not read. */
  private async finishData(): Promise<void> {
    if (this.dataBusy) throw new Error('the next bundle item was requested while media data was still being read')
    try {
      while ((await this.dataNext(false)) !== null) {
        // skipping
      }
    } finally {
      this.dataActive = false
    }
  }

  private badData(problem: string, at: number): never {
    const error = new BundleError(`data is not valid base64 (${problem} at offset ${this.base + at - this.dataStart})`, { section: this.ctxSection, key: this.ctxKey })
    this.dataError = error
    throw error
  }

  /**
   * Decodes the next stretch of the base64 string at the cursor: the bytes (emit), an empty
   * array (skip), or null once the string has ended. The 4-character alignment across chunks
   * is kept in dataAcc/dataCount; consumed input is released from the buffer as it goes.
   */
  private async dataNext(emit: boolean): Promise<Uint8Array | null> {
    if (this.dataError !== undefined) throw this.dataError
    for (;;) {
      if (this.dataEnded) return null
      const b = this.buf
      const end = this.len
      let i = this.pos
      if (i < end) {
        const q = this.view.indexOf(QUOTE, i)
        const stop = q < 0 ? end : q
        const size = (((stop - i) >> 2) + 2) * 3
        let out: Uint8Array
        if (emit) out = new Uint8Array(size)
        else {
          if (this.scratch.length < size) this.scratch = new Uint8Array(size)
          out = this.scratch
        }
        let o = 0
        let acc = this.dataAcc
        let count = this.dataCount
        let needMore = false
        while (i < stop) {
          if (count === 0 && this.dataPad === 0) {
            // The hot loop: whole quartets of alphabet characters.
            while (i + 4 <= stop) {
              const c0 = BASE64[b[i]!]!
              const c1 = BASE64[b[i + 1]!]!
              const c2 = BASE64[b[i + 2]!]!
              const c3 = BASE64[b[i + 3]!]!
              if ((c0 | c1 | c2 | c3) < 0 || c0 > 63 || c1 > 63 || c2 > 63 || c3 > 63) break
              const v = (c0 << 18) | (c1 << 12) | (c2 << 6) | c3
              out[o++] = v >> 16
              out[o++] = (v >> 8) & 255
              out[o++] = v & 255
              i += 4
            }
            if (i >= stop) break
          }
          let ch = b[i]!
          let width = 1
          if (ch === BACKSLASH) {
            // JSON escapes: \/ and \uXXXX stand for characters; \n and \r are ignored, as by
            // Go's base64 decoder. An escape cut by the end of the buffer waits for more bytes.
            const e = i + 1 < stop ? b[i + 1]! : -1
            width = e === 0x75 ? 6 : 2
            if (i + width > stop) {
              if (q >= 0) this.badData('incomplete escape', i)
              needMore = true
              break
            }
            if (e === 0x2f) ch = 0x2f
            else if (e === 0x6e || e === 0x72) ch = 0x0a
            else if (e === 0x75) {
              const code = parseInt(String.fromCharCode(b[i + 2]!, b[i + 3]!, b[i + 4]!, b[i + 5]!), 16)
              if (!(code >= 0 && code < 0x80)) this.badData('unexpected escaped character', i)
              ch = code === 0x0d ? 0x0a : code
            } else this.badData(`unexpected escape \\${String.fromCharCode(e)}`, i)
            if (ch === 0x0a) {
              i += width
              continue
            }
          }
          const v = BASE64[ch]!
          if (v < 0) this.badData(`unexpected character ${describeByte(ch)}`, i)
          if (this.dataFinal) this.badData('data after the padding', i)
          if (v === 64) {
            if (count < 2) this.badData('misplaced padding', i)
            if (++this.dataPad + count === 4) {
              // 2 characters carry 1 byte, 3 carry 2.
              if (count === 2) out[o++] = (acc >> 4) & 255
              else {
                out[o++] = (acc >> 10) & 255
                out[o++] = (acc >> 2) & 255
              }
              this.dataFinal = true
            }
          } else {
            if (this.dataPad > 0) this.badData('data after the padding', i)
            acc = (acc << 6) | v
            if (++count === 4) {
              out[o++] = (acc >> 16) & 255
              out[o++] = (acc >> 8) & 255
              out[o++] = acc & 255
              acc = count = 0
            }
          }
          i += width
        }
        if (this.dataFinal) count = 0
        this.dataAcc = acc
        this.dataCount = count
        this.pos = i
        if (!needMore && q >= 0) {
          if (count !== 0 || (this.dataPad > 0 && !this.dataFinal)) this.badData('the length is not a multiple of 4', i)
          this.pos = q + 1
          this.dataEnded = true
        }
        this.stats.mediaBytes += o
        if (emit && o > 0) return out.subarray(0, o)
        if (this.dataEnded) return null
        if (o > 0) return out.subarray(0, 0)
      }
      if (!(await this.fill())) this.truncated()
    }
  }

  // --- embeddings

  private async *embeddings(): AsyncGenerator<BundleItem[], void, undefined> {
    this.setContext('embeddings')
    if ((await this.nullOr(OPEN_BRACE, 'an object')) || (await this.objectOpen('embeddings'))) return
    let model: string | undefined
    let dimensions: number | undefined
    let announced = false
    do {
      this.setContext('embeddings')
      const key = await this.readKey(2)
      if (announced && (key === 'model' || key === 'dimensions')) this.fail(`${key} must come before the vectors`)
      if (key === 'model') {
        const value = await this.readValue(2, this.limits.maxStringBytes)
        if (typeof value !== 'string') this.fail('model must be a string')
        model = value
      } else if (key === 'dimensions') {
        const value = await this.readValue(2, this.limits.maxRowBytes)
        if (!Number.isSafeInteger(value) || (value as number) < 1) this.fail(`dimensions must be a positive integer, not ${JSON.stringify(value)}`)
        dimensions = value as number
      } else if (key === 'fact_vectors' || key === 'concept_vectors') {
        const label = `embeddings.${key}`
        this.setContext(label)
        if ((await this.nullOr(OPEN_BRACE, 'an object')) || (await this.objectOpen(label))) continue
        if (model === undefined || dimensions === undefined) this.fail(`model and dimensions must come before ${key}`)
        if (!announced) {
          announced = true
          yield [{ type: 'embeddings', model, dimensions }]
        }
        yield* this.vectors(label, VECTOR_MAPS[key], dimensions)
      } else {
        await this.skipValue(2)
      }
      this.setContext('embeddings')
    } while (await this.objectMore('embeddings'))
    if (!announced && model !== undefined && dimensions !== undefined) yield [{ type: 'embeddings', model, dimensions }]
  }

  /**
   * The members of a vector map, after its '{' (the map is not empty). Like rows, the complete
   * members in the buffer are found by scanVectors and parsed with one JSON.parse; a member in
   * another form than `"<index>": [<no strings>]` (or one that spans more than a chunk, or
   * whose value JSON.parse rejects) is read on its own by readVector, the same checks in the
   * same order, so both ways give the same items and the same errors.
   */
  private async *vectors(label: string, target: 'facts' | 'concepts', dimensions: number): AsyncGenerator<BundleItem[], void, undefined> {
    this.current = undefined
    this.currentLabel = label
    // The arrays are at depth 4 and a batch holds nothing deeper than a `{}` inside one (depth
    // 5): from a limit of 5 a batch cannot miss a depth error. Under it every member is read on
    // its own, which reports the depth.
    const batched = this.limits.maxDepth >= 5
    let refilled = false
    for (;;) {
      if (batched) {
        const found = this.scanVectors()
        if (this.vecKeys.length > 0) {
          refilled = false
          const { items, error, alone } = this.decodeVectors(label, target, dimensions)
          if (alone !== undefined) this.pos = alone
          if (items.length > 0) yield items
          if (error) throw error
          if (alone === undefined) {
            if (found === VECTORS_CLOSED) break
            continue
          }
        } else if (found === VECTORS_MORE && (this.pos === this.len || !refilled)) {
          // One more chunk for a member cut by the end of the buffer; a member still not
          // complete then is longer than a chunk: it is read on its own (never re-scanned).
          if (this.pos < this.len) refilled = true
          if (await this.fill()) continue
        }
      }
      refilled = false
      yield* this.readVector(label, target, dimensions)
      if (!(await this.objectMore(label))) break
    }
    this.setContext('embeddings')
  }

  /** One member of a vector map, on its own (the cursor is before its key). */
  private async *readVector(label: string, target: 'facts' | 'concepts', dimensions: number): AsyncGenerator<BundleItem[], void, undefined> {
    this.setContext(label)
    const key = await this.readKey(3)
    if (!INDEX_KEY.test(key) || !Number.isSafeInteger(Number(key))) this.fail(`key ${JSON.stringify(key)} is not a row index`)
    const index = Number(key)
    this.setContext(label, index)
    this.countRow()
    if ((await this.next()) !== OPEN_BRACKET) this.fail('expected an array of numbers')
    const vector = await this.readValue(3, this.limits.maxRowBytes)
    if (!Array.isArray(vector)) this.fail('expected an array of numbers')
    this.checkVector(target, index, vector, dimensions)
    this.stats.vectors++
    yield [{ type: 'vector', target, index, vector: vector as number[] }]
  }

  /** The checks of a parsed vector after its key (the context names it). */
  private checkVector(target: 'facts' | 'concepts', index: number, vector: unknown[], dimensions: number): void {
    if (vector.length !== dimensions) this.fail(`vector has ${plural(vector.length, 'number', 'numbers')}, expected ${dimensions}`)
    for (let k = 0; k < vector.length; k++) {
      const x: unknown = vector[k]
      if (typeof x !== 'number' || !Number.isFinite(x)) this.fail(`vector[${k}] is not a finite number`)
    }
    this.currentPosition = index
    const problem = this.check(target, index, 'key')
    if (problem) this.fail(problem)
  }

  /**
   * Finds the complete members of a vector map in the buffer, from pos, in the form producers
   * write: a key of decimal digits without escapes (an index: no leading zero, up to 15 digits,
   * within the string limits), a colon, and an array holding no '"' whose first ']' ends it
   * (within the row limit), then ',' or '}'. Their keys and spans go to the batch and pos moves
   * past each one's ',' (or '}'). Never fails: it stops before the first member that is cut
   * by the end of the buffer (VECTORS_MORE) or in any other form, valid or not (VECTORS_OTHER),
   * which readVector then reads. VECTORS_CLOSED: the map's '}' was reached (and consumed).
   *
   * Why a first ']' is enough: with no '"' in the arrays (and the keys blanked), the batch text
   * has no strings, and each span holds exactly one ']'. If JSON.parse accepts the batch, its
   * brackets balance, so each span holds exactly one '[' too: a flat array, the value the
   * member-by-member scan would have found. A nested array (`[[1],2]`) cut at its first ']'
   * fails to parse, and that member is read on its own.
   */
  private scanVectors(): number {
    const b = this.buf
    const view = this.view
    const end = this.len
    const maxDigits = Math.min(15, this.limits.maxStringBytes - 2)
    const maxValue = this.limits.maxRowBytes
    // The first '"' at or after the array being scanned: the next key's, normally.
    let quote = -1
    let i = this.pos
    for (;;) {
      while (i < end && isWhitespace(b[i]!)) i++
      if (i >= end) {
        this.pos = i
        return VECTORS_MORE
      }
      if (b[i] !== QUOTE) return VECTORS_OTHER
      const member = i
      const digits = ++i
      let index = 0
      let c = 0
      while (i < end && (c = b[i]!) >= 0x30 && c <= 0x39) {
        index = index * 10 + (c - 0x30)
        i++
      }
      if (i >= end) return VECTORS_MORE
      const n = i - digits
      if (c !== QUOTE || n === 0 || n > maxDigits || (n > 1 && b[digits] === 0x30)) return VECTORS_OTHER
      i++
      while (i < end && isWhitespace(b[i]!)) i++
      if (i >= end) return VECTORS_MORE
      if (b[i] !== COLON) return VECTORS_OTHER
      i++
      while (i < end && isWhitespace(b[i]!)) i++
      if (i >= end) return VECTORS_MORE
      if (b[i] !== OPEN_BRACKET) return VECTORS_OTHER
      const start = i
      const close = view.indexOf(CLOSE_BRACKET, start + 1)
      if (close < 0) return VECTORS_MORE
      if (close + 1 - start > maxValue) return VECTORS_OTHER
      if (quote < start) {
        quote = view.indexOf(QUOTE, start + 1)
        if (quote < 0) quote = end
      }
      if (quote < close) return VECTORS_OTHER
      i = close + 1
      while (i < end && isWhitespace(b[i]!)) i++
      if (i >= end) return VECTORS_MORE
      c = b[i]!
      if (c !== COMMA && c !== CLOSE_BRACE) return VECTORS_OTHER
      this.vecKeys.push(index)
      this.vecMembers.push(member)
      this.vecStarts.push(start)
      this.vecEnds.push(close + 1)
      this.pos = ++i
      if (c === CLOSE_BRACE) return VECTORS_CLOSED
    }
  }

  /**
   * Parses the batch's arrays in one call (the text from the first '[' to the last ']', keys
   * and colons blanked, inside `[...]`), then checks and wraps each member in file order, as
   * readVector does; stops at the first bad one. If the batch does not parse, the arrays are
   * parsed one by one: the members before the first one rejected are decoded, and that one
   * (alone: where it starts) is left to readVector, which reads it as it always did.
   */
  private decodeVectors(label: string, target: 'facts' | 'concepts', dimensions: number): { items: BundleItem[]; error?: BundleError; alone?: number } {
    const keys = this.vecKeys
    const members = this.vecMembers
    const starts = this.vecStarts
    const ends = this.vecEnds
    const n = keys.length
    const b = this.buf
    const from = starts[0]! - 1 // scratch[k] = b[from + k]
    const size = ends[n - 1]! + 1 - from
    if (this.scratch.length < size) this.scratch = new Uint8Array(Math.max(size, this.scratch.length * 2))
    const text = this.scratch
    text.set(b.subarray(from + 1, from + size - 1), 1)
    text[0] = OPEN_BRACKET
    text[size - 1] = CLOSE_BRACKET
    for (let k = 1; k < n; k++) text.fill(0x20, members[k]! - from, starts[k]! - from)
    let values: unknown[] | undefined
    try {
      values = JSON.parse(this.decoder.decode(text.subarray(0, size))) as unknown[]
    } catch {
      // below
    }
    let alone: number | undefined
    if (values === undefined || values.length !== n) {
      values = []
      for (let k = 0; k < n; k++) {
        try {
          values.push(JSON.parse(this.decoder.decode(b.subarray(starts[k], ends[k]))))
        } catch {
          alone = members[k]
          break
        }
      }
    }
    const items: BundleItem[] = []
    let error: BundleError | undefined
    let k = 0
    try {
      for (; k < values.length; k++) {
        const index = keys[k]!
        this.setContext(label, index)
        this.countRow()
        const vector = values[k]
        if (!Array.isArray(vector)) this.fail('expected an array of numbers')
        this.checkVector(target, index, vector, dimensions)
        items.push({ type: 'vector', target, index, vector: vector as number[] })
      }
    } catch (e) {
      if (!(e instanceof BundleError)) throw e
      error = e
    }
    this.stats.vectors += k
    keys.length = members.length = starts.length = ends.length = 0
    if (error) return { items, error }
    return alone === undefined ? { items } : { items, alone }
  }
}
function dangling(field: string, index: number, target: string, count: number): string {
  return `${field} ${index} refers to a row that does not exist (${target} has ${plural(count, 'row', 'rows')})`
}
