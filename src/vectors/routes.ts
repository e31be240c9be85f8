// Nearest-neighbour search over a repository's facts or concepts (search.ts), at
// GET /{repoID}/search?q=&kind=facts|concepts&k= (and /api/v1/search + X-Repository-ID).
import { t } from 'elysia'
import { HttpError } from '../http/errors.ts'
import { ErrorBody } from '../http/schemas.ts'
import { integerQuery } from '../http/openapi.ts'
import type { Sql } from 'postgres'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import type { Embedder } from './embedder.ts'
import type { VectorStore } from './store.ts'
import { searchGraph } from './search.ts'

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
  const search = async ({ repository, db, query }: { repository: { id: string }; db: () => Promise<Sql>; query: typeof SearchQuery.static }) =>
    (await searchGraph({ vectors, embedder }, repository, await db(), { q: query.q, kind: query.kind ?? 'facts', k: parseK(query.k) })).map((hit) => ({
      id: hit.id,
      distance: hit.distance,
      [hit.kind === 'facts' ? 'fact' : 'concept']: hit.row,
    }))
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
