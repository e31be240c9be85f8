// A document's Markdown in chunks a fact can cite (chunk_index) and a reader can show. The cut
// is made at natural boundaries: a heading always starts a chunk, then blocks (paragraphs,
// lists, tables, fenced code) are gathered up to a target size. A block larger than the hard
// maximum is cut between lines (a table keeps its header in each piece, a code block is
// re-fenced), a line larger than it between words. The function is pure and a section's chunks
// depend on that section alone, so the same Markdown always gives the same chunks, and an edit
// in one section leaves the other sections' chunks as they were (their index moves only if the
// edit changes how many chunks come before them).
import type { Chunk } from './types.ts'

/** The line that opens each page in the Markdown: an HTML comment, invisible once rendered, that the chunker reads. */
export function pageMarker(page: number): string {
  return `<!-- page ${page} -->`
}
const PAGE_MARKER = /^<!-- page (\d+) -->$/

export interface ChunkOptions {
  /** Gather blocks up to this many characters. */
  target: number
  /** No chunk is longer, whatever it takes. */
  max: number
  /** The Markdown is a PDF's: `<!-- page N -->` lines set the page of what follows. */
  pages: boolean
}

const DEFAULT_CHUNK_OPTIONS: Readonly<ChunkOptions> = Object.freeze({ target: 1500, max: 3000, pages: false })

type Block =
  | { kind: 'heading'; level: number; title: string; text: string }
  | { kind: 'page'; page: number; text: string }
  | { kind: 'content'; text: string; fence?: string; table?: boolean }

function blocksOf(markdown: string, pages: boolean): Block[] {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n')
  const blocks: Block[] = []
  let current: string[] = []
  const flush = () => {
    if (current.length > 0)
      blocks.push({
        kind: 'content',
        text: current.join('\n'),
        table: current.every((line) => /^\s*\|/.test(line)) && current.length >= 2,
      })
    current = []
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const fence = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (fence) {
      flush()
      const marker = fence[1]!
      const body = [line]
      while (++i < lines.length) {
        body.push(lines[i]!)
        if (lines[i]!.trimStart().startsWith(marker) && lines[i]!.trim().replace(/[`~]/g, '') === '') break
      }
      blocks.push({ kind: 'content', text: body.join('\n'), fence: line })
      continue
    }
    const page = pages ? PAGE_MARKER.exec(line) : null
    if (page) {
      flush()
      blocks.push({ kind: 'page', page: Number(page[1]), text: line })
      continue
    }
    const heading = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/.exec(line)
    if (heading) {
      flush()
      blocks.push({ kind: 'heading', level: heading[1]!.length, title: heading[2]!, text: line })
      continue
    }
    if (line.trim() === '') flush()
    else current.push(line)
  }
  flush()
  return blocks
}

/** Cuts a too-long line between words, at `max` characters at the most. */
function cutLine(line: string, max: number): string[] {
  const pieces: string[] = []
  let rest = line
  while (rest.length > max) {
    const space = rest.lastIndexOf(' ', max)
    const at = space > max / 2 ? space : max
    pieces.push(rest.slice(0, at).trimEnd())
    rest = rest.slice(at).trimStart()
  }
  if (rest !== '') pieces.push(rest)
  return pieces
}

/** A block too long for one chunk, as pieces that each fit in `target` where its lines allow, in `max` always. */
function splitBlock(block: Extract<Block, { kind: 'content' }>, target: number, max: number): string[] {
  let lines = block.text.split('\n')
  let head: string[] = []
  let tail: string[] = []
  if (block.fence) {
    const marker = /[`~]{3,}/.exec(block.fence)![0]
    const closed = lines.length > 1 && /^\s*[`~]{3,}\s*$/.test(lines[lines.length - 1]!)
    head = [lines[0]!]
    tail = [closed ? lines[lines.length - 1]! : marker]
    lines = lines.slice(1, closed ? -1 : undefined)
  } else if (block.table) {
    head = lines.slice(0, 2)
    lines = lines.slice(2)
  }
  const frame = [...head, ...tail].reduce((size, line) => size + line.length + 1, 0)
  const room = Math.max(1, max - frame)
  const pieces: string[] = []
  let piece: string[] = []
  let size = frame
  for (const line of lines.flatMap((line) => cutLine(line, room))) {
    if (piece.length > 0 && size + line.length + 1 > target) {
      pieces.push([...head, ...piece, ...tail].join('\n'))
      piece = []
      size = frame
    }
    piece.push(line)
    size += line.length + 1
  }
  if (piece.length > 0 || pieces.length === 0) pieces.push([...head, ...piece, ...tail].join('\n'))
  return pieces
}

export function chunkMarkdown(markdown: string, options: Partial<ChunkOptions> = {}): Chunk[] {
  const { target, max, pages } = { ...DEFAULT_CHUNK_OPTIONS, ...options }
  const chunks: Chunk[] = []
  const path: { level: number; title: string }[] = []
  let parts: string[] = []
  let size = 0
  let page: number | undefined
  let pageStart: number | undefined
  let pageEnd: number | undefined
  let pendingMarker: string | undefined
  const close = () => {
    if (parts.length > 0) {
      const chunk: Chunk = {
        index: chunks.length,
        text: parts.join('\n\n'),
        headingPath: path.map((heading) => heading.title),
      }
      if (pageStart !== undefined) Object.assign(chunk, { pageStart, pageEnd })
      chunks.push(chunk)
    }
    parts = []
    size = 0
    pageStart = pageEnd = undefined
  }
  const add = (text: string) => {
    const marker = pendingMarker === undefined ? 0 : pendingMarker.length + 2
    if (parts.length > 0 && size + marker + 2 + text.length > target) close()
    // A page change inside a chunk stays visible in it; at a chunk's start, pageStart says it.
    if (pendingMarker !== undefined && parts.length > 0) {
      parts.push(pendingMarker)
      size += marker
    }
    pendingMarker = undefined
    parts.push(text)
    size += (parts.length > 1 ? 2 : 0) + text.length
    pageStart ??= page
    pageEnd = page
  }
  for (const block of blocksOf(markdown, pages)) {
    if (block.kind === 'page') {
      page = block.page
      pendingMarker = block.text
      continue
    }
    if (block.kind === 'heading') {
      close()
      while (path.length > 0 && path[path.length - 1]!.level >= block.level) path.pop()
      path.push({ level: block.level, title: block.title })
      for (const piece of cutLine(block.text, max)) add(piece)
      continue
    }
    if (block.text.length <= max) add(block.text)
    else for (const piece of splitBlock(block, target, max)) add(piece)
  }
  close()
  return chunks
}
