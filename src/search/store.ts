// Keyword search of a repository's facts and concepts: PostgreSQL full text over the documents
// that the repository migrations keep (fact_documents.fulltext, 0008; concepts.fulltext, 0006),
// queried in websearch_to_tsquery's syntax (words, "a phrase", or, -word) and ranked by ts_rank.
import type { Sql } from 'postgres'
import { rankedSlice, type RankedRange } from '../db/pages.ts'

export type SearchKind = 'facts' | 'concepts'

/** The configuration of the stored documents (the migration's): a query in another would miss the GIN indexes and the stems. */
const CONFIG = 'english'
/** ts_rank's normalization 32, rank / (rank + 1): scores in [0, 1), the same order. */
const RANK_NORMALIZATION = 32
/**
 * The matches a query ranks at most: the first ones the index yields (storage order). Ranking
 * reads each match's document, a page each when matches are spread over a large table: a word
 * in one fact of a hundred is 10,000 page reads at 1,000,000 facts. At least RESULT_WINDOW
 * (search.ts), so every page served is a slice of the ranked list.
 */
export const RANKED_MATCHES = 2000

interface KeywordHit {
  id: string
  score: number
}

export interface KeywordPage {
  /** Every row the query matches; the planner's estimate when `estimated` (RANKED_MATCHES or more). */
  total: number
  estimated: boolean
  /** Best first: by score, then id. */
  hits: KeywordHit[]
}

/**
 * Rows `range` of the matches of `query`, best first, and the number of matches. A query of stop
 * words or punctuation only matches nothing. A query matching RANKED_MATCHES rows or more is
 * ranked among the first RANKED_MATCHES, and its total is estimated.
 */
export async function keywordSearch(
  sql: Sql,
  kind: SearchKind,
  query: string,
  range: RankedRange,
  status?: string,
): Promise<KeywordPage> {
  const table = sql(kind === 'facts' ? 'fact_documents' : 'concepts')
  const matches = sql`FROM ${table}, websearch_to_tsquery(${CONFIG}::regconfig, ${query}) query WHERE fulltext @@ query AND ${ofStatus(sql, status)}`
  const { total, rows } = await rankedSlice<KeywordHit>(
    sql,
    sql`SELECT id, ts_rank(fulltext, query, ${RANK_NORMALIZATION}) AS score FROM (SELECT id, fulltext, query ${matches} LIMIT ${RANKED_MATCHES}) first_matches`,
    sql`score DESC, id`,
    range,
  )
  if (total < RANKED_MATCHES) return { total, estimated: false, hits: rows }
  // The planner's estimate (from the index's statistics) costs no reads of the matches.
  const [plan] = await sql<
    { 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[]
  >`EXPLAIN (FORMAT JSON) SELECT id ${matches}`
  return {
    total: Math.max(RANKED_MATCHES, Math.round(plan!['QUERY PLAN'][0].Plan['Plan Rows'])),
    estimated: true,
    hits: rows,
  }
}

/** Facts of `status` only (a fact's document shares its id); undefined: any. */
const ofStatus = (sql: Sql, status: string | undefined) =>
  status === undefined ? sql`true` : sql`id IN (SELECT id FROM facts WHERE status = ${status})`

/** Which of `ids` are rows of `kind` (of `status`, for facts): a vector may outlive its row until the vector store catches up. */
export async function existingIds(
  sql: Sql,
  kind: SearchKind,
  ids: readonly string[],
  status?: string,
): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await sql<
    { id: string }[]
  >`SELECT id FROM ${sql(kind === 'facts' ? 'facts' : 'concepts')} WHERE id = ANY(${ids as string[]}::uuid[]) AND ${ofStatus(sql, status)}`
  return new Set(rows.map((row) => row.id))
}
