// The knowledge-graph write API: create, update (PATCH) and delete every kind of row a bundle
// carries, at /{repoID}/<path> and, with the repository named by X-Repository-ID, at
// /api/v1/<path> (docs/spec/decisions.md §2). Each route needs its kind's :write permission in the
// repository (§4), and an OAuth token the write scope. The rules the import keeps hold here too
// (graph/rules.ts, graph/write/); every row answers with an ETag, and an update or delete whose
// If-Match names another version is refused (412). Each route calls one function of the graph's
// write service (write/service.ts, shared with the MCP tools), which sets off what the write
// entails; a refusal (write/common.ts) carries its status, answered by the shared error handler.
import { Elysia, t } from 'elysia'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes, type RepositoryAddress } from '../repositories/scoped-routes.ts'
import { ConceptDetail, FactDetail, InvestigationDetail, ReportDetail, SourceDetail } from './schemas.ts'
import * as bodies from './write/schemas.ts'
import { etagOf } from '../http/etag.ts'
import type { GraphWrites } from './write/service.ts'

type Scope = ReturnType<typeof repositoryScope>

export interface GraphWriteOptions {
  scope: Scope
  /** The graph's writes with what each sets off, shared with the MCP tools. */
  writes: GraphWrites
}

const Uuid = t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' })
const flag = (description: string) =>
  t.Optional(t.Union([t.Literal('true'), t.Literal('false')], { error: 'expected true or false', description }))
const IF_MATCH = {
  in: 'header' as const,
  name: 'If-Match',
  required: false,
  schema: { type: 'string' as const },
  description: 'the ETag the change is based on: 412 when the row has changed since (absent: the change applies)',
}

/** A JSON body: malformed or invalid (400), too large (413), of another type (415). */
const bodyErrors = { 413: ErrorBody, 415: ErrorBody }
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
const created = { ...errors, ...bodyErrors, 409: bodies.ExistingRowBody }
const updated = { ...errors, ...bodyErrors, 409: bodies.ExistingRowBody, 412: ErrorBody }
const removed = { ...errors, 412: ErrorBody }

interface Context {
  set: { status?: number | string; headers: Record<string, string | number> }
}

/**
 * A written row, answered with its ETag (a refusal of the write is the error handler's to answer);
 * `version`: the row the ETag is of, when the answer says more than that row.
 */
function answer<T>({ set }: Context, row: T, code = 200, version: unknown = row): T {
  set.status = code
  set.headers.etag = etagOf(version)
  return row
}

const ifMatch = (request: Request) => request.headers.get('if-match') ?? undefined

/** What every route set's declarations use. */
function helpers(at: RepositoryAddress, { writes }: GraphWriteOptions) {
  return {
    params: at.params,
    noParams: at.repositoryParams,
    /** The operation's detail; `conditional`: it takes If-Match. */
    describe: (summary: string, conditional = false) =>
      at.detail({ tags: ['graph'], summary, ...(conditional ? { parameters: [IF_MATCH] } : {}) }),
    writes,
  }
}

/** Sources and investigations (source:write, investigation:write). */
function sourceWriteRoutes(options: GraphWriteOptions) {
  return repositoryScopedRoutes('kgs/sourceWriteRoutes', options.scope, (app, at) => {
    const { params, describe, noParams, writes } = helpers(at, options)
    return app
      .post('/sources', async (ctx) => answer(ctx, await writes.createSource(ctx.repository.id, ctx.body), 201), {
        repository: 'source:write',
        params: noParams,
        body: bodies.SourceCreate,
        response: { 201: SourceDetail, ...created },
        detail: describe('Create a source (409 with existing_id when its URL has one already)'),
      })
      .patch(
        '/sources/:sourceID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateSource(ctx.repository.id, ctx.params.sourceID, ctx.body, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'source:write',
          params: params({ sourceID: Uuid }),
          body: bodies.SourceUpdate,
          response: { 200: SourceDetail, ...updated },
          detail: describe('Change fields of a source', true),
        },
      )
      .delete(
        '/sources/:sourceID',
        async (ctx) =>
          writes.deleteSource(ctx.repository.id, ctx.params.sourceID, {
            ifMatch: ifMatch(ctx.request),
            cascade: ctx.query.cascade === 'true',
          }),
        {
          repository: 'source:write',
          params: params({ sourceID: Uuid }),
          query: t.Object({
            cascade: flag('true: delete it even though facts cite it, with those links (the facts stay)'),
          }),
          response: { 200: bodies.DeletedSource, ...removed, 409: ErrorBody },
          detail: describe(
            'Delete a source with its images and stored body; refused (409) while facts cite it, unless cascade=true',
            true,
          ),
        },
      )
      .post(
        '/investigations',
        async (ctx) => answer(ctx, await writes.createInvestigation(ctx.repository.id, ctx.body), 201),
        {
          repository: 'investigation:write',
          params: noParams,
          body: bodies.InvestigationCreate,
          response: { 201: InvestigationDetail, ...errors, ...bodyErrors },
          detail: describe('Create an investigation with its sources'),
        },
      )
      .patch(
        '/investigations/:investigationID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateInvestigation(ctx.repository.id, ctx.params.investigationID, ctx.body, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'investigation:write',
          params: params({ investigationID: Uuid }),
          body: bodies.InvestigationUpdate,
          response: { 200: InvestigationDetail, ...errors, ...bodyErrors, 412: ErrorBody },
          detail: describe('Change an investigation; source_ids, when given, replace its sources', true),
        },
      )
      .delete(
        '/investigations/:investigationID',
        async (ctx) =>
          writes.deleteInvestigation(ctx.repository.id, ctx.params.investigationID, { ifMatch: ifMatch(ctx.request) }),
        {
          repository: 'investigation:write',
          params: params({ investigationID: Uuid }),
          response: { 200: bodies.Deleted, ...removed },
          detail: describe('Delete an investigation (its sources stay)', true),
        },
      )
      .put(
        '/investigations/:investigationID/sources/:sourceID',
        async (ctx) =>
          answer(
            ctx,
            await writes.addInvestigationSource(ctx.repository.id, ctx.params.investigationID, ctx.params.sourceID, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'investigation:write',
          params: params({ investigationID: Uuid, sourceID: Uuid }),
          response: { 200: InvestigationDetail, ...removed },
          detail: describe('Add a source to an investigation (the answer is the investigation)', true),
        },
      )
      .delete(
        '/investigations/:investigationID/sources/:sourceID',
        async (ctx) =>
          answer(
            ctx,
            await writes.removeInvestigationSource(ctx.repository.id, ctx.params.investigationID, ctx.params.sourceID, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'investigation:write',
          params: params({ investigationID: Uuid, sourceID: Uuid }),
          response: { 200: InvestigationDetail, ...removed },
          detail: describe('Remove a source from an investigation (the answer is the investigation)', true),
        },
      )
  })
}

/** Facts and their links to concepts (fact:write). */
function factWriteRoutes(options: GraphWriteOptions) {
  return repositoryScopedRoutes('kgs/factWriteRoutes', options.scope, (app, at) => {
    const { params, describe, noParams, writes } = helpers(at, options)
    return app
      .post(
        '/facts',
        async (ctx) => {
          const { fact, created } = await writes.createFact(ctx.repository.id, ctx.body, {
            merge: ctx.query.merge === 'true',
          })
          // Merged into the existing fact: 200, as for any other answer of an existing row.
          return answer(ctx, fact, created ? 201 : 200)
        },
        {
          repository: 'fact:write',
          params: noParams,
          query: t.Object({
            merge: flag(
              'true: a fact of the same normalized text gets the new links and is answered (200) instead of a 409',
            ),
          }),
          body: bodies.FactCreate,
          response: { 200: FactDetail, 201: FactDetail, ...created },
          detail: describe(
            'Create a fact with its sources and concepts (409 with existing_id when its normalized text exists, unless merge=true)',
          ),
        },
      )
      .patch(
        '/facts/:factID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateFact(ctx.repository.id, ctx.params.factID, ctx.body, { ifMatch: ifMatch(ctx.request) }),
          ),
        {
          repository: 'fact:write',
          params: params({ factID: Uuid }),
          body: bodies.FactUpdate,
          response: { 200: FactDetail, ...updated },
          detail: describe('Change a fact; sources and concepts, when given, replace its links', true),
        },
      )
      .delete(
        '/facts/:factID',
        async (ctx) => writes.deleteFact(ctx.repository.id, ctx.params.factID, { ifMatch: ifMatch(ctx.request) }),
        {
          repository: 'fact:write',
          params: params({ factID: Uuid }),
          response: { 200: bodies.DeletedFact, ...removed },
          detail: describe(
            'Delete a fact with its links and annotations; the answer names the summaries, syntheses and reports whose citations it breaks',
            true,
          ),
        },
      )
      .post(
        '/facts/:factID/unmerge',
        async (ctx) => {
          const unmerged = await writes.unmergeFact(ctx.repository.id, ctx.params.factID, ctx.body.merge_id, {
            ifMatch: ifMatch(ctx.request),
          })
          ctx.set.headers.location = `/${ctx.repository.id}/facts/${unmerged.fact.id}`
          answer(ctx, unmerged.fact, 201)
          return unmerged
        },
        {
          repository: 'fact:write',
          params: params({ factID: Uuid }),
          body: bodies.Unmerge,
          response: { 201: bodies.Unmerged, ...updated },
          detail: describe(
            "Undo a near-duplicate merge: the merged text becomes its own fact again, citing where it came from (If-Match: the kept fact's ETag)",
            true,
          ),
        },
      )
      .put(
        '/facts/:factID/concepts/:conceptID',
        async (ctx) =>
          answer(
            ctx,
            await writes.linkConcept(
              ctx.repository.id,
              ctx.params.factID,
              { concept_id: ctx.params.conceptID, promptset_hash: ctx.query.promptset_hash },
              { ifMatch: ifMatch(ctx.request) },
            ),
          ),
        {
          repository: 'fact:write',
          params: params({ factID: Uuid, conceptID: Uuid }),
          query: t.Object({
            promptset_hash: t.Optional(t.String({ maxLength: 2000, error: 'expected at most 2000 characters' })),
          }),
          response: { 200: FactDetail, ...removed },
          detail: describe('Link a fact to a concept (the answer is the fact)', true),
        },
      )
      .delete(
        '/facts/:factID/concepts/:conceptID',
        async (ctx) =>
          answer(
            ctx,
            await writes.unlinkConcept(ctx.repository.id, ctx.params.factID, ctx.params.conceptID, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'fact:write',
          params: params({ factID: Uuid, conceptID: Uuid }),
          response: { 200: FactDetail, ...removed },
          detail: describe('Unlink a fact from a concept (the answer is the fact)', true),
        },
      )
  })
}

/** Concepts, their summaries and the syntheses (concept:write). */
function conceptWriteRoutes(options: GraphWriteOptions) {
  return repositoryScopedRoutes('kgs/conceptWriteRoutes', options.scope, (app, at) => {
    const { params, describe, noParams, writes } = helpers(at, options)
    return app
      .post('/concepts', async (ctx) => answer(ctx, await writes.createConcept(ctx.repository.id, ctx.body), 201), {
        repository: 'concept:write',
        params: noParams,
        body: bodies.ConceptCreate,
        response: { 201: ConceptDetail, ...created },
        detail: describe(
          'Create a concept with its aliases (409 with existing_id when its name and context, case-insensitively, have one)',
        ),
      })
      .patch(
        '/concepts/:conceptID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateConcept(ctx.repository.id, ctx.params.conceptID, ctx.body, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid }),
          body: bodies.ConceptUpdate,
          response: { 200: ConceptDetail, ...updated },
          detail: describe('Change a concept; aliases, when given, replace its aliases', true),
        },
      )
      .delete(
        '/concepts/:conceptID',
        async (ctx) => writes.deleteConcept(ctx.repository.id, ctx.params.conceptID, { ifMatch: ifMatch(ctx.request) }),
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid }),
          response: { 200: bodies.DeletedConcept, ...removed },
          detail: describe(
            'Delete a concept with its links and summaries; the answer names the rows whose citations it breaks',
            true,
          ),
        },
      )
      .post(
        '/concepts/:conceptID/merge',
        async (ctx) => {
          const merged = await writes.mergeConcepts(ctx.repository.id, ctx.params.conceptID, ctx.body, {
            ifMatch: ifMatch(ctx.request),
          })
          return answer(ctx, merged, 200, merged.concept)
        },
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid }),
          body: bodies.ConceptMerge,
          response: { 200: bodies.MergedConcept, ...updated },
          detail: describe(
            "Merge concepts into this one: their names and aliases become its aliases, their facts and summaries its own, citations of them citations of it (the ETag is the concept's)",
            true,
          ),
        },
      )
      .post(
        '/concepts/:conceptID/split',
        async (ctx) => {
          const split = await writes.splitConcept(ctx.repository.id, ctx.params.conceptID, ctx.body, {
            ifMatch: ifMatch(ctx.request),
          })
          return answer(ctx, split, 201, split.concept)
        },
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid }),
          body: bodies.ConceptSplit,
          response: { 201: bodies.SplitConcept, ...updated },
          detail: describe(
            "Split a new concept off this one, taking the links of the facts and the aliases named (201; the ETag is this concept's)",
            true,
          ),
        },
      )
      .post(
        '/concepts/:conceptID/summaries',
        async (ctx) => answer(ctx, await writes.createSummary(ctx.repository.id, ctx.params.conceptID, ctx.body), 201),
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid }),
          body: bodies.SummaryCreate,
          response: { 201: bodies.Summary, ...created },
          detail: describe(
            'Add a summary to a concept (409 with existing_id when the concept has one of that sequence_num); its citations must exist',
          ),
        },
      )
      .patch(
        '/concepts/:conceptID/summaries/:summaryID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateSummary(ctx.repository.id, ctx.params.conceptID, ctx.params.summaryID, ctx.body, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid, summaryID: Uuid }),
          body: bodies.SummaryUpdate,
          response: { 200: bodies.Summary, ...updated },
          detail: describe("Change a concept's summary", true),
        },
      )
      .delete(
        '/concepts/:conceptID/summaries/:summaryID',
        async (ctx) =>
          writes.deleteSummary(ctx.repository.id, ctx.params.conceptID, ctx.params.summaryID, {
            ifMatch: ifMatch(ctx.request),
          }),
        {
          repository: 'concept:write',
          params: params({ conceptID: Uuid, summaryID: Uuid }),
          response: { 200: bodies.Deleted, ...removed },
          detail: describe("Delete a concept's summary", true),
        },
      )
      .post('/syntheses', async (ctx) => answer(ctx, await writes.createSynthesis(ctx.repository.id, ctx.body), 201), {
        repository: 'concept:write',
        params: noParams,
        body: bodies.SynthesisCreate,
        response: { 201: bodies.Synthesis, ...created },
        detail: describe(
          'Create the synthesis of a concept group (409 with existing_id when its name, case-insensitively, has one); its citations and lists must exist',
        ),
      })
      .patch(
        '/syntheses/:synthesisID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateSynthesis(ctx.repository.id, ctx.params.synthesisID, ctx.body, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'concept:write',
          params: params({ synthesisID: Uuid }),
          body: bodies.SynthesisUpdate,
          response: { 200: bodies.Synthesis, ...updated },
          detail: describe('Change a synthesis', true),
        },
      )
      .delete(
        '/syntheses/:synthesisID',
        async (ctx) =>
          writes.deleteSynthesis(ctx.repository.id, ctx.params.synthesisID, { ifMatch: ifMatch(ctx.request) }),
        {
          repository: 'concept:write',
          params: params({ synthesisID: Uuid }),
          response: { 200: bodies.Deleted, ...removed },
          detail: describe('Delete a synthesis', true),
        },
      )
  })
}

/** Reports and their annotations (report:write). */
function reportWriteRoutes(options: GraphWriteOptions) {
  return repositoryScopedRoutes('kgs/reportWriteRoutes', options.scope, (app, at) => {
    const { params, describe, noParams, writes } = helpers(at, options)
    return app
      .post('/reports', async (ctx) => answer(ctx, await writes.createReport(ctx.repository.id, ctx.body), 201), {
        repository: 'report:write',
        params: noParams,
        body: bodies.ReportCreate,
        response: { 201: ReportDetail, ...errors, ...bodyErrors },
        detail: describe('Create a report (under parent_id, if given) with its annotations; its citations must exist'),
      })
      .patch(
        '/reports/:reportID',
        async (ctx) =>
          answer(
            ctx,
            await writes.updateReport(ctx.repository.id, ctx.params.reportID, ctx.body, {
              ifMatch: ifMatch(ctx.request),
            }),
          ),
        {
          repository: 'report:write',
          params: params({ reportID: Uuid }),
          body: bodies.ReportUpdate,
          response: { 200: ReportDetail, ...errors, ...bodyErrors, 412: ErrorBody },
          detail: describe('Change a report; annotations, when given, replace its annotations', true),
        },
      )
      .delete(
        '/reports/:reportID',
        async (ctx) => writes.deleteReport(ctx.repository.id, ctx.params.reportID, { ifMatch: ifMatch(ctx.request) }),
        {
          repository: 'report:write',
          params: params({ reportID: Uuid }),
          response: { 200: bodies.DeletedReport, ...removed },
          detail: describe('Delete a report and its descendants', true),
        },
      )
  })
}

/** Every write route at /{repoID}/… and, with the repository in X-Repository-ID, at /api/v1/…. */
export function graphWriteRoutes(options: GraphWriteOptions) {
  // Four route sets: one chain of them all is more than the compiler can type.
  return new Elysia({ name: 'kgs/graph-write' })
    .use(sourceWriteRoutes(options))
    .use(factWriteRoutes(options))
    .use(conceptWriteRoutes(options))
    .use(reportWriteRoutes(options))
}
