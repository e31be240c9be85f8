// Keyword search of a repository's facts and concepts: PostgreSQL full text over the documents
// that migration 0006_full_text_search keeps (facts.fulltext, concepts.fulltext), queried in
// websearch_to_tsquery's syntax (words, "a phrase", or, -word) and ranked by ts_rank.
import type { Sql } from 'postgres'
import { rankedSlice, type RankedRange } from '../db/pages.ts'

export type SearchKind = 'facts' | 'concepts'

/** The configuration of the stored documents (the migration's): a query in another would miss the GIN indexes and the stems. */
const CONFIG = 'english'
/** ts_rank's normalization 32, rank / (rank + 1): scores in [0, 1), the same order. */
const RANK_NORMALIZATION = 32

interface KeywordHit {
  id: string
  score: number
}

export interface KeywordPage {
  /** Every row the query matches. */
  total: number
  /** Best first: by score, then id. */
  hits: KeywordHit[]
}

/**
 * Rows `range` of the matches of `query`, best first, and the number of matches. A query of stop
 * words or punctuation only matches nothing.
 */
export async function keywordSearch(sql: Sql, kind: SearchKind, query: string, range: RankedRange): Promise<KeywordPage> {
  const { total, rows } = await rankedSlice<KeywordHit>(
    sql,
    sql`SELECT id, ts_rank(fulltext, query, ${RANK_NORMALIZATION}) AS score
      FROM ${sql(kind === 'facts' ? 'facts' : 'concepts')}, websearch_to_tsquery(${CONFIG}::regconfig, ${query}) query
      WHERE fulltext @@ query`,
    sql`score DESC, id`,
    range,
  )
  return { total, hits: rows }
}

/** Which of `ids` are rows of `kind` (a vector may outlive its row until the vector store catches up). */
export async function existingIds(sql: Sql, kind: SearchKind, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await sql<{ id: string }[]>`SELECT id FROM ${sql(kind === 'facts' ? 'facts' : 'concepts')} WHERE id = ANY(${ids as string[]}::uuid[])`
  return new Set(rows.map((row) => row.id))
}
