import { describe, expect, test } from 'bun:test'
import { PDFDocument } from 'pdf-lib'
import { encodePng } from '../../src/ingest/pdf.ts'
import { readDocument } from '../../src/ingest/read.ts'
import { DocumentRefused } from '../../src/ingest/types.ts'
import { rejectionOf } from '../helpers/promises.ts'
import { makeBombPdf, makeEncryptedPdf, makeOpenEncryptedPdf, makePdf, SMALL_PIXELS, SMALL_PNG } from './documents.ts'

async function refusal(promise: Promise<unknown>): Promise<DocumentRefused> {
  const reason = await rejectionOf(promise)
  expect(reason).toBeInstanceOf(DocumentRefused)
  return reason as DocumentRefused
}

describe('a PDF', () => {
  test('reads its text page by page, its title and creation date, and its image', async () => {
    const bytes = await makePdf({
      title: 'Annual report',
      created: new Date('2024-03-05T10:00:00Z'),
      pages: [['First page heading', 'The *first* <b>page</b>.'], ['Second page text'], ['Third page, last']],
      image: { png: SMALL_PNG, page: 2 },
    })
    const document = await readDocument({ bytes, contentType: 'application/pdf', fileName: 'report.pdf' })
    expect(document.kind).toBe('pdf')
    expect(document.title).toBe('Annual report')
    expect(document.publishedAt).toBe('2024-03-05')
    expect(document.pages).toBe(3)
    expect(document.text).toBe('First page heading\nThe *first* <b>page</b>.\n\nSecond page text\n\nThird page, last')
    // Text of a PDF is plain text: what Markdown or HTML would act on is escaped.
    expect(document.markdown).toBe(
      '<!-- page 1 -->\n\nFirst page heading\nThe \\*first\\* \\<b\\>page\\</b\\>.\n\n<!-- page 2 -->\n\nSecond page text\n\n<!-- page 3 -->\n\nThird page, last',
    )
    expect(document.chunks).toEqual([
      {
        index: 0,
        text: 'First page heading\nThe \\*first\\* \\<b\\>page\\</b\\>.\n\n<!-- page 2 -->\n\nSecond page text\n\n<!-- page 3 -->\n\nThird page, last',
        headingPath: [],
        pageStart: 1,
        pageEnd: 3,
      },
    ])
    expect(document.images).toHaveLength(1)
    const [image] = document.images
    expect({ ...image, data: undefined }).toEqual({
      position: 0,
      pageNumber: 2,
      width: 3,
      height: 2,
      contentType: 'image/png',
      data: undefined,
    })
    // The same pixels come back, in a PNG another reader (pdf-lib's) accepts.
    expect(Buffer.from(image!.data!).equals(Buffer.from(SMALL_PNG))).toBe(true)
    const embedded = await (await PDFDocument.create()).embedPng(image!.data!)
    expect([embedded.width, embedded.height]).toEqual([3, 2])
    expect(document.warnings).toEqual([])
  })

  test('a PNG of raw pixels is the same for the same pixels', () => {
    expect(Buffer.from(encodePng(SMALL_PIXELS, 3, 2, 3)).equals(Buffer.from(SMALL_PNG))).toBe(true)
  })

  test('images past the limits are left out, with a warning', async () => {
    const bytes = await makePdf({ pages: [['One image']], image: { png: SMALL_PNG, page: 1 } })
    const none = await readDocument({ bytes }, { maxImages: 0 })
    expect(none.images).toEqual([])
    const tooBig = await readDocument({ bytes }, { maxImageBytes: 10 })
    expect(tooBig.images).toEqual([])
    expect(tooBig.warnings.map((warning) => warning.code)).toEqual(['images_dropped'])
    // 3 × 2 pixels: pdf.js decodes it under a limit of 6, not under 5.
    expect((await readDocument({ bytes }, { maxImagePixels: 6 })).images).toHaveLength(1)
    expect((await readDocument({ bytes }, { maxImagePixels: 5 })).images).toEqual([])
  })

  test('without a title, the first line of text is its title; without a date, none', async () => {
    const document = await readDocument({ bytes: await makePdf({ pages: [[], ['Opening line', 'More']] }) })
    expect(document.title).toBe('Opening line')
    expect(document.publishedAt).toBeNull()
    expect(document.markdown).toBe('<!-- page 1 -->\n\n<!-- page 2 -->\n\nOpening line\nMore')
    expect(document.chunks.map((chunk) => [chunk.pageStart, chunk.pageEnd, chunk.text])).toEqual([
      [2, 2, 'Opening line\nMore'],
    ])
  })

  test('with no text layer, it is kept and says OCR is not done', async () => {
    const document = await readDocument({
      bytes: await makePdf({ title: 'Scan', pages: [[], []], image: { png: SMALL_PNG, page: 1 } }),
    })
    expect(document.text).toBe('')
    expect(document.markdown).toBe('<!-- page 1 -->\n\n<!-- page 2 -->')
    expect(document.chunks).toEqual([])
    expect(document.images).toHaveLength(1)
    expect(document.warnings).toEqual([
      { code: 'no_text_layer', message: 'the PDF has no text layer (a scan?): kgs does not do OCR, so it has no text' },
    ])
  })

  test('encrypted: refused', async () => {
    const reason = await refusal(readDocument({ bytes: makeEncryptedPdf(), contentType: 'application/pdf' }))
    expect([reason.code, reason.message]).toEqual(['encrypted', 'the PDF is encrypted'])
  })

  test('encrypted, though it opens without a password: refused all the same', async () => {
    const reason = await refusal(readDocument({ bytes: makeOpenEncryptedPdf() }))
    expect([reason.code, reason.message]).toEqual(['encrypted', 'the PDF is encrypted'])
  })

  test('broken: refused', async () => {
    const whole = await makePdf({ pages: [['Some text']] })
    const reason = await refusal(readDocument({ bytes: whole.subarray(0, 40), contentType: 'application/pdf' }))
    expect(reason.code).toBe('broken')
    expect(reason.message).toStartWith('the PDF is broken: ')
  })

  test('a decompression bomb: refused before pdf.js inflates it', async () => {
    // 256 MiB of spaces in a few hundred kilobytes, past the default limit of a stream.
    const bytes = await makeBombPdf(256)
    expect(bytes.byteLength).toBeLessThan(1024 * 1024)
    const reason = await refusal(readDocument({ bytes }))
    expect([reason.code, reason.message]).toEqual([
      'bomb',
      'the PDF holds a compressed stream that inflates past 67108864 bytes (a decompression bomb?)',
    ])
  })

  test('a bomb behind two filters (deflated twice, or hex-encoded) is refused too', async () => {
    for (const encoding of ['flate-twice', 'hex'] as const) {
      const reason = await refusal(readDocument({ bytes: await makeBombPdf(128, encoding) }))
      expect(reason.code).toBe('bomb')
    }
  })

  test('the limit is what refuses a bomb: the same stream under a higher one is read', async () => {
    const bytes = await makeBombPdf(8)
    const reason = await refusal(readDocument({ bytes }, { maxStreamBytes: 4 * 1024 * 1024 }))
    expect(reason.code).toBe('bomb')
    const read = await readDocument({ bytes }, { maxStreamBytes: 16 * 1024 * 1024 })
    expect([read.pages, read.text]).toEqual([1, ''])
  })

  test('more pages than the limit: refused', async () => {
    const reason = await refusal(
      readDocument({ bytes: await makePdf({ pages: [['a'], ['b'], ['c']] }) }, { maxPages: 2 }),
    )
    expect([reason.code, reason.message]).toEqual(['too_many_pages', 'the PDF has 3 pages, more than the limit of 2'])
  })

  test('2,000 pages are read page by page, each page citable', async () => {
    const pages = Array.from({ length: 2000 }, (_, i) => [`Page ${i + 1} says hello`])
    const document = await readDocument({ bytes: await makePdf({ pages }) })
    expect(document.pages).toBe(2000)
    expect(document.markdown.split('\n\n').slice(-2)).toEqual(['<!-- page 2000 -->', 'Page 2000 says hello'])
    // Every chunk names the pages it covers, and every page is in exactly one chunk.
    const covered = document.chunks.flatMap((chunk) =>
      Array.from({ length: chunk.pageEnd! - chunk.pageStart! + 1 }, (_, i) => chunk.pageStart! + i),
    )
    expect(covered).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1))
    const chunk = document.chunks[10]!
    expect(chunk.text.startsWith(`Page ${chunk.pageStart} says hello`)).toBe(true)
    expect(chunk.text.endsWith(`Page ${chunk.pageEnd} says hello`)).toBe(true)
  })
})
