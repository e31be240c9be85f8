// The rules a graph's rows obey however they arrive, by a bundle's import (bundle/import/) or
// by the write API (graph/write/): a fact's identity is the hash of its normalized text, a
// concept's its name and context case-folded, and citations in summaries, syntheses and reports
// are `[text](<fact:UUID>)`, `![alt](<fact:UUID>)` and `[name](<concept:UUID>)`
// (docs/spec/bundle.md §2). Pure functions only (rule graph-rules-pure of .dependency-cruiser.cjs):
// the bundle's codec, which knows no database, uses them too.
import { hash } from 'node:crypto'

// Go's unicode.IsSpace, which the other implementation collapses on: JavaScript's \s minus
// U+FEFF, plus U+0085 (NEL).
const WHITESPACE_RUN = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g

export const sha256Hex = (text: string) => hash('sha256', text, 'hex')

/** A fact's text as deduplication sees it: NFC, whitespace runs collapsed to one space, trimmed. */
export function normalizeFactText(text: string): string {
  return text.normalize('NFC').replace(WHITESPACE_RUN, ' ').replace(/^ | $/g, '')
}

/**
 * `content_hash`: hex SHA-256 of the normalized text, the fact's identity (the unique index
 * facts_content_hash_key). Always recomputed from the text; a hash a client or a bundle sends is
 * never trusted.
 */
export function factContentHash(text: string): string {
  return sha256Hex(normalizeFactText(text))
}

/**
 * A fact's statuses: the bundle's three (docs/spec/bundle.md) and `stale`, a fact a changed source
 * no longer says and no other source cites (decisions §6), which the pipeline marks and never deletes.
 */
export const FACT_STATUSES = ['new', 'stable', 'to_delete', 'stale'] as const

/** The statuses of a source whose chunks are there to draw facts from: parsed, or processed before (decisions §6). */
export const PROCESSABLE_SOURCE_STATUSES: readonly string[] = ['parsed', 'processed']

/**
 * A concept's identity: its name and context, case-folded, as the unique index
 * concepts_name_context_key (lower(canonical_name), lower(context)) compares them.
 */
export function conceptKey(canonicalName: string, context: string): string {
  return `${canonicalName.toLowerCase()}\u0000${context.toLowerCase()}`
}

export type CitedKind = 'fact' | 'concept'

/** The link target of a citation: `](<kind:UUID>)`, UUID in either case. */
export const CITATION =
  /\]\(<(fact|concept):([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})>\)/g

/** Every UUID cited in `text`, lowercased, by kind. */
export function citedIds(text: string): { fact: string[]; concept: string[] } {
  const found = { fact: [] as string[], concept: [] as string[] }
  for (const match of text.matchAll(CITATION)) found[match[1] as CitedKind].push(match[2]!.toLowerCase())
  return found
}
