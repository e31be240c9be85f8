// The API's records as the app reads them (the OpenAPI document at /swagger/json is the reference).
export interface Repository {
  id: string
  name: string
  slug: string
  description: string
  owner_id: string | null
  created_at: string
  /** The caller's role and the graph's size, where the API answers them. */
  role?: string
  counts?: Record<string, number>
}
export interface Fact {
  id: string
  text: string
  fact_kind: string
  image_url: string
  status: string
  created_at: string
}
export interface FactDetail extends Fact {
  sources: { id: string; url: string; parsed_title: string; chunk_index: number }[]
  concepts: { id: string; canonical_name: string; context: string }[]
}
export interface Concept {
  id: string
  canonical_name: string
  context: string
  description: string
  created_at: string
}
interface Summary {
  id: string
  sequence_num: number
  content: string
  covered_fact_ids: string[]
}
export interface ConceptDetail extends Concept {
  aliases: string[]
  summaries: Summary[]
  synthesis: { id: string; canonical_name: string; content: string } | null
  fact_count: number
}
export interface Source {
  id: string
  url: string
  kind: string
  status: string
  parsed_title: string
  created_at: string
}
export interface SourceDetail extends Source {
  parsed_markdown: string
  images: { id: string; kind: string; position: number; url: string; alt_text: string }[]
  fact_count: number
}
export interface Investigation {
  id: string
  title: string
  topic: string
  created_at: string
}
export interface InvestigationDetail extends Investigation {
  sources: { id: string; url: string; parsed_title: string }[]
}
export interface Report {
  id: string
  title: string
  topic: string
  status: string
  parent_id: string | null
  created_at: string
}
export interface ReportDetail extends Report {
  body_md: string
  annotations: { sentence_index: number; sentence_text: string; fact_id: string; score: number; posture: string }[]
  children: { id: string; title: string; status: string }[]
}
export interface Job {
  id: string
  kind: string
  status: string
  progress: { phase?: string; done: number; total: number; bytes: number; percent: number | null }
  result: unknown
  error: string | null
}
export interface Graph {
  id: string
  name: string
  description: string
  /** The pusher's e-mail, or their user id where the caller may not read it. */
  owner: string
  owner_id: string | null
  tags: string[]
  bytes: number
  fact_count: number
  concept_count: number
  source_count: number
  report_count: number
  created_at: string
}
/** A registry graph and its version: its rank among the graphs of its name, oldest 1. */
export interface GraphVersion extends Graph {
  version: number
}
/** GET /api/v1/graphs/names: a name and its newest versions, newest first. */
export interface GraphName {
  name: string
  version_count: number
  versions: GraphVersion[]
}
/** What an import_graph job produced (docs/bundles.md, "Import"). */
export interface ImportResult {
  imported: Record<string, number>
  reused: { sources: number; facts: number; concepts: number }
}
/** What an export_graph job produced (docs/bundles.md, "Export"). */
export interface ExportResult {
  graph_id: string
  name: string
  new: boolean
  counts: Record<string, number>
}
/** GET /api/v1/permissions. */
export interface Permissions {
  system_admin: boolean
  permissions: { domain: string; resource: string; action: string }[]
}
