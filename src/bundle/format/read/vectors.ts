// The reader's vector stage: the `embeddings` section, its model and dimensions, then each
// vector map's members. The complete `"<index>": [...]` members in the scanner's buffer are
// parsed with one JSON.parse for all of them; a member in any other form is read on its own,
// with the same checks in the same order, so both ways give the same items and errors.
import { BundleError, plural } from './errors.ts'
import type { BundleItem, ReaderStats } from './items.ts'
import type { References } from './references.ts'
import {
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

const VECTOR_MAPS = { fact_vectors: 'facts', concept_vectors: 'concepts' } as const
const INDEX_KEY = /^(0|[1-9][0-9]*)$/
/** What scanVectors stopped at. */
const VECTORS_CLOSED = 0
const VECTORS_MORE = 1
const VECTORS_OTHER = 2

export class VectorDecoder {
  // The vector map being scanned: per member, its key, where it starts (its key's '"') and
  // its array's span.
  private readonly vecKeys: number[] = []
  private readonly vecMembers: number[] = []
  private readonly vecStarts: number[] = []
  private readonly vecEnds: number[] = []
  /** The text of a vector batch. */
  private scratch = new Uint8Array(0)

  constructor(
    private readonly s: JsonCursor,
    private readonly refs: References,
    private readonly stats: ReaderStats,
  ) {}

  async *section(): AsyncGenerator<BundleItem[], void, undefined> {
    this.s.setContext('embeddings')
    if ((await this.s.nullOr(OPEN_BRACE, 'an object')) || (await this.s.objectOpen('embeddings'))) return
    let model: string | undefined
    let dimensions: number | undefined
    let announced = false
    do {
      this.s.setContext('embeddings')
      const key = await this.s.readKey(2)
      if (announced && (key === 'model' || key === 'dimensions')) this.s.fail(`${key} must come before the vectors`)
      if (key === 'model') {
        const value = await this.s.readValue(2, this.s.limits.maxStringBytes)
        if (typeof value !== 'string') this.s.fail('model must be a string')
        model = value
      } else if (key === 'dimensions') {
        const value = await this.s.readValue(2, this.s.limits.maxRowBytes)
        if (!Number.isSafeInteger(value) || (value as number) < 1)
          this.s.fail(`dimensions must be a positive integer, not ${JSON.stringify(value)}`)
        dimensions = value as number
      } else if (key === 'fact_vectors' || key === 'concept_vectors') {
        const label = `embeddings.${key}`
        this.s.setContext(label)
        if ((await this.s.nullOr(OPEN_BRACE, 'an object')) || (await this.s.objectOpen(label))) continue
        if (model === undefined || dimensions === undefined) this.s.fail(`model and dimensions must come before ${key}`)
        if (!announced) {
          announced = true
          yield [{ type: 'embeddings', model, dimensions }]
        }
        yield* this.vectors(label, VECTOR_MAPS[key], dimensions)
      } else {
        await this.s.skipValue(2)
      }
      this.s.setContext('embeddings')
    } while (await this.s.objectMore('embeddings'))
    if (!announced && model !== undefined && dimensions !== undefined) yield [{ type: 'embeddings', model, dimensions }]
  }

  /**
   * The members of a vector map, after its '{' (the map is not empty). Like rows, the complete
   * members in the buffer are found by scanVectors and parsed with one JSON.parse; a member in
   * another form than `"<index>": [<no strings>]` (or one that spans more than a chunk, or
   * whose value JSON.parse rejects) is read on its own by readVector, the same checks in the
   * same order, so both ways give the same items and the same errors.
   */
  private async *vectors(
    label: string,
    target: 'facts' | 'concepts',
    dimensions: number,
  ): AsyncGenerator<BundleItem[], void, undefined> {
    this.refs.current = undefined
    this.refs.currentLabel = label
    // The arrays are at depth 4 and a batch holds nothing deeper than a `{}` inside one (depth
    // 5): from a limit of 5 a batch cannot miss a depth error. Under it every member is read on
    // its own, which reports the depth.
    const batched = this.s.limits.maxDepth >= 5
    let refilled = false
    for (;;) {
      if (batched) {
        const found = this.scanVectors()
        if (this.vecKeys.length > 0) {
          refilled = false
          const { items, error, alone } = this.decodeVectors(label, target, dimensions)
          if (alone !== undefined) this.s.seek(alone)
          if (items.length > 0) yield items
          if (error) throw error
          if (alone === undefined) {
            if (found === VECTORS_CLOSED) break
            continue
          }
        } else if (found === VECTORS_MORE && (this.s.pos === this.s.len || !refilled)) {
          // One more chunk for a member cut by the end of the buffer; a member still not
          // complete then is longer than a chunk: it is read on its own (never re-scanned).
          if (this.s.pos < this.s.len) refilled = true
          if (await this.s.fill()) continue
        }
      }
      refilled = false
      yield* this.readVector(label, target, dimensions)
      if (!(await this.s.objectMore(label))) break
    }
    this.s.setContext('embeddings')
  }

  /** One member of a vector map, on its own (the cursor is before its key). */
  private async *readVector(
    label: string,
    target: 'facts' | 'concepts',
    dimensions: number,
  ): AsyncGenerator<BundleItem[], void, undefined> {
    this.s.setContext(label)
    const key = await this.s.readKey(3)
    if (!INDEX_KEY.test(key) || !Number.isSafeInteger(Number(key)))
      this.s.fail(`key ${JSON.stringify(key)} is not a row index`)
    const index = Number(key)
    this.s.setContext(label, index)
    this.s.countRow()
    if ((await this.s.next()) !== OPEN_BRACKET) this.s.fail('expected an array of numbers')
    const vector = await this.s.readValue(3, this.s.limits.maxRowBytes)
    if (!Array.isArray(vector)) this.s.fail('expected an array of numbers')
    this.checkVector(target, index, vector, dimensions)
    this.stats.vectors++
    yield [{ type: 'vector', target, index, vector: vector as number[] }]
  }

  /** The checks of a parsed vector after its key (the context names it). */
  private checkVector(target: 'facts' | 'concepts', index: number, vector: unknown[], dimensions: number): void {
    if (vector.length !== dimensions)
      this.s.fail(`vector has ${plural(vector.length, 'number', 'numbers')}, expected ${dimensions}`)
    for (let k = 0; k < vector.length; k++) {
      const x: unknown = vector[k]
      if (typeof x !== 'number' || !Number.isFinite(x)) this.s.fail(`vector[${k}] is not a finite number`)
    }
    this.refs.currentPosition = index
    const problem = this.refs.check(target, index, 'key')
    if (problem) this.s.fail(problem)
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
    const b = this.s.buf
    const view = this.s.view
    const end = this.s.len
    const maxDigits = Math.min(15, this.s.limits.maxStringBytes - 2)
    const maxValue = this.s.limits.maxRowBytes
    // The first '"' at or after the array being scanned: the next key's, normally.
    let quote = -1
    let i = this.s.pos
    for (;;) {
      while (i < end && isWhitespace(b[i]!)) i++
      if (i >= end) {
        this.s.seek(i)
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
      this.s.seek(++i)
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
  private decodeVectors(
    label: string,
    target: 'facts' | 'concepts',
    dimensions: number,
  ): { items: BundleItem[]; error?: BundleError; alone?: number } {
    const keys = this.vecKeys
    const members = this.vecMembers
    const starts = this.vecStarts
    const ends = this.vecEnds
    const n = keys.length
    const b = this.s.buf
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
      values = JSON.parse(this.s.decode(text.subarray(0, size))) as unknown[]
    } catch {
      // below
    }
    let alone: number | undefined
    if (values === undefined || values.length !== n) {
      values = []
      for (let k = 0; k < n; k++) {
        try {
          values.push(JSON.parse(this.s.decode(b.subarray(starts[k], ends[k]))))
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
        this.s.setContext(label, index)
        this.s.countRow()
        const vector = values[k]
        if (!Array.isArray(vector)) this.s.fail('expected an array of numbers')
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
