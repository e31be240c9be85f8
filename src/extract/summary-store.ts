// What writing summaries and syntheses reads of the graph: the concepts a job touched, a concept's
// facts, a concept group and its summaries. What it writes goes through the graph's write service
// (graph/write/summaries.ts).
import type { Sql } from 'postgres'
import type { SummaryFact } from './extractor.ts'

export interface GroupConcept {
  id: string
  canonical_name: string
  context: string
}

/** The ids of the concepts of these names and contexts (compared as the unique index does), in id order. */
export async function conceptIdsOf(
  sql: Sql,
  concepts: readonly { canonical_name: string; context: string }[],
): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    SELECT DISTINCT c.id::text FROM unnest(${concepts.map((c) => c.canonical_name)}::text[], ${concepts.map((c) => c.context)}::text[]) AS x(name, context)
    JOIN concepts c ON lower(c.canonical_name) = lower(x.name) AND lower(c.context) = lower(x.context)
    ORDER BY 1`
  return rows.map((row) => row.id)
}

/** A concept's first `limit` facts in the order of their content_hash (the same facts give the same order, whatever their ids). */
export async function conceptFacts(sql: Sql, conceptId: string, limit: number): Promise<SummaryFact[]> {
  return await sql<SummaryFact[]>`
    SELECT f.id::text, f.text FROM fact_concepts fc JOIN facts f ON f.id = fc.fact_id
    WHERE fc.concept_id = ${conceptId} ORDER BY f.content_hash LIMIT ${limit}`
}

/** The groups of these concepts (every concept of the same name, compared case-insensitively), each in context order. */
export async function conceptGroups(sql: Sql, conceptIds: readonly string[]): Promise<GroupConcept[][]> {
  const rows = await sql<(GroupConcept & { name_key: string })[]>`
    SELECT c.id::text, c.canonical_name, c.context, lower(c.canonical_name) AS name_key FROM concepts c
    WHERE lower(c.canonical_name) IN (SELECT lower(canonical_name) FROM concepts WHERE id = ANY(${conceptIds as string[]}::uuid[]))
    ORDER BY lower(c.canonical_name), lower(c.context), c.id`
  const groups = new Map<string, GroupConcept[]>()
  for (const { name_key, ...concept } of rows) groups.set(name_key, [...(groups.get(name_key) ?? []), concept])
  return [...groups.values()]
}

/** The first `limit` summaries of these concepts, in the concepts' order and then in sequence. */
export async function summariesOf(
  sql: Sql,
  conceptIds: readonly string[],
  limit: number,
): Promise<{ id: string; content: string }[]> {
  return await sql<{ id: string; content: string }[]>`
    SELECT s.id::text, s.content FROM unnest(${conceptIds as string[]}::uuid[]) WITH ORDINALITY AS x(id, n)
    JOIN concept_summaries s ON s.concept_id = x.id ORDER BY x.n, s.sequence_num LIMIT ${limit}`
}

/** These facts' texts, in the order of `ids` (a fact deleted meanwhile is left out). */
export async function factTexts(sql: Sql, ids: readonly string[]): Promise<SummaryFact[]> {
  return await sql<SummaryFact[]>`
    SELECT f.id::text, f.text FROM unnest(${ids as string[]}::uuid[]) WITH ORDINALITY AS x(id, n) JOIN facts f ON f.id = x.id ORDER BY x.n`
}
