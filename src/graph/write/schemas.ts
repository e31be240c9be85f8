// The bodies of the write API: every field typed and bounded, and no field the schema does not
// name (additionalProperties: false), so a misspelt field is a 400 instead of silently ignored.
// Create bodies name what a row needs; update bodies (PATCH) are the same fields, all optional.
import { t } from 'elysia'
import type { TProperties, TSchema } from '@sinclair/typebox'
import { UUID_PATTERN } from '../../uuid.ts'
import {
  ConceptDetail,
  FactDetail,
  FactStatus,
  summaryFields as summaryAnswerFields,
  synthesisFields as synthesisAnswerFields,
} from '../schemas.ts'

/** Longest name, title, URL or label. */
const SHORT = 2000
/** Longest fact text. */
const FACT_TEXT = 100_000
/** Longest long text: a source's parsed text, a summary, a synthesis, a report's body. */
const LONG = 10_000_000
/** Most ids in one list (a fact's sources, a summary's covered facts, a report's annotations). */
const MANY = 10_000

const text = (maxLength: number, description?: string) =>
  t.String({ maxLength, error: `expected a string of at most ${maxLength} characters`, description })
const required = (maxLength: number, description?: string) =>
  t.String({
    minLength: 1,
    maxLength,
    error: `expected a non-empty string of at most ${maxLength} characters`,
    description,
  })
const Uuid = (description?: string) => t.String({ pattern: UUID_PATTERN, error: 'expected a UUID', description })
const ids = (what: string) =>
  t.Array(Uuid(), {
    maxItems: MANY,
    error: `expected an array of at most ${MANY} UUIDs`,
    description: `${what} (UUIDs of this repository)`,
  })
const nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()])
const strict = <P extends TProperties>(properties: P, description?: string) =>
  t.Object(properties, { additionalProperties: false, description })
/** The update body of a create body: every field optional, at least one given. */
const changes = <P extends TProperties>(create: P, description: string) =>
  t.Partial(t.Object(create, { additionalProperties: false }), {
    additionalProperties: false,
    minProperties: 1,
    error: 'expected an object with at least one known field',
    description,
  })

const sourceFields = {
  url: required(SHORT, 'the natural key: one source per URL'),
  doi: t.Optional(text(SHORT)),
  kind: required(SHORT, 'e.g. web, pdf'),
  status: required(SHORT, 'e.g. parsed'),
  parsed_title: t.Optional(text(SHORT)),
  parsed_text: t.Optional(text(LONG)),
  parsed_markdown: t.Optional(text(LONG)),
  published_at: t.Optional(
    nullable(
      t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', error: 'expected a date YYYY-MM-DD', description: 'YYYY-MM-DD' }),
    ),
  ),
}
export const SourceCreate = strict(sourceFields)
export const SourceUpdate = changes(sourceFields, 'the fields to change')

const FactSource = strict({
  source_id: Uuid(),
  chunk_index: t.Optional(t.Integer({ minimum: 0, maximum: 2 ** 31 - 1, error: 'expected an integer ≥ 0' })),
})
const FactConcept = strict({ concept_id: Uuid(), promptset_hash: t.Optional(text(SHORT)) })
const factFields = {
  text: required(FACT_TEXT, 'the fact; its normalized form is its identity (content_hash)'),
  fact_kind: t.Optional(t.Union([t.Literal('text'), t.Literal('image')], { error: 'expected text or image' })),
  status: t.Optional(FactStatus()),
  promptset_hash: t.Optional(text(SHORT)),
  image_url: t.Optional(text(SHORT, "an image fact's image when it has no source image")),
  source_image_id: t.Optional(nullable(Uuid('an image fact: its source image (image_url follows it)'))),
  sources: t.Optional(
    t.Array(FactSource, {
      maxItems: MANY,
      description: 'the sources and chunks the fact comes from (on update: replaces them)',
    }),
  ),
  concepts: t.Optional(
    t.Array(FactConcept, {
      maxItems: MANY,
      description: 'the concepts the fact is linked to (on update: replaces them)',
    }),
  ),
}
export const FactCreate = strict(factFields)
export const FactUpdate = changes(factFields, 'the fields to change; sources and concepts replace the links')

const conceptFields = {
  canonical_name: required(SHORT, 'with context, case-insensitively, the identity of the concept'),
  context: t.Optional(text(SHORT)),
  description: t.Optional(text(LONG)),
  promptset_hash: t.Optional(text(SHORT)),
  aliases: t.Optional(
    t.Array(required(SHORT), { maxItems: MANY, description: 'other names (on update: replaces them)' }),
  ),
}
export const ConceptCreate = strict(conceptFields)
export const ConceptUpdate = changes(conceptFields, 'the fields to change; aliases replace the aliases')
/** Most concepts one merge takes in. */
const MERGED = 100
export const ConceptMerge = strict({
  concept_ids: t.Array(Uuid(), {
    minItems: 1,
    maxItems: MERGED,
    error: `expected an array of 1 to ${MERGED} concept UUIDs`,
    description:
      'the concepts merged into this one: their names and aliases become its aliases, their facts and summaries its own, the citations of them citations of it; then they are deleted',
  }),
})
export const ConceptSplit = strict({
  ...conceptFields,
  aliases: t.Optional(
    t.Array(required(SHORT), {
      maxItems: MANY,
      description: 'aliases of this concept that move to the new one (each must be one of its aliases)',
    }),
  ),
  fact_ids: t.Optional(
    t.Array(Uuid(), {
      maxItems: MANY,
      error: `expected an array of at most ${MANY} UUIDs`,
      description: 'the facts whose link moves to the new concept (each must be linked to this one)',
    }),
  ),
})

const summaryFields = {
  sequence_num: t.Integer({
    minimum: 0,
    maximum: 2 ** 31 - 1,
    error: 'expected an integer ≥ 0',
    description: 'unique per concept',
  }),
  is_complete: t.Optional(t.Boolean()),
  fact_count: t.Optional(t.Integer({ minimum: 0, maximum: 2 ** 31 - 1, error: 'expected an integer ≥ 0' })),
  content: t.Optional(
    text(LONG, 'markdown citing facts as [text](<fact:UUID>) and concepts as [name](<concept:UUID>); each must exist'),
  ),
  covered_fact_ids: t.Optional(ids('the facts it covers')),
  model: t.Optional(text(SHORT)),
}
export const SummaryCreate = strict(summaryFields)
export const SummaryUpdate = changes(summaryFields, 'the fields to change')

const synthesisFields = {
  canonical_name: required(SHORT, 'unique, case-insensitively: the concept group it synthesizes'),
  content: t.Optional(text(LONG, 'markdown citing facts and concepts; each must exist')),
  covered_summary_ids: t.Optional(ids('the summaries it covers')),
  covered_concept_ids: t.Optional(ids('the concepts it covers')),
  embedded_image_fact_ids: t.Optional(ids('the image facts it embeds')),
  model: t.Optional(text(SHORT)),
}
export const SynthesisCreate = strict(synthesisFields)
export const SynthesisUpdate = changes(synthesisFields, 'the fields to change')

const investigationFields = {
  title: required(SHORT),
  topic: t.Optional(text(LONG)),
  source_ids: t.Optional(ids('its sources (on update: replaces them)')),
}
export const InvestigationCreate = strict(investigationFields)
export const InvestigationUpdate = changes(investigationFields, 'the fields to change; source_ids replaces the sources')

const Annotation = strict({
  sentence_index: t.Integer({ minimum: 0, maximum: 2 ** 31 - 1, error: 'expected an integer ≥ 0' }),
  sentence_text: t.Optional(text(LONG)),
  fact_id: Uuid('the fact the sentence is matched with'),
  score: t.Number(),
  posture: t.Optional(
    t.Union([t.Literal(''), t.Literal('related'), t.Literal('supports'), t.Literal('contradicts')], {
      error: 'expected related, supports, contradicts or ""',
    }),
  ),
})
const reportFields = {
  title: required(SHORT),
  topic: t.Optional(text(LONG)),
  body_md: t.Optional(text(LONG, 'markdown citing facts and concepts; each must exist')),
  status: t.Optional(
    t.Union([t.Literal('pending'), t.Literal('processing'), t.Literal('annotated'), t.Literal('failed')], {
      error: 'expected pending, processing, annotated or failed',
    }),
  ),
  parent_id: t.Optional(nullable(Uuid('the parent report; null: top level'))),
  similarity_threshold: t.Optional(nullable(t.Number())),
  embedded_model: t.Optional(text(SHORT)),
  sentence_count: t.Optional(
    nullable(t.Integer({ minimum: 0, maximum: 2 ** 31 - 1, error: 'expected an integer ≥ 0' })),
  ),
  annotations: t.Optional(
    t.Array(Annotation, {
      maxItems: MANY,
      description: "the sentences' annotations, in order (on update: replaces them)",
    }),
  ),
}
export const ReportCreate = strict(reportFields)
export const ReportUpdate = changes(reportFields, 'the fields to change; annotations replace the annotations')

// ---- answers

const BrokenCitation = t.Object({
  kind: t.Union([t.Literal('summary'), t.Literal('synthesis'), t.Literal('report')]),
  id: t.String(),
})
const brokenCitations = t.Array(BrokenCitation, {
  description: 'rows that still cite it: their texts are left as their authors wrote them',
})
export const DeletedSource = t.Object({
  id: t.String(),
  removed: t.Object({
    fact_links: t.Integer(),
    investigation_links: t.Integer(),
    images: t.Integer(),
    body: t.Integer(),
  }),
})
export const DeletedFact = t.Object({
  id: t.String(),
  removed: t.Object({ sources: t.Integer(), concepts: t.Integer(), annotations: t.Integer() }),
  broken_citations: brokenCitations,
})
export const DeletedConcept = t.Object({
  id: t.String(),
  removed: t.Object({ facts: t.Integer(), summaries: t.Integer() }),
  broken_citations: brokenCitations,
})
export const MergedConcept = t.Object({
  concept: ConceptDetail,
  merged: t.Object({
    concepts: t.Integer({ description: 'the concepts merged in (and deleted)' }),
    facts: t.Integer({ description: 'facts newly linked to it' }),
    aliases: t.Integer({ description: 'aliases it gained' }),
    summaries: t.Integer({ description: 'summaries moved to it, numbered after its own' }),
  }),
  rewritten: t.Array(BrokenCitation, {
    description:
      'summaries, syntheses and reports whose citations (or covered concepts) named a merged concept and now name it',
  }),
})
export const SplitConcept = t.Object({
  concept: ConceptDetail,
  created: ConceptDetail,
})
export const DeletedReport = t.Object({
  id: t.String(),
  removed: t.Object({ reports: t.Integer({ description: 'the report and its descendants' }) }),
})
export const Deleted = t.Object({ id: t.String() })
export const Unmerge = strict({ merge_id: Uuid('the merge to undo (GET facts/{id}/merges)') })
/** `fact`: the merged text, its own fact again (the answer's ETag is its); `kept`: the fact it had been merged into, as it is now. */
export const Unmerged = t.Object({ fact: FactDetail, kept: FactDetail })
export const Summary = t.Object({ ...summaryAnswerFields, concept_id: t.String() })
export const Synthesis = t.Object(synthesisAnswerFields)
/** 409 of a row whose natural key is taken: the row that holds it. */
export const ExistingRowBody = t.Object(
  { error: t.String(), existing_id: t.String({ description: 'the row that exists already' }) },
  { description: 'the natural key is taken' },
)
