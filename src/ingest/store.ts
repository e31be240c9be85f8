// The ingest feature's rows: a source's identity (its URL, or upload://sha256/<hex> for an
// upload), its ingest columns (status_reason, etag, last_modified, content_hash), its chunks and
// its images (source_images, as an import keeps them). The parsed fields, the body's row, the
// chunks, the images and the status change in one transaction, so a reader sees a source's
// previous parse or its new one, never half of either.
import type { Static } from '@sinclair/typebox'
import type { Sql } from 'postgres'
import { repositoryBlobPrefix } from '../blobs/store.ts'
import type { SourceChunk as SourceChunkSchema } from './schemas.ts'
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

/** Where a job stores the bytes of a document's image: per job and position, so a retried attempt overwrites its own. */
export const ingestImageKey = (repositoryId: string, sourceId: string, jobId: string, position: number) =>
  `${repositoryBlobPrefix(repositoryId)}ingest/images/${sourceId}-${jobId}-${position}`

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

/** A document's image as a source_images row: its bytes stored at `storageKey`, or only its URL known (null key). */
export interface ParsedImage {
  position: number
  pageNumber: number | null
  url: string
  altText: string
  width: number | null
  height: number | null
  contentType: string
  bytes: number | null
  storageKey: string | null
}

export interface ParsedSource {
  sourceId: string
  document: ParsedDocument
  body: { storageKey: string; bytes: number; contentType: string; sha256: string }
  images: readonly ParsedImage[]
  validators: { etag: string; lastModified: string }
  /** Why a parsed source has no text (a PDF without a text layer), or ''. */
  statusReason: string
}

/** The source was deleted while its document was read: nothing is recorded. */
export class SourceGone extends Error {
  override readonly name = 'SourceGone'
}

/**
 * Records a parse: fields, body, chunks, images and status at once. Answers the storage keys of
 * the bytes it replaced (the previous body and images), to delete once committed.
 */
export async function recordParsed(sql: Sql, parsed: ParsedSource): Promise<{ replaced: string[] }> {
  const { sourceId, document, body, images, validators, statusReason } = parsed
  return await sql.begin(async (tx) => {
    const [source] = await tx`SELECT 1 FROM sources WHERE id = ${sourceId} FOR UPDATE`
    if (!source) throw new SourceGone(`source ${sourceId} was deleted while its document was read`)
    const old = await tx<{ key: string }[]>`
      SELECT storage_key AS key FROM source_bodies WHERE source_id = ${sourceId}
      UNION ALL SELECT storage_key FROM source_images WHERE source_id = ${sourceId} AND storage_key IS NOT NULL`
    await tx`
      UPDATE sources SET kind = ${document.kind}, status = 'parsed', status_reason = ${statusReason}, parsed_title = ${document.title}, parsed_text = ${document.text},
        parsed_markdown = ${document.markdown}, published_at = ${document.publishedAt}, has_stored_body = true,
        etag = ${validators.etag}, last_modified = ${validators.lastModified}, content_hash = ${body.sha256}
      WHERE id = ${sourceId}`
    await tx`
      INSERT INTO source_bodies (source_id, content_type, storage_key, bytes) VALUES (${sourceId}, ${body.contentType}, ${body.storageKey}, ${body.bytes})
      ON CONFLICT (source_id) DO UPDATE SET content_type = excluded.content_type, storage_key = excluded.storage_key, bytes = excluded.bytes`
    await tx`DELETE FROM source_chunks WHERE source_id = ${sourceId}`
    await insertChunks(tx as unknown as Sql, sourceId, document.chunks)
    await replaceImages(tx as unknown as Sql, sourceId, images)
    const kept = new Set([body.storageKey, ...images.flatMap((image) => image.storageKey ?? [])])
    return { replaced: old.map((row) => row.key).filter((key) => !kept.has(key)) }
  })
}

/**
 * The source's images become `images` (kind `inline`, by position). An image at a position the
 * source had keeps its id, so an image fact and the image's URL outlive a re-parse of the same
 * document; the rest of the source's images, of either kind, go: they were another document's.
 */
async function replaceImages(sql: Sql, sourceId: string, images: readonly ParsedImage[]): Promise<void> {
  const rows = images.map((image) => ({ id: crypto.randomUUID(), ...image }))
  await sql`
    DELETE FROM source_images WHERE source_id = ${sourceId}
      AND NOT (kind = 'inline' AND position = ANY(${images.map((image) => image.position)}::int[]))`
  if (rows.length === 0) return
  await sql`
    INSERT INTO source_images (id, source_id, kind, page_number, position, url, width, height, bytes, alt_text, content_type, storage_key)
    SELECT (i->>'id')::uuid, ${sourceId}, 'inline', (i->>'pageNumber')::int, (i->>'position')::int, i->>'url', (i->>'width')::int,
      (i->>'height')::int, (i->>'bytes')::bigint, i->>'altText', i->>'contentType', i->>'storageKey'
    FROM jsonb_array_elements(${sql.json(rows as never)}::jsonb) i
    ON CONFLICT (source_id, kind, position) DO UPDATE SET page_number = excluded.page_number, url = excluded.url,
      width = excluded.width, height = excluded.height, bytes = excluded.bytes, alt_text = excluded.alt_text,
      content_type = excluded.content_type, storage_key = excluded.storage_key`
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

export type SourceChunk = Static<typeof SourceChunkSchema>

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
