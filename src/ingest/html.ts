// A web page: Readability (Mozilla's reader view) finds the article in a linkedom document, and
// turndown writes it as Markdown. Nothing runs: linkedom has no script engine, so a page that
// builds its content in the browser comes out as the little its HTML holds. Before either
// library sees the page, everything active is taken out (scripts, styles, frames, objects,
// forms, event handlers, URLs of any scheme but http(s) and mailto), so none of it can reach the
// Markdown or the text.
import { Readability } from '@mozilla/readability'
import { DOMParser } from 'linkedom'
import TurndownService from 'turndown'
import type { DocumentImage, FormatRead, ReadWarning } from './types.ts'

const INERT_REMOVED =
  'script, style, noscript, template, iframe, frame, frameset, object, embed, applet, link, base, form, input, button, select, textarea, dialog, svg, math, canvas, audio, video, portal'
const URL_ATTRIBUTES = ['href', 'src', 'action', 'formaction', 'poster', 'background', 'cite', 'longdesc', 'xlink:href']
const SAFE_SCHEMES = new Set(['http:', 'https:', 'mailto:'])

/** The DOM types (linkedom's) as far as this module uses them: the project has no DOM library. */
type TurndownInput = Exclude<Parameters<TurndownService['turndown']>[0], string>
type Node = { nodeType: number; nodeName: string; childNodes: ArrayLike<Node>; textContent: string | null }
type Element = Node & {
  attributes: ArrayLike<{ name: string; value: string }>
  getAttribute(name: string): string | null
  setAttribute(name: string, value: string): void
  removeAttribute(name: string): void
  querySelectorAll(selector: string): ArrayLike<Element>
  remove(): void
  textContent: string | null
}

/** An http(s) or mailto URL resolved against the page, or undefined for anything else. */
function safeUrl(value: string, base: string | undefined): string | undefined {
  // The URL parser drops the whitespace and control characters browsers ignore ("java\nscript:").
  try {
    const url = base ? new URL(value, base) : new URL(value)
    return SAFE_SCHEMES.has(url.protocol) ? url.href : undefined
  } catch {
    // Relative without a base: kept as it is, unless it names a scheme (which must have failed to parse).
    const bare = value.replace(/[\u0000-\u0020]/g, '')
    return bare === '' || /^[a-z][a-z0-9+.-]*:/i.test(bare) ? undefined : value.trim()
  }
}

function makeInert(root: Element, base: string | undefined): void {
  for (const element of Array.from(root.querySelectorAll(INERT_REMOVED))) element.remove()
  for (const element of Array.from(root.querySelectorAll('*'))) {
    for (const { name } of Array.from(element.attributes)) {
      const lower = name.toLowerCase()
      if (lower.startsWith('on') || lower === 'style' || lower === 'srcset' || lower === 'srcdoc')
        element.removeAttribute(name)
    }
    for (const name of URL_ATTRIBUTES) {
      const value = element.getAttribute(name)
      if (value === null) continue
      const url = safeUrl(value, base)
      if (url === undefined) element.removeAttribute(name)
      else element.setAttribute(name, url)
    }
  }
}

/** A date as the document writes it, `YYYY-MM-DD`, or null. */
function dateOf(value: string | null | undefined): string | null {
  const match = /^\s*(\d{4})-(\d{2})-(\d{2})/.exec(value ?? '')
  if (!match) return null
  const [, y, m, d] = match
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)))
  return date.getUTCMonth() === Number(m) - 1 && date.getUTCDate() === Number(d) ? `${y}-${m}-${d}` : null
}

function jsonLdDate(document: { querySelectorAll(selector: string): ArrayLike<Element> }): string | null {
  for (const script of Array.from(document.querySelectorAll('script[type="application/ld+json"]'))) {
    let data: unknown
    try {
      data = JSON.parse(script.textContent ?? '')
    } catch {
      continue
    }
    const queue = [data]
    while (queue.length > 0) {
      const item = queue.shift()
      if (Array.isArray(item)) queue.push(...item)
      else if (item && typeof item === 'object') {
        const record = item as Record<string, unknown>
        const date = typeof record.datePublished === 'string' ? dateOf(record.datePublished) : null
        if (date) return date
        // Wherever it is nested (@graph, mainEntity, …): the first found, breadth first.
        queue.push(...Object.values(record))
      }
    }
  }
  return null
}

const BLOCKS = new Set([
  'P',
  'DIV',
  'SECTION',
  'ARTICLE',
  'MAIN',
  'HEADER',
  'FOOTER',
  'ASIDE',
  'NAV',
  'BLOCKQUOTE',
  'PRE',
  'UL',
  'OL',
  'LI',
  'DL',
  'DT',
  'DD',
  'TABLE',
  'THEAD',
  'TBODY',
  'TFOOT',
  'TR',
  'FIGURE',
  'FIGCAPTION',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HR',
  'ADDRESS',
  'DETAILS',
  'SUMMARY',
])

/** The text a reader sees: blocks on lines of their own, cells apart, whitespace as HTML collapses it (but in <pre>). */
export function textOf(root: Node): string {
  const parts: string[] = []
  const walk = (node: Node, pre: boolean): void => {
    if (node.nodeType === 3) {
      parts.push(pre ? (node.textContent ?? '') : (node.textContent ?? '').replace(/\s+/g, ' '))
      return
    }
    if (node.nodeType !== 1) return
    const name = node.nodeName.toUpperCase()
    if (name === 'BR') return void parts.push('\n')
    if (name === 'TD' || name === 'TH') parts.push('\t')
    const block = BLOCKS.has(name)
    if (block) parts.push('\n\n')
    for (const child of Array.from(node.childNodes)) walk(child, pre || name === 'PRE')
    if (block) parts.push('\n\n')
  }
  walk(root, false)
  return parts
    .join('')
    .split('\n')
    .map((line) => line.replace(/^[ \t]+|[ \t]+$/g, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

function cellMarkdown(service: TurndownService, cell: Node): string {
  return service
    .turndown(cell as unknown as TurndownInput)
    .replace(/\\?\s*\n+\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .trim()
}

/**
 * turndown has no table rule of its own (that is the GFM plugin, which kgs does not add for one
 * rule): without this a table comes out as loose cell text. Written as a GFM pipe table, the
 * first row its header; a cell's Markdown is flattened to one line with its pipes escaped, so a
 * row stays one line and the chunker never cuts inside one.
 */
function addTableRule(service: TurndownService): void {
  service.addRule('table', {
    filter: 'table',
    replacement: (_content, node) => {
      const rows = Array.from((node as unknown as Element).querySelectorAll('tr')).map((row) =>
        Array.from(row.childNodes)
          .filter((cell) => cell.nodeName === 'TD' || cell.nodeName === 'TH')
          .map((cell) => cellMarkdown(service, cell)),
      )
      const width = Math.max(0, ...rows.map((row) => row.length))
      if (width === 0) return ''
      const line = (cells: string[]) => `| ${Array.from({ length: width }, (_, i) => cells[i] ?? '').join(' | ')} |`
      const [header = [], ...body] = rows
      return `\n\n${[line(header), line(Array(width).fill('---')), ...body.map(line)].join('\n')}\n\n`
    },
  })
}

function markdownService(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    emDelimiter: '_',
    br: '\\',
  })
  // Defence in depth: the DOM is inert already; turndown would otherwise keep unknown blocks' text.
  service.remove(['script', 'style', 'iframe', 'noscript', 'object', 'embed', 'template', 'form'])
  // Text that reads like HTML or an entity stays text in the Markdown.
  const escapeMarkdown = service.escape.bind(service)
  service.escape = (text: string) => escapeMarkdown(text).replace(/[<&]/g, '\\$&')
  addTableRule(service)
  return service
}

function number(value: string | null): number | undefined {
  return value && /^\d{1,5}$/.test(value) ? Number(value) : undefined
}

/**
 * linkedom's document of `html`, through its DOMParser: parseHTML's typings return a DOM Window,
 * whose `document` Deno's libraries (no DOM) do not declare; the parser's name linkedom's own type.
 */
export const parseDocument = (html: string) => new DOMParser().parseFromString(html, 'text/html')

/** The page parsed and made inert. */
function inertDocument(html: string, base: string | undefined) {
  const document = parseDocument(html)
  makeInert(document.documentElement as unknown as Element, base)
  return document
}

export function readHtml(html: string, pageUrl: string | undefined, maxImages: number): FormatRead {
  const document = parseDocument(html)
  const warnings: ReadWarning[] = []
  const meta = (selector: string) =>
    (document.querySelector(selector) as Element | null)?.getAttribute('content') ?? null
  // The document's own statements, read before anything is removed: JSON-LD lives in a script.
  const published =
    dateOf(meta('meta[property="article:published_time"]')) ??
    jsonLdDate(document) ??
    dateOf(
      (document.querySelector('article time[datetime], main time[datetime]') as Element | null)?.getAttribute(
        'datetime',
      ),
    )
  const ogImage = meta('meta[property="og:image"]')
  const documentTitle = document.title
  const base = pageUrl && safeUrl(pageUrl, undefined)
  makeInert(document.documentElement as unknown as Element, base)

  // Readability hands back its article as an element of the (inert) document, not as HTML to parse again.
  const article = new Readability<Element>(document as unknown as ConstructorParameters<typeof Readability>[0], {
    keepClasses: false,
    serializer: (node) => node as unknown as Element,
  }).parse()
  if (!article?.content)
    warnings.push({ code: 'no_article', message: 'no article was found in the page: its whole body was read' })
  // Readability takes the document apart as it works: without an article, the page is read again, whole.
  const body = article?.content ?? (inertDocument(html, base).body as unknown as Element | null)
  if (!body)
    return {
      title: documentTitle,
      text: '',
      markdown: '',
      publishedAt: published,
      images: [],
      imagesDropped: 0,
      warnings,
    }
  const publishedAt =
    published ??
    dateOf(article?.publishedTime) ??
    dateOf(body.querySelectorAll('time[datetime]')[0]?.getAttribute('datetime'))

  const found: DocumentImage[] = []
  const seen = new Set<string>()
  const add = (image: Omit<DocumentImage, 'position'>) => {
    if (!image.url || seen.has(image.url)) return
    seen.add(image.url)
    found.push({ position: found.length, ...image })
  }
  const og = ogImage ? safeUrl(ogImage, base) : undefined
  if (og?.startsWith('http')) add({ url: og })
  for (const img of Array.from(body.querySelectorAll('img[src]'))) {
    const url = img.getAttribute('src')!
    if (!/^https?:/i.test(url)) continue
    add({
      url,
      altText: img.getAttribute('alt') || undefined,
      width: number(img.getAttribute('width')),
      height: number(img.getAttribute('height')),
    })
  }

  // A line break is a backslash (not two spaces), so trailing whitespace, which means nothing else, goes.
  const markdown = markdownService()
    .turndown(body as unknown as TurndownInput)
    .replace(/[ \t]+$/gm, '')
    .trim()
  const text = textOf(body)
  if (text === '')
    warnings.push({
      code: 'empty_page',
      message: 'the page has no text in its HTML: kgs runs no scripts, so a page built in the browser reads empty',
    })
  const title = article?.title || documentTitle || (body.querySelectorAll('h1')[0]?.textContent ?? '')
  return {
    title,
    text,
    markdown,
    publishedAt,
    images: found.slice(0, maxImages),
    imagesDropped: Math.max(0, found.length - maxImages),
    warnings,
  }
}
