// Writing concepts with their aliases. A concept's identity is its name and context, case-folded
// (graph/rules.ts conceptKey, the unique index concepts_name_context_key): a second concept of the
// same identity is refused with the existing one's id, as the import would reuse it.
import type { Sql, TransactionSql } from 'postgres'
import type { Static } from '@sinclair/typebox'
import type {
  ConceptCreate,
  ConceptMerge,
  ConceptSplit,
  ConceptUpdate,
  MergedConcept,
  SplitConcept,
} from './schemas.ts'
import { getConcept } from '../store.ts'
import type { ConceptDetail } from '../schemas.ts'
import {
  citationsOf,
  InvalidWrite,
  lockRow,
  markForEmbedding,
  requireRows,
  requireStorable,
  uniqueWrite,
  type BrokenCitation,
} from './common.ts'

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

/** A new concept's row (ExistingRow when its identity is taken): its id. */
async function insertConcept(tx: TransactionSql, input: Omit<ConceptInput, 'aliases'>): Promise<string> {
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
  return id
}

export async function createConcept(sql: Sql, input: ConceptInput): Promise<ConceptDetail> {
  requireStorable('concepts', input, { row: input })
  return await sql.begin(async (tx) => {
    const id = await insertConcept(tx, input)
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

const lowerUnique = (ids: readonly string[]) => [...new Set(ids.map((id) => id.toLowerCase()))]

/** All of a concept's aliases (its detail shows the first RELATED_LIMIT). */
async function aliasesOf(tx: TransactionSql, ids: readonly string[]): Promise<string[]> {
  const rows = await tx<{ alias_text: string }[]>`
    SELECT alias_text FROM concept_aliases WHERE concept_id = ANY(${ids as string[]}::uuid[]) ORDER BY alias_text`
  return rows.map((row) => row.alias_text)
}

/**
 * Merges `input.concept_ids` into concept `id` (its If-Match checked): their names and aliases
 * become its aliases, their fact links and summaries (numbered after its own) its own, and every
 * citation of them in a summary, a synthesis or a report, and a synthesis's covered concepts,
 * names it instead, so that deleting them leaves no citation dangling. Its description, if empty,
 * becomes the first merged one's. All or nothing: a refusal writes nothing.
 */
export async function mergeConcepts(
  sql: Sql,
  id: string,
  input: Static<typeof ConceptMerge>,
  options: { ifMatch?: string },
): Promise<Static<typeof MergedConcept>> {
  const merged = lowerUnique(input.concept_ids)
  if (merged.includes(id.toLowerCase())) throw new InvalidWrite('concept_ids: a concept cannot be merged into itself')
  return await sql.begin(async (tx) => {
    const target = await lockRow(tx, 'concepts', id, options.ifMatch, () => getConcept(tx, id))
    await requireRows(tx, 'concepts', merged, 'concept_ids')
    const sources = await tx<{ canonical_name: string; description: string }[]>`
      SELECT canonical_name, description FROM concepts WHERE id = ANY(${merged}::uuid[])
      ORDER BY array_position(${merged}::uuid[], id) FOR UPDATE`
    const kept = await aliasesOf(tx, [target.id])
    const name = target.canonical_name.toLowerCase()
    const gained = [
      ...new Set([...sources.map((source) => source.canonical_name), ...(await aliasesOf(tx, merged))]),
    ].filter((alias) => alias.toLowerCase() !== name && !kept.includes(alias))
    const description = target.description || (sources.find((source) => source.description)?.description ?? '')
    requireStorable('concepts', {}, { row: { ...target, description, aliases: [...kept, ...gained] } })

    if (description !== target.description)
      await tx`UPDATE concepts SET description = ${description} WHERE id = ${target.id}`
    if (gained.length > 0)
      await tx`INSERT INTO concept_aliases (concept_id, alias_text) SELECT ${target.id}, unnest(${gained}::text[])`
    const linked = await tx`
      INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
      SELECT fact_id, ${target.id}, promptset_hash FROM fact_concepts WHERE concept_id = ANY(${merged}::uuid[])
      ON CONFLICT DO NOTHING`
    // After its own, in the order the merged concepts were named, each one's in its order.
    const moved = await tx`
      UPDATE concept_summaries s SET concept_id = ${target.id},
        sequence_num = (SELECT coalesce(max(sequence_num), -1) FROM concept_summaries WHERE concept_id = ${target.id}) + m.n
      FROM (SELECT id, row_number() OVER (ORDER BY array_position(${merged}::uuid[], concept_id), sequence_num) AS n
            FROM concept_summaries WHERE concept_id = ANY(${merged}::uuid[])) m
      WHERE s.id = m.id`
    const rewritten = await recite(tx, merged, target.id)
    await tx`DELETE FROM concepts WHERE id = ANY(${merged}::uuid[])`
    await markForEmbedding(tx, 'concepts', [target.id, ...merged])
    return {
      concept: await detail(tx, target.id),
      merged: { concepts: merged.length, facts: linked.count, aliases: gained.length, summaries: moved.count },
      rewritten,
    }
  })
}

/**
 * Makes every citation of the concepts `from` (`[name](<concept:UUID>)`, the UUID in either case)
 * and every synthesis's covered concept among them name concept `to`: the rows changed.
 */
async function recite(tx: TransactionSql, from: string[], to: string): Promise<BrokenCitation[]> {
  // The ids are UUIDs (the body's schema): nothing in them is special to a regular expression.
  const pattern = `\\]\\(<concept:(${from.join('|')})>\\)`
  const replacement = `](<concept:${to}>)`
  const summaries = await tx<{ id: string }[]>`
    UPDATE concept_summaries SET content = regexp_replace(content, ${pattern}, ${replacement}, 'gi')
    WHERE content ~* ${pattern} RETURNING id::text`
  const syntheses = await tx<{ id: string }[]>`
    UPDATE concept_syntheses SET
      content = regexp_replace(content, ${pattern}, ${replacement}, 'gi'),
      covered_concept_ids = ARRAY(
        SELECT c FROM (
          SELECT CASE WHEN u.c = ANY(${from}::uuid[]) THEN ${to}::uuid ELSE u.c END AS c, u.n
          FROM unnest(covered_concept_ids) WITH ORDINALITY AS u(c, n)) m
        GROUP BY c ORDER BY min(n))
    WHERE content ~* ${pattern} OR covered_concept_ids && ${from}::uuid[] RETURNING id::text`
  const reports = await tx<{ id: string }[]>`
    UPDATE reports SET body_md = regexp_replace(body_md, ${pattern}, ${replacement}, 'gi')
    WHERE body_md ~* ${pattern} RETURNING id::text`
  const rows = (kind: BrokenCitation['kind'], ids: { id: string }[]) => ids.map((row) => ({ kind, id: row.id }))
  return [...rows('summary', summaries), ...rows('synthesis', syntheses), ...rows('report', reports)]
}

/**
 * Splits a new concept (`input`'s name and context, which no concept may hold) off concept `id`
 * (its If-Match checked), taking the links of `fact_ids` (each linked to it) and the aliases named
 * (each one of its own). Its summaries stay: the facts they cite are all still there.
 */
export async function splitConcept(
  sql: Sql,
  id: string,
  { fact_ids = [], aliases = [], ...input }: Static<typeof ConceptSplit>,
  options: { ifMatch?: string },
): Promise<Static<typeof SplitConcept>> {
  requireStorable('concepts', input, { row: { ...input, aliases } })
  const facts = lowerUnique(fact_ids)
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'concepts', id, options.ifMatch, () => getConcept(tx, id))
    const [unlinked] = await tx<{ id: string }[]>`
      SELECT f.id::text FROM unnest(${facts}::uuid[]) WITH ORDINALITY AS f(id, n)
      WHERE NOT EXISTS (SELECT 1 FROM fact_concepts WHERE fact_id = f.id AND concept_id = ${id})
      ORDER BY f.n LIMIT 1`
    if (unlinked) throw new InvalidWrite(`fact_ids: fact ${unlinked.id} is not linked to this concept`)
    const own = new Set(await aliasesOf(tx, [id]))
    const foreign = aliases.find((alias) => !own.has(alias))
    if (foreign !== undefined)
      throw new InvalidWrite(`aliases: ${JSON.stringify(foreign)} is not an alias of this concept`)
    const created = await insertConcept(tx, input)
    await tx`UPDATE concept_aliases SET concept_id = ${created} WHERE concept_id = ${id} AND alias_text = ANY(${aliases}::text[])`
    await tx`UPDATE fact_concepts SET concept_id = ${created} WHERE concept_id = ${id} AND fact_id = ANY(${facts}::uuid[])`
    await markForEmbedding(tx, 'concepts', [created])
    return { concept: await detail(tx, id), created: await detail(tx, created) }
  })
}
