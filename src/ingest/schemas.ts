// The records the ingest routes answer with, apart from the routes (which read Node's streams),
// so the web app can take their types.
import { t } from 'elysia'
import { Status } from '../jobs/schemas.ts'

export const IngestAccepted = t.Object({
  jobs: t.Array(
    t.Object({ id: t.String({ format: 'uuid' }), source_id: t.String({ format: 'uuid' }), status: Status() }),
    {
      description: "one ingest_source job per document, in the request's order (GET /{repoID}/jobs/{id} follows it)",
    },
  ),
})
export const SourceChunk = t.Object({
  chunk_index: t.Integer({ description: 'what a fact cites as chunk_index' }),
  heading_path: t.Array(t.String(), { description: 'the headings the chunk sits under, outermost first' }),
  page_start: t.Union([t.Integer(), t.Null()], { description: "a PDF's first page of the chunk" }),
  page_end: t.Union([t.Integer(), t.Null()], { description: "a PDF's last page of the chunk" }),
  text: t.String({ description: "the chunk's Markdown" }),
})
