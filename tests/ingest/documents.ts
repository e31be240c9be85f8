// Documents made by the tests themselves: PDFs with known text on known pages (pdf-lib), and
// the odd ones (encrypted, broken, a decompression bomb) written by hand around pdf-lib's output.
import { PDFDocument, PDFName, StandardFonts } from 'pdf-lib'

/** A small article page with a title, two headings and two paragraphs, as a web server serves it. */
export const KETTLES_PAGE = `<!doctype html><html><head><title>Kettles</title></head><body>
<article><h1>Kettles</h1><p>A kettle boils water for tea. The whistle tells when the water boils, and a good kettle pours without dripping.</p>
<h2>Kinds</h2><p>Electric kettles heat with an element; stove-top kettles sit on a flame or a hob. Both are common in kitchens everywhere.</p></article>
</body></html>`

export interface PdfSpec {
  pages: string[][]
  title?: string
  created?: Date
  /** A PNG drawn on the given page (from 1). */
  image?: { png: Uint8Array; page: number }
}

export async function makePdf({ pages, title, created, image }: PdfSpec): Promise<Uint8Array> {
  // Without updateMetadata: false, pdf-lib dates every document now, and it would have a creation date.
  const doc = await PDFDocument.create({ updateMetadata: false })
  if (title !== undefined) doc.setTitle(title)
  if (created) doc.setCreationDate(created)
  const font = await doc.embedFont(StandardFonts.Helvetica)
  for (const lines of pages) {
    const page = doc.addPage([400, 400])
    lines.forEach((line, i) => page.drawText(line, { x: 20, y: 360 - 16 * i, font, size: 12 }))
  }
  if (image)
    doc.getPage(image.page - 1).drawImage(await doc.embedPng(image.png), { x: 20, y: 20, width: 40, height: 40 })
  return doc.save()
}

/** The pixels of SMALL_PNG, 3 × 2 RGB: red, green, blue over white, black, grey. */
export const SMALL_PIXELS = Uint8ClampedArray.from([
  255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128,
])
/** A PNG of SMALL_PIXELS (pdf-lib, which has a PNG reader of its own, embeds it in makePdf). */
export const SMALL_PNG = Uint8Array.from(
  Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGP4z8DAAMH//4PohoYGAEfPB3vT+rJCAAAAAElFTkSuQmCC',
    'base64',
  ),
)

async function deflate(chunk: Uint8Array<ArrayBuffer>, times: number): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new CompressionStream('deflate')
  const writer = stream.writable.getWriter()
  const out = new Response(stream.readable).arrayBuffer()
  for (let i = 0; i < times; i++) await writer.write(chunk)
  await writer.close()
  return new Uint8Array(await out)
}

/**
 * A one-page PDF whose content stream is a few hundred kilobytes that decode to `mebibytes` MiB
 * of spaces: deflated, or deflated twice, or deflated then hex-encoded.
 */
export async function makeBombPdf(
  mebibytes: number,
  encoding: 'flate' | 'flate-twice' | 'hex' = 'flate',
): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const page = doc.addPage([300, 300])
  const once = await deflate(new Uint8Array(1 << 20).fill(0x20), mebibytes)
  const data =
    encoding === 'flate-twice'
      ? await deflate(once, 1)
      : encoding === 'hex'
        ? new TextEncoder().encode(`${Buffer.from(once).toString('hex')}>`)
        : once
  const Filter =
    encoding === 'flate-twice'
      ? ['FlateDecode', 'FlateDecode']
      : encoding === 'hex'
        ? ['ASCIIHexDecode', 'FlateDecode']
        : 'FlateDecode'
  page.node.set(PDFName.of('Contents'), doc.context.register(doc.context.stream(data, { Filter, Length: data.length })))
  return doc.save()
}

/** A PDF with the Standard security handler; with a made-up /U, it has a user password no reader knows. */
export function makeEncryptedPdf(user = 'cd'.repeat(32)): Uint8Array {
  const hex32 = (byte: string) => byte.repeat(32)
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] >>',
    `<< /Filter /Standard /V 1 /R 2 /O <${hex32('ab')}> /U <${user}> /P -4 >>`,
  ]
  let body = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((object, i) => {
    offsets.push(body.length)
    body += `${i + 1} 0 obj\n${object}\nendobj\n`
  })
  const xref = body.length
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Encrypt 4 0 R /ID [<${'01'.repeat(16)}> <${'01'.repeat(16)}>] >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(body)
}

function rc4(key: Uint8Array, data: Uint8Array): Uint8Array {
  const s = Array.from({ length: 256 }, (_, i) => i)
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i]! + key[i % key.length]!) & 0xff
    ;[s[i], s[j]] = [s[j]!, s[i]!]
  }
  const out = new Uint8Array(data.length)
  for (let n = 0, i = 0, j = 0; n < data.length; n++) {
    i = (i + 1) & 0xff
    j = (j + s[i]!) & 0xff
    ;[s[i], s[j]] = [s[j]!, s[i]!]
    out[n] = data[n]! ^ s[(s[i]! + s[j]!) & 0xff]!
  }
  return out
}

/**
 * A PDF encrypted with an empty user password (permissions only): any reader opens it without
 * asking. Standard security handler, revision 2 (PDF 1.7, 7.6.3.3, algorithms 2 and 4).
 */
export function makeOpenEncryptedPdf(): Uint8Array {
  const pad = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex')
  const owner = Buffer.alloc(32, 0xab)
  const id = Buffer.alloc(16, 0x01)
  const permissions = Buffer.alloc(4)
  permissions.writeInt32LE(-4)
  const key = new Bun.CryptoHasher('md5')
    .update(Buffer.concat([pad, owner, permissions, id]))
    .digest()
    .subarray(0, 5)
  const user = Buffer.from(rc4(key, pad)).toString('hex')
  return makeEncryptedPdf(user)
}
