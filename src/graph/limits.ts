// What PostgreSQL can hold of a row's texts, in bytes, however the row arrives (the import, the
// write API, the MCP tools): a btree index entry, and a full-text document (docs/limits.md).
// Bounds in characters do not suffice: 2,000 CJK characters are 6,000 bytes. A value past these
// would fail its statement with a raw "index row size … exceeds btree … maximum" or "string is
// too long for tsvector", naming indexes; checked first, it is refused naming the field.

/**
 * A btree index entry holds at most 2704 bytes (PostgreSQL's limit for a page of 8 KiB). 2600
 * leaves room for the entry's headers and a UUID beside the text; an index of two text fields
 * splits it. Lower-casing (the concept and synthesis indexes) can lengthen a string, so that form
 * is measured too.
 */
const INDEX_ENTRY_BYTES = 2600

/** The text fields each table holds in a btree index (src/db/migrations/repository/), those of one index together. */
const INDEXED_TEXT: Readonly<Record<string, readonly string[]>> = {
  sources: ['url'],
  concepts: ['canonical_name', 'context'],
  concept_aliases: ['alias_text'],
  concept_syntheses: ['canonical_name'],
  investigations: ['title', 'topic'],
  reports: ['title'],
}

/**
 * A tsvector holds at most 1 MiB of lexemes and positions, and a text's document can take about
 * three times the text's bytes (each distinct word with its positions; a URL or a hyphenated word
 * indexed whole and in its parts): a quarter of it keeps every text up to this size storable.
 */
const FULLTEXT_BYTES = 256 * 1024

/** The text fields each table's full-text document is made of (0006, 0008): a concept's aliases are one text, joined by spaces. */
const FULLTEXT: Readonly<Record<string, readonly string[]>> = {
  facts: ['text'],
  concepts: ['canonical_name', 'aliases', 'description'],
}

/** A field's bytes: a list's items joined by one byte each (a concept's aliases_text). */
function bytesOf(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value)
  if (Array.isArray(value))
    return value.reduce((sum: number, item) => sum + bytesOf(item), Math.max(value.length - 1, 0))
  return 0
}

const indexedBytes = (value: string) => Math.max(Buffer.byteLength(value), Buffer.byteLength(value.toLowerCase()))

/** "a", "a and b", "a, b and c". */
const listed = (names: readonly string[]) =>
  names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`

/**
 * What of `row`, a row of `table` (or the fields a write sets), no btree index could hold, as a
 * sentence naming the field and its size (`canonical_name is 6000 bytes, at most 1300`), or undefined.
 */
export function oversizedIndexed(table: string, row: Readonly<Record<string, unknown>>): string | undefined {
  const indexed = INDEXED_TEXT[table] ?? []
  const most = Math.floor(INDEX_ENTRY_BYTES / indexed.length)
  for (const field of indexed) {
    const value = row[field]
    if (typeof value !== 'string') continue
    const bytes = indexedBytes(value)
    if (bytes > most) return `${field} is ${bytes} bytes, at most ${most}`
  }
  // A concept's aliases, given with it, are rows of concept_aliases.
  if (table === 'concepts' && Array.isArray(row.aliases)) {
    for (const alias of row.aliases as unknown[]) {
      const bytes = typeof alias === 'string' ? indexedBytes(alias) : 0
      if (bytes > INDEX_ENTRY_BYTES) return `aliases: an alias is ${bytes} bytes, at most ${INDEX_ENTRY_BYTES}`
    }
  }
  return undefined
}

/**
 * Whether the texts of `row` make a full-text document past FULLTEXT_BYTES, as a sentence naming
 * the fields and their size, or undefined. `aliasBytes`: the bytes of a concept's aliases the row
 * does not carry (an update that keeps them).
 */
export function oversizedDocument(
  table: string,
  row: Readonly<Record<string, unknown>>,
  aliasBytes = 0,
): string | undefined {
  const document = FULLTEXT[table]
  if (!document) return undefined
  const counted = document.filter((field) => row[field] !== undefined || (field === 'aliases' && aliasBytes > 0))
  const bytes = counted.reduce((sum, field) => sum + (row[field] === undefined ? aliasBytes : bytesOf(row[field])), 0)
  if (bytes <= FULLTEXT_BYTES) return undefined
  const subject =
    counted.length === 1 ? `${counted[0]} is ${bytes} bytes` : `${listed(counted)} are ${bytes} bytes together`
  return `${subject}, at most ${FULLTEXT_BYTES} (its full-text document)`
}

/** Either problem of a whole row (the import's rows, a created one). */
export const oversizedText = (table: string, row: Readonly<Record<string, unknown>>) =>
  oversizedIndexed(table, row) ?? oversizedDocument(table, row)
