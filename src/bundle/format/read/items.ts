// What the reader hands out, the limits it enforces and the counts it keeps: shared by its stages.
import type { MediaSection, Metadata, Row, RowSection } from '../schema.ts'

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

export const DEFAULT_READER_LIMITS: ReaderLimits = Object.freeze({
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

export const newReaderStats = (): ReaderStats => ({
  compressedBytes: 0,
  decompressedBytes: 0,
  sectionBytes: {},
  rows: {},
  mediaBytes: 0,
  vectors: 0,
})
