// A chunk's Markdown as the prose it says: paragraphs and list items, each on one line, with the
// Markdown syntax taken off and the words kept. What is not prose is left out here: headings,
// tables, code, HTML comments (the chunker's page markers), images, captions set apart in
// emphasis, link definitions and lines of a table of contents (a list item that is only a link,
// a line with dot leaders).

const LIST_ITEM = /^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+/
const ATX_HEADING = /^ {0,3}#{1,6}(?:\s|$)/
const SETEXT_UNDERLINE = /^ {0,3}(?:=+|-+)\s*$/
const THEMATIC_BREAK = /^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$/
const FENCE = /^ {0,3}(`{3,}|~{3,})/
const LINK_DEFINITION = /^ {0,3}\[[^\]]+\]:\s*\S/
const DOT_LEADERS = /(?:\.\s?){4,}\s*\d*\s*$|…{2,}/
const ONLY_LINK = /^\s*!?\[[^\]]*\]\([^)]*\)\s*$/
const WHOLLY_EMPHASISED = /^\s*(\*{1,2}|_{1,2})(?!\s)[^*_]+(?<!\s)\1\s*$/
// C0 controls but tab and line feed, DEL, C1 controls and the replacement character: what a
// binary file read as text leaves.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd]/g

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }

const SET_ASIDE_BASE = 0xe000
const SET_ASIDE = /[\ue000-\ue07f]/g

/** Inline Markdown and HTML reduced to the text a reader sees. */
function cleanInline(text: string): string {
  // An escaped character is set aside first, as a private-use character, so that no rule below
  // reads it as syntax; it is put back last.
  return (
    text
      .replace(SET_ASIDE, '')
      .replace(/\\([\\`*_{}[\]()#+\-.!|>~<])/g, (_, char: string) =>
        String.fromCharCode(SET_ASIDE_BASE + char.charCodeAt(0)),
      )
      .replace(/!\[[^\]]*\]\([^)]*\)/g, ' ')
      .replace(/!\[[^\]]*\]\[[^\]]*\]/g, ' ')
      .replace(/\[\^[^\]]+\]/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
      .replace(/<((?:https?|mailto):[^>\s]+)>/g, '$1')
      // One pass for code spans and tags, so that a span's `<id>` is kept as text.
      .replace(/(`+)([^`]*)\1|<\/?[A-Za-z][^>]*>/g, (_, ticks?: string, code?: string) => (ticks ? code! : ' '))
      .replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, '$2')
      .replace(/(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])/g, '$1')
      .replace(/(?<![\w_])_(?=\S)([^_]+?)(?<=\S)_(?![\w_])/g, '$1')
      .replace(/~~(?=\S)(.+?)(?<=\S)~~/g, '$1')
      .replace(SET_ASIDE, (char) => String.fromCharCode(char.charCodeAt(0) - SET_ASIDE_BASE))
      .replace(/&(amp|lt|gt|quot|apos|nbsp);/g, (_, name: string) => ENTITIES[name]!)
      .replace(/&#(\d{1,6});/g, (whole, code: string) => fromCodePoint(Number(code)) ?? whole)
      .replace(/\s+/g, ' ')
      .trim()
  )
}

function fromCodePoint(code: number): string | undefined {
  return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : undefined
}

/** The prose blocks of a chunk's Markdown, in order, each cleaned to one line of text. */
export function proseBlocks(markdown: string): string[] {
  const lines = markdown
    .replace(/\r\n?/g, '\n')
    .replace(/<!--[\s\S]*?(?:-->|$)/g, '\n')
    .replace(CONTROL, '')
    .split('\n')
  const blocks: string[] = []
  let current: string[] = []
  let inList = false
  const flush = () => {
    if (current.length > 0) {
      const raw = current.join(' ')
      const keep = !ONLY_LINK.test(raw) && !WHOLLY_EMPHASISED.test(raw) && !DOT_LEADERS.test(raw)
      const text = keep ? cleanInline(raw) : ''
      if (text !== '') blocks.push(text)
    }
    current = []
  }
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!
    const fence = FENCE.exec(line)
    if (fence) {
      flush()
      inList = false
      while (++i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!));
      continue
    }
    if (line.trim() === '') {
      flush()
      continue
    }
    if (/^ {0,3}>/.test(line)) line = line.replace(/^(?: {0,3}>\s?)+/, '')
    // A line under a paragraph made of = or - makes that paragraph a heading.
    if (SETEXT_UNDERLINE.test(line) && current.length > 0) {
      current = []
      continue
    }
    if (
      ATX_HEADING.test(line) ||
      THEMATIC_BREAK.test(line) ||
      LINK_DEFINITION.test(line) ||
      /^\s*\|/.test(line) ||
      /^\s*\|?\s*:?-{3,}:?\s*\|/.test(line)
    ) {
      flush()
      continue
    }
    if (LIST_ITEM.test(line)) {
      flush()
      inList = true
      current.push(line.replace(LIST_ITEM, ''))
      continue
    }
    // Indented lines outside a list are code.
    if (!inList && current.length === 0 && /^(?: {4}|\t)/.test(line)) continue
    if (current.length === 0) inList = false
    current.push(line.trim())
  }
  flush()
  return blocks
}
