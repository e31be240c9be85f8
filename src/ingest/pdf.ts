// A PDF, through unpdf (Mozilla's pdf.js built for servers): the text of each page, the
// document's title and creation date, and its embedded images. pdf.js reads text objects: a
// scanned page is an image with no text layer, and kgs does no OCR, so such a page reads empty.
// pdf.js decodes a stream whole, in memory, so before it opens the file every stream is decoded
// here first, counting and discarding (unless it is too small to matter), and a stream that
// decodes past the limit refuses the file; images are decoded only up to a number of pixels.
import { deflateSync } from 'node:zlib'
import * as zlib from 'node:zlib'
import { extractImages, getDocumentProxy, getMeta } from 'unpdf'
import { runtime } from '../runtime/index.ts'
import { pageMarker } from './chunks.ts'
import { plainTextToMarkdown } from './text.ts'
import { type DocumentImage, DocumentRefused, type FormatRead, type ReadLimits, type ReadWarning } from './types.ts'

/** A PDF's read, with its page count. */
export interface ReadPdf extends FormatRead {
  pages: number
}

const STREAM = Buffer.from('stream')
const END_STREAM = Buffer.from('endstream')

/** Bytes out of `inflations` nested zlib streams, stopping once past `limit`; what is not zlib counts what inflated before it. */
async function inflatedSize(data: Uint8Array, inflations: number, limit: number): Promise<number> {
  let stream = new Blob([new Uint8Array(data)]).stream()
  for (let i = 0; i < inflations; i++) stream = stream.pipeThrough(new DecompressionStream('deflate'))
  const reader = stream.getReader()
  let total = 0
  try {
    while (total <= limit) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.byteLength
    }
  } catch {
    // Not zlib, or bytes after its end: pdf.js reads what inflates, so does the count.
  } finally {
    reader.cancel().catch(() => {})
  }
  return total
}

function isWhite(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00
}

function hexDecode(data: Uint8Array): Uint8Array {
  const digits = Buffer.from(data).toString('latin1').split('>')[0]!.replace(/\s+/g, '')
  return new Uint8Array(Buffer.from(digits.length % 2 ? `${digits}0` : digits, 'hex'))
}

/** ASCII85 (`z` is four zero bytes), stopping once past `limit`. */
function ascii85Decode(data: Uint8Array, limit: number): Uint8Array {
  const out: number[] = []
  let group: number[] = []
  const flush = (digits: number[]) => {
    const padded = [...digits, 84, 84, 84, 84].slice(0, 5)
    const value = padded.reduce((sum, digit) => sum * 85 + digit, 0)
    out.push(...[value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].slice(0, digits.length - 1))
  }
  for (const byte of data) {
    if (out.length > limit || byte === 0x7e) break
    if (isWhite(byte)) continue
    if (byte === 0x7a && group.length === 0) out.push(0, 0, 0, 0)
    else {
      group.push(byte - 33)
      if (group.length === 5) {
        flush(group)
        group = []
      }
    }
  }
  if (group.length > 1) flush(group)
  return Uint8Array.from(out)
}

const FLATE = new Set(['FlateDecode', 'Fl'])

/** Deflate's largest ratio (a 258-byte match in about two bits): a stream smaller than the limit over it cannot inflate past it. */
const MAX_DEFLATE_RATIO = 1032

/** Whether a stream's filters decode it past `limit` bytes. Filters after the Flate ones (images, LZW) are not followed. */
async function decodesPast(raw: Uint8Array, filters: string[], limit: number): Promise<boolean> {
  let data = raw
  let i = 0
  for (; i < filters.length && data.byteLength <= limit; i++) {
    if (filters[i] === 'ASCIIHexDecode' || filters[i] === 'AHx') data = hexDecode(data)
    else if (filters[i] === 'ASCII85Decode' || filters[i] === 'A85') data = ascii85Decode(data, limit)
    else break
  }
  if (data.byteLength > limit) return true
  let inflations = 0
  while (FLATE.has(filters[i + inflations] ?? '')) inflations++
  // A /Filter kgs cannot read here (an indirect one): a zlib header says it is Flate.
  if (filters.length === 0 && (data[0]! & 0x0f) === 8 && (data[0]! * 256 + data[1]!) % 31 === 0) inflations = 1
  // Most streams are too small to pass the limit whatever they hold: they are not inflated at all.
  if (inflations === 0 || data.byteLength * MAX_DEFLATE_RATIO ** inflations <= limit) return false
  return (await inflatedSize(data, inflations, limit)) > limit
}

/** The filters a stream's dictionary names, in the order they decode. */
function filtersOf(dictionary: string): string[] {
  const named = [...dictionary.matchAll(/\/Filter\s*(\[[^\]]*\]|\/[^\s/<>[\]()]+)/g)].at(-1)?.[1] ?? ''
  return [...named.matchAll(/\/([^\s/<>[\]()]+)/g)].map((match) => match[1]!)
}

/**
 * Decodes, counting and discarding, every stream of the file through its ASCII and Flate filters
 * (any number of them, nested), and refuses the file when one decodes past `limit` bytes. Says
 * how many image streams the file holds. A stream's dictionary is never compressed (streams
 * cannot sit in object streams), so its /Filter and /Subtype are in plain bytes here, and a file
 * without images is spared pdf.js's second pass over each page that looks for them.
 */
async function scanStreams(bytes: Uint8Array, limit: number): Promise<{ images: number }> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let images = 0
  let previousEnd = 0
  for (let at = buffer.indexOf(STREAM); at >= 0; at = buffer.indexOf(STREAM, at + 1)) {
    // "endstream" contains "stream": only the keyword after a dictionary opens data.
    if (buffer[at - 1] === 0x64) continue
    let start = at + STREAM.length
    if (buffer[start] === 0x0d) start++
    if (buffer[start] !== 0x0a) continue
    start++
    const end = buffer.indexOf(END_STREAM, start)
    if (end < 0) break
    // The bytes since the previous stream end with this one's dictionary; only an image XObject has /Subtype /Image.
    const dictionary = buffer.toString('latin1', Math.max(previousEnd, at - 4096), at)
    if (/\/Subtype\s*\/Image\b/.test(dictionary)) images++
    if (
      await decodesPast(
        buffer.subarray(start, end),
        filtersOf(dictionary.slice(dictionary.lastIndexOf('obj') + 1)),
        limit,
      )
    ) {
      throw new DocumentRefused(
        'bomb',
        `the PDF holds a compressed stream that inflates past ${limit} bytes (a decompression bomb?)`,
      )
    }
    at = previousEnd = end + END_STREAM.length
  }
  return { images }
}

/** A PDF date (`D:YYYYMMDDHHmmSS…`) as `YYYY-MM-DD`. */
function pdfDate(value: unknown): string | null {
  const match = typeof value === 'string' ? /^(?:D:)?(\d{4})(\d{2})(\d{2})/.exec(value) : null
  if (!match) return null
  const [, y, m, d] = match
  return Number(m) >= 1 && Number(m) <= 12 && Number(d) >= 1 && Number(d) <= 31 ? `${y}-${m}-${d}` : null
}

function crc32(data: Uint8Array): number {
  return (zlib as unknown as { crc32(data: Uint8Array): number }).crc32(data)
}

/** Raw pixels (what pdf.js decodes an image to) as a PNG. */
export function encodePng(pixels: Uint8ClampedArray, width: number, height: number, channels: 1 | 3 | 4): Uint8Array {
  const stride = width * channels
  const raw = new Uint8Array((stride + 1) * height)
  for (let y = 0; y < height; y++) raw.set(pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1)
  const chunk = (type: string, data: Uint8Array) => {
    const out = new Uint8Array(12 + data.length)
    const view = new DataView(out.buffer)
    view.setUint32(0, data.length)
    out.set(new TextEncoder().encode(type), 4)
    out.set(data, 8)
    view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)))
    return out
  }
  const header = new Uint8Array(13)
  const view = new DataView(header.buffer)
  view.setUint32(0, width)
  view.setUint32(4, height)
  header[8] = 8
  header[9] = channels === 1 ? 0 : channels === 3 ? 2 : 6
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array(0)),
  ]
  return Buffer.concat(parts)
}

type OpenedPdf = Awaited<ReturnType<typeof getDocumentProxy>>

/** Pages read between two releases of what pdf.js keeps: each is a full collection, too dear for every page. */
const CLEANUP_EVERY = 200

/**
 * Fonts and other shared objects stay cached in the document until it is told otherwise; and
 * the garbage of the pages read since (parsed content streams, text items, their messages
 * between pdf.js's two halves) is collected only when the engine decides, which on a long PDF
 * is after the heap has grown by several times what it holds: collecting here bounds the peak.
 */
async function release(pdf: OpenedPdf): Promise<void> {
  await pdf.cleanup()
  runtime.gc(true)
}

async function open(bytes: Uint8Array, limits: ReadLimits): Promise<OpenedPdf> {
  try {
    // pdf.js takes ownership of the buffer it is given: it gets a copy, the caller keeps the bytes.
    return await getDocumentProxy(bytes.slice(), {
      isEvalSupported: false,
      stopAtErrors: false,
      verbosity: 0,
      maxImageSize: limits.maxImagePixels,
    })
  } catch (error) {
    if ((error as Error).name === 'PasswordException') throw new DocumentRefused('encrypted', 'the PDF is encrypted')
    throw new DocumentRefused('broken', `the PDF is broken: ${(error as Error).message}`)
  }
}

export async function readPdf(bytes: Uint8Array, limits: ReadLimits, deadline: number): Promise<ReadPdf> {
  const streams = await scanStreams(bytes, limits.maxStreamBytes)
  const pdf = await open(bytes, limits)
  try {
    const { info, metadata } = await getMeta(pdf).catch((error: Error) => {
      throw new DocumentRefused('broken', `the PDF is broken: ${error.message}`)
    })
    // kgs does not decrypt: a PDF with an empty user password opens, but is refused all the same.
    if (info.EncryptFilterName) throw new DocumentRefused('encrypted', 'the PDF is encrypted')
    if (pdf.numPages > limits.maxPages)
      throw new DocumentRefused(
        'too_many_pages',
        `the PDF has ${pdf.numPages} pages, more than the limit of ${limits.maxPages}`,
      )
    const texts: string[] = []
    const markdown: string[] = []
    const images: DocumentImage[] = []
    let imagesDropped = 0
    for (let number = 1; number <= pdf.numPages; number++) {
      if (Date.now() > deadline)
        throw new DocumentRefused(
          'timeout',
          `reading the PDF took longer than ${limits.timeMs} ms (at page ${number} of ${pdf.numPages})`,
        )
      const broken = (error: Error): never => {
        throw new DocumentRefused('broken', `the PDF is broken: page ${number}: ${error.message}`)
      }
      const page = await pdf.getPage(number).catch(broken)
      const content = await page.getTextContent().catch(broken)
      const text = content.items
        .map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : ''))
        .join('')
        .trim()
      texts.push(text)
      markdown.push(text ? `${pageMarker(number)}\n\n${plainTextToMarkdown(text)}` : pageMarker(number))
      if (streams.images > 0 && images.length < limits.maxImages) {
        for (const image of await extractImages(pdf, number).catch(() => [])) {
          const data = encodePng(image.data, image.width, image.height, image.channels)
          if (images.length >= limits.maxImages || data.byteLength > limits.maxImageBytes) {
            imagesDropped++
            continue
          }
          images.push({
            position: images.length,
            pageNumber: number,
            width: image.width,
            height: image.height,
            contentType: 'image/png',
            data,
          })
        }
      }
      page.cleanup()
      // And after the last page of a long PDF, so that its garbage is gone before its text is joined and chunked.
      if (number % CLEANUP_EVERY === 0 || (number === pdf.numPages && number > CLEANUP_EVERY)) await release(pdf)
    }
    const warnings: ReadWarning[] = []
    if (texts.every((text) => text === ''))
      warnings.push({
        code: 'no_text_layer',
        message: 'the PDF has no text layer (a scan?): kgs does not do OCR, so it has no text',
      })
    const title =
      (typeof info.Title === 'string' && info.Title.trim()) ||
      (typeof metadata?.get === 'function' ? metadata.get('dc:title') : null) ||
      (texts.find((text) => text !== '') ?? '').split('\n')[0] ||
      ''
    return {
      title,
      text: texts.filter((text) => text !== '').join('\n\n'),
      markdown: markdown.join('\n\n'),
      publishedAt: pdfDate(info.CreationDate),
      images,
      imagesDropped,
      pages: pdf.numPages,
      warnings,
    }
  } finally {
    await pdf.destroy()
  }
}
