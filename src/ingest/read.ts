// The one entry the ingest job calls: bytes in (with what the server or the upload said of
// them), a parsed document or a DocumentRefused out. No I/O: fetching and storing are the job's.
import { chunkMarkdown } from './chunks.ts'
import { decodeText, detectKind } from './detect.ts'
import { readHtml } from './html.ts'
import { readPdf } from './pdf.ts'
import { boundTitle, readMarkdown, readPlainText } from './text.ts'
import {
  DEFAULT_READ_LIMITS,
  DocumentRefused,
  type ParsedDocument,
  type ReadLimits,
  type ReadWarning,
} from './types.ts'

export interface DocumentInput {
  bytes: Uint8Array
  /** The Content-Type the server sent or the upload declared. */
  contentType?: string
  /** An upload's file name: its extension is a hint where the type says nothing. */
  fileName?: string
  /** The page's URL: relative links and images resolve against it. */
  url?: string
}

function droppedImages(count: number, limit: number): ReadWarning[] {
  return count > 0
    ? [
        {
          code: 'images_dropped',
          message: `images past the limit (${limit} in all, each at most its byte limit) were left out`,
        },
      ]
    : []
}

export async function readDocument(input: DocumentInput, overrides: Partial<ReadLimits> = {}): Promise<ParsedDocument> {
  const limits: ReadLimits = { ...DEFAULT_READ_LIMITS, ...overrides }
  const deadline = Date.now() + limits.timeMs
  const { bytes } = input
  if (bytes.byteLength === 0) throw new DocumentRefused('empty', 'the document is empty (0 bytes)')
  if (bytes.byteLength > limits.maxBytes)
    throw new DocumentRefused(
      'too_large',
      `the document is ${bytes.byteLength} bytes, more than the limit of ${limits.maxBytes}`,
    )
  const detected = detectKind(input)
  const warnings = [...detected.warnings]
  let document: Omit<ParsedDocument, 'chunks' | 'warnings'>
  if (detected.kind === 'pdf') {
    const pdf = await readPdf(bytes, limits, deadline)
    warnings.push(...pdf.warnings, ...droppedImages(pdf.imagesDropped, limits.maxImages))
    document = {
      kind: 'pdf',
      title: pdf.title,
      text: pdf.text,
      markdown: pdf.markdown,
      publishedAt: pdf.publishedAt,
      images: pdf.images,
      pages: pdf.pages,
    }
  } else {
    const decoded = decodeText(bytes, detected.kind, input.contentType)
    warnings.push(...decoded.warnings)
    if (detected.kind === 'web') {
      const page = readHtml(decoded.text, input.url, limits.maxImages)
      warnings.push(...page.warnings, ...droppedImages(page.imagesDropped, limits.maxImages))
      document = {
        kind: 'web',
        title: page.title,
        text: page.text,
        markdown: page.markdown,
        publishedAt: page.publishedAt,
        images: page.images,
      }
    } else {
      const read = detected.kind === 'markdown' ? readMarkdown(decoded.text) : readPlainText(decoded.text)
      document = { kind: detected.kind, ...read, publishedAt: null, images: [] }
    }
  }
  if (Date.now() > deadline)
    throw new DocumentRefused('timeout', `reading the document took longer than ${limits.timeMs} ms`)
  return {
    ...document,
    title: boundTitle(document.title),
    chunks: chunkMarkdown(document.markdown, { pages: document.kind === 'pdf' }),
    warnings,
  }
}
