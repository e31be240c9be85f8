// What readDocument (src/ingest/read.ts) costs against the libraries it wraps, on documents made
// here: a 200-page PDF (pdf-lib, 40 lines of text a page) read whole by readDocument and by
// unpdf's own extractText, and a web article (about 20 KB of HTML) read by readDocument and by
// linkedom + Readability + turndown alone. Each side runs alternately, best of `rounds`; the
// ratio is the library's time over readDocument's (1 = no overhead; the target is at least 0.5).
// Then memory: the peak RSS of a fresh process reading a dense PDF of `peakPages` pages with
// readDocument, next to one reading it with pdf.js alone (page by page, keeping nothing). Each
// runs in a child of its own, since a peak RSS is the process's: the PDF is written to a
// temporary file by a third child, pdf-lib needing far more memory to make it than to read it.
// Last, the whole job: a kgs process (one worker thread; the embedded database, or with
// --postgres a fresh database on the server of PG_URL, default postgres://postgres@127.0.0.1:5432/postgres) is given the same PDF
// as an upload, and its RSS (all its threads, the database's included) and the RSS of the child
// process the job reads the document in are sampled while the ingest_source job runs, with the
// job's pages per second. Its peak since it started (VmHWM) says
// nothing of the job: the embedded database's start peaks far higher.
// Usage: bun scripts/bench/ingest.ts [rounds=3] [pages=200] [webPages=200] [peakPages=2000] [--postgres]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readability } from '@mozilla/readability'
import { parseHTML } from 'linkedom'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import TurndownService from 'turndown'
import { extractText, getDocumentProxy } from 'unpdf'
import { READ_DOCUMENT_COMMAND } from '../../src/ingest/read-child.ts'
import { readDocument } from '../../src/ingest/read.ts'
import { benchKgs, childProcesses, memoryOf, memoryOfLive, runBenchChild, settledMemoryOf } from '../lib/load.ts'

async function makePdf(pages: number): Promise<Uint8Array> {
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

/** The peak RSS of this process so far, in MiB. */
const peakRss = () => process.resourceUsage().maxRSS / 1024

/** Runs this script as a child in `mode`; answers the last line it prints, as JSON. */
const child = <T = { peak: number; before: number; seconds: number }>(mode: string, ...args: string[]) =>
  runBenchChild<T>(import.meta.path, mode, ...args)

/** A child's work: write the PDF, or read it one way and print its peak RSS (and before reading, with the modules loaded). */
async function runChild(mode: string, path: string, arg?: string): Promise<void> {
  if (mode === 'write') {
    console.log(JSON.stringify({ bytes: await Bun.write(path, await makePdf(Number(arg))) }))
    return
  }
  const bytes = new Uint8Array(await Bun.file(path).arrayBuffer())
  const before = peakRss()
  const start = performance.now()
  if (mode === 'readDocument') await readDocument({ bytes, contentType: 'application/pdf' })
  else {
    const pdf = await getDocumentProxy(bytes.slice(), { isEvalSupported: false })
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number)
      await page.getTextContent()
      page.cleanup()
      // As readDocument does (src/ingest/pdf.ts): what pdf.js costs when its garbage is collected as it goes.
      if (mode === 'pdfjs-collected' && number % 200 === 0) {
        await pdf.cleanup()
        Bun.gc(true)
      }
    }
  }
  const seconds = (performance.now() - start) / 1000
  console.log(JSON.stringify({ peak: peakRss(), before, seconds }))
}

/** Ingests the PDF at `path` through a kgs process of its own, as an upload: its RSS before and the most sampled during the job, and the job's seconds. */
async function ingestThroughKgs(path: string) {
  const { kgs, call, token, stop } = await benchKgs('ingest', postgresBackend)
  try {
    const { slug } = await call('POST', '/api/v1/repositories', token, { name: 'ingest' })
    const before = await settledMemoryOf(kgs.pid)
    const form = new FormData()
    form.append('file', new File([await Bun.file(path).bytes()], 'dense.pdf', { type: 'application/pdf' }))
    const start = performance.now()
    const res = await fetch(`${kgs.url}/${slug}/ingest`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${token}` },
    })
    if (res.status !== 202) throw new Error(`POST /${slug}/ingest: ${res.status} ${await res.text()}`)
    const { jobs } = (await res.json()) as { jobs: { id: string }[] }
    let most = before.rssMB
    let readerMost = 0
    for (;;) {
      most = Math.max(most, memoryOf(kgs.pid).rssMB)
      for (const reader of childProcesses(kgs.pid, READ_DOCUMENT_COMMAND))
        readerMost = Math.max(readerMost, memoryOfLive(reader)?.rssMB ?? 0)
      const job = await call('GET', `/${slug}/jobs/${jobs[0]!.id}`, token)
      if (job.status === 'succeeded') break
      if (job.status === 'failed' || job.status === 'cancelled') throw new Error(`the job ${job.status}: ${job.error}`)
      await Bun.sleep(20)
    }
    return { before: before.rssMB, most, readerMost, seconds: (performance.now() - start) / 1000 }
  } finally {
    await stop()
  }
}

if (process.argv[2] === '--child') {
  await runChild(process.argv[3]!, process.argv[4]!, process.argv[5])
  process.exit(0)
}

const postgresBackend = process.argv.includes('--postgres')
const [rounds = 3, pages = 200, webPages = 200, peakPages = 2000] = process.argv
  .slice(2)
  .filter((arg) => arg !== '--postgres')
  .map(Number)

async function best(run: () => Promise<unknown>): Promise<number> {
  let fastest = Number.POSITIVE_INFINITY
  for (let i = 0; i < rounds; i++) {
    const start = performance.now()
    await run()
    fastest = Math.min(fastest, performance.now() - start)
  }
  return fastest / 1000
}

// First, while this process is small: a child's peak RSS starts from its parent's RSS when it is spawned (Linux).
const dir = mkdtempSync(join(tmpdir(), 'kgs-bench-ingest-'))
try {
  const path = join(dir, 'dense.pdf')
  const { bytes: size } = await child<{ bytes: number }>('write', path, String(peakPages))
  const library = await child('pdfjs', path)
  const collected = await child('pdfjs-collected', path)
  const ours = await child('readDocument', path)
  const mib = (value: number) => `${value.toFixed(0)} MiB`
  const figures = (run: typeof ours) => `${mib(run.peak)} (${run.seconds.toFixed(1)} s)`
  console.log(
    `peak RSS reading a ${peakPages}-page PDF (${size} bytes, 40 lines a page), each in a fresh process ` +
      `(${mib(ours.before)} before reading): readDocument ${figures(ours)}, pdf.js alone ${figures(library)}, ` +
      `ratio ${(ours.peak / library.peak).toFixed(2)}; pdf.js alone collecting as readDocument does ${figures(collected)}`,
  )
  const job = await ingestThroughKgs(path)
  const mb = (value: number) => `${value.toFixed(0)} MB`
  console.log(
    `the same PDF uploaded to kgs (${postgresBackend ? 'PostgreSQL' : 'embedded database'}, WORKERS=1): the job ${job.seconds.toFixed(1)} s ` +
      `(${(peakPages / job.seconds).toFixed(0)} pages/s); the process's RSS ${mb(job.before)} before, ` +
      `at most ${mb(job.most)} during the job; the child process that read it at most ${mb(job.readerMost)} (both sampled every 20 ms)`,
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}

const pdf = await makePdf(pages)
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
