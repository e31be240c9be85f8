import { describe, expect, test } from 'bun:test'
import { decodeText, detectKind, sniffsAsHtml } from '../../src/ingest/detect.ts'
import { readDocument } from '../../src/ingest/read.ts'
import { DocumentRefused } from '../../src/ingest/types.ts'
import { rejectionOf } from '../helpers/promises.ts'
import { makePdf } from './documents.ts'

const encode = (text: string) => new TextEncoder().encode(text)
const kindOf = (bytes: Uint8Array, contentType?: string, fileName?: string) =>
  detectKind({ bytes, contentType, fileName }).kind

function refusalOf(run: () => unknown): DocumentRefused {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(DocumentRefused)
    return error as DocumentRefused
  }
  throw new Error('expected a refusal')
}

describe('the parser is chosen by the type and checked against the bytes', () => {
  test('declared types and file names', async () => {
    const pdf = await makePdf({ pages: [['x']] })
    expect(kindOf(pdf, 'application/pdf')).toBe('pdf')
    expect(kindOf(pdf, undefined, 'a.pdf')).toBe('pdf')
    expect(kindOf(encode('<!DOCTYPE html><p>x'), 'text/html')).toBe('web')
    expect(kindOf(encode('# Title'), 'text/markdown; charset=utf-8')).toBe('markdown')
    expect(kindOf(encode('# Title'), 'application/octet-stream', 'notes.md')).toBe('markdown')
    expect(kindOf(encode('# Title'), undefined, 'notes.markdown')).toBe('markdown')
    expect(kindOf(encode('# Title'), 'text/plain')).toBe('text')
    expect(kindOf(encode('{"a": 1}'), 'application/json')).toBe('text')
    expect(kindOf(encode('plain words'))).toBe('text')
    expect(kindOf(encode('  \n<html><body>x'))).toBe('web')
    expect(kindOf(encode('<!-- a comment first -->'))).toBe('web')
  })

  test('the bytes win: a "PDF" that is HTML is read as HTML, a PDF sent as HTML is read as a PDF', async () => {
    const html = detectKind({ bytes: encode('<HTML><body>Not found</body></HTML>'), contentType: 'application/pdf' })
    expect(html).toEqual({
      kind: 'web',
      warnings: [
        {
          code: 'declared_type_mismatch',
          message: 'the document was declared application/pdf but its bytes are HTML: read as HTML',
        },
      ],
    })
    const pdf = detectKind({ bytes: await makePdf({ pages: [['x']] }), contentType: 'text/html' })
    expect(pdf).toEqual({
      kind: 'pdf',
      warnings: [
        {
          code: 'declared_type_mismatch',
          message: 'the document was declared text/html but its bytes are a PDF: read as a PDF',
        },
      ],
    })
  })

  test('bytes of no supported kind: refused with the reason', () => {
    const notPdf = refusalOf(() => detectKind({ bytes: encode('just some words'), contentType: 'application/pdf' }))
    expect([notPdf.code, notPdf.message]).toEqual([
      'unsupported',
      'the document was declared application/pdf but its bytes are not a PDF',
    ])
    const png = refusalOf(() =>
      detectKind({
        bytes: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
        fileName: 'notes.txt',
      }),
    )
    expect([png.code, png.message]).toEqual([
      'unsupported',
      'the document (named notes.txt) is binary data of no kind kgs reads (PDF, HTML, Markdown, text)',
    ])
    const image = refusalOf(() => detectKind({ bytes: encode('GIF89a'), contentType: 'image/gif' }))
    expect(image.message).toBe('the content type image/gif is not one kgs reads (PDF, HTML, Markdown, text)')
  })

  test('HTML sniffing follows the WHATWG patterns: a tag name then a space or ">"', () => {
    expect(sniffsAsHtml(encode('<p>x'))).toBe(true)
    expect(sniffsAsHtml(encode('<TABLE border=1>'))).toBe(true)
    expect(sniffsAsHtml(encode('<pre>x'))).toBe(false)
    expect(sniffsAsHtml(encode('<bogus>'))).toBe(false)
    expect(sniffsAsHtml(encode('text <html>'))).toBe(false)
    expect(sniffsAsHtml(Uint8Array.from([0xef, 0xbb, 0xbf, ...encode('<html>')]))).toBe(true)
  })
})

describe('text in any encoding comes out right', () => {
  const ETE = 'Été à Noël – “déjà” €5'

  test('windows-1252 and latin-1: declared, or found when the bytes are not UTF-8', () => {
    const bytes = Uint8Array.from([
      0xc9, 0x74, 0xe9, 0x20, 0xe0, 0x20, 0x4e, 0x6f, 0xeb, 0x6c, 0x20, 0x96, 0x20, 0x93, 0x64, 0xe9, 0x6a, 0xe0, 0x94,
      0x20, 0x80, 0x35,
    ])
    expect(decodeText(bytes, 'text', 'text/plain; charset=windows-1252')).toEqual({
      text: ETE,
      charset: 'windows-1252',
      warnings: [],
    })
    expect(decodeText(bytes, 'text', 'text/plain; charset=ISO-8859-1').text).toBe(ETE)
    expect(decodeText(bytes, 'text').text).toBe(ETE)
    expect(decodeText(bytes, 'text', 'text/plain; charset=utf-8')).toEqual({
      text: ETE,
      charset: 'windows-1252',
      warnings: [
        { code: 'charset_fallback', message: 'the document is not valid UTF-8 as declared: decoded as windows-1252' },
      ],
    })
  })

  test('UTF-16 with a BOM, either byte order, whatever the header says', () => {
    const le = Uint8Array.from([
      0xff,
      0xfe,
      ...Array.from(ETE).flatMap((c) => [c.charCodeAt(0) & 0xff, c.charCodeAt(0) >> 8]),
    ])
    const be = Uint8Array.from([
      0xfe,
      0xff,
      ...Array.from(ETE).flatMap((c) => [c.charCodeAt(0) >> 8, c.charCodeAt(0) & 0xff]),
    ])
    expect(decodeText(le, 'text', 'text/plain; charset=iso-8859-1')).toEqual({
      text: ETE,
      charset: 'utf-16le',
      warnings: [],
    })
    expect(decodeText(be, 'text')).toEqual({ text: ETE, charset: 'utf-16be', warnings: [] })
    // Its zero bytes are not taken for binary data.
    expect(kindOf(le)).toBe('text')
  })

  test('Shift_JIS declared by <meta charset> in an HTML page', async () => {
    // 日本語の記事 (a Japanese article) in Shift_JIS.
    const title = [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea, 0x82, 0xcc, 0x8b, 0x4c, 0x8e, 0x96]
    const bytes = Uint8Array.from([
      ...encode('<html><head><meta charset="Shift_JIS"><title>'),
      ...title,
      ...encode('</title></head><body><p>'),
      ...title,
      ...encode('</p></body></html>'),
    ])
    const document = await readDocument({ bytes, contentType: 'text/html' })
    expect([document.title, document.text]).toEqual(['日本語の記事', '日本語の記事'])
  })

  test('an unknown charset label: UTF-8, with a warning', () => {
    expect(decodeText(encode('héllo'), 'text', 'text/plain; charset=x-made-up')).toEqual({
      text: 'héllo',
      charset: 'utf-8',
      warnings: [
        {
          code: 'charset_fallback',
          message: 'the charset x-made-up is unknown: decoded as UTF-8, or windows-1252 where that fails',
        },
      ],
    })
  })
})

describe('readDocument refuses what it will not read', () => {
  test('empty, too large', async () => {
    const empty = await rejectionOf(readDocument({ bytes: new Uint8Array(0) }))
    expect(empty).toBeInstanceOf(DocumentRefused)
    expect((empty as DocumentRefused).message).toBe('the document is empty (0 bytes)')
    const large = await rejectionOf(readDocument({ bytes: encode('x'.repeat(11)) }, { maxBytes: 10 }))
    expect([(large as DocumentRefused).code, (large as DocumentRefused).message]).toEqual([
      'too_large',
      'the document is 11 bytes, more than the limit of 10',
    ])
  })

  test('past its time', async () => {
    const late = await rejectionOf(readDocument({ bytes: await makePdf({ pages: [['a'], ['b']] }) }, { timeMs: -1 }))
    expect([(late as DocumentRefused).code, (late as DocumentRefused).message]).toEqual([
      'timeout',
      'reading the PDF took longer than -1 ms (at page 1 of 2)',
    ])
  })
})
