// Which parser reads a document: the declared content type proposes, the bytes decide. A PDF is
// recognised by its signature, HTML by the WHATWG MIME sniffing patterns, binary data by the
// WHATWG binary-data bytes; a document whose bytes contradict its type is read as what the bytes
// are, or refused, never handed to the wrong parser. Text is decoded from the charset its BOM, its
// Content-Type, or (HTML) its <meta> states, else UTF-8, else windows-1252.
import { type DocumentKind, DocumentRefused, type ReadWarning } from './types.ts'

export interface DetectInput {
  bytes: Uint8Array
  contentType?: string
  fileName?: string
}

export interface Detected {
  kind: DocumentKind
  warnings: ReadWarning[]
}

/** The resource header of WHATWG MIME sniffing: the bytes the patterns look at. */
const SNIFF_BYTES = 1445
/** PDF readers accept the signature anywhere in the first kilobyte (junk before it happens). */
const PDF_SIGNATURE_WINDOW = 1024

const HTML_TAGS = [
  '!DOCTYPE HTML',
  'HTML',
  'HEAD',
  'SCRIPT',
  'IFRAME',
  'H1',
  'DIV',
  'FONT',
  'TABLE',
  'A',
  'STYLE',
  'TITLE',
  'B',
  'BODY',
  'BR',
  'P',
]

const MARKDOWN_TYPES = new Set(['text/markdown', 'text/x-markdown'])
const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml'])
const PDF_TYPES = new Set(['application/pdf', 'application/x-pdf'])
/** Types that say nothing about the bytes: the bytes and the file name decide. */
const UNKNOWN_TYPES = new Set([
  '',
  'application/octet-stream',
  'binary/octet-stream',
  'application/unknown',
  'unknown/unknown',
])

function parseContentType(contentType: string | undefined): { essence: string; charset?: string } {
  const [essence = '', ...params] = (contentType ?? '').split(';')
  let charset: string | undefined
  for (const param of params) {
    const match = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(param)
    if (match) charset = match[1]
  }
  return { essence: essence.trim().toLowerCase(), charset }
}

function isPdf(bytes: Uint8Array): boolean {
  const window = bytes.subarray(0, PDF_SIGNATURE_WINDOW)
  for (let i = window.indexOf(0x25); i >= 0 && i + 5 <= window.length; i = window.indexOf(0x25, i + 1)) {
    if (window[i + 1] === 0x50 && window[i + 2] === 0x44 && window[i + 3] === 0x46 && window[i + 4] === 0x2d)
      return true
  }
  return false
}

type Bom = { encoding: 'utf-8' | 'utf-16le' | 'utf-16be'; length: number }

function bomOf(bytes: Uint8Array): Bom | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { encoding: 'utf-8', length: 3 }
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { encoding: 'utf-16be', length: 2 }
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { encoding: 'utf-16le', length: 2 }
  return undefined
}

/** WHATWG "binary data byte": control characters no text contains. UTF-16 text is exempt by its BOM. */
function looksBinary(bytes: Uint8Array): boolean {
  const bom = bomOf(bytes)
  if (bom && bom.encoding !== 'utf-8') return false
  const header = bytes.subarray(0, SNIFF_BYTES)
  for (const byte of header) {
    if (byte <= 0x08 || byte === 0x0b || (byte >= 0x0e && byte <= 0x1a) || (byte >= 0x1c && byte <= 0x1f)) return true
  }
  return false
}

/** WHATWG "rules for identifying an unknown MIME type", the text/html patterns. */
export function sniffsAsHtml(bytes: Uint8Array): boolean {
  const bom = bomOf(bytes)
  // The patterns are ASCII; UTF-16 text is decoded first so that its HTML is recognised too.
  const head =
    bom && bom.encoding !== 'utf-8'
      ? new TextEncoder().encode(new TextDecoder(bom.encoding).decode(bytes.subarray(0, SNIFF_BYTES * 2)))
      : bytes.subarray(bom?.length ?? 0, SNIFF_BYTES)
  let i = 0
  while (
    i < head.length &&
    (head[i] === 0x09 || head[i] === 0x0a || head[i] === 0x0c || head[i] === 0x0d || head[i] === 0x20)
  )
    i++
  if (head[i] !== 0x3c) return false
  const rest = String.fromCharCode(...head.subarray(i + 1, i + 16)).toUpperCase()
  if (rest.startsWith('!--')) return true
  return HTML_TAGS.some(
    (tag) => rest.startsWith(tag) && (rest.charCodeAt(tag.length) === 0x20 || rest.charCodeAt(tag.length) === 0x3e),
  )
}

function extension(fileName: string | undefined): string {
  const match = /\.([a-z0-9]+)$/i.exec(fileName ?? '')
  return match ? match[1]!.toLowerCase() : ''
}

/** A document declared as something else whose bytes are HTML. */
const readAsHtml = (declared: string): Detected => ({
  kind: 'web',
  warnings: [
    { code: 'declared_type_mismatch', message: `the document was ${declared} but its bytes are HTML: read as HTML` },
  ],
})

export function detectKind({ bytes, contentType, fileName }: DetectInput): Detected {
  const { essence } = parseContentType(contentType)
  const ext = extension(fileName)
  const declaredPdf = PDF_TYPES.has(essence) || (UNKNOWN_TYPES.has(essence) && ext === 'pdf')
  const declared = contentType ? `declared ${essence}` : fileName ? `named ${fileName}` : 'given no type'
  if (isPdf(bytes)) {
    const warnings: ReadWarning[] =
      declaredPdf || UNKNOWN_TYPES.has(essence)
        ? []
        : [
            {
              code: 'declared_type_mismatch',
              message: `the document was ${declared} but its bytes are a PDF: read as a PDF`,
            },
          ]
    return { kind: 'pdf', warnings }
  }
  const html = sniffsAsHtml(bytes)
  if (declaredPdf) {
    if (html) return readAsHtml(declared)
    throw new DocumentRefused('unsupported', `the document was ${declared} but its bytes are not a PDF`)
  }
  if (looksBinary(bytes))
    throw new DocumentRefused(
      'unsupported',
      `the document (${declared}) is binary data of no kind kgs reads (PDF, HTML, Markdown, text)`,
    )
  if (HTML_TYPES.has(essence)) return { kind: 'web', warnings: [] }
  if (
    MARKDOWN_TYPES.has(essence) ||
    ((UNKNOWN_TYPES.has(essence) || essence === 'text/plain') && (ext === 'md' || ext === 'markdown'))
  )
    return { kind: 'markdown', warnings: [] }
  if (UNKNOWN_TYPES.has(essence))
    return { kind: html || ext === 'html' || ext === 'htm' ? 'web' : 'text', warnings: [] }
  if (essence.startsWith('text/') || essence === 'application/json' || essence.endsWith('+json'))
    return { kind: 'text', warnings: [] }
  if (html) return readAsHtml(declared)
  throw new DocumentRefused(
    'unsupported',
    `the content type ${essence} is not one kgs reads (PDF, HTML, Markdown, text)`,
  )
}

/** The charset an HTML document's <meta> declares in its first kilobyte (the WHATWG prescan's window). */
function metaCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('windows-1252').decode(bytes.subarray(0, 1024))
  const match = /<meta\s[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)
  return match?.[1]
}

function decoderFor(label: string | undefined): TextDecoder | undefined {
  if (!label) return undefined
  try {
    return new TextDecoder(label.trim() as ConstructorParameters<typeof TextDecoder>[0])
  } catch {
    return undefined
  }
}

export interface Decoded {
  text: string
  charset: string
  warnings: ReadWarning[]
}

export function decodeText(bytes: Uint8Array, kind: DocumentKind, contentType?: string): Decoded {
  const bom = bomOf(bytes)
  if (bom)
    return {
      text: new TextDecoder(bom.encoding).decode(bytes.subarray(bom.length)),
      charset: bom.encoding,
      warnings: [],
    }
  const warnings: ReadWarning[] = []
  const declared = parseContentType(contentType).charset ?? (kind === 'web' ? metaCharset(bytes) : undefined)
  let decoder = decoderFor(declared)
  // An HTML page that declares UTF-16 without a BOM is read as UTF-8 (WHATWG), as a browser does.
  if (decoder && kind === 'web' && decoder.encoding.startsWith('utf-16')) decoder = new TextDecoder('utf-8')
  if (declared && !decoder)
    warnings.push({
      code: 'charset_fallback',
      message: `the charset ${declared} is unknown: decoded as UTF-8, or windows-1252 where that fails`,
    })
  if (decoder && decoder.encoding !== 'utf-8')
    return { text: decoder.decode(bytes), charset: decoder.encoding, warnings }
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), charset: 'utf-8', warnings }
  } catch {
    if (decoder)
      warnings.push({
        code: 'charset_fallback',
        message: 'the document is not valid UTF-8 as declared: decoded as windows-1252',
      })
    return { text: new TextDecoder('windows-1252').decode(bytes), charset: 'windows-1252', warnings }
  }
}
