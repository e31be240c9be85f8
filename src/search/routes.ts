// GET /{repoID}/search (and /api/v1/search + X-Repository-ID): a ranked list of facts or concepts
// (search.ts). The hits are the body, a bare array like every list's (docs/spec/decisions.md §1);
// the list's length is X-Total-Count (flagged by X-Total-Count-Estimated when it is keyword
// search's estimate), the next page a Link, and the mode that ran X-Search-Mode (with
// X-Search-Fallback saying why when hybrid fell back to keyword).
import { t } from 'elysia'
import { ErrorBody } from '../http/schemas.ts'
import { pagination, rankedPage } from '../http/pagination.ts'
import { Concept, Fact, FactStatus } from '../graph/schemas.ts'
import { HttpError } from '../http/errors.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { RESULT_WINDOW, search, SEARCH_MODES, type SearchServices } from './search.ts'

const SearchQuery = t.Object({
  q: t.String({
    minLength: 1,
    maxLength: 2000,
    error: 'expected a query text of 1 to 2000 characters',
    description: 'words, "a phrase", or, -word (websearch_to_tsquery)',
  }),
  kind: t.Optional(t.Union([t.Literal('facts'), t.Literal('concepts')], { error: 'expected facts or concepts' })),
  mode: t.Optional(
    t.Union(
      SEARCH_MODES.map((mode) => t.Literal(mode)),
      { error: 'expected hybrid, keyword or vector', description: 'hybrid (default), keyword or vector' },
    ),
  ),
  status: t.Optional(FactStatus('only facts of this status (kind=facts)')),
})
const Hit = t.Object({
  id: t.String(),
  score: t.Number({
    description: 'hybrid: reciprocal rank fusion score; keyword: ts_rank in [0, 1); vector: cosine similarity',
  }),
  distance: t.Optional(
    t.Number({ description: 'cosine distance of its vector (0 = same direction), when the vector side ranked it' }),
  ),
  fact: t.Optional(Fact),
  concept: t.Optional(Concept),
})

export interface SearchRoutesOptions {
  scope: ReturnType<typeof repositoryScope>
  services: SearchServices
}

export function searchRoutes({ scope, services }: SearchRoutesOptions) {
  const handler = async ({
    repository,
    db,
    query,
    range,
    set,
  }: {
    repository: { id: string }
    db: () => Promise<import('postgres').Sql>
    query: typeof SearchQuery.static
    range: { offset: number; limit: number }
    set: { headers: Record<string, string | number> }
  }) => {
    const kind = query.kind ?? 'facts'
    if (query.status !== undefined && kind !== 'facts')
      throw new HttpError(400, 'invalid query: status: only facts have a status (kind=facts)')
    const answer = await search(
      await db(),
      repository.id,
      { q: query.q, kind, mode: query.mode ?? 'hybrid', status: query.status, ...range },
      services,
    )
    set.headers['x-search-mode'] = answer.mode
    if (answer.fallback !== undefined) set.headers['x-search-fallback'] = answer.fallback
    if (answer.totalEstimated) set.headers['x-total-count-estimated'] = 'true'
    return rankedPage(answer.hits, answer.total)
  }
  const options = {
    // Facts need fact:read, concepts concept:read.
    repository: {
      query: 'kind',
      default: 'facts',
      permissions: { facts: 'fact:read', concepts: 'concept:read' },
    } as const,
    ranked: RESULT_WINDOW,
    query: SearchQuery,
    response: {
      200: t.Array(Hit),
      400: ErrorBody,
      401: ErrorBody,
      403: ErrorBody,
      404: ErrorBody,
      409: ErrorBody,
      502: ErrorBody,
    },
    detail: {
      tags: ['graph'],
      summary:
        'Facts or concepts by keyword (full text), by vector, or both fused (hybrid, the default); X-Search-Mode says which ran, X-Total-Count how many hits',
    },
  }
  return repositoryScopedRoutes('kgs/search', scope, (app, at) =>
    app
      .use(pagination)
      .get('/search', handler, { ...options, params: at.repositoryParams, detail: at.detail(options.detail) }),
  )
}
