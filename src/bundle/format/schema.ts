// The graph bundle's rows and metadata (docs/spec/bundle.md §1–2) as TypeBox schemas. They are the
// single description of the format: the encoder and the row validator are compiled from them
// (src/bundle/compile.ts), and they document the format in OpenAPI.
//
// Property order is the JSON key order. A required property is always written; an optional one
// is omitted when empty (Go's `omitempty`: '', 0, false, empty array). Vendor options:
//   'x-ref': '<section>'  an index into that section's rows (checked by the reader)
//   'x-position': true    the row's own index, equal to its array position
//   default               what a reader assumes when a producer left the field out (Tolerate)
//   'x-zero-omitted': true  an optional reference written the Go way: -1 (none) is written, 0 is
//                         left out (Go's `omitempty` on an int), so an absent key is 0 where
//                         row 0 of its section exists and none (undefined) where it does not
import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { FACT_STATUSES } from '../../graph/rules.ts'

/** The sections made of rows. */
export type RowSection =
  | 'sources'
  | 'source_images'
  | 'source_bodies'
  | 'facts'
  | 'fact_sources'
  | 'concepts'
  | 'concept_aliases'
  | 'fact_concepts'
  | 'concept_summaries'
  | 'concept_syntheses'
  | 'investigations'
  | 'investigation_sources'
  | 'reports'
  | 'report_annotations'

/** A string from a closed set, written as JSON Schema `enum` (readable in OpenAPI). */
function oneOf<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })
}
const text = (description?: string) => Type.String({ minLength: 1, ...(description ? { description } : {}) })
const int = () => Type.Integer({ minimum: 0 })
const position = () => Type.Integer({ minimum: 0, 'x-position': true })
const ref = (section: RowSection, description?: string) =>
  Type.Integer({ minimum: 0, 'x-ref': section, ...(description ? { description } : {}) })
/**
 * A reference that may be -1 (none), as the Go original writes it: an `omitempty` int, so -1 is
 * written and 0 left out. Read back, an absent key is 0 where that row exists, else undefined
 * (none); the encoder omits both, which gives Go's bytes for Go's values.
 */
const zeroOmittedRef = (section: RowSection, description: string) =>
  Type.Optional(Type.Integer({ minimum: -1, 'x-ref': section, 'x-zero-omitted': true, description }))
const refs = (section: RowSection, description?: string) =>
  Type.Optional(Type.Array(ref(section), description ? { description } : {}))
const omit = <T extends TSchema>(schema: T) => Type.Optional(schema)

const SOURCE_IMAGE_KINDS = ['inline', 'page'] as const
const FACT_KINDS = ['text', 'image'] as const
const REPORT_STATUSES = ['pending', 'processing', 'annotated', 'failed'] as const
const POSTURES = ['related', 'supports', 'contradicts'] as const

export const Metadata = Type.Object(
  {
    name: text(),
    description: omit(Type.String()),
    owner: omit(Type.String()),
    tags: omit(Type.Array(Type.String())),
    okt_version: omit(Type.String({ description: 'producer version, e.g. kgs/1.2.0' })),
    promptset_hashes: omit(
      Type.Array(Type.String(), {
        description: 'sorted distinct promptset hashes of facts, concepts and fact_concepts',
      }),
    ),
    embedding_model: omit(Type.String()),
    embedding_dimensions: omit(int()),
    source_count: int(),
    fact_count: int(),
    concept_count: int(),
    summary_count: int(),
    synthesis_count: int(),
    report_count: int(),
    investigation_count: int(),
    sha256: omit(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'canonical hash (docs/spec/bundle.md §3)' })),
    exported_at: Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
      description: 'RFC 3339',
    }),
  },
  { $id: 'BundleMetadata' },
)

const SourceRow = Type.Object({
  idx: position(),
  url: text(),
  doi: omit(Type.String()),
  kind: text(),
  status: text(),
  parsed_title: omit(Type.String()),
  parsed_text: omit(Type.String()),
  parsed_markdown: omit(Type.String()),
  published_at: omit(Type.String({ description: 'YYYY-MM-DD' })),
  sha256: omit(Type.String({ description: 'hex SHA-256 of url + parsed_text + parsed_markdown + parsed_title' })),
  has_stored_body: omit(Type.Boolean()),
})

const SourceImageRow = Type.Object({
  idx: position(),
  source_idx: ref('sources'),
  kind: oneOf(SOURCE_IMAGE_KINDS),
  page_number: omit(int()),
  position: int(),
  url: omit(Type.String()),
  width: omit(int()),
  height: omit(int()),
  bytes: omit(int()),
  alt_text: omit(Type.String()),
  content_type: omit(Type.String()),
  image_ref: omit(Type.String({ description: 'key in images: img-<source_images position>' })),
})

const SourceBodyRow = Type.Object({
  source_idx: ref('sources'),
  body_ref: omit(Type.String({ description: 'key in bodies: body-<source position>' })),
  content_type: omit(Type.String()),
})

const FactRow = Type.Object({
  idx: position(),
  text: text(),
  fact_kind: oneOf(FACT_KINDS),
  image_url: omit(Type.String()),
  content_hash: omit(Type.String({ description: 'hex SHA-256 of the normalized text; recomputed on import' })),
  promptset_hash: omit(Type.String()),
  status: oneOf(FACT_STATUSES),
  source_image_idx: zeroOmittedRef('source_images', '-1 = none; 0 is left out (Go omitempty)'),
})

const FactSourceRow = Type.Object({
  fact_idx: ref('facts'),
  source_idx: ref('sources'),
  chunk_index: int(),
})

const ConceptRow = Type.Object({
  idx: position(),
  canonical_name: text(),
  context: Type.String({ description: 'written even when empty' }),
  description: omit(Type.String()),
  promptset_hash: omit(Type.String()),
})

const ConceptAliasRow = Type.Object({
  concept_idx: ref('concepts'),
  alias_text: text(),
})

const FactConceptRow = Type.Object({
  fact_idx: ref('facts'),
  concept_idx: ref('concepts'),
  promptset_hash: omit(Type.String()),
})

const ConceptSummaryRow = Type.Object({
  concept_idx: ref('concepts'),
  sequence_num: int(),
  is_complete: Type.Boolean(),
  fact_count: int(),
  content: Type.String({ description: 'markdown citing [text](<fact:UUID>)' }),
  covered_fact_idxs: refs('facts'),
  model: omit(Type.String()),
})

const ConceptSynthesisRow = Type.Object({
  canonical_name: text(),
  content: Type.String(),
  covered_summary_idxs: refs('concept_summaries'),
  covered_concept_idxs: refs('concepts'),
  embedded_image_idxs: refs('facts', 'positions of image facts'),
  model: omit(Type.String()),
})

const InvestigationRow = Type.Object({
  idx: position(),
  title: text(),
  topic: omit(Type.String()),
})

const InvestigationSourceRow = Type.Object({
  investigation_idx: ref('investigations'),
  source_idx: ref('sources'),
})

const ReportRow = Type.Object({
  idx: position(),
  title: text(),
  topic: omit(Type.String()),
  body_md: Type.String(),
  status: oneOf(REPORT_STATUSES),
  parent_idx: zeroOmittedRef('reports', '-1 = root; 0 is left out (Go omitempty); a parent precedes its children'),
  similarity_threshold: omit(Type.Number()),
  embedded_model: omit(Type.String()),
  sentence_count: omit(int()),
})

const ReportAnnotationRow = Type.Object({
  report_idx: ref('reports'),
  sentence_index: int(),
  sentence_text: Type.String(),
  fact_idx: ref('facts'),
  score: Type.Number(),
  posture: omit(oneOf(POSTURES)),
})

/** The sections made of rows, each with its row schema. */
export const ROW_SCHEMAS = {
  sources: SourceRow,
  source_images: SourceImageRow,
  source_bodies: SourceBodyRow,
  facts: FactRow,
  fact_sources: FactSourceRow,
  concepts: ConceptRow,
  concept_aliases: ConceptAliasRow,
  fact_concepts: FactConceptRow,
  concept_summaries: ConceptSummaryRow,
  concept_syntheses: ConceptSynthesisRow,
  investigations: InvestigationRow,
  investigation_sources: InvestigationSourceRow,
  reports: ReportRow,
  report_annotations: ReportAnnotationRow,
} as const satisfies Record<RowSection, TSchema>

export type Row<S extends RowSection> = Static<(typeof ROW_SCHEMAS)[S]>
export type Metadata = Static<typeof Metadata>
export type MediaSection = 'images' | 'bodies'

/** Top-level keys of a version 2 bundle, in order (docs/spec/bundle.md §1). */
export const V2_KEYS = [
  'schema_version',
  'metadata',
  'sources',
  'images',
  'bodies',
  'source_images',
  'source_bodies',
  'facts',
  'fact_sources',
  'concepts',
  'concept_aliases',
  'fact_concepts',
  'concept_summaries',
  'concept_syntheses',
  'investigations',
  'investigation_sources',
  'reports',
  'report_annotations',
  'embeddings',
] as const
/** Top-level keys of a version 1 bundle, in order: the media block after the rows (docs/spec/bundle.md §1). */
export const V1_KEYS = [
  'schema_version',
  'metadata',
  'sources',
  'facts',
  'fact_sources',
  'concepts',
  'concept_aliases',
  'fact_concepts',
  'concept_summaries',
  'concept_syntheses',
  'investigations',
  'investigation_sources',
  'reports',
  'report_annotations',
  'source_images',
  'source_bodies',
  'images',
  'bodies',
  'embeddings',
] as const
/** Row sections in the order a version 2 bundle writes them. */
export const ROW_SECTIONS = V2_KEYS.filter((key): key is RowSection => key in ROW_SCHEMAS)

export const SCHEMA_VERSION = 2
export const SUPPORTED_SCHEMA_VERSIONS = [1, 2] as const

/** The metadata counts and the sections whose rows they count. */
export const COUNTED_SECTIONS = {
  source_count: 'sources',
  fact_count: 'facts',
  concept_count: 'concepts',
  summary_count: 'concept_summaries',
  synthesis_count: 'concept_syntheses',
  report_count: 'reports',
  investigation_count: 'investigations',
} as const satisfies Record<string, RowSection>
