// The API's records as the app reads them: the server's own types, from the TypeBox schemas its
// routes answer with, so that a change of a record's shape fails the app's type check. Type-only
// imports (erased by the build): nothing of the server is bundled into the app. What the server
// keeps in a module that reaches its runtime (Node's types, the database), which the app's
// tsconfig cannot read, is written here and named so.
import type { Static } from '@sinclair/typebox'
import type { IngestAccepted as IngestAcceptedSchema, SourceChunk as SourceChunkSchema } from '../ingest/schemas.ts'
import type { GraphRecord } from '../registry/graph-record.ts'
import type { PermissionsAnswer } from '../rbac/schemas.ts'

export type * from '../graph/schemas.ts'
export type { Job } from '../jobs/schemas.ts'
export type { RepositoryRecord as Repository } from '../repositories/schemas.ts'

/** A graph of the registry (GET /api/v1/graphs). */
export type Graph = Static<typeof GraphRecord>
/** A registry graph and its version: its rank among the graphs of its name, oldest 1 (registry/schemas.ts GraphName). */
export interface GraphVersion extends Graph {
  version: number
}
/** GET /api/v1/graphs/names: a name and its newest versions, newest first (registry/schemas.ts GraphName). */
export interface GraphName {
  name: string
  version_count: number
  versions: GraphVersion[]
}
/** What an import_graph job produced, as the app shows it (bundle/import/import-job.ts ImportResult). */
export interface ImportResult {
  imported: Record<string, number>
  reused: { sources: number; facts: number; concepts: number }
}
/** What an export_graph job produced, as the app shows it (bundle/export/export-job.ts ExportJobResult). */
export interface ExportResult {
  graph_id: string
  name: string
  new: boolean
  counts: Record<string, number>
}
/** GET /api/v1/permissions: the person, and what they may do (in a repository, with which one it is). */
export type Permissions = Static<typeof PermissionsAnswer>
/** The 202 of POST /{repoID}/ingest: one ingest_source job per document. */
export type IngestAccepted = Static<typeof IngestAcceptedSchema>
/** A source's chunk (GET /{repoID}/sources/{id}/chunks). */
export type SourceChunk = Static<typeof SourceChunkSchema>
/** What a process_source job produced, as the app shows it (extract/process-job.ts Outcome, whose module reaches the database). */
export interface ProcessResult {
  sources: number
  facts: { added: number; merged: number; unchanged: number; refused: number }
  concepts: { added: number; existing: number; refused: number }
  linked: number
}
