// The ingest feature's rows: a source's identity (its URL, or upload://sha256/<hex> for an
// upload), its ingest columns (status_reason, etag, last_modified, content_hash), and its chunks.
// The parsed fields, the body's row, the chunks and the status change in one transaction, so a
// reader sees a source's previous parse or its new one, never half of either.
import type { Sql } from 'postgres'
import { repositoryBlobPrefix } from '../blobs/store.ts'
import type { Chunk, DocumentKind, ParsedDocument } from './types.ts'

type SourceStatus = 'pending' | 'fetched' | 'parsed' | 'failed'

/** A source's URL as its identity: http(s) only, scheme and host lower-cased (the URL parser does both), fragment dropped; undefined when not one. */
export function normalizeSourceUrl(url: string): string | undefined {
  const parsed = URL.parse(url.trim())
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !parsed.hostname) return undefined
  parsed.hash = ''
  return parsed.href
}

export const uploadIdentity = (sha256Hex: string) => `upload://sha256/${sha256Hex}`

/** Where an upload waits for its job; the job keeps it as the source's body. */
export const ingestUploadKey = (repositoryId: string) =>
  `${repositoryBlobPrefix(repositoryId)}ingest/uploads/${crypto.randomUUID()}`
/** Where a job stores the body it fetched: one key per job, so a retried attempt overwrites its own. */
export const ingestBodyKey = (repositoryId: string, sourceId: string, jobId: string) =>
  `${repositoryBlobPrefix(repositoryId)}ingest/bodies/${sourceId}-${jobId}`

/** The kind a source is given before its bytes are read (the job sets the real one): a guess from the name. */
export function guessKind(name: string): DocumentKind {
  const path = (URL.parse(name)?.pathname ?? name).toLowerCase()
  if (path.endsWith('.pdf')) return 'pdf'
  if (path.endsWith('.md') || path.endsWith('.markdown')) return 'markdown'
  if (path.endsWith('.txt')) return 'text'
  return 'web'
}

export interface IngestState {
  url: string
  status: SourceStatus
  etag: string
  last_modified: string
  content_hash: string
  has_stored_body: boolean
}

export async function ingestState(sql: Sql, sourceId: string): Promise<IngestState | undefined> {
  const [row] = await sql<
    IngestState[]
  >`SELECT url, status, etag, last_modified, content_hash, has_stored_body FROM sources WHERE id = ${sourceId}`
  return row
}

export async function setStatus(sql: Sql, sourceId: string, status: 'fetched' | 'failed', reason = ''): Promise<void> {
  await sql`UPDATE sources SET status = ${status}, status_reason = ${reason} WHERE id = ${sourceId}`
}

export interface ParsedSource {
  sourceId: string
  document: ParsedDocument
  body: { storageKey: string; bytes: number; contentType: string; sha256: string }
  validators: { etag: string; lastModified: string }
}

/** Records a parse: fields, body, chunks and status at once. Answers the storage key of a body it replaced (to delete), or null. */
export async function recordParsed(sql: Sql, parsed: ParsedSource): Promise<{ replaced: string | null }> {
  const { sourceId, document, body, validators } = parsed
  return await sql.begin(async (tx) => {
    const [old] = await tx<
      { storage_key: string }[]
    >`SELECT b.storage_key FROM sources s LEFT JOIN source_bodies b ON b.source_id = s.id WHERE s.id = ${sourceId} FOR UPDATE OF s`
    if (!old) throw new Error(`source ${sourceId} is gone`)
    await tx`
      UPDATE sources SET kind = ${document.kind}, status = 'parsed', status_reason = '', parsed_title = ${document.title}, parsed_text = ${document.text},
        parsed_markdown = ${document.markdown}, published_at = ${document.publishedAt}, has_stored_body = true,
        etag = ${validators.etag}, last_modified = ${validators.lastModified}, content_hash = ${body.sha256}
      WHERE id = ${sourceId}`
    await tx`
      INSERT INTO source_bodies (source_id, content_type, storage_key, bytes) VALUES (${sourceId}, ${body.contentType}, ${body.storageKey}, ${body.bytes})
      ON CONFLICT (source_id) DO UPDATE SET content_type = excluded.content_type, storage_key = excluded.storage_key, bytes = excluded.bytes`
    await tx`DELETE FROM source_chunks WHERE source_id = ${sourceId}`
    await insertChunks(tx as unknown as Sql, sourceId, document.chunks)
    return { replaced: old.storage_key && old.storage_key !== body.storageKey ? old.storage_key : null }
  })
}

async function insertChunks(sql: Sql, sourceId: string, chunks: readonly Chunk[]): Promise<void> {
  if (chunks.length === 0) return
  const rows = chunks.map((chunk) => ({
    index: chunk.index,
    headings: chunk.headingPath,
    start: chunk.pageStart ?? null,
    end: chunk.pageEnd ?? null,
    text: chunk.text,
  }))
  await sql`
    INSERT INTO source_chunks (source_id, chunk_index, heading_path, page_start, page_end, text)
    SELECT ${sourceId}, (c->>'index')::int, ARRAY(SELECT jsonb_array_elements_text(c->'headings')), (c->>'start')::int, (c->>'end')::int, c->>'text'
    FROM jsonb_array_elements(${sql.json(rows as never)}::jsonb) c`
}

export interface SourceChunk {
  chunk_index: number
  heading_path: string[]
  page_start: number | null
  page_end: number | null
  text: string
}

/** The source's chunks in order, `range` of them, with how many it has; undefined when there is no such source. */
export async function sourceChunks(
  sql: Sql,
  sourceId: string,
  range: { offset: number; limit: number },
): Promise<{ rows: SourceChunk[]; total: number } | undefined> {
  const [source] = await sql<
    { total: number }[]
  >`SELECT (SELECT count(*)::int FROM source_chunks WHERE source_id = ${sourceId}) AS total FROM sources WHERE id = ${sourceId}`
  if (!source) return undefined
  const rows = await sql<SourceChunk[]>`
    SELECT chunk_index, heading_path, page_start, page_end, text FROM source_chunks
    WHERE source_id = ${sourceId} ORDER BY chunk_index OFFSET ${range.offset} LIMIT ${range.limit}`
  return { rows, total: source.total }
}
