// Nearest-neighbour search over a repository's facts or concepts: the query is embedded with the
// configured embedder, the vector store finds the nearest ids, and the graph store supplies the
// rows. GET /{repoID}/search?q=&kind=facts|concepts&k= (and /api/v1/search + X-Repository-ID).
import { t } from 'elysia'
import { HttpError } from '../http/errors.ts'
import { ErrorBody } from '../http/schemas.ts'
import { integerQuery } from '../http/openapi.ts'
import { conceptsByIds, factsByIds } from '../graph/store.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { EmbeddingError, type Embedder } from './embedder.ts'
import { VectorDimensionError, type VectorStore } from './store.ts'

const MAX_K = 100
const SearchQuery = t.Object({
  q: t.String({ minLength: 1, maxLength: 2000, error: 'expected a query text of 1 to 2000 characters' }),
  kind: t.Optional(t.Union([t.Literal('facts'), t.Literal('concepts')], { error: 'expected facts or concepts' })),
  k: t.Optional(integerQuery({ minimum: 1, maximum: MAX_K, default: 10, description: 'number of results' })),
})
const Hit = t.Object({
  id: t.String(),
  /** Cosine distance: 0 is the same direction, 2 the opposite. */
  distance: t.Number({ description: 'cosine distance (0 = same direction)' }),
  fact: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'the fact, as GET facts/{id} lists it (kind=facts)' })),
  concept: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'the concept, as GET concepts lists it (kind=concepts)' })),
})

function parseK(k: string | undefined): number {
  if (k === undefined) return 10
  const n = /^[0-9]{1,3}$/.test(k) ? Number(k) : NaN
  if (!(n >= 1 && n <= MAX_K)) throw new HttpError(400, `invalid query: k: expected an integer from 1 to ${MAX_K} (got ${JSON.stringify(k.slice(0, 20))})`)
  return n
}

export function searchRoutes(scope: ReturnType<typeof repositoryScope>, vectors: VectorStore, embedder: Embedder) {
  const search = async ({ repository, db, query }: { repository: { id: string }; db: () => Promise<import('postgres').Sql>; query: typeof SearchQuery.static }) => {
    const kind = query.kind ?? 'facts'
    const k = parseK(query.k)
    let vector: Float32Array
    try {
      ;[vector] = (await embedder.embed([query.q])) as [Float32Array]
    } catch (error) {
      if (error instanceof EmbeddingError) throw new HttpError(502, `the embedding provider failed: ${error.message}`)
      throw error
    }
    let hits
    try {
      hits = await vectors.search(repository.id, kind, vector, k)
    } catch (error) {
      if (error instanceof VectorDimensionError) throw new HttpError(409, `the stored ${kind} vectors were made by another embedding model; re-embed them (POST jobs with kind embed_${kind})`)
      throw error
    }
    const sql = await db()
    const ids = hits.map((h) => h.id)
    // A vector whose row was deleted since is skipped.
    const rows = new Map<string, Record<string, unknown>>((kind === 'facts' ? await factsByIds(sql, ids) : await conceptsByIds(sql, ids)).map((r) => [r.id, r as unknown as Record<string, unknown>]))
    return hits.filter((h) => rows.has(h.id)).map((h) => ({ id: h.id, distance: h.distance, [kind === 'facts' ? 'fact' : 'concept']: rows.get(h.id)! }))
  }
  const options = {
    // Facts need fact:read, concepts concept:read.
    repository: { query: 'kind', default: 'facts', permissions: { facts: 'fact:read', concepts: 'concept:read' } } as const,
    query: SearchQuery,
    response: { 200: t.Array(Hit), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 502: ErrorBody },
    detail: {
      tags: ['graph'],
      summary: 'Nearest facts or concepts to a text, by the configured embedder (kgs-hash-v1 by default: lexical, not semantic)',
    },
  }
  return repositoryScopedRoutes('kgs/search', scope, (app, at) => app.get('/search', search, { ...options, params: at.repositoryParams, detail: at.detail(options.detail) }))
}
