// Writing concepts with their aliases. A concept's identity is its name and context, case-folded
// (graph/rules.ts conceptKey, the unique index concepts_name_context_key): a second concept of the
// same identity is refused with the existing one's id, as the import would reuse it.
import type { Sql, TransactionSql } from 'postgres'
import type { Static } from '@sinclair/typebox'
import type { ConceptCreate, ConceptUpdate } from './schemas.ts'
import { getConcept } from '../store.ts'
import type { ConceptDetail } from '../schemas.ts'
import { citationsOf, lockRow, markForEmbedding, requireStorable, uniqueWrite, type BrokenCitation } from './common.ts'

export type ConceptInput = Static<typeof ConceptCreate>
export type ConceptChanges = Static<typeof ConceptUpdate>

const detail = async (tx: TransactionSql, id: string) => (await getConcept(tx, id))!
const EXISTS = 'a concept of this name and context exists already (compared case-insensitively)'

/** The id of the concept of this identity other than `except`, if any. */
async function sameIdentity(
  tx: TransactionSql,
  name: string,
  context: string,
  except: string | null,
): Promise<string | undefined> {
  const [row] = await tx<{ id: string }[]>`
    SELECT id FROM concepts WHERE lower(canonical_name) = lower(${name}) AND lower(context) = lower(${context}) AND id IS DISTINCT FROM ${except}::uuid`
  return row?.id
}

async function replaceAliases(tx: TransactionSql, id: string, aliases: string[] | undefined): Promise<void> {
  if (aliases === undefined) return
  await tx`DELETE FROM concept_aliases WHERE concept_id = ${id}`
  if (aliases.length > 0)
    await tx`INSERT INTO concept_aliases (concept_id, alias_text) SELECT ${id}, unnest(${aliases}::text[]) ON CONFLICT DO NOTHING`
}

export async function createConcept(sql: Sql, input: ConceptInput): Promise<ConceptDetail> {
  requireStorable('concepts', input, { row: input })
  return await sql.begin(async (tx) => {
    const id = crypto.randomUUID()
    const context = input.context ?? ''
    await uniqueWrite(
      tx,
      EXISTS,
      () => sameIdentity(tx, input.canonical_name, context, null),
      () => tx`
        INSERT INTO concepts (id, canonical_name, context, description, promptset_hash)
        VALUES (${id}, ${input.canonical_name}, ${context}, ${input.description ?? ''}, ${input.promptset_hash ?? ''})`,
    )
    await replaceAliases(tx, id, input.aliases)
    await markForEmbedding(tx, 'concepts', [id])
    return await detail(tx, id)
  })
}

/** Edits a concept; `aliases`, when given, replace its aliases. */
export async function updateConcept(
  sql: Sql,
  id: string,
  changes: ConceptChanges,
  options: { ifMatch?: string },
): Promise<ConceptDetail> {
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'concepts', id, options.ifMatch, () => getConcept(tx, id))
    const next = {
      canonical_name: changes.canonical_name ?? current.canonical_name,
      context: changes.context ?? current.context,
      description: changes.description ?? current.description,
      promptset_hash: changes.promptset_hash ?? current.promptset_hash,
    }
    // Its document is the name, the aliases and the description: any of them changed, it is measured as it will be.
    const documentChanged =
      changes.canonical_name !== undefined || changes.description !== undefined || changes.aliases !== undefined
    const keptAliases = async () =>
      (await tx<{ bytes: number }[]>`SELECT octet_length(aliases_text) AS bytes FROM concepts WHERE id = ${id}`)[0]!
        .bytes
    const document = documentChanged
      ? { row: { ...next, aliases: changes.aliases }, aliasBytes: changes.aliases ? 0 : await keptAliases() }
      : undefined
    requireStorable('concepts', changes, document)
    await uniqueWrite(
      tx,
      EXISTS,
      () => sameIdentity(tx, next.canonical_name, next.context, id),
      () => tx`
        UPDATE concepts SET canonical_name = ${next.canonical_name}, context = ${next.context}, description = ${next.description}, promptset_hash = ${next.promptset_hash}
        WHERE id = ${id}`,
    )
    await replaceAliases(tx, id, changes.aliases)
    // The embedded text is the name and the description (vectors/embed-jobs.ts).
    if (next.canonical_name !== current.canonical_name || next.description !== current.description)
      await markForEmbedding(tx, 'concepts', [id])
    return await detail(tx, id)
  })
}

export interface DeletedConcept {
  id: string
  /** What went with it: its links to facts and its summaries. */
  removed: { facts: number; summaries: number }
  /** Syntheses and reports (and other concepts' summaries) that still cite the concept. */
  broken_citations: BrokenCitation[]
}

export async function deleteConcept(sql: Sql, id: string, options: { ifMatch?: string }): Promise<DeletedConcept> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'concepts', id, options.ifMatch, () => getConcept(tx, id))
    const [removed] = await tx<DeletedConcept['removed'][]>`
      SELECT (SELECT count(*)::int FROM fact_concepts WHERE concept_id = ${id}) AS facts,
        (SELECT count(*)::int FROM concept_summaries WHERE concept_id = ${id}) AS summaries`
    await tx`DELETE FROM concepts WHERE id = ${id}`
    await markForEmbedding(tx, 'concepts', [id])
    return { id, removed: removed!, broken_citations: await citationsOf(tx, 'concept', id) }
  })
}
