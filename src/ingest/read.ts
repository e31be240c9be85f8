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
  type FormatRead,
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
  let read: FormatRead
  if (detected.kind === 'pdf') read = await readPdf(bytes, limits, deadline)
  else {
    const decoded = decodeText(bytes, detected.kind, input.contentType)
    warnings.push(...decoded.warnings)
    if (detected.kind === 'web') read = readHtml(decoded.text, input.url, limits.maxImages)
    else {
      const text = detected.kind === 'markdown' ? readMarkdown(decoded.text) : readPlainText(decoded.text)
      read = { ...text, publishedAt: null, images: [], imagesDropped: 0, warnings: [] }
    }
  }
  const { imagesDropped, warnings: readWarnings, ...document } = read
  warnings.push(...readWarnings, ...droppedImages(imagesDropped, limits.maxImages))
  if (Date.now() > deadline)
    throw new DocumentRefused('timeout', `reading the document took longer than ${limits.timeMs} ms`)
  return {
    kind: detected.kind,
    ...document,
    title: boundTitle(document.title),
    chunks: chunkMarkdown(document.markdown, { pages: detected.kind === 'pdf' }),
    warnings,
  }
}
