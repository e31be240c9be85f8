// Writing reports (a tree by parent_id) and their sentence annotations. A report's body cites
// facts and concepts, and its annotations name facts: all must exist in this repository. A
// report cannot become its own ancestor. Deleting one deletes its subtree (the parent_id key).
import type { Sql, TransactionSql } from 'postgres'
import type { Static } from '@sinclair/typebox'
import type { ReportCreate, ReportUpdate } from './schemas.ts'
import { getReport } from '../store.ts'
import type { ReportDetail } from '../schemas.ts'
import { InvalidWrite, lockRow, requireCitations, requireRows, requireStorable } from './common.ts'

export type ReportInput = Static<typeof ReportCreate>
export type ReportChanges = Static<typeof ReportUpdate>
type AnnotationInput = NonNullable<ReportInput['annotations']>[number]

const detail = async (tx: TransactionSql, id: string) => (await getReport(tx, id))!

async function check(tx: TransactionSql, id: string, input: ReportChanges): Promise<void> {
  if (input.body_md !== undefined) await requireCitations(tx, input.body_md, 'body_md')
  if (input.parent_id) {
    await requireRows(tx, 'reports', [input.parent_id], 'parent_id')
    // The new parent's ancestors, itself included, must not include the report.
    const [cycle] = await tx`
      WITH RECURSIVE up AS (
        SELECT id, parent_id FROM reports WHERE id = ${input.parent_id}
        UNION SELECT r.id, r.parent_id FROM reports r JOIN up ON r.id = up.parent_id
      ) SELECT 1 FROM up WHERE id = ${id}`
    if (cycle) throw new InvalidWrite('parent_id: a report cannot be its own ancestor')
  }
  await requireRows(
    tx,
    'facts',
    (input.annotations ?? []).map((a) => a.fact_id),
    'annotations',
  )
  const keys = new Set((input.annotations ?? []).map((a) => `${a.sentence_index} ${a.fact_id.toLowerCase()}`))
  if (keys.size !== (input.annotations ?? []).length)
    throw new InvalidWrite('annotations: one per sentence_index and fact_id')
}

/** Replaces the annotations; their created_at keeps the given order (the export writes them in it). */
async function replaceAnnotations(
  tx: TransactionSql,
  id: string,
  annotations: AnnotationInput[] | undefined,
): Promise<void> {
  if (annotations === undefined) return
  await tx`DELETE FROM report_annotations WHERE report_id = ${id}`
  if (annotations.length === 0) return
  await tx`
    INSERT INTO report_annotations (report_id, sentence_index, sentence_text, fact_id, score, posture, created_at)
    SELECT ${id}, a.sentence_index, a.sentence_text, a.fact_id, a.score, a.posture, clock_timestamp() + a.n * interval '1 microsecond'
    FROM unnest(
      ${annotations.map((a) => a.sentence_index)}::int[], ${annotations.map((a) => a.sentence_text ?? '')}::text[], ${annotations.map((a) => a.fact_id)}::uuid[],
      ${annotations.map((a) => a.score)}::float8[], ${annotations.map((a) => a.posture ?? '')}::text[]
    ) WITH ORDINALITY AS a(sentence_index, sentence_text, fact_id, score, posture, n)`
}

export async function createReport(sql: Sql, input: ReportInput): Promise<ReportDetail> {
  requireStorable('reports', input)
  return await sql.begin(async (tx) => {
    const id = crypto.randomUUID()
    await check(tx, id, input)
    await tx`
      INSERT INTO reports (id, title, topic, body_md, status, parent_id, similarity_threshold, embedded_model, sentence_count)
      VALUES (${id}, ${input.title}, ${input.topic ?? ''}, ${input.body_md ?? ''}, ${input.status ?? 'pending'}, ${input.parent_id ?? null},
        ${input.similarity_threshold ?? null}, ${input.embedded_model ?? ''}, ${input.sentence_count ?? null})`
    await replaceAnnotations(tx, id, input.annotations)
    return await detail(tx, id)
  })
}

/** Edits a report; `annotations`, when given, replace its annotations. */
export async function updateReport(
  sql: Sql,
  id: string,
  changes: ReportChanges,
  options: { ifMatch?: string },
): Promise<ReportDetail> {
  requireStorable('reports', changes)
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'reports', id, options.ifMatch, () => getReport(tx, id))
    await check(tx, id, changes)
    const next = { ...current, ...changes }
    await tx`
      UPDATE reports SET title = ${next.title}, topic = ${next.topic}, body_md = ${next.body_md}, status = ${next.status}, parent_id = ${next.parent_id},
        similarity_threshold = ${next.similarity_threshold}, embedded_model = ${next.embedded_model}, sentence_count = ${next.sentence_count}
      WHERE id = ${id}`
    await replaceAnnotations(tx, id, changes.annotations)
    return await detail(tx, id)
  })
}

/** Deletes a report and its subtree; answers how many reports went. */
export async function deleteReport(
  sql: Sql,
  id: string,
  options: { ifMatch?: string },
): Promise<{ id: string; removed: { reports: number } }> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'reports', id, options.ifMatch, () => getReport(tx, id))
    const [{ reports }] = (await tx`
      WITH RECURSIVE down AS (SELECT id FROM reports WHERE id = ${id} UNION SELECT r.id FROM reports r JOIN down ON r.parent_id = down.id)
      SELECT count(*)::int AS reports FROM down`) as unknown as [{ reports: number }]
    await tx`DELETE FROM reports WHERE id = ${id}`
    return { id, removed: { reports } }
  })
}

/** What the annotate_report job found: each sentence's most similar facts, with the cosine similarity. */
export interface AutomaticAnnotations {
  similarity_threshold: number
  embedded_model: string
  sentence_count: number
  annotations: readonly { sentence_index: number; sentence_text: string; fact_id: string; score: number }[]
}

/**
 * Writes a report's automatic annotations (posture `related`) in place of those it had, and its
 * status `annotated` with the threshold, model and sentence count they were found with. The
 * annotations of another posture (someone's judgement that a fact supports or contradicts a
 * sentence) are kept, and win over an automatic one of the same sentence and fact; a fact deleted
 * meanwhile is left out. Writing the same annotations again changes nothing. Answers how many
 * automatic annotations the report now has.
 */
export async function annotateReport(
  sql: Sql,
  id: string,
  input: AutomaticAnnotations,
): Promise<{ id: string; annotations: number }> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'reports', id, undefined, () => getReport(tx, id))
    await tx`DELETE FROM report_annotations WHERE report_id = ${id} AND posture = 'related'`
    const { annotations } = input
    const inserted = await tx`
      INSERT INTO report_annotations (report_id, sentence_index, sentence_text, fact_id, score, posture, created_at)
      SELECT ${id}, a.sentence_index, a.sentence_text, a.fact_id, a.score, 'related', clock_timestamp() + a.n * interval '1 microsecond'
      FROM unnest(
        ${annotations.map((a) => a.sentence_index)}::int[], ${annotations.map((a) => a.sentence_text)}::text[], ${annotations.map((a) => a.fact_id)}::uuid[],
        ${annotations.map((a) => a.score)}::float8[]
      ) WITH ORDINALITY AS a(sentence_index, sentence_text, fact_id, score, n)
      WHERE EXISTS (SELECT 1 FROM facts f WHERE f.id = a.fact_id)
      ORDER BY a.n
      ON CONFLICT DO NOTHING
      RETURNING 1`
    await tx`
      UPDATE reports SET status = 'annotated', similarity_threshold = ${input.similarity_threshold}, embedded_model = ${input.embedded_model},
        sentence_count = ${input.sentence_count}
      WHERE id = ${id}`
    return { id, annotations: inserted.length }
  })
}
