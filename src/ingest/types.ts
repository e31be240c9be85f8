// What reading a document produces, what bounds it, and how it says no. The ingest job stores
// the result as a source (its parsed_* fields, published_at, source_images) and its chunks.

export type DocumentKind = 'web' | 'pdf' | 'text' | 'markdown'

/** Bounds on one read. The defaults are here and nowhere else; a caller overrides any of them. */
export interface ReadLimits {
  /** The largest document read, in bytes. */
  maxBytes: number
  /** A PDF with more pages is refused. */
  maxPages: number
  /** Images kept beyond this count are dropped (with a warning). */
  maxImages: number
  /** An embedded image larger than this once encoded, in bytes, is dropped (with a warning). */
  maxImageBytes: number
  /** A PDF's image with more pixels is not decoded (pdf.js skips it): a small JPEG can name a huge one. */
  maxImagePixels: number
  /** A compressed stream inside a PDF that inflates past this many bytes refuses the document. */
  maxStreamBytes: number
  /** Milliseconds; checked between a PDF's pages and between the stages of a read. */
  timeMs: number
}

export const DEFAULT_READ_LIMITS: Readonly<ReadLimits> = Object.freeze({
  maxBytes: 100 * 1024 * 1024,
  maxPages: 5000,
  maxImages: 50,
  maxImageBytes: 5 * 1024 * 1024,
  maxImagePixels: 25_000_000,
  maxStreamBytes: 64 * 1024 * 1024,
  timeMs: 120_000,
})

/** An image of the document: a web page's names a URL, a PDF's carries its bytes (PNG). */
export interface DocumentImage {
  /** Order in the document, from 0. */
  position: number
  /** A PDF's page, from 1. */
  pageNumber?: number
  url?: string
  altText?: string
  width?: number
  height?: number
  contentType?: string
  data?: Uint8Array
}

type WarningCode =
  | 'no_text_layer'
  | 'images_dropped'
  | 'charset_fallback'
  | 'declared_type_mismatch'
  | 'no_article'
  | 'empty_page'

export interface ReadWarning {
  code: WarningCode
  message: string
}

export interface Chunk {
  /** Position among the document's chunks, from 0: what a fact cites as chunk_index. */
  index: number
  /** The chunk's Markdown, a slice of the document's at block boundaries. */
  text: string
  /** The headings the chunk sits under, outermost first. */
  headingPath: string[]
  /** For a PDF, the pages the chunk's text comes from (inclusive). */
  pageStart?: number
  pageEnd?: number
}

export interface ParsedDocument {
  kind: DocumentKind
  title: string
  text: string
  markdown: string
  /** `YYYY-MM-DD` as the document states it, or null when it does not. */
  publishedAt: string | null
  images: DocumentImage[]
  /** A PDF's page count. */
  pages?: number
  chunks: Chunk[]
  warnings: ReadWarning[]
}

/** What the reader of one format makes of a document, before it is chunked: with how many images it left out. */
export interface FormatRead extends Omit<ParsedDocument, 'kind' | 'chunks'> {
  imagesDropped: number
}

export type RefusalCode =
  | 'empty'
  | 'too_large'
  | 'unsupported'
  | 'encrypted'
  | 'broken'
  | 'bomb'
  | 'too_many_pages'
  | 'timeout'
  | 'too_much_memory'
  | 'crashed'

/** A document kgs will not read, with a reason meant for the person who added it. */
export class DocumentRefused extends Error {
  override readonly name = 'DocumentRefused'
  constructor(
    readonly code: RefusalCode,
    message: string,
  ) {
    super(message)
  }
}
