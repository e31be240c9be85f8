// The content hashes a bundle carries beside its rows (docs/spec/bundle.md §2).
import { createHash } from 'node:crypto'

// Go's unicode.IsSpace, which the other implementation collapses on: JavaScript's \s minus
// U+FEFF, plus U+0085 (NEL).
const WHITESPACE_RUN = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex')

/** A fact's text as deduplication sees it: NFC, whitespace runs collapsed to one space, trimmed. */
export function normalizeFactText(text: string): string {
  return text.normalize('NFC').replace(WHITESPACE_RUN, ' ').replace(/^ | $/g, '')
}

/** `content_hash`: hex SHA-256 of the normalized text. The importer recomputes it and never trusts the field. */
export function factContentHash(text: string): string {
  return sha256Hex(normalizeFactText(text))
}

/** A source's `sha256`: hex SHA-256 of url + parsed_text + parsed_markdown + parsed_title. */
export function sourceSha256(source: { url: string; parsed_text?: string; parsed_markdown?: string; parsed_title?: string }): string {
  return sha256Hex(source.url + (source.parsed_text ?? '') + (source.parsed_markdown ?? '') + (source.parsed_title ?? ''))
}
