// ingest_source: makes a source out of a document. The bytes come from the source's URL (fetched
// through guarded-fetch: public addresses only, every redirect checked, size and time bounded;
// conditionally when the source was parsed before, and a 304 changes nothing) or from an upload
// the route streamed to blob storage. They are read (readDocument, in a child process of its own:
// read-child.ts); a PDF's images are stored in blob storage (a web page's are recorded by URL);
// then the parsed fields, the body, the chunks, the images and the status `parsed` are written in
// one transaction (store.ts), and the bytes they replaced are deleted once it commits. A document
// kgs cannot have or cannot read fails the source and the job with the same reason, at once; a
// failure of the database or the blob store is retried, and a retried attempt (after a kill)
// redoes the work and overwrites its own keys, so it finishes what the dead one started.
import { createHash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../jobs/kinds.ts'
import { guardedFetch, GuardedFetchError, type FetchedBody } from '../http/guarded-fetch.ts'
import { describeError } from '../log.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { readDocumentInChild } from './read-child.ts'
import { DocumentRefused, type DocumentImage, type ReadWarning } from './types.ts'
import {
  ingestBodyKey,
  ingestImageKey,
  ingestState,
  recordParsed,
  setStatus,
  SourceGone,
  type IngestState,
  type ParsedImage,
} from './store.ts'

const IngestParams = Type.Object(
  {
    source_id: Type.String({ pattern: UUID_PATTERN }),
    /** Set for an upload: where its bytes wait, with what the upload said of them. */
    upload: Type.Optional(
      Type.Object(
        { key: Type.String({ minLength: 1 }), content_type: Type.String(), file_name: Type.String() },
        { additionalProperties: false },
      ),
    ),
    /** Whether a process_source job (extract/process-job.ts) follows the parse. */
    process: Type.Boolean(),
  },
  { additionalProperties: false },
)

/** Warnings that say a document read has no text: a parsed source keeps the message as its status_reason. */
const NO_TEXT: ReadonlySet<ReadWarning['code']> = new Set(['no_text_layer', 'empty_page'])

interface Document {
  bytes: Uint8Array
  contentType: string
  fileName?: string
  storageKey: string
  validators: { etag: string; lastModified: string }
}

/** What the job's result says. */
type Outcome =
  | {
      source_id: string
      status: 'parsed'
      kind: string
      chunks: number
      bytes: number
      images: number
      warnings: string[]
    }
  | { source_id: string; status: 'not_modified' }

async function ingest(job: RunningJob<typeof IngestParams.static>, services: JobServices): Promise<Outcome> {
  const { source_id: sourceId, upload } = job.params
  const sql = await job.repository()
  const state = await ingestState(sql, sourceId)
  if (!state) throw new PermanentJobError(`source ${sourceId} no longer exists`)
  let document: Document | undefined
  const imageKeys: string[] = []
  try {
    job.progress({ phase: upload ? 'reading the upload' : 'fetching', done: 0, total: 1 })
    document = upload ? await readUpload(services, upload) : await fetchDocument(job, services, sourceId, state)
    if (!document) return { source_id: sourceId, status: 'not_modified' }
    await setStatus(sql, sourceId, 'fetched')
    job.progress({ phase: 'parsing' })
    const { document: parsed, peakRssBytes } = await readDocumentInChild(
      {
        bytes: document.bytes,
        contentType: document.contentType,
        fileName: document.fileName,
        url: upload ? undefined : state.url,
      },
      { maxMemoryBytes: services.config.ingestReadMaxMemoryBytes, signal: job.signal },
    )
    services.log.debug('read a document in a child process', {
      source_id: sourceId,
      kind: parsed.kind,
      pages: parsed.pages,
      child_peak_rss_mb: Math.round(peakRssBytes / 2 ** 20),
    })
    const sha256 = createHash('sha256').update(document.bytes).digest('hex')
    const body = {
      storageKey: document.storageKey,
      bytes: document.bytes.byteLength,
      contentType: bodyType(document.contentType),
      sha256,
    }
    const images = await storeImages(job, services, parsed.images, imageKeys)
    const { replaced } = await recordParsed(sql, {
      sourceId,
      document: parsed,
      body,
      images,
      validators: document.validators,
      statusReason: parsed.warnings.find((warning) => NO_TEXT.has(warning.code))?.message ?? '',
    })
    for (const key of replaced) await discard(services, key)
    job.progress({ phase: 'parsed', done: 1 })
    return {
      source_id: sourceId,
      status: 'parsed',
      kind: parsed.kind,
      chunks: parsed.chunks.length,
      bytes: body.bytes,
      images: images.length,
      warnings: parsed.warnings.map((w) => w.message),
    }
  } catch (error) {
    const reason = refusal(error)
    if (reason === undefined) throw error
    await setStatus(sql, sourceId, 'failed', reason)
    // A fetched body nothing refers to; an upload's bytes are kept only as a parsed source's body.
    for (const key of [...(document ? [document.storageKey] : []), ...imageKeys]) await discard(services, key)
    throw new PermanentJobError(reason)
  }
}

/**
 * The document's images as rows: a PDF's bytes stored under this job's keys (each key pushed to
 * `stored` before its write, so that a failure deletes it), a web page's by URL alone, as an
 * imported bundle's image without bytes is (fetch_media can download them later).
 */
async function storeImages(
  job: RunningJob<typeof IngestParams.static>,
  { blobs }: JobServices,
  images: readonly DocumentImage[],
  stored: string[],
): Promise<ParsedImage[]> {
  const rows: ParsedImage[] = []
  for (const image of images) {
    let storageKey: string | null = null
    if (image.data) {
      storageKey = ingestImageKey(job.repositoryId!, job.params.source_id, job.id, image.position)
      stored.push(storageKey)
      await blobs.put(storageKey, image.data, { contentType: image.contentType })
    }
    rows.push({
      position: image.position,
      pageNumber: image.pageNumber ?? null,
      url: image.url ?? '',
      altText: image.altText ?? '',
      width: image.width ?? null,
      height: image.height ?? null,
      contentType: image.contentType ?? '',
      bytes: image.data?.byteLength ?? null,
      storageKey,
    })
  }
  return rows
}

async function readUpload(
  { blobs }: JobServices,
  upload: NonNullable<typeof IngestParams.static.upload>,
): Promise<Document> {
  const bytes = await blobs.get(upload.key)
  // Gone: an earlier attempt parsed it into a source whose body it now is, or refused it.
  if (!bytes) throw new PermanentJobError('the upload is no longer stored')
  return {
    bytes,
    contentType: upload.content_type,
    fileName: upload.file_name,
    storageKey: upload.key,
    validators: { etag: '', lastModified: '' },
  }
}

/** The URL's current bytes stored under this job's key, or undefined when the server says the parsed copy is current. */
async function fetchDocument(
  job: RunningJob,
  services: JobServices,
  sourceId: string,
  state: IngestState,
): Promise<Document | undefined> {
  const parsedBefore = state.content_hash !== '' && state.has_stored_body
  const conditional =
    parsedBefore && (state.etag || state.last_modified)
      ? { etag: state.etag, lastModified: state.last_modified }
      : undefined
  const fetched = await guardedFetch(state.url, {
    ...services.config.ingestFetch,
    purpose: 'ingest',
    signal: job.signal,
    conditional,
  })
  if (fetched.notModified) {
    await drain(fetched)
    return undefined
  }
  const bytes = await collect(fetched)
  const storageKey = ingestBodyKey(job.repositoryId!, sourceId, job.id)
  await services.blobs.put(storageKey, bytes, { contentType: bodyType(fetched.contentType) || undefined })
  const header = (name: string) => {
    const value = fetched.headers[name]
    return (Array.isArray(value) ? value[0] : value) ?? ''
  }
  return {
    bytes,
    contentType: fetched.contentType,
    storageKey,
    validators: { etag: header('etag'), lastModified: header('last-modified') },
  }
}

/** The whole body: readDocument needs it whole, and guardedFetch bounds it. */
async function collect(fetched: FetchedBody): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  let length = 0
  for await (const part of fetched.body) {
    parts.push(part)
    length += part.byteLength
  }
  // A plain Uint8Array: pdf.js refuses a Buffer.
  const bytes = new Uint8Array(length)
  let at = 0
  for (const part of parts) {
    bytes.set(part, at)
    at += part.byteLength
  }
  return bytes
}

async function drain(fetched: FetchedBody): Promise<void> {
  for await (const _ of fetched.body) break
}

/** A content type fit to send back as a header when the body is served: the media type alone. */
const bodyType = (contentType: string) => {
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase()
  return /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) ? type : ''
}

/** The reason a document cannot be had or read, for the person who added it; undefined for a failure of kgs itself. */
function refusal(error: unknown): string | undefined {
  if (error instanceof DocumentRefused) return error.message
  if (error instanceof PermanentJobError || error instanceof SourceGone) return error.message
  if (!(error instanceof GuardedFetchError)) return undefined
  // Without a connection the message tells how names resolve and what the server can reach: kept to the log.
  if (error.connected) return error.message
  return error.reason === 'refused'
    ? 'the URL was refused: only http(s) URLs without credentials whose host has public addresses only are fetched (redirects included)'
    : 'could not connect to the server of the URL'
}

async function discard({ blobs, log }: JobServices, key: string): Promise<void> {
  await blobs
    .delete(key)
    .catch((error) => log.error('ingest: could not delete stored bytes', { key, ...describeError(error) }))
}

export const ingestSourceJob = defineJobKind({
  kind: 'ingest_source',
  params: IngestParams,
  maxAttempts: 3,
  repositoryScoped: true,
  // The source's fields change: what follows a change of the graph (its counts copy) follows this.
  changesGraph: true,
  run: async (job, services) => {
    const outcome = await ingest(job, services)
    if (!job.params.process) return outcome
    // Coalesced: a retried attempt finds the follow-up it queued before it died.
    const next = await services.enqueue({
      kind: 'process_source',
      repositoryId: job.repositoryId,
      params: { source_id: outcome.source_id },
      createdBy: job.createdBy ?? null,
      coalesce: { afterMs: 0 },
    })
    return { ...outcome, process_job_id: next?.id ?? null }
  },
})
