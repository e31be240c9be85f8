// The knowledge-graph read API: every route at /{repoID}/<path> and, with the repository named by
// the X-Repository-ID header, at /api/v1/<path> (docs/spec/decisions.md §2). Lists are paginated
// (docs/spec/decisions.md §1); each route needs its resource's :read permission in the repository (§4).
import { Elysia, t } from 'elysia'
import { HttpError } from '../http/errors.ts'
import { etagOf } from '../http/etag.ts'
import { pagination, rankedPage } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import {
  conceptFacts,
  factCitations,
  factExists,
  getConcept,
  getFact,
  getInvestigation,
  getReport,
  getSource,
  listConcepts,
  listFactMerges,
  listFacts,
  listInvestigations,
  listReports,
  listSources,
  conceptNeighbourhood,
  RELATED_WINDOW,
  relatedConcepts,
  sourceFacts,
} from './store.ts'
import {
  Citation,
  Concept,
  ConceptDetail,
  Fact,
  FactDetail,
  FactMerge,
  FactStatus,
  Investigation,
  InvestigationDetail,
  Neighbourhood,
  RelatedConcept,
  Report,
  ReportDetail,
  Source,
  SourceDetail,
  SourceFact,
} from './schemas.ts'

const Uuid = t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' })
const UUID = new RegExp(UUID_PATTERN)
/** Concepts a facts list may name at once (?concept= repeated): facts linked to all of them. */
const MAX_CONCEPTS = 20
const FactQuery = t.Object({
  status: t.Optional(FactStatus()),
  kind: t.Optional(
    t.Union([t.Literal('text'), t.Literal('image')], {
      error: 'expected text or image',
      description: 'only facts of this fact_kind',
    }),
  ),
  source_id: t.Optional(
    t.String({ pattern: UUID_PATTERN, error: 'expected a source UUID', description: 'only facts of this source' }),
  ),
  // Checked by conceptIds: Elysia decodes a repeated query parameter into an array before its
  // schema sees it, and its errors for a bad item do not name the parameter.
  concept: t.Optional(
    t.Array(t.String(), {
      description: `only facts linked to this concept UUID; repeated (up to ${MAX_CONCEPTS}), to every one of them`,
    }),
  ),
})

function conceptIds(concepts: string[] | undefined): string[] | undefined {
  if (concepts === undefined) return undefined
  const bad = concepts.find((id) => !UUID.test(id))
  if (concepts.length > MAX_CONCEPTS || bad !== undefined)
    throw new HttpError(
      400,
      `invalid query: concept: expected 1 to ${MAX_CONCEPTS} concept UUIDs (got ${bad === undefined ? `${concepts.length}` : JSON.stringify(bad.slice(0, 40))})`,
    )
  return concepts
}
const ConceptQuery = t.Object({
  prefix: t.Optional(
    t.String({
      maxLength: 200,
      error: 'expected at most 200 characters',
      description: 'case-insensitive prefix of canonical_name',
    }),
  ),
})
/** A source's facts are listed up to this position (one row per chunk each cites). */
const SOURCE_FACTS_WINDOW = 1_000_000
// Strings of digits, as the media routes take integers in a query: a t.Integer there would be documented as a union.
const chunkBound = (description: string) =>
  t.Optional(t.String({ pattern: '^[0-9]{1,9}$', error: 'expected an integer from 0 to 999999999', description }))
const chunkIndex = (value: string | undefined) => (value === undefined ? undefined : Number(value))
const SourceFactQuery = t.Object({
  chunk_from: chunkBound('only facts of this chunk_index and after'),
  chunk_to: chunkBound('only facts of this chunk_index and before'),
})
const NONE = 'none'
const ReportQuery = t.Object({
  parent_id: t.Optional(
    t.String({
      pattern: `^(${NONE}|${UUID_PATTERN.slice(1, -1)})$`,
      error: `expected a report UUID or ${NONE}`,
      description: `children of this report; ${NONE}: top-level reports only`,
    }),
  ),
})

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }

/** The row with its ETag (what an If-Match of the write API compares), or 404. */
function found<T>(row: T | undefined, what: string): T {
  if (row === undefined) throw new HttpError(404, `${what} not found`)
  return row
}

/** A row as the answer, with the ETag a later update or delete compares its If-Match with. */
function orNotFound<T>(set: { headers: Record<string, string | number> }, row: T | undefined, what: string): T {
  const existing = found(row, what)
  set.headers.etag = etagOf(existing)
  return existing
}

export interface GraphRoutesOptions {
  scope: ReturnType<typeof repositoryScope>
}

/** Every route at /{repoID}/… and, with the repository in X-Repository-ID, at /api/v1/…. */
export function graphRoutes(options: GraphRoutesOptions) {
  // Two route sets: one chain of them all is more than the compiler can type.
  return new Elysia({ name: 'kgs/graph-read' })
    .use(rowRoutes(options))
    .use(factsOfRoutes(options))
    .use(factMergeRoutes(options))
}

/** The facts of a source (by chunk) and of a concept (with where each came from), as the app's pages show them. */
function factsOfRoutes({ scope }: GraphRoutesOptions) {
  return repositoryScopedRoutes('kgs/graph-facts-of', scope, (app, at) => {
    const describe = (summary: string) => at.detail({ tags: ['graph'], summary })
    const { params } = at
    return app
      .use(pagination)
      .get(
        '/sources/:sourceID/facts',
        async ({ db, params, query, range }) => {
          const facts = found(
            await sourceFacts(
              await db(),
              params.sourceID,
              { from: chunkIndex(query.chunk_from), to: chunkIndex(query.chunk_to) },
              range,
            ),
            'source',
          )
          return rankedPage(facts.rows, facts.total)
        },
        {
          repository: 'fact:read',
          ranked: SOURCE_FACTS_WINDOW,
          params: params({ sourceID: Uuid }),
          query: SourceFactQuery,
          response: { 200: t.Array(SourceFact), ...errors },
          detail: describe(
            "The facts a source's chunks support, in the chunks' order, each with the chunk_index it cites (one row per chunk); X-Total-Count says how many",
          ),
        },
      )
      .get(
        '/concepts/:conceptID/facts',
        async ({ db, params, page }) => found(await conceptFacts(await db(), params.conceptID, page), 'concept'),
        {
          repository: 'fact:read',
          paginated: true,
          params: params({ conceptID: Uuid }),
          response: { 200: t.Array(FactDetail), ...errors },
          detail: describe("A concept's facts, each with its sources (and the chunks it cites) and concepts"),
        },
      )
  })
}

/** The near-duplicate merges processing made (graph/write/fact-merges.ts). */
function factMergeRoutes({ scope }: GraphRoutesOptions) {
  return repositoryScopedRoutes('kgs/factMerges', scope, (app, at) => {
    const describe = (summary: string) => at.detail({ tags: ['graph'], summary })
    const { params } = at
    const listParams = at.repositoryParams
    return app
      .use(pagination)
      .get(
        '/facts/:factID/merges',
        async ({ db, page, params }) => {
          const sql = await db()
          const merges = await listFactMerges(sql, { ...page, factId: params.factID })
          if (merges.length === 0 && !(await factExists(sql, params.factID))) throw new HttpError(404, 'fact not found')
          return merges
        },
        {
          repository: 'fact:read',
          paginated: true,
          params: params({ factID: Uuid }),
          response: { 200: t.Array(FactMerge), ...errors },
          detail: describe('The texts of the same meaning processing merged into a fact, oldest first'),
        },
      )
      .get('/fact-merges', async ({ db, page }) => listFactMerges(await db(), page), {
        repository: 'fact:read',
        paginated: true,
        params: listParams,
        response: { 200: t.Array(FactMerge), ...errors },
        detail: describe("The repository's near-duplicate merges, oldest first"),
      })
  })
}

/** The rows of every kind: lists and details, a concept's relations, a fact's citations. */
function rowRoutes({ scope }: GraphRoutesOptions) {
  return repositoryScopedRoutes('kgs/graph', scope, (app, at) => {
    const describe = (summary: string) => at.detail({ tags: ['graph'], summary })
    const { params } = at
    const listParams = at.repositoryParams
    return app
      .use(pagination)
      .get('/sources', async ({ db, page }) => listSources(await db(), page), {
        repository: 'source:read',
        paginated: true,
        params: listParams,
        response: { 200: t.Array(Source), ...errors },
        detail: describe('Sources, without their parsed text'),
      })
      .get(
        '/sources/:sourceID',
        async ({ db, params, set }) => orNotFound(set, await getSource(await db(), params.sourceID), 'source'),
        {
          repository: 'source:read',
          params: params({ sourceID: Uuid }),
          response: { 200: SourceDetail, ...errors },
          detail: describe('A source with its parsed text, images, stored body, fact count and concepts'),
        },
      )
      .get(
        '/facts',
        async ({ db, page, query }) =>
          listFacts(await db(), {
            ...page,
            status: query.status,
            factKind: query.kind,
            sourceId: query.source_id,
            conceptIds: conceptIds(query.concept),
          }),
        {
          repository: 'fact:read',
          paginated: true,
          params: listParams,
          query: FactQuery,
          response: { 200: t.Array(Fact), ...errors },
          detail: describe('Facts, optionally of one status, kind or source, or linked to every concept named'),
        },
      )
      .get(
        '/facts/:factID',
        async ({ db, params, set }) => orNotFound(set, await getFact(await db(), params.factID), 'fact'),
        {
          repository: 'fact:read',
          params: params({ factID: Uuid }),
          response: { 200: FactDetail, ...errors },
          detail: describe('A fact with its sources and concepts'),
        },
      )
      .get(
        '/facts/:factID/citations',
        async ({ db, params, range }) => {
          const citations = found(await factCitations(await db(), params.factID, range), 'fact')
          return rankedPage(citations.rows, citations.total)
        },
        {
          repository: 'fact:read',
          ranked: RELATED_WINDOW,
          params: params({ factID: Uuid }),
          response: { 200: t.Array(Citation), ...errors },
          detail: describe(
            'The summaries that cover a fact, then the reports whose sentences it annotates; X-Total-Count says how many',
          ),
        },
      )
      .get('/concepts', async ({ db, page, query }) => listConcepts(await db(), { ...page, prefix: query.prefix }), {
        repository: 'concept:read',
        paginated: true,
        params: listParams,
        query: ConceptQuery,
        response: { 200: t.Array(Concept), ...errors },
        detail: describe('Concepts, optionally those whose name starts with a prefix (case-insensitive)'),
      })
      .get(
        '/concepts/:conceptID',
        async ({ db, params, set }) => orNotFound(set, await getConcept(await db(), params.conceptID), 'concept'),
        {
          repository: 'concept:read',
          params: params({ conceptID: Uuid }),
          response: { 200: ConceptDetail, ...errors },
          detail: describe('A concept with its aliases, summaries, synthesis and fact count'),
        },
      )
      .get(
        '/concepts/:conceptID/related',
        async ({ db, params, range }) => {
          const related = found(await relatedConcepts(await db(), params.conceptID, range), 'concept')
          return rankedPage(related.rows, related.total)
        },
        {
          repository: 'concept:read',
          ranked: RELATED_WINDOW,
          params: params({ conceptID: Uuid }),
          response: { 200: t.Array(RelatedConcept), ...errors },
          detail: describe(
            'Concepts that share facts with a concept, most shared facts first; X-Total-Count says how many',
          ),
        },
      )
      .get(
        '/concepts/:conceptID/neighbourhood',
        async ({ db, params }) => found(await conceptNeighbourhood(await db(), params.conceptID), 'concept'),
        {
          repository: 'concept:read',
          params: params({ conceptID: Uuid }),
          response: { 200: Neighbourhood, ...errors },
          detail: describe(
            'The first of the related concepts (as /related ranks and counts them) and the facts each pair of them shares: what a picture of the concept draws',
          ),
        },
      )
      .get('/investigations', async ({ db, page }) => listInvestigations(await db(), page), {
        repository: 'investigation:read',
        paginated: true,
        params: listParams,
        response: { 200: t.Array(Investigation), ...errors },
        detail: describe('Investigations'),
      })
      .get(
        '/investigations/:investigationID',
        async ({ db, params, set }) =>
          orNotFound(set, await getInvestigation(await db(), params.investigationID), 'investigation'),
        {
          repository: 'investigation:read',
          params: params({ investigationID: Uuid }),
          response: { 200: InvestigationDetail, ...errors },
          detail: describe('An investigation with its sources'),
        },
      )
      .get(
        '/reports',
        async ({ db, page, query }) =>
          listReports(await db(), { ...page, parentId: query.parent_id === NONE ? null : query.parent_id }),
        {
          repository: 'report:read',
          paginated: true,
          params: listParams,
          query: ReportQuery,
          response: { 200: t.Array(Report), ...errors },
          detail: describe('Reports, without their bodies; optionally the children of one, or only top-level ones'),
        },
      )
      .get(
        '/reports/:reportID',
        async ({ db, params, set }) => orNotFound(set, await getReport(await db(), params.reportID), 'report'),
        {
          repository: 'report:read',
          params: params({ reportID: Uuid }),
          response: { 200: ReportDetail, ...errors },
          detail: describe('A report with its body, sentence annotations and child reports'),
        },
      )
  })
}
