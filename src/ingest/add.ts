// Adding documents as sources, whoever asks (the ingest route, the MCP tool, the command line):
// each document becomes its source (one per identity: the normalized URL, or
// upload://sha256/<hex> of its bytes) and an ingest_source job (ingest-job.ts) that reads it.
// Bytes given whole (a text, a file the command line read) wait in blob storage as an upload
// does; on a refusal nothing stays behind.
import { createHash } from 'node:crypto'
import { discardBlobs, type BlobStore } from '../blobs/store.ts'
import type { GraphWrites } from '../graph/write/service.ts'
import { HttpError } from '../http/errors.ts'
import type { Jobs } from '../jobs/jobs.ts'
import type { Job } from '../jobs/schemas.ts'
import type { Logger } from '../log.ts'
import { guessKind, ingestUploadKey, normalizeSourceUrl, uploadIdentity } from './store.ts'

export interface AddingServices {
  writes: Pick<GraphWrites, 'registerSource'>
  jobs: Pick<Jobs, 'enqueue'>
  blobs: BlobStore
  log: Logger
}

/** A document to add: what becomes a source and its job. */
export interface Addition {
  url: string
  kind: string
  /** Where an upload's bytes wait, with what was said of them. */
  upload?: { key: string; content_type: string; file_name: string }
}

/** Deletes an upload no job will read; a failure is logged (the leftover sweep finds it later). */
export const discardUpload = (services: Pick<AddingServices, 'blobs' | 'log'>, key: string): Promise<void> =>
  discardBlobs(services.blobs, services.log, 'ingest: could not delete an upload', key)

/** The additions of `urls`, normalized and without repeats; 400 naming the first that is not an http(s) URL. */
export function urlAdditions(urls: readonly string[]): Addition[] {
  const normalized = urls.map((url) => {
    const identity = normalizeSourceUrl(url)
    if (!identity) throw new HttpError(400, `invalid body: ${JSON.stringify(url.slice(0, 200))} is not an http(s) URL`)
    return identity
  })
  return [...new Set(normalized)].map((url) => ({ url, kind: guessKind(url) }))
}

/** 400 for an empty document, 413 for one past `maxBytes` (MEDIA_UPLOAD_MAX_BYTES), named `label` ("the text"). */
export function checkDocumentSize(bytes: number, maxBytes: number, label: string): void {
  if (bytes === 0) throw new HttpError(400, `${label} is empty (0 bytes)`)
  if (bytes > maxBytes)
    throw new HttpError(
      413,
      `${label} is ${bytes} bytes, more than the limit of ${maxBytes} bytes (MEDIA_UPLOAD_MAX_BYTES)`,
    )
}

/** A document given whole, stored as an upload: 400 when empty, 413 past `maxBytes` (MEDIA_UPLOAD_MAX_BYTES). */
export async function storeDocument(
  services: Pick<AddingServices, 'blobs'>,
  repositoryId: string,
  document: { bytes: Uint8Array; fileName: string; contentType: string; maxBytes: number; label?: string },
): Promise<Addition> {
  const { bytes, fileName, contentType, maxBytes } = document
  checkDocumentSize(bytes.byteLength, maxBytes, document.label ?? `the document ${JSON.stringify(fileName)}`)
  const key = ingestUploadKey(repositoryId)
  await services.blobs.put(key, bytes, { contentType: contentType.split(';', 1)[0] || undefined })
  return {
    url: uploadIdentity(createHash('sha256').update(bytes).digest('hex')),
    kind: guessKind(fileName),
    upload: { key, content_type: contentType, file_name: fileName },
  }
}

/**
 * Makes each addition its source (the same identity again: the same source) and queues its
 * ingest_source job, in order; the uploads no job took are deleted when one fails.
 */
export async function queueAdditions(
  services: AddingServices,
  request: { repositoryId: string; createdBy: string | null; additions: readonly Addition[]; process: boolean },
): Promise<{ job: Job; source_id: string }[]> {
  const { repositoryId, additions, process } = request
  const queued: { job: Job; source_id: string }[] = []
  for (const [i, addition] of additions.entries()) {
    try {
      const source = await services.writes.registerSource(repositoryId, { url: addition.url, kind: addition.kind })
      const params = { source_id: source.id, process, ...(addition.upload ? { upload: addition.upload } : {}) }
      const job = await services.jobs.enqueue({
        kind: 'ingest_source',
        repositoryId,
        params,
        createdBy: request.createdBy,
      })
      queued.push({ job, source_id: source.id })
    } catch (error) {
      for (const rest of additions.slice(i)) if (rest.upload) await discardUpload(services, rest.upload.key)
      throw error
    }
  }
  return queued
}
