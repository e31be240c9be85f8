// The MCP tools: each calls the feature function its REST route calls, with the permission that
// route checks. Answers fit a context window: lists give 10 rows by default and at most 200,
// previews of long texts with the id to fetch the whole, a cursor to go on (paging.ts), and never a vector.
import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { HttpError } from '../http/errors.ts'
import { ConceptDetail, FactDetail, FactStatus, InvestigationDetail, ReportDetail } from '../graph/schemas.ts'
import {
  getConcept,
  getFact,
  getInvestigation,
  getReport,
  listConcepts,
  listFacts,
  listInvestigations,
  listReports,
  RELATED_WINDOW,
  relatedConcepts,
} from '../graph/store.ts'
import { RESULT_WINDOW, SEARCH_MODES, search } from '../search/search.ts'
import { Repository } from '../repositories/schemas.ts'
import { READS, repositoryTool, systemTool, type Tool } from './tool.ts'
import { link, preview, RepositoryArgument, Uuid } from './arguments.ts'
import {
  answerPage,
  Cursor,
  Limit,
  listInput,
  listOutput,
  NextCursor,
  nextRanked,
  pageRequest,
  rankedRange,
} from './paging.ts'
import { TRANSFER_TOOLS } from './transfer-tools.ts'
import { WRITE_TOOLS } from './write-tools.ts'
import { INGEST_TOOLS } from './ingest-tools.ts'
import { ANNOTATE_TOOLS } from './annotate-tools.ts'

const orNotFound = <T>(row: T | undefined, what: string): T => {
  if (row === undefined) throw new HttpError(404, `${what} not found`)
  return row
}

const FactPreview = t.Object({
  id: t.String(),
  text: t.String({ description: 'the first characters; get_fact gives the whole' }),
  status: t.String(),
  created_at: t.String(),
})
const ConceptPreview = t.Object({
  id: t.String(),
  canonical_name: t.String(),
  context: t.String(),
  description: t.String({ description: 'the first characters' }),
})
const InvestigationPreview = t.Object({
  id: t.String(),
  title: t.String(),
  topic: t.String({ description: 'the first characters' }),
  created_at: t.String(),
})
const ReportPreview = t.Object({
  id: t.String(),
  title: t.String(),
  topic: t.String({ description: 'the first characters' }),
  status: t.String(),
  parent_id: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
})
const RepositoryWithRole = t.Object({
  ...Repository.properties,
  role: t.Union([t.String(), t.Null()], {
    description: "the caller's role in it (repoadmin, editor, curator, viewer); null: none, seen as sysadmin",
  }),
})
const SearchHit = t.Object({
  id: t.String(),
  kind: t.Union([t.Literal('fact'), t.Literal('concept')]),
  score: t.Number({
    description: 'keyword: text rank; vector: cosine similarity (1 = same direction); hybrid: the fused rank score',
  }),
  preview: t.String({ description: "the fact's text or the concept's name and description, shortened" }),
})

export const TOOLS: Tool[] = [
  systemTool({
    name: 'list_repositories',
    title: 'List repositories',
    description:
      'Start here: the knowledge-graph repositories you can use, with your role in each; every other tool takes one of them.',
    input: t.Object({ limit: Limit, cursor: Cursor }, { additionalProperties: false }),
    output: listOutput(RepositoryWithRole),
    annotations: READS,
    permission: 'token',
    async run({ principal, input, services }) {
      const request = pageRequest(input)
      const roles = new Map(services.rbac.rolesOf(principal.userId).map((a) => [a.domain, a.role]))
      return answerPage(
        await services.repositories.list(principal.userId, request.limit, request.after),
        request,
        (r) => ({ ...r, role: roles.get(r.id) ?? null }),
      )
    },
  }),
  repositoryTool({
    name: 'search',
    title: 'Search facts or concepts',
    description:
      'Find the facts (or concepts) of a repository matching a text, best first, with scores and the mode that ran; then get_fact or get_concept for the whole.',
    input: t.Object(
      {
        repository: RepositoryArgument,
        query: t.String({ minLength: 1, maxLength: 2000, description: 'what to look for, in words' }),
        kind: t.Optional(
          t.Union([t.Literal('facts'), t.Literal('concepts')], {
            default: 'facts',
            description: 'facts (default) or concepts',
          }),
        ),
        mode: t.Optional(
          t.Union(
            SEARCH_MODES.map((mode) => t.Literal(mode)),
            {
              default: 'hybrid',
              description:
                'hybrid (default: keyword and vector fused), keyword (full text) or vector (nearest embeddings)',
            },
          ),
        ),
        limit: Limit,
        cursor: Cursor,
      },
      { additionalProperties: false },
    ),
    output: t.Object({
      mode: t.Union(
        SEARCH_MODES.map((mode) => t.Literal(mode)),
        { description: 'the mode that ran: hybrid falls back to keyword' },
      ),
      fallback: t.Optional(t.String({ description: 'why hybrid fell back to keyword' })),
      kind: t.Union([t.Literal('facts'), t.Literal('concepts')]),
      total: t.Integer({ description: 'hits the mode ranks' }),
      hits: t.Array(SearchHit),
      next_cursor: NextCursor,
    }),
    annotations: READS,
    permission: (input) => (input.kind === 'concepts' ? 'concept:read' : 'fact:read'),
    async run({ repository, db, input, services }) {
      const kind = input.kind ?? 'facts'
      const range = rankedRange(input, RESULT_WINDOW)
      const answer = await search(
        await db(),
        repository.id,
        { q: input.query, kind, mode: input.mode ?? 'hybrid', ...range },
        services,
      )
      return {
        mode: answer.mode,
        ...(answer.fallback ? { fallback: answer.fallback } : {}),
        kind,
        total: answer.total,
        hits: answer.hits.map((hit) =>
          hit.fact
            ? { id: hit.id, kind: 'fact' as const, score: hit.score, preview: preview(hit.fact.text) }
            : {
                id: hit.id,
                kind: 'concept' as const,
                score: hit.score,
                preview: preview(`${hit.concept!.canonical_name}: ${hit.concept!.description}`),
              },
        ),
        ...nextRanked(range, answer.total, RESULT_WINDOW),
      }
    },
    links: (output, repository) =>
      output.hits.map((hit) =>
        link(repository, hit.kind === 'fact' ? 'facts' : 'concepts', hit.id, hit.preview.slice(0, 80)),
      ),
  }),
  repositoryTool({
    name: 'list_facts',
    title: 'List facts',
    description:
      'Page through the facts of a repository (oldest first), optionally of one status, one source, or shared by several concepts.',
    input: listInput({
      status: t.Optional(FactStatus('only facts of this status')),
      source_id: t.Optional(Uuid('only facts of this source')),
      concept_ids: t.Optional(
        t.Array(Uuid('a concept'), {
          minItems: 1,
          maxItems: 20,
          description: 'only facts linked to every one of these concepts',
        }),
      ),
    }),
    output: listOutput(FactPreview),
    annotations: READS,
    permission: () => 'fact:read',
    async run({ db, input }) {
      const request = pageRequest(input)
      const rows = await listFacts(await db(), {
        ...request,
        status: input.status,
        sourceId: input.source_id,
        conceptIds: input.concept_ids,
      })
      return answerPage(rows, request, (f) => ({
        id: f.id,
        text: preview(f.text),
        status: f.status,
        created_at: f.created_at,
      }))
    },
  }),
  repositoryTool({
    name: 'get_fact',
    title: 'Get a fact',
    description:
      'One fact in full: its text, status, the sources it cites (with chunk) and the concepts it belongs to.',
    input: t.Object({ repository: RepositoryArgument, fact_id: Uuid('the fact') }, { additionalProperties: false }),
    output: FactDetail,
    annotations: READS,
    permission: () => 'fact:read',
    run: async ({ db, input }) => orNotFound(await getFact(await db(), input.fact_id), 'fact'),
    links: (fact, repository) => [
      link(repository, 'facts', fact.id, preview(fact.text).slice(0, 80)),
      ...fact.concepts.map((c) => link(repository, 'concepts', c.id, c.canonical_name)),
    ],
  }),
  repositoryTool({
    name: 'list_concepts',
    title: 'List concepts',
    description: 'Page through the concepts of a repository, optionally those whose name starts with a prefix.',
    input: listInput({
      prefix: t.Optional(t.String({ maxLength: 200, description: 'case-insensitive prefix of the canonical name' })),
    }),
    output: listOutput(ConceptPreview),
    annotations: READS,
    permission: () => 'concept:read',
    async run({ db, input }) {
      const request = pageRequest(input)
      return answerPage(await listConcepts(await db(), { ...request, prefix: input.prefix }), request, (c) => ({
        id: c.id,
        canonical_name: c.canonical_name,
        context: c.context,
        description: preview(c.description),
      }))
    },
  }),
  repositoryTool({
    name: 'get_concept',
    title: 'Get a concept',
    description: 'One concept in full: aliases, summaries (citing facts), its synthesis and how many facts it has.',
    input: t.Object(
      { repository: RepositoryArgument, concept_id: Uuid('the concept') },
      { additionalProperties: false },
    ),
    output: ConceptDetail,
    annotations: READS,
    permission: () => 'concept:read',
    run: async ({ db, input }) => orNotFound(await getConcept(await db(), input.concept_id), 'concept'),
    links: (concept, repository) => [link(repository, 'concepts', concept.id, concept.canonical_name)],
  }),
  repositoryTool({
    name: 'related_concepts',
    title: 'Related concepts',
    description: 'The concepts that share facts with a concept, most shared first, with how many they share.',
    input: t.Object(
      { repository: RepositoryArgument, concept_id: Uuid('the concept'), limit: Limit, cursor: Cursor },
      { additionalProperties: false },
    ),
    output: t.Object({
      total: Type.Integer({ description: 'related concepts in all' }),
      items: t.Array(t.Object({ ...ConceptPreview.properties, shared_facts: Type.Integer() })),
      next_cursor: NextCursor,
    }),
    annotations: READS,
    permission: () => 'concept:read',
    async run({ db, input }) {
      const range = rankedRange(input, RELATED_WINDOW)
      const related = orNotFound(await relatedConcepts(await db(), input.concept_id, range), 'concept')
      return {
        total: related.total,
        items: related.rows.map((c) => ({
          id: c.id,
          canonical_name: c.canonical_name,
          context: c.context,
          description: preview(c.description),
          shared_facts: c.shared_facts,
        })),
        ...nextRanked(range, related.total, RELATED_WINDOW),
      }
    },
    links: (output, repository) => output.items.map((c) => link(repository, 'concepts', c.id, c.canonical_name)),
  }),
  repositoryTool({
    name: 'list_investigations',
    title: 'List investigations',
    description:
      'Page through the investigations of a repository (research questions with the sources gathered for them).',
    input: listInput({}),
    output: listOutput(InvestigationPreview),
    annotations: READS,
    permission: () => 'investigation:read',
    async run({ db, input }) {
      const request = pageRequest(input)
      return answerPage(await listInvestigations(await db(), request), request, (i) => ({
        id: i.id,
        title: i.title,
        topic: preview(i.topic),
        created_at: i.created_at,
      }))
    },
  }),
  repositoryTool({
    name: 'get_investigation',
    title: 'Get an investigation',
    description: 'One investigation in full, with its sources.',
    input: t.Object(
      { repository: RepositoryArgument, investigation_id: Uuid('the investigation') },
      { additionalProperties: false },
    ),
    output: InvestigationDetail,
    annotations: READS,
    permission: () => 'investigation:read',
    run: async ({ db, input }) =>
      orNotFound(await getInvestigation(await db(), input.investigation_id), 'investigation'),
  }),
  repositoryTool({
    name: 'list_reports',
    title: 'List reports',
    description:
      'Page through the reports of a repository without their bodies; top_level: only reports without a parent.',
    input: listInput({
      parent_id: t.Optional(Uuid('only the children of this report')),
      top_level: t.Optional(t.Boolean({ description: 'only reports without a parent' })),
    }),
    output: listOutput(ReportPreview),
    annotations: READS,
    permission: () => 'report:read',
    async run({ db, input }) {
      const request = pageRequest(input)
      const rows = await listReports(await db(), { ...request, parentId: input.top_level ? null : input.parent_id })
      return answerPage(rows, request, (r) => ({
        id: r.id,
        title: r.title,
        topic: preview(r.topic),
        status: r.status,
        parent_id: r.parent_id,
        created_at: r.created_at,
      }))
    },
  }),
  repositoryTool({
    name: 'get_report',
    title: 'Get a report',
    description:
      'One report in full: its markdown body, the facts annotating each sentence (with scores) and its child reports.',
    input: t.Object({ repository: RepositoryArgument, report_id: Uuid('the report') }, { additionalProperties: false }),
    output: ReportDetail,
    annotations: READS,
    permission: () => 'report:read',
    run: async ({ db, input }) => orNotFound(await getReport(await db(), input.report_id), 'report'),
    links: (report, repository) => [link(repository, 'reports', report.id, report.title)],
  }),
  ...TRANSFER_TOOLS,
  ...WRITE_TOOLS,
  ...INGEST_TOOLS,
  ...ANNOTATE_TOOLS,
]
