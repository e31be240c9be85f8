// What readDocument (src/ingest/read.ts) costs against the libraries it wraps, on documents made
// here: a 200-page PDF (pdf-lib, 40 lines of text a page) read whole by readDocument and by
// unpdf's own extractText, and a web article (about 20 KB of HTML) read by readDocument and by
// linkedom + Readability + turndown alone. Each side runs alternately, best of `rounds`; the
// ratio is the library's time over readDocument's (1 = no overhead; the target is at least 0.5).
// Usage: bun scripts/bench/ingest.ts [rounds=3] [pages=200] [webPages=200]
import { Readability } from '@mozilla/readability'
import { parseHTML } from 'linkedom'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import TurndownService from 'turndown'
import { extractText, getDocumentProxy } from 'unpdf'
import { readDocument } from '../../src/ingest/read.ts'

const [rounds = 3, pages = 200, webPages = 200] = process.argv.slice(2).map(Number)

async function makePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const font = await doc.embedFont(StandardFonts.Helvetica)
  for (let p = 1; p <= pages; p++) {
    const page = doc.addPage([612, 792])
    for (let line = 0; line < 40; line++)
      page.drawText(`Page ${p}, line ${line}: rivers carve valleys over long spans of time.`, {
        x: 40,
        y: 750 - line * 18,
        font,
        size: 10,
      })
  }
  return doc.save()
}

function makeHtml(): string {
  const sections = Array.from(
    { length: 12 },
    (_, s) =>
      `<h2>Section ${s}</h2>${Array.from({ length: 4 }, (_, p) => `<p>Paragraph ${p} of section ${s}: rivers carve valleys over long spans of time, and <a href="/n/${s}-${p}">notes</a> say how. ${'Erosion is slow. '.repeat(10)}</p>`).join('')}<ul><li>one</li><li>two</li></ul>`,
  ).join('')
  return `<!doctype html><html><head><title>Rivers</title><meta property="article:published_time" content="2024-01-02"></head><body><nav><a href="/">Home</a></nav><article><h1>Rivers</h1>${sections}</article><footer>© site</footer></body></html>`
}

async function best(run: () => Promise<unknown>): Promise<number> {
  let fastest = Number.POSITIVE_INFINITY
  for (let i = 0; i < rounds; i++) {
    const start = performance.now()
    await run()
    fastest = Math.min(fastest, performance.now() - start)
  }
  return fastest / 1000
}

const pdf = await makePdf()
const html = makeHtml()
const htmlBytes = new TextEncoder().encode(html)
const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' })

const libraryPdf = await best(async () => extractText(await getDocumentProxy(pdf.slice())))
const ourPdf = await best(() => readDocument({ bytes: pdf, contentType: 'application/pdf' }))
const libraryWeb = await best(async () => {
  for (let i = 0; i < webPages; i++) {
    const { document } = parseHTML(html)
    const article = new Readability(document as never).parse()
    turndown.turndown(parseHTML(`<html><body>${article!.content}</body></html>`).document.body as never)
  }
})
const ourWeb = await best(async () => {
  for (let i = 0; i < webPages; i++)
    await readDocument({ bytes: htmlBytes, contentType: 'text/html', url: 'https://example.org/rivers' })
})

const line = (what: string, count: number, library: number, ours: number) =>
  console.log(
    `${what}: library ${(count / library).toFixed(1)}/s, readDocument ${(count / ours).toFixed(1)}/s, ratio ${(library / ours).toFixed(2)}`,
  )
console.log(
  `PDF of ${pages} pages (${pdf.byteLength} bytes), web page of ${htmlBytes.byteLength} bytes, best of ${rounds}`,
)
line('PDF pages', pages, libraryPdf, ourPdf)
line('web pages', webPages, libraryWeb, ourWeb)
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`)
