// The MCP tools that build the graph: each calls the function of the graph's write service its
// REST route calls (graph/write/service.ts, which sets off what the write entails), with the
// permission that route checks. The creates are one tool each; updates and deletes are one tool
// each taking the kind of row, so that the whole set stays within what hosts list. Answers are
// the rows written, their long texts cut to a preview.
import { t } from 'elysia'
import type { Static, TObject, TProperties } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { HttpError } from '../http/errors.ts'
import type { RepositoryPermission } from '../permissions.ts'
import type { Repository } from '../repositories/repositories.ts'
import { ConceptDetail, FactDetail, InvestigationDetail, ReportDetail, SourceDetail } from '../graph/schemas.ts'
import * as bodies from '../graph/write/schemas.ts'
import type { ToolServices } from './services.ts'
import { repositoryTool, type Annotations, type Link, type Tool } from './tool.ts'
import { Confirm, link, preview, RepositoryArgument, Uuid } from './arguments.ts'

/** Adds to the graph; a row with a natural key is refused (naming the existing one) the second time, so a repeat changes nothing. */
const ADDS: Annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }
/** Adds a new row each time. */
const ADDS_EACH_TIME: Annotations = { ...ADDS, idempotentHint: false }
/** Overwrites or removes what is there; the same call twice leaves the same graph. */
const CHANGES: Annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }

/** A tool's input: the repository, then `body`'s fields (a write body of graph/write/schemas.ts) and `extra`. */
const input = <B extends TProperties, E extends TProperties = Record<never, never>>(
  body: TObject<B>,
  extra: E = {} as E,
) => t.Object({ repository: RepositoryArgument, ...extra, ...body.properties }, { additionalProperties: false })

/** `input` less the repository: the write's body. */
const bodyOf = <T extends { repository: string }>({ repository: _, ...body }: T) => body

/**
 * The row a write answers, its long texts (what the caller just wrote, up to megabytes) cut to a
 * preview: the get tool, or the REST API, gives the whole.
 */
const shortened =
  <K extends string>(...fields: K[]) =>
  <R extends Record<K, string>>(row: R): R => ({
    ...row,
    ...Object.fromEntries(fields.map((field) => [field, preview(row[field])])),
  })
const SHOWN = {
  source: shortened('parsed_text', 'parsed_markdown'),
  concept: shortened('description'),
  summary: shortened('content'),
  synthesis: shortened('content'),
  report: shortened('body_md'),
}

const factLinks = (fact: Static<typeof FactDetail>, repository: Repository | undefined): Link[] => [
  link(repository, 'facts', fact.id, preview(fact.text).slice(0, 80)),
  ...fact.concepts.map((c) => link(repository, 'concepts', c.id, c.canonical_name)),
]

// ---- update and delete, by kind

const KINDS = ['source', 'fact', 'concept', 'summary', 'synthesis', 'investigation', 'report'] as const
type Kind = (typeof KINDS)[number]

interface Target {
  repository: Repository
  services: ToolServices
  id: string
  /** A summary's concept (summaries are named by it and their id). */
  concept_id?: string
}

interface Editable {
  permission: RepositoryPermission
  /** The fields an update takes, as the REST PATCH body, checked here for the kind the call names. */
  changes: TObject
  update(target: Target, changes: never): Promise<{ id: string }>
  remove(target: Target, options: { cascade: boolean }): Promise<{ id: string }>
  links?(row: never, repository: Repository): Link[]
}

/** The concept of a summary the call names (update and delete need it, as the REST path does). */
function summaryConcept(target: Target): string {
  if (!target.concept_id)
    throw new HttpError(
      400,
      'concept_id: a summary is named by its concept and its id; give the concept_id get_concept shows it under',
    )
  return target.concept_id
}

const EDITABLE: Record<Kind, Editable> = {
  source: {
    permission: 'source:write',
    changes: bodies.SourceUpdate,
    update: async ({ repository, services, id }, changes: Static<typeof bodies.SourceUpdate>) =>
      SHOWN.source(await services.writes.updateSource(repository.id, id, changes, {})),
    remove: ({ repository, services, id }, { cascade }) => services.writes.deleteSource(repository.id, id, { cascade }),
  },
  fact: {
    permission: 'fact:write',
    changes: bodies.FactUpdate,
    update: ({ repository, services, id }, changes: Static<typeof bodies.FactUpdate>) =>
      services.writes.updateFact(repository.id, id, changes, {}),
    remove: ({ repository, services, id }) => services.writes.deleteFact(repository.id, id, {}),
    links: (fact: Static<typeof FactDetail>, repository) => factLinks(fact, repository),
  },
  concept: {
    permission: 'concept:write',
    changes: bodies.ConceptUpdate,
    update: async ({ repository, services, id }, changes: Static<typeof bodies.ConceptUpdate>) =>
      SHOWN.concept(await services.writes.updateConcept(repository.id, id, changes, {})),
    remove: ({ repository, services, id }) => services.writes.deleteConcept(repository.id, id, {}),
    links: (concept: Static<typeof ConceptDetail>, repository) => [
      link(repository, 'concepts', concept.id, concept.canonical_name),
    ],
  },
  summary: {
    permission: 'concept:write',
    changes: bodies.SummaryUpdate,
    update: async (target, changes: Static<typeof bodies.SummaryUpdate>) =>
      SHOWN.summary(
        await target.services.writes.updateSummary(
          target.repository.id,
          summaryConcept(target),
          target.id,
          changes,
          {},
        ),
      ),
    remove: (target) =>
      target.services.writes.deleteSummary(target.repository.id, summaryConcept(target), target.id, {}),
    links: (summary: Static<typeof bodies.Summary>, repository) => [
      link(repository, 'concepts', summary.concept_id, 'the concept of the summary'),
    ],
  },
  synthesis: {
    permission: 'concept:write',
    changes: bodies.SynthesisUpdate,
    update: async ({ repository, services, id }, changes: Static<typeof bodies.SynthesisUpdate>) =>
      SHOWN.synthesis(await services.writes.updateSynthesis(repository.id, id, changes, {})),
    remove: ({ repository, services, id }) => services.writes.deleteSynthesis(repository.id, id, {}),
  },
  investigation: {
    permission: 'investigation:write',
    changes: bodies.InvestigationUpdate,
    update: ({ repository, services, id }, changes: Static<typeof bodies.InvestigationUpdate>) =>
      services.writes.updateInvestigation(repository.id, id, changes, {}),
    remove: ({ repository, services, id }) => services.writes.deleteInvestigation(repository.id, id, {}),
  },
  report: {
    permission: 'report:write',
    changes: bodies.ReportUpdate,
    update: async ({ repository, services, id }, changes: Static<typeof bodies.ReportUpdate>) =>
      SHOWN.report(await services.writes.updateReport(repository.id, id, changes, {})),
    remove: ({ repository, services, id }) => services.writes.deleteReport(repository.id, id, {}),
    links: (report: Static<typeof ReportDetail>, repository) => [link(repository, 'reports', report.id, report.title)],
  },
}

/** Each kind's update fields, compiled once. */
const CHANGE_CHECKS = Object.fromEntries(
  KINDS.map((kind) => [kind, TypeCompiler.Compile(EDITABLE[kind].changes)]),
) as Record<Kind, TypeCheck<TObject>>

/** `changes` checked against the fields of `kind`: HttpError 400 naming the first field wrong. */
function checkedChanges(kind: Kind, changes: unknown): never {
  const check = CHANGE_CHECKS[kind]
  if (check.Check(changes)) return changes as never
  const error = check.Errors(changes).First()!
  const where = error.path ? `changes${error.path.replaceAll('/', '.')}` : 'changes'
  throw new HttpError(
    400,
    `${where}: ${error.message} (the fields of a ${kind}, as its create tool takes them; at least one)`,
  )
}

const Kind = t.Union(
  KINDS.map((kind) => t.Literal(kind)),
  { description: 'the kind of row' },
)
const TargetArguments = {
  kind: Kind,
  id: Uuid('the row'),
  concept_id: t.Optional(Uuid("a summary's concept (needed for kind summary)")),
}

export const WRITE_TOOLS: Tool[] = [
  repositoryTool({
    name: 'create_source',
    title: 'Create a source',
    description:
      'Record a document (URL, kind, parsed text) that facts can cite; refused naming the existing one when its URL has a source.',
    input: input(bodies.SourceCreate),
    output: SourceDetail,
    annotations: ADDS,
    permission: () => 'source:write',
    run: async ({ repository, input, services }) =>
      SHOWN.source(await services.writes.createSource(repository.id, bodyOf(input))),
  }),
  repositoryTool({
    name: 'create_fact',
    title: 'Create a fact',
    description:
      'Add a fact citing its sources (and chunks), linked to concepts; a same-text fact is refused naming it, or merged with merge: true.',
    input: input(bodies.FactCreate, {
      merge: t.Optional(
        t.Boolean({
          default: false,
          description: 'true: a fact of the same normalized text gets these links and is answered instead of refused',
        }),
      ),
    }),
    output: t.Object({
      ...FactDetail.properties,
      created: t.Boolean({ description: 'false: merged into the existing fact of this text' }),
    }),
    annotations: ADDS,
    permission: () => 'fact:write',
    async run({ repository, input: { merge, ...input }, services }) {
      const { fact, created } = await services.writes.createFact(repository.id, bodyOf(input), {
        merge: merge ?? false,
      })
      return { ...fact, created }
    },
    links: factLinks,
  }),
  repositoryTool({
    name: 'create_concept',
    title: 'Create a concept',
    description:
      'Add a concept (a name in a context, with aliases and a description); refused naming the existing one of the same name and context.',
    input: input(bodies.ConceptCreate),
    output: ConceptDetail,
    annotations: ADDS,
    permission: () => 'concept:write',
    run: async ({ repository, input, services }) =>
      SHOWN.concept(await services.writes.createConcept(repository.id, bodyOf(input))),
    links: (concept, repository) => [link(repository, 'concepts', concept.id, concept.canonical_name)],
  }),
  repositoryTool({
    name: 'link_concept',
    title: 'Link a fact to a concept',
    description:
      'Link an existing fact to an existing concept (answers the fact with its concepts); linking twice changes nothing.',
    input: t.Object(
      {
        repository: RepositoryArgument,
        fact_id: Uuid('the fact'),
        concept_id: Uuid('the concept'),
        promptset_hash: t.Optional(t.String({ maxLength: 2000, description: 'what produced the link' })),
      },
      { additionalProperties: false },
    ),
    output: FactDetail,
    annotations: ADDS,
    permission: () => 'fact:write',
    run: ({ repository, input, services }) =>
      services.writes.linkConcept(
        repository.id,
        input.fact_id,
        { concept_id: input.concept_id, promptset_hash: input.promptset_hash },
        {},
      ),
    links: factLinks,
  }),
  repositoryTool({
    name: 'write_summary',
    title: "Write a concept's summary",
    description:
      'Add a summary to a concept, citing facts as [text](<fact:UUID>); every cited fact must exist; one per sequence_num.',
    input: input(bodies.SummaryCreate, { concept_id: Uuid('the concept it summarizes') }),
    output: bodies.Summary,
    annotations: ADDS,
    permission: () => 'concept:write',
    run: async ({ repository, input: { concept_id, ...input }, services }) =>
      SHOWN.summary(await services.writes.createSummary(repository.id, concept_id, bodyOf(input))),
    links: (summary, repository) => [link(repository, 'concepts', summary.concept_id, 'the concept of the summary')],
  }),
  repositoryTool({
    name: 'write_synthesis',
    title: 'Write a synthesis',
    description:
      'Add the synthesis of a group of concepts, citing facts and concepts; everything it cites or covers must exist; one per name.',
    input: input(bodies.SynthesisCreate),
    output: bodies.Synthesis,
    annotations: ADDS,
    permission: () => 'concept:write',
    run: async ({ repository, input, services }) =>
      SHOWN.synthesis(await services.writes.createSynthesis(repository.id, bodyOf(input))),
  }),
  repositoryTool({
    name: 'create_investigation',
    title: 'Create an investigation',
    description: 'Open an investigation: a research question (title, topic) with the sources gathered for it.',
    input: input(bodies.InvestigationCreate),
    output: InvestigationDetail,
    annotations: ADDS_EACH_TIME,
    permission: () => 'investigation:write',
    run: ({ repository, input, services }) => services.writes.createInvestigation(repository.id, bodyOf(input)),
  }),
  repositoryTool({
    name: 'write_report',
    title: 'Write a report',
    description:
      'Write a markdown report (optionally under a parent) with each sentence annotated by the facts it rests on; cited facts must exist.',
    input: input(bodies.ReportCreate),
    output: ReportDetail,
    annotations: ADDS_EACH_TIME,
    permission: () => 'report:write',
    run: async ({ repository, input, services }) =>
      SHOWN.report(await services.writes.createReport(repository.id, bodyOf(input))),
    links: (report, repository) => [link(repository, 'reports', report.id, report.title)],
  }),
  repositoryTool({
    name: 'merge_concepts',
    title: 'Merge concepts',
    description:
      'Merge concepts into one: their names and aliases become its aliases, their facts and summaries its own, citations of them point at it.',
    input: input(bodies.ConceptMerge, {
      concept_id: Uuid('the concept they are merged into (it stays)'),
      confirm: Confirm,
    }),
    output: bodies.MergedConcept,
    annotations: CHANGES,
    permission: () => 'concept:write',
    confirmation: (input) =>
      `Merge ${input.concept_ids.length} concept(s) into concept ${input.concept_id}? They are deleted; this cannot be undone.`,
    run: async ({ repository, input: { concept_id, ...input }, services }) => {
      const merged = await services.writes.mergeConcepts(repository.id, concept_id, bodyOf(input), {})
      return { ...merged, concept: SHOWN.concept(merged.concept) }
    },
    links: ({ concept }, repository) => [link(repository, 'concepts', concept.id, concept.canonical_name)],
  }),
  repositoryTool({
    name: 'split_concept',
    title: 'Split a concept',
    description:
      'Split a new concept (name, context) off a concept, moving to it the links of the facts and the aliases named.',
    input: input(bodies.ConceptSplit, {
      concept_id: Uuid('the concept split (it stays, less what moves)'),
      confirm: Confirm,
    }),
    output: bodies.SplitConcept,
    annotations: CHANGES,
    permission: () => 'concept:write',
    confirmation: (input) =>
      `Split "${input.canonical_name}" off concept ${input.concept_id}, moving its links to ${input.fact_ids?.length ?? 0} fact(s)?`,
    run: async ({ repository, input: { concept_id, ...input }, services }) => {
      const split = await services.writes.splitConcept(repository.id, concept_id, bodyOf(input), {})
      return { concept: SHOWN.concept(split.concept), created: SHOWN.concept(split.created) }
    },
    links: ({ concept, created }, repository) => [
      link(repository, 'concepts', concept.id, concept.canonical_name),
      link(repository, 'concepts', created.id, created.canonical_name),
    ],
  }),
  repositoryTool({
    name: 'update',
    title: 'Update a row',
    description:
      'Change fields of a source, fact, concept, summary, synthesis, investigation or report; lists given (sources, concepts, aliases, annotations) replace the old.',
    input: t.Object(
      {
        repository: RepositoryArgument,
        ...TargetArguments,
        changes: t.Record(t.String(), t.Unknown(), {
          description: "the fields to change, named as the kind's create tool names them (at least one)",
        }),
      },
      { additionalProperties: false },
    ),
    output: t.Object({
      kind: Kind,
      row: t.Object({ id: t.String() }, { description: 'the row as it now is, as its create tool answers it' }),
    }),
    annotations: CHANGES,
    permission: (input) => EDITABLE[input.kind].permission,
    async run({ repository, input, services }) {
      const editable = EDITABLE[input.kind]
      const row = await editable.update(
        { repository, services, id: input.id, concept_id: input.concept_id },
        checkedChanges(input.kind, input.changes),
      )
      return { kind: input.kind, row }
    },
    links: (output, repository) => EDITABLE[output.kind].links?.(output.row as never, repository!) ?? [],
  }),
  repositoryTool({
    name: 'delete',
    title: 'Delete a row',
    description:
      'Delete a source, fact, concept, summary, synthesis, investigation or report; the answer says what went with it and which texts still cite it.',
    input: t.Object(
      {
        repository: RepositoryArgument,
        ...TargetArguments,
        cascade: t.Optional(
          t.Boolean({
            default: false,
            description: 'a source that facts cite: true deletes it with those links (the facts stay)',
          }),
        ),
        confirm: Confirm,
      },
      { additionalProperties: false },
    ),
    output: t.Object({
      kind: Kind,
      deleted: t.Object(
        { id: t.String() },
        {
          description:
            'the id, what went with it (removed) and, for a fact or concept, the texts whose citations it breaks',
        },
      ),
    }),
    annotations: CHANGES,
    permission: (input) => EDITABLE[input.kind].permission,
    confirmation: (input) =>
      `Delete the ${input.kind} ${input.id}${input.cascade ? ' with the links of the facts citing it' : ''}? This cannot be undone.`,
    async run({ repository, input, services }) {
      const deleted = await EDITABLE[input.kind].remove(
        { repository, services, id: input.id, concept_id: input.concept_id },
        { cascade: input.cascade ?? false },
      )
      return { kind: input.kind, deleted }
    },
  }),
]
