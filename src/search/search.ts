// Search of a repository's facts or concepts in one of three modes:
// - keyword: PostgreSQL full text (store.ts);
// - vector: the nearest vectors to the query's embedding (vectors/);
// - hybrid, the default: both ranked lists fused by reciprocal rank (RRF, k = 60: a hit's
//   score is the sum over the lists that hold it of 1 / (60 + its rank there)), then paged. When
//   the vector side is unavailable (the embedder fails, the repository has no vectors, or they
//   are of another dimension) hybrid answers keyword's list and says why.
// No mode serves hits past RESULT_WINDOW; hybrid fuses the first HYBRID_DEPTH of each side,
// whatever the page, so that its pages are slices of one list.
import type { Sql } from 'postgres'
import { HttpError } from '../http/errors.ts'
import { describeError, type Logger } from '../log.ts'
import { conceptsByIds, factsByIds } from '../graph/store.ts'
import type { Concept, Fact } from '../graph/schemas.ts'
import { EmbeddingError, type Embedder } from '../vectors/embedder.ts'
import { VectorDimensionError, type VectorStore } from '../vectors/store.ts'
import { existingIds, keywordSearch, type SearchKind } from './store.ts'

export type SearchMode = 'hybrid' | 'keyword' | 'vector'
export const SEARCH_MODES: readonly SearchMode[] = ['hybrid', 'keyword', 'vector']

/** Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher 2009; the Go original's). */
const RRF_K = 60
/** Hits a search ranks at most (a page ends there). */
export const RESULT_WINDOW = 1000
/**
 * The hits of each side hybrid fuses (so it ranks at most twice as many). Deeper costs the
 * vector side most: an indexed search re-ranks 5 × k candidates by exact distance.
 */
const HYBRID_DEPTH = 100

export interface SearchRequest {
  q: string
  kind: SearchKind
  mode: SearchMode
  offset: number
  limit: number
  /** Facts of this status only. */
  status?: string
}

interface SearchHit {
  id: string
  /** keyword: ts_rank (normalized to [0, 1)); vector: cosine similarity, 1 - distance; hybrid: the RRF score. */
  score: number
  /** Cosine distance of the hit's vector, when the vector side ranked it. */
  distance?: number
  fact?: Fact
  concept?: Concept
}

export interface SearchAnswer {
  /** The mode that ran: hybrid falls back to keyword. */
  mode: SearchMode
  /** Why hybrid fell back to keyword. */
  fallback?: string
  /** Hits the mode ranks (keyword: every match, also past RESULT_WINDOW). */
  total: number
  /** keyword: the total is the planner's estimate (the query matched RANKED_MATCHES rows or more, store.ts). */
  totalEstimated?: boolean
  hits: SearchHit[]
}

interface Ranked {
  id: string
  score: number
  distance?: number
}

export interface SearchServices {
  vectors: VectorStore
  embedder: Embedder
  log: Logger
}

/** Why the vector side cannot answer: the status of vector mode's error, and the short reason hybrid gives when it falls back. */
class VectorSideUnavailable extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string,
  ) {
    super(message)
  }
}

/** The nearest `depth` rows (that still exist) to the query's embedding, nearest first. */
async function vectorRanking(
  sql: Sql,
  repositoryId: string,
  request: SearchRequest,
  depth: number,
  services: SearchServices,
): Promise<Ranked[]> {
  const { kind } = request
  let vector: Float32Array
  try {
    ;[vector] = (await services.embedder.embed([request.q])) as [Float32Array]
  } catch (error) {
    if (error instanceof EmbeddingError)
      throw new VectorSideUnavailable(
        502,
        `the embedding provider failed: ${error.message}`,
        'the embedding provider failed',
      )
    throw error
  }
  let neighbours
  try {
    neighbours = await services.vectors.search(repositoryId, kind, vector, depth)
  } catch (error) {
    if (error instanceof VectorDimensionError)
      throw new VectorSideUnavailable(
        409,
        `the stored ${kind} vectors were made by another embedding model; re-embed them (POST jobs with kind embed_${kind})`,
        'the stored vectors were made by another embedding model',
      )
    throw error
  }
  // A vector whose row was deleted since is skipped before ranks are counted, so pages stay slices of one list.
  const existing = await existingIds(
    sql,
    kind,
    neighbours.map((n) => n.id),
    request.status,
  )
  return neighbours
    .filter((n) => existing.has(n.id))
    .map((n) => ({ id: n.id, score: 1 - n.distance, distance: n.distance }))
}

/** Reciprocal rank fusion of two rankings, best first (ties by id). */
function fuse(keyword: readonly Ranked[], vector: readonly Ranked[]): Ranked[] {
  const fused = new Map<string, Ranked>()
  const add = (list: readonly Ranked[]) =>
    list.forEach((hit, i) => {
      const entry = fused.get(hit.id) ?? { id: hit.id, score: 0 }
      entry.score += 1 / (RRF_K + i + 1)
      if (hit.distance !== undefined) entry.distance = hit.distance
      fused.set(hit.id, entry)
    })
  add(keyword)
  add(vector)
  return [...fused.values()].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

async function ranking(
  sql: Sql,
  repositoryId: string,
  request: SearchRequest,
  services: SearchServices,
): Promise<Omit<SearchAnswer, 'hits'> & { page: Ranked[] }> {
  const { offset, limit } = request
  if (request.mode === 'keyword') {
    const { total, estimated, hits } = await keywordSearch(
      sql,
      request.kind,
      request.q,
      { offset, limit },
      request.status,
    )
    return { mode: 'keyword', total, ...(estimated ? { totalEstimated: true } : {}), page: hits }
  }
  if (request.mode === 'vector') {
    try {
      // Filtered, the nearest of the whole window are ranked and filtered, and the list is what is left.
      const depth = request.status === undefined ? offset + limit : RESULT_WINDOW
      const ranked = await vectorRanking(sql, repositoryId, request, depth, services)
      // Every vector is a hit: their number, unless this list already holds them all.
      const total =
        ranked.length < depth || request.status !== undefined
          ? ranked.length
          : await services.vectors.count(repositoryId, request.kind)
      return { mode: 'vector', total, page: ranked.slice(offset, offset + limit) }
    } catch (error) {
      if (error instanceof VectorSideUnavailable) throw new HttpError(error.status, error.message)
      throw error
    }
  }
  const [keyword, vector] = await Promise.all([
    keywordSearch(sql, request.kind, request.q, { offset: 0, limit: HYBRID_DEPTH }, request.status),
    vectorRanking(sql, repositoryId, request, HYBRID_DEPTH, services).catch((error: unknown) => {
      if (error instanceof VectorSideUnavailable) return error
      throw error
    }),
  ])
  // Keyword's own list, as mode=keyword pages it: past the fused depth, a query of its own.
  const keywordOnly = async (fallback: string) => ({
    mode: 'keyword' as const,
    fallback,
    total: keyword.total,
    ...(keyword.estimated ? { totalEstimated: true } : {}),
    page:
      offset + limit <= HYBRID_DEPTH
        ? keyword.hits.slice(offset, offset + limit)
        : (await keywordSearch(sql, request.kind, request.q, { offset, limit }, request.status)).hits,
  })
  if (vector instanceof VectorSideUnavailable) {
    services.log.warn('search: hybrid fell back to keyword', { repository: repositoryId, ...describeError(vector) })
    return keywordOnly(vector.reason)
  }
  if (vector.length === 0)
    return keywordOnly(`the repository has no ${request.kind === 'facts' ? 'fact' : 'concept'} vectors`)
  const fused = fuse(keyword.hits, vector)
  return { mode: 'hybrid', total: fused.length, page: fused.slice(offset, offset + limit) }
}

/** One page of a search, its hits with their rows (as the graph's lists show them). */
export async function search(
  sql: Sql,
  repositoryId: string,
  request: SearchRequest,
  services: SearchServices,
): Promise<SearchAnswer> {
  const { page, ...answer } = await ranking(sql, repositoryId, request, services)
  const ids = page.map((hit) => hit.id)
  const field = request.kind === 'facts' ? 'fact' : 'concept'
  const rows = new Map<string, Fact | Concept>(
    (request.kind === 'facts' ? await factsByIds(sql, ids) : await conceptsByIds(sql, ids)).map((row) => [row.id, row]),
  )
  // A row deleted between the ranking and this read is left out.
  const hits = page.filter((hit) => rows.has(hit.id)).map((hit) => ({ ...hit, [field]: rows.get(hit.id)! }))
  return { ...answer, hits }
}
