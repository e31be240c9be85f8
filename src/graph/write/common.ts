// What every write of the graph shares: its refusals, the ETag check of If-Match, the checks that
// a row's references exist in this repository (each repository has a database of its own, so an
// id found here is never another repository's row), the validation of citations, and the marks
// that tell the embedding job which facts and concepts to (re)embed.
import type { TransactionSql } from 'postgres'
import type { Db } from '../../db/sql.ts'
import { isUniqueViolation } from '../../db/conflict.ts'
import { etagOf } from '../../http/etag.ts'
import { HttpError } from '../../http/errors.ts'
import { citedIds, type CitedKind } from '../rules.ts'
import { oversizedDocument, oversizedIndexed } from '../limits.ts'

/**
 * Why the graph refuses a write, in words its caller can act on: each subclass is one HTTP status,
 * which the shared error handler answers (http/errors.ts) and the MCP server turns into a tool
 * error (mcp/server.ts), whoever called the write.
 */
class WriteRefusal extends HttpError {}
/** A request the graph refuses: a missing or foreign reference, a bad citation, a cycle (400). */
export class InvalidWrite extends WriteRefusal {
  constructor(message: string) {
    super(400, message)
  }
}
/** The row the request names does not exist (404). */
export class RowNotFound extends WriteRefusal {
  constructor(message: string) {
    super(404, message)
  }
}
/** The row exists already under its natural key (409, its id in the answer's existing_id). */
export class ExistingRow extends WriteRefusal {
  constructor(
    message: string,
    readonly id: string,
  ) {
    super(409, message, {}, { existing_id: id })
  }
}
/** The row cannot go while others depend on it (409). */
export class StillReferenced extends WriteRefusal {
  constructor(message: string) {
    super(409, message)
  }
}
/** If-Match named another version of the row (412). */
class StaleVersion extends WriteRefusal {
  constructor(message: string) {
    super(412, message)
  }
}

/** Whether an If-Match header (absent: anything goes; `*`: any version) admits the row's current ETag. */
function matches(ifMatch: string | undefined, etag: string): boolean {
  if (ifMatch === undefined) return true
  return ifMatch
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => tag === '*' || tag === etag)
}

export type Table =
  | 'sources'
  | 'source_images'
  | 'facts'
  | 'concepts'
  | 'concept_summaries'
  | 'concept_syntheses'
  | 'investigations'
  | 'reports'

/** The noun a refusal names a table's row by. */
const NOUN: Record<Table, string> = {
  sources: 'source',
  source_images: 'source image',
  facts: 'fact',
  concepts: 'concept',
  concept_summaries: 'summary',
  concept_syntheses: 'synthesis',
  investigations: 'investigation',
  reports: 'report',
}

/**
 * Locks the row for the rest of the transaction and checks If-Match against the representation
 * `current` reads: RowNotFound when there is no row, StaleVersion when the ETag is another's.
 * The lock makes the check and the write one step: a concurrent editor waits, then sees the new ETag.
 */
export async function lockRow<T>(
  tx: TransactionSql,
  table: Table,
  id: string,
  ifMatch: string | undefined,
  current: () => Promise<T | undefined>,
): Promise<T> {
  const [locked] = await tx`SELECT 1 FROM ${tx(table)} WHERE id = ${id} FOR UPDATE`
  const row = locked && (await current())
  if (!row) throw new RowNotFound(`${NOUN[table]} not found`)
  if (!matches(ifMatch, etagOf(row)))
    throw new StaleVersion(`the ${NOUN[table]} changed since that ETag was read (If-Match failed); read it again`)
  return row
}

/** Ids a body names, of one table, under the field that names them. */
export interface References {
  table: Table
  ids: readonly string[]
  field: string
}

/**
 * A query of the first id of `references` that does not exist in this repository, as
 * `(field, noun, id)`, or no row: a statement of its own, or a CTE of a write that must not happen
 * when it finds one.
 */
export function missingReference(sql: Db, references: readonly References[]) {
  const lists = references.filter((list) => list.ids.length > 0)
  if (lists.length === 0) return sql`SELECT NULL::text AS field, NULL::text AS noun, NULL::text AS id WHERE false`
  const parts = lists.map(
    ({ table, ids, field }, i) =>
      sql`SELECT ${i}::int AS n, ${field}::text AS field, ${NOUN[table]}::text AS noun, w.id::text AS id FROM unnest(${ids.map((id) => id.toLowerCase())}::uuid[]) AS w(id)
        WHERE NOT EXISTS (SELECT 1 FROM ${sql(table)} t WHERE t.id = w.id)`,
  )
  const union = parts.reduce((all, part) => sql`${all} UNION ALL ${part}`)
  return sql`SELECT field, noun, id FROM (${union}) m ORDER BY n LIMIT 1`
}

/** The refusal (400) of a missing reference, naming it. */
export function missingReferenceError(missing: { field: string; noun: string; id: string }): InvalidWrite {
  return new InvalidWrite(`${missing.field}: ${missing.noun} ${missing.id} does not exist in this repository`)
}

/**
 * Refuses (400) texts PostgreSQL could not store (graph/limits.ts), naming the field and its size:
 * those `fields` of a row of `table` its btree indexes hold, and, with `document`, the texts of its
 * full-text document (all of them, as they will be: an update passes the row's next values, and
 * the bytes of the aliases it keeps).
 */
export function requireStorable(
  table: Table,
  fields: Record<string, unknown>,
  document?: { row: Record<string, unknown>; aliasBytes?: number },
): void {
  const problem =
    oversizedIndexed(table, fields) ?? (document && oversizedDocument(table, document.row, document.aliasBytes))
  if (problem) throw new InvalidWrite(problem)
}

/** Refuses (400) ids of `table` that do not exist in this repository, naming the first. */
export async function requireRows(
  tx: TransactionSql,
  table: Table,
  ids: readonly string[],
  field: string,
): Promise<void> {
  if (ids.length === 0) return
  const [missing] = await tx<
    { field: string; noun: string; id: string }[]
  >`${missingReference(tx, [{ table, ids, field }])}`
  if (missing) throw missingReferenceError(missing)
}

const CITED_TABLE: Record<CitedKind, Table> = { fact: 'facts', concept: 'concepts' }

/** Refuses (400) a text citing a fact or concept that does not exist in this repository, naming it. */
export async function requireCitations(tx: TransactionSql, text: string, field: string): Promise<void> {
  const cited = citedIds(text)
  for (const kind of ['fact', 'concept'] as const)
    await requireRows(tx, CITED_TABLE[kind], cited[kind], `${field} cites a ${kind} that does not exist`)
}

export type EmbeddedKind = 'facts' | 'concepts'

/** Marks rows whose vectors are out of date (created, edited, deleted): the embed_changes job takes them. */
export async function markForEmbedding(tx: TransactionSql, kind: EmbeddedKind, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await tx`
    INSERT INTO embedding_changes (kind, id) SELECT ${kind}, unnest(${ids as string[]}::uuid[])
    ON CONFLICT (kind, id) DO UPDATE SET changed_at = clock_timestamp()`
}

/** Where a deleted fact or concept was still cited: the rows whose citations it breaks. */
export interface BrokenCitation {
  kind: 'summary' | 'synthesis' | 'report'
  id: string
}

/**
 * The summaries, syntheses and reports that cite `id` (of `kind`) in their text or their lists:
 * what deleting it breaks. They stay as they are (a text is its author's); the answer names them.
 */
export function citationsOf(tx: TransactionSql, kind: CitedKind, id: string): Promise<BrokenCitation[]> {
  const pattern = `%(<${kind}:${id}>)%`
  const lists = kind === 'fact' ? tx`OR ${id}::uuid = ANY(covered_fact_ids)` : tx``
  const synthesisLists =
    kind === 'fact' ? tx`OR ${id}::uuid = ANY(embedded_image_fact_ids)` : tx`OR ${id}::uuid = ANY(covered_concept_ids)`
  return tx<BrokenCitation[]>`
    SELECT 'summary' AS kind, id::text FROM concept_summaries WHERE content ILIKE ${pattern} ${lists}
    UNION ALL SELECT 'synthesis', id::text FROM concept_syntheses WHERE content ILIKE ${pattern} ${synthesisLists}
    UNION ALL SELECT 'report', id::text FROM reports WHERE body_md ILIKE ${pattern}
    ORDER BY 1, 2`
}

/**
 * Writes a row with a natural key: ExistingRow (with the id `existing` finds) when another row
 * holds the key already, checked first and again if the write's unique index still says so (a
 * concurrent twin). The write runs in a savepoint, so the transaction survives its violation.
 */
export async function uniqueWrite<T>(
  tx: TransactionSql,
  message: string,
  existing: () => Promise<string | undefined>,
  write: () => Promise<T>,
): Promise<T> {
  const found = await existing()
  if (found) throw new ExistingRow(message, found)
  try {
    return (await tx.savepoint(() => write())) as T
  } catch (error) {
    if (!isUniqueViolation(error)) throw error
    throw new ExistingRow(message, (await existing())!)
  }
}
