// The streaming graph-bundle reader (docs/spec/bundle.md §1–2): gzip bytes in, checked items out, one at
// a time in file order, in memory bounded by one row (or one media chunk) whatever the size.
//
// Its stages, each in read/: gunzip.ts (streamed node:zlib, the expansion limits enforced as
// bytes arrive) → scanner.ts (walks the JSON by hand over the decompressed chunks and finds the
// byte span of each value without parsing it) → media.ts (streams each media item's base64
// data) → vectors.ts (the embeddings section) → document.ts (the top-level object and the row
// sections: the complete rows of the buffer parsed in one JSON.parse, then the compiled row
// validators). JavaScript parses nothing itself: values are decoded and parsed by the engine.
//
// Decisions worth knowing:
// - schema_version must come before the first row, media or embeddings section (every producer
//   writes it first); a bundle without it fails there, or at the end if it has no sections.
// - metadata is required (at the end at the latest: "bundle: metadata is missing").
// - A reference to a section not read yet is checked when that section ends (references.ts).
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
import { DocumentReader } from './read/document.ts'
import { decompress } from './read/gunzip.ts'
import {
  DEFAULT_READER_LIMITS,
  newReaderStats,
  type BundleItem,
  type ReaderLimits,
  type ReaderStats,
} from './read/items.ts'

export { BundleError, type BundleErrorWhere } from './read/errors.ts'
export type { BundleItem, ReaderLimits, ReaderStats, RowItem } from './read/items.ts'

export function readBundle(source: AsyncIterable<Uint8Array>, limits?: Partial<ReaderLimits>): BundleReader {
  return new BundleReader(source, limits)
}

/** Iterate once; every problem is thrown as a BundleError from the iterator. */
export class BundleReader implements AsyncIterable<BundleItem> {
  readonly stats: ReaderStats = newReaderStats()
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
      if (name === 'maxDepth' && !(Number.isInteger(value) && value <= 100_000))
        throw new RangeError(`reader limit maxDepth must be an integer up to 100000, got ${value}`)
      this.limits[name] = value
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<BundleItem> {
    if (this.started) throw new Error('a BundleReader can be iterated only once')
    this.started = true
    const batches = new DocumentReader(decompress(this.source, this.limits, this.stats), this.limits, this.stats).run()
    // The document reader hands over batches of items (a row batch, or a single item); handing them out
    // one by one here costs less than an async generator step per row. It resumes, and
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
