// Plain text and Markdown. Markdown is kept as it is written; plain text becomes Markdown
// paragraphs that render as the same text: the characters Markdown would act on are escaped
// with a backslash (which CommonMark defines for any ASCII punctuation), so no text turns into
// markup, and above all never into HTML.
import { micromark } from 'micromark'
import { parseDocument, textOf } from './html.ts'

export interface ReadText {
  title: string
  text: string
  markdown: string
}

/** Titles longer than this are cut: a first line can be a whole paragraph. */
const MAX_TITLE = 300

function normalizeNewlines(text: string): string {
  return text.replace(/\r\n?/g, '\n')
}

export function boundTitle(title: string): string {
  const flat = title.replace(/\s+/g, ' ').trim()
  return flat.length <= MAX_TITLE ? flat : `${flat.slice(0, MAX_TITLE - 1).trimEnd()}…`
}

/** Inline characters with a meaning in CommonMark or GFM: emphasis, code, links, HTML, entities, tables, strikethrough. */
const INLINE_ACTIVE = /[\\`*_[\]<>&|~]/g
/** At the start of a line: headings, quotes, list items, setext underlines, thematic breaks. */
const LINE_START_ACTIVE = /^([#+=-])|^(\d{1,9})([.)])/

function escapeLine(line: string): string {
  // Leading indentation would make a code block: it is dropped, the words are what count.
  const escaped = line.trimStart().replace(INLINE_ACTIVE, '\\$&')
  return escaped.replace(LINE_START_ACTIVE, (_all, marker, digits, dot) =>
    marker ? `\\${marker}` : `${digits}\\${dot}`,
  )
}

/** Plain text as Markdown paragraphs: blank lines separate paragraphs, line breaks inside one are kept as written. */
export function plainTextToMarkdown(text: string): string {
  return normalizeNewlines(text)
    .split(/\n[ \t]*\n+/)
    .map((paragraph) =>
      paragraph
        .split('\n')
        .map((line) => escapeLine(line).trimEnd())
        .filter((line) => line !== '')
        .join('\n'),
    )
    .filter((paragraph) => paragraph !== '')
    .join('\n\n')
}

function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '') ?? ''
}

export function readPlainText(source: string): ReadText {
  const text = normalizeNewlines(source)
  return { title: boundTitle(firstLine(text)), text, markdown: plainTextToMarkdown(text) }
}

/** The first heading (ATX or setext, outside code), else the first line without its markers. */
function markdownTitle(markdown: string): string {
  const lines = markdown.split('\n')
  let fence: string | undefined
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (fenceMatch) {
      if (!fence) fence = fenceMatch[1]![0]
      else if (fenceMatch[1]![0] === fence) fence = undefined
      continue
    }
    if (fence) continue
    const atx = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)
    if (atx) return atx[1]!
    if (line.trim() !== '' && /^ {0,3}(=+|-+)\s*$/.test(lines[i + 1] ?? '')) return line
  }
  return firstLine(markdown).replace(/^\s*(?:[#>*+-]\s*)+/, '')
}

export function readMarkdown(source: string): ReadText {
  const markdown = normalizeNewlines(source)
  // micromark renders CommonMark with any HTML escaped: the text is what a reader sees.
  const document = parseDocument(`<!doctype html><html><body>${micromark(markdown)}</body></html>`)
  return { title: boundTitle(markdownTitle(markdown)), text: textOf(document.body), markdown }
}
