// The shapes of the knowledge graph's answers: the routes' schemas, and (by Static) the types
// of the rows the store reads.
import { t } from 'elysia'
import type { Static, TSchema } from '@sinclair/typebox'
import { FACT_STATUSES } from './rules.ts'

/** How many related rows a detail embeds (images of a source, facts' sources, annotations, ...). */
export const RELATED_LIMIT = 500

const Timestamp = t.String({ description: 'RFC 3339, UTC' })
const nullable = <T extends TSchema>(schema: T) => t.Union([schema, t.Null()])
const related = <T extends TSchema>(schema: T, what: string) =>
  t.Array(schema, { description: `${what}; at most the first ${RELATED_LIMIT}` })

const sourceFields = {
  id: t.String(),
  url: t.String(),
  doi: t.String(),
  kind: t.String(),
  status: t.String(),
  parsed_title: t.String(),
  published_at: nullable(t.String({ description: 'YYYY-MM-DD' })),
  has_stored_body: t.Boolean(),
  created_at: Timestamp,
}
export const Source = t.Object(sourceFields)
export const SourceImage = t.Object({
  id: t.String(),
  kind: t.String({ description: 'inline or page' }),
  page_number: nullable(t.Integer()),
  position: t.Integer(),
  url: t.String(),
  width: nullable(t.Integer()),
  height: nullable(t.Integer()),
  bytes: nullable(t.Integer()),
  alt_text: t.String(),
  content_type: t.String(),
})
export const SourceDetail = t.Object({
  ...sourceFields,
  status_reason: t.String({ description: "why the source's status is failed (its last ingest); '' otherwise" }),
  parsed_text: t.String(),
  parsed_markdown: t.String(),
  images: related(SourceImage, 'ordered by kind, position'),
  body: nullable(
    t.Object(
      { content_type: t.String(), bytes: nullable(t.Integer()) },
      { description: 'the stored original, if any' },
    ),
  ),
  fact_count: t.Integer(),
  concepts: related(
    t.Object({
      id: t.String(),
      canonical_name: t.String(),
      context: t.String(),
      facts: t.Integer({ description: 'its facts that cite this source' }),
    }),
    'the concepts of its facts, most facts first (ties by name)',
  ),
})

const factFields = {
  id: t.String(),
  text: t.String(),
  fact_kind: t.String({ description: 'text or image' }),
  image_url: t.String(),
  content_hash: t.String(),
  promptset_hash: t.String(),
  status: t.String({ description: FACT_STATUSES.join(', ') }),
  source_image_id: nullable(t.String()),
  created_at: Timestamp,
}
export const Fact = t.Object(factFields)
export const FactMerge = t.Object({
  id: t.String(),
  fact_id: t.String({ description: 'the fact the text was merged into' }),
  text: t.String({ description: 'the merged text, as the source said it' }),
  content_hash: t.String(),
  promptset_hash: t.String(),
  source_id: t.String(),
  chunk_index: t.Integer(),
  similarity: t.Number({ description: "the embedder's cosine similarity of the text and the fact" }),
  embedder: t.String({ description: 'the embedding model that measured it' }),
  concept_ids: t.Array(t.String(), { description: 'the concepts the text mentions' }),
  created_at: Timestamp,
})
/** A fact status a request names (a filter, a write). */
export const FactStatus = (description?: string) =>
  t.Union(
    FACT_STATUSES.map((status) => t.Literal(status)),
    {
      error: `expected ${FACT_STATUSES.slice(0, -1).join(', ')} or ${FACT_STATUSES.at(-1)}`,
      ...(description ? { description } : {}),
    },
  )
export const FactDetail = t.Object({
  ...factFields,
  sources: related(
    t.Object({ id: t.String(), url: t.String(), parsed_title: t.String(), chunk_index: t.Integer() }),
    'one per cited chunk, ordered by source',
  ),
  concepts: related(
    t.Object({ id: t.String(), canonical_name: t.String(), context: t.String() }),
    'ordered by (created_at, id)',
  ),
})

/** A fact as a source's chunk supports it (GET sources/{id}/facts): one row per chunk it cites. */
export const SourceFact = t.Object({
  chunk_index: t.Integer(),
  id: t.String(),
  text: t.String(),
  fact_kind: t.String({ description: 'text or image' }),
  status: t.String(),
})

const conceptFields = {
  id: t.String(),
  canonical_name: t.String(),
  context: t.String(),
  description: t.String(),
  promptset_hash: t.String(),
  created_at: Timestamp,
}
export const Concept = t.Object(conceptFields)
export const RelatedConcept = t.Object({
  ...conceptFields,
  shared_facts: t.Integer({ description: 'facts linked to both concepts' }),
})
/** How many related concepts a neighbourhood holds: the first of the related list. */
export const NEIGHBOURHOOD_SIZE = 30
export const Neighbourhood = t.Object({
  total: t.Integer({ description: 'concepts related to it, as X-Total-Count of its related list says' }),
  concepts: t.Array(RelatedConcept, {
    description: `the first ${NEIGHBOURHOOD_SIZE} of its related list, in its order`,
  }),
  edges: t.Array(
    t.Object({
      source: t.String(),
      target: t.String(),
      shared_facts: t.Integer({ description: 'facts linked to both' }),
    }),
    {
      description: 'each pair of those concepts that share facts (source < target), most shared first',
    },
  ),
})
/** A summary or report that cites a fact: a summary that covers it, a report with a sentence it annotates. */
export const Citation = t.Object({
  kind: t.Union([t.Literal('summary'), t.Literal('report')]),
  id: t.String({ description: "the summary's or the report's id" }),
  title: t.String({ description: "the summary's concept's canonical_name, or the report's title" }),
  concept_id: nullable(t.String({ description: "the summary's concept; null for a report" })),
  sequence_num: nullable(t.Integer({ description: "the summary's; null for a report" })),
  sentences: t.Integer({ description: "the report's sentences the fact annotates; 0 for a summary" }),
})
/** A summary as the API answers it (within its concept's detail; the write routes add concept_id). */
export const summaryFields = {
  id: t.String(),
  sequence_num: t.Integer(),
  is_complete: t.Boolean(),
  fact_count: t.Integer(),
  content: t.String({ description: 'markdown citing facts as [text](<fact:UUID>)' }),
  covered_fact_ids: t.Array(t.String()),
  model: t.String(),
  created_at: Timestamp,
}
const Summary = t.Object(summaryFields)
/** A synthesis as the API answers it. */
export const synthesisFields = {
  id: t.String(),
  canonical_name: t.String(),
  content: t.String(),
  covered_summary_ids: t.Array(t.String()),
  covered_concept_ids: t.Array(t.String()),
  embedded_image_fact_ids: t.Array(t.String()),
  model: t.String(),
  created_at: Timestamp,
}
const Synthesis = t.Object(synthesisFields, {
  description: "the synthesis of the concept's name, else one covering the concept",
})
export const ConceptDetail = t.Object({
  ...conceptFields,
  aliases: related(t.String(), 'sorted'),
  summaries: related(Summary, 'ordered by sequence_num'),
  synthesis: nullable(Synthesis),
  fact_count: t.Integer(),
})

const investigationFields = { id: t.String(), title: t.String(), topic: t.String(), created_at: Timestamp }
export const Investigation = t.Object(investigationFields)
export const InvestigationDetail = t.Object({
  ...investigationFields,
  sources: related(
    t.Object({ id: t.String(), url: t.String(), parsed_title: t.String() }),
    'ordered by (created_at, id)',
  ),
})

const reportFields = {
  id: t.String(),
  title: t.String(),
  topic: t.String(),
  status: t.String({ description: 'pending, processing, annotated or failed' }),
  parent_id: nullable(t.String()),
  similarity_threshold: nullable(t.Number()),
  embedded_model: t.String(),
  sentence_count: nullable(t.Integer()),
  created_at: Timestamp,
}
export const Report = t.Object(reportFields)
const Annotation = t.Object({
  sentence_index: t.Integer(),
  sentence_text: t.String(),
  fact_id: t.String(),
  score: t.Number(),
  posture: t.String(),
})
export const ReportDetail = t.Object({
  ...reportFields,
  body_md: t.String(),
  annotations: related(Annotation, 'ordered by sentence_index, then score descending'),
  children: related(
    t.Object({ id: t.String(), title: t.String(), status: t.String(), created_at: Timestamp }),
    'ordered by (created_at, id)',
  ),
})

export type Source = Static<typeof Source>
export type SourceDetail = Static<typeof SourceDetail>
export type SourceFact = Static<typeof SourceFact>
export type Fact = Static<typeof Fact>
export type FactDetail = Static<typeof FactDetail>
export type FactMerge = Static<typeof FactMerge>
export type Concept = Static<typeof Concept>
export type ConceptDetail = Static<typeof ConceptDetail>
export type RelatedConcept = Static<typeof RelatedConcept>
export type Neighbourhood = Static<typeof Neighbourhood>
export type Citation = Static<typeof Citation>
export type Investigation = Static<typeof Investigation>
export type InvestigationDetail = Static<typeof InvestigationDetail>
export type Report = Static<typeof Report>
export type ReportDetail = Static<typeof ReportDetail>
