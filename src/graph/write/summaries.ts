// Writing a concept's summaries and the syntheses of concept groups. Their texts cite facts and
// concepts (graph/rules.ts), and their lists name facts, summaries and concepts: every one must
// exist in this repository, or the write is refused naming it. A summary is unique per (concept,
// sequence_num), a synthesis per lower(canonical_name), as the import keys them.
import type { Sql, TransactionSql } from 'postgres'
import type { SummaryCreate, SynthesisCreate } from './schemas.ts'
import type { Static } from '@sinclair/typebox'
import type { Summary as SummarySchema, Synthesis as SynthesisSchema } from './schemas.ts'
import { isoTimestamp } from '../../db/sql.ts'
import { lockRow, requireCitations, requireRows, requireStorable, RowNotFound, uniqueWrite } from './common.ts'

export type SummaryInput = Static<typeof SummaryCreate>
export type SynthesisInput = Static<typeof SynthesisCreate>
export type Summary = Static<typeof SummarySchema>
export type Synthesis = Static<typeof SynthesisSchema>

const lower = (ids: readonly string[] | undefined) => ids?.map((id) => id.toLowerCase())

async function summary(tx: TransactionSql, conceptId: string, id: string): Promise<Summary | undefined> {
  const [row] = await tx<Summary[]>`
    SELECT id, concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids::text[], model, ${isoTimestamp(tx, 'created_at')} AS created_at
    FROM concept_summaries WHERE id = ${id} AND concept_id = ${conceptId}`
  return row
}

async function synthesis(tx: TransactionSql, id: string): Promise<Synthesis | undefined> {
  const [row] = await tx<Synthesis[]>`
    SELECT id, canonical_name, content, covered_summary_ids::text[], covered_concept_ids::text[], embedded_image_fact_ids::text[], model, ${isoTimestamp(tx, 'created_at')} AS created_at
    FROM concept_syntheses WHERE id = ${id}`
  return row
}

async function checkSummary(tx: TransactionSql, input: Partial<SummaryInput>): Promise<void> {
  if (input.content !== undefined) await requireCitations(tx, input.content, 'content')
  await requireRows(tx, 'facts', input.covered_fact_ids ?? [], 'covered_fact_ids')
}

async function checkSynthesis(tx: TransactionSql, input: Partial<SynthesisInput>): Promise<void> {
  if (input.content !== undefined) await requireCitations(tx, input.content, 'content')
  await requireRows(tx, 'concept_summaries', input.covered_summary_ids ?? [], 'covered_summary_ids')
  await requireRows(tx, 'concepts', input.covered_concept_ids ?? [], 'covered_concept_ids')
  await requireRows(tx, 'facts', input.embedded_image_fact_ids ?? [], 'embedded_image_fact_ids')
}

const sequenceTaken = (tx: TransactionSql, conceptId: string, sequence: number, except: string | null) => async () =>
  (
    await tx<
      { id: string }[]
    >`SELECT id FROM concept_summaries WHERE concept_id = ${conceptId} AND sequence_num = ${sequence} AND id IS DISTINCT FROM ${except}::uuid`
  )[0]?.id
const nameTaken = (tx: TransactionSql, name: string, except: string | null) => async () =>
  (
    await tx<
      { id: string }[]
    >`SELECT id FROM concept_syntheses WHERE lower(canonical_name) = lower(${name}) AND id IS DISTINCT FROM ${except}::uuid`
  )[0]?.id
const SEQUENCE_TAKEN = 'the concept has a summary of this sequence_num already'
const NAME_TAKEN = 'a synthesis of this name exists already (compared case-insensitively)'

export async function createSummary(sql: Sql, conceptId: string, input: SummaryInput): Promise<Summary> {
  return await sql.begin(async (tx) => {
    const [concept] = await tx`SELECT 1 FROM concepts WHERE id = ${conceptId} FOR SHARE`
    if (!concept) throw new RowNotFound('concept not found')
    await checkSummary(tx, input)
    const id = crypto.randomUUID()
    await uniqueWrite(
      tx,
      SEQUENCE_TAKEN,
      sequenceTaken(tx, conceptId, input.sequence_num, null),
      () => tx`
        INSERT INTO concept_summaries (id, concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids, model)
        VALUES (${id}, ${conceptId}, ${input.sequence_num}, ${input.is_complete ?? false}, ${input.fact_count ?? 0}, ${input.content ?? ''},
          ${lower(input.covered_fact_ids) ?? []}::uuid[], ${input.model ?? ''})`,
    )
    return (await summary(tx, conceptId, id))!
  })
}

export async function updateSummary(
  sql: Sql,
  conceptId: string,
  id: string,
  changes: Partial<SummaryInput>,
  options: { ifMatch?: string },
): Promise<Summary> {
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'concept_summaries', id, options.ifMatch, () => summary(tx, conceptId, id))
    await checkSummary(tx, changes)
    const next = {
      ...current,
      ...changes,
      covered_fact_ids: lower(changes.covered_fact_ids) ?? current.covered_fact_ids,
    }
    await uniqueWrite(
      tx,
      SEQUENCE_TAKEN,
      sequenceTaken(tx, conceptId, next.sequence_num, id),
      () => tx`
        UPDATE concept_summaries SET sequence_num = ${next.sequence_num}, is_complete = ${next.is_complete}, fact_count = ${next.fact_count}, content = ${next.content},
          covered_fact_ids = ${next.covered_fact_ids}::uuid[], model = ${next.model}
        WHERE id = ${id}`,
    )
    return (await summary(tx, conceptId, id))!
  })
}

export async function deleteSummary(
  sql: Sql,
  conceptId: string,
  id: string,
  options: { ifMatch?: string },
): Promise<{ id: string }> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'concept_summaries', id, options.ifMatch, () => summary(tx, conceptId, id))
    await tx`DELETE FROM concept_summaries WHERE id = ${id}`
    return { id }
  })
}

export async function createSynthesis(sql: Sql, input: SynthesisInput): Promise<Synthesis> {
  requireStorable('concept_syntheses', input)
  return await sql.begin(async (tx) => {
    await checkSynthesis(tx, input)
    const id = crypto.randomUUID()
    await uniqueWrite(
      tx,
      NAME_TAKEN,
      nameTaken(tx, input.canonical_name, null),
      () => tx`
        INSERT INTO concept_syntheses (id, canonical_name, content, covered_summary_ids, covered_concept_ids, embedded_image_fact_ids, model)
        VALUES (${id}, ${input.canonical_name}, ${input.content ?? ''}, ${lower(input.covered_summary_ids) ?? []}::uuid[], ${lower(input.covered_concept_ids) ?? []}::uuid[],
          ${lower(input.embedded_image_fact_ids) ?? []}::uuid[], ${input.model ?? ''})`,
    )
    return (await synthesis(tx, id))!
  })
}

export async function updateSynthesis(
  sql: Sql,
  id: string,
  changes: Partial<SynthesisInput>,
  options: { ifMatch?: string },
): Promise<Synthesis> {
  requireStorable('concept_syntheses', changes)
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'concept_syntheses', id, options.ifMatch, () => synthesis(tx, id))
    await checkSynthesis(tx, changes)
    const next = {
      ...current,
      ...changes,
      covered_summary_ids: lower(changes.covered_summary_ids) ?? current.covered_summary_ids,
      covered_concept_ids: lower(changes.covered_concept_ids) ?? current.covered_concept_ids,
      embedded_image_fact_ids: lower(changes.embedded_image_fact_ids) ?? current.embedded_image_fact_ids,
    }
    await uniqueWrite(
      tx,
      NAME_TAKEN,
      nameTaken(tx, next.canonical_name, id),
      () => tx`
        UPDATE concept_syntheses SET canonical_name = ${next.canonical_name}, content = ${next.content}, covered_summary_ids = ${next.covered_summary_ids}::uuid[],
          covered_concept_ids = ${next.covered_concept_ids}::uuid[], embedded_image_fact_ids = ${next.embedded_image_fact_ids}::uuid[], model = ${next.model}
        WHERE id = ${id}`,
    )
    return (await synthesis(tx, id))!
  })
}

export async function deleteSynthesis(sql: Sql, id: string, options: { ifMatch?: string }): Promise<{ id: string }> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'concept_syntheses', id, options.ifMatch, () => synthesis(tx, id))
    await tx`DELETE FROM concept_syntheses WHERE id = ${id}`
    return { id }
  })
}

/** One summary slice as the process_source job writes it: its text and the facts it was written from. */
export interface SummarySlice {
  content: string
  covered_fact_ids: readonly string[]
  fact_count: number
  is_complete: boolean
}

/**
 * Rewrites a concept's summaries as `slices` (sequence_num 0, 1, …) written by `model`: a slice
 * there already is updated in place (its id, which syntheses cite, is kept), one past the last is
 * deleted, so writing the same slices again changes nothing. A new slice's created_at is the
 * moment of its insert, not of the transaction, so the lists (and the export) that order
 * summaries by it find the slices in sequence. Rewrites of one concept wait for each other on
 * its row. Answers the summaries' ids in sequence order.
 */
export async function replaceConceptSummaries(
  sql: Sql,
  conceptId: string,
  input: { slices: readonly SummarySlice[]; model: string },
): Promise<{ ids: string[] }> {
  return await sql.begin(async (tx) => {
    const [concept] = await tx`SELECT 1 FROM concepts WHERE id = ${conceptId} FOR NO KEY UPDATE`
    if (!concept) throw new RowNotFound('concept not found')
    const ids: string[] = []
    for (const [sequence, slice] of input.slices.entries()) {
      await checkSummary(tx, { content: slice.content, covered_fact_ids: [...slice.covered_fact_ids] })
      const [row] = await tx<{ id: string }[]>`
        INSERT INTO concept_summaries (id, concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids, model, created_at)
        VALUES (${crypto.randomUUID()}, ${conceptId}, ${sequence}, ${slice.is_complete}, ${slice.fact_count}, ${slice.content},
          ${lower(slice.covered_fact_ids) ?? []}::uuid[], ${input.model}, clock_timestamp())
        ON CONFLICT (concept_id, sequence_num) DO UPDATE SET is_complete = EXCLUDED.is_complete, fact_count = EXCLUDED.fact_count,
          content = EXCLUDED.content, covered_fact_ids = EXCLUDED.covered_fact_ids, model = EXCLUDED.model
        RETURNING id`
      ids.push(row!.id)
    }
    await tx`DELETE FROM concept_summaries WHERE concept_id = ${conceptId} AND sequence_num >= ${input.slices.length}`
    return { ids }
  })
}

/**
 * Writes the synthesis of a concept group: the one of its name (compared case-insensitively) is
 * replaced, keeping its id and name, or a new one is made. Writing the same synthesis again
 * changes nothing.
 */
export async function writeGroupSynthesis(sql: Sql, input: SynthesisInput): Promise<Synthesis> {
  requireStorable('concept_syntheses', input)
  return await sql.begin(async (tx) => {
    await checkSynthesis(tx, input)
    const [row] = await tx<{ id: string }[]>`
      INSERT INTO concept_syntheses (id, canonical_name, content, covered_summary_ids, covered_concept_ids, embedded_image_fact_ids, model)
      VALUES (${crypto.randomUUID()}, ${input.canonical_name}, ${input.content ?? ''}, ${lower(input.covered_summary_ids) ?? []}::uuid[],
        ${lower(input.covered_concept_ids) ?? []}::uuid[], ${lower(input.embedded_image_fact_ids) ?? []}::uuid[], ${input.model ?? ''})
      ON CONFLICT ((lower(canonical_name))) DO UPDATE SET content = EXCLUDED.content, covered_summary_ids = EXCLUDED.covered_summary_ids,
        covered_concept_ids = EXCLUDED.covered_concept_ids, embedded_image_fact_ids = EXCLUDED.embedded_image_fact_ids, model = EXCLUDED.model
      RETURNING id`
    return (await synthesis(tx, row!.id))!
  })
}
