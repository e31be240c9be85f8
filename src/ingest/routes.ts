// Adding documents (docs/ingest.md): POST /{repoID}/ingest (and /api/v1/ingest with
// X-Repository-ID) takes URLs as JSON, or files as the multipart fields `file`, streamed to blob
// storage (never held) under MEDIA_UPLOAD_MAX_BYTES each. Each document becomes its source (one
// per identity: the normalized URL, or upload://sha256/<hex> of the bytes), `pending` until its
// ingest_source job (ingest-job.ts) reads it; the answer is 202 with the jobs. A request refused
// writes nothing: its URLs are all checked, and its files all stored, before any source is made.
// GET …/sources/{id}/chunks reads what a fact cites as chunk_index.
//
// Registered before the JSON body parser (see app.ts): the route reads its body itself.
import { createHash } from 'node:crypto'
import type { Readable } from 'node:stream'
import { t } from 'elysia'
import { Value } from '@sinclair/typebox/value'
import type { BlobStore } from '../blobs/store.ts'
import type { GraphWrites } from '../graph/write/service.ts'
import type { Principal } from '../http/auth.ts'
import { parseJsonBody, readBodyLimited } from '../http/body.ts'
import { HttpError } from '../http/errors.ts'
import { pagination, rankedPage } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { multipartUpload, UPLOAD_ERRORS, uploadError, UploadInterrupted, type UploadPace } from '../http/upload.ts'
import type { Jobs } from '../jobs/jobs.ts'
import type { Logger } from '../log.ts'
import type { Quotas } from '../quotas.ts'
import type { Repository } from '../repositories/repositories.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { type Addition, discardUpload, queueAdditions, urlAdditions } from './add.ts'
import { IngestAccepted, SourceChunk } from './schemas.ts'
import { guessKind, ingestUploadKey, sourceChunks, uploadIdentity } from './store.ts'

/** URLs one request may add: a list, not a crawl. */
const MAX_INGEST_URLS = 100
/** Files one request may add. */
const MAX_INGEST_FILES = 20
/** A source's chunks are listed up to this position (far more than any document readDocument accepts makes). */
const CHUNK_WINDOW = 1_000_000
const URL_MAX_LENGTH = 2000

export interface IngestRoutesOptions {
  scope: ReturnType<typeof repositoryScope>
  writes: Pick<GraphWrites, 'registerSource'>
  jobs: Jobs
  blobs: BlobStore
  quotas: Pick<Quotas, 'checkQueue'>
  log: Logger
  /** Largest JSON body (BODY_LIMIT) and the longest it may take (BODY_TIMEOUT). */
  bodyLimit: number
  bodyTimeoutMs: number
  /** Largest file (MEDIA_UPLOAD_MAX_BYTES), and the slowest an upload may arrive. */
  maxFileBytes: number
  uploadPace: UploadPace
}

const Url = t.String({ minLength: 1, maxLength: URL_MAX_LENGTH, description: 'an http(s) URL' })
const Process = t.Optional(
  t.Boolean({
    description:
      'draw facts and concepts once the source is parsed, by a process_source job (default true; docs/extract.md)',
  }),
)
const OneUrl = t.Object({ url: Url, process: Process }, { additionalProperties: false })
const SeveralUrls = t.Object(
  { urls: t.Array(Url, { minItems: 1, maxItems: MAX_INGEST_URLS }), process: Process },
  { additionalProperties: false },
)
const IngestJson = t.Union([OneUrl, SeveralUrls], { description: 'one URL or several' })
/** The repository's queue full (429, QUOTA_QUEUED_JOBS). */
const errors = { ...UPLOAD_ERRORS, 429: ErrorBody }
const requestBody = {
  required: true,
  content: {
    'application/json': { schema: IngestJson },
    'multipart/form-data': {
      schema: t.Object({
        file: t.Array(t.String({ format: 'binary' }), {
          description: `the documents (PDF, HTML, Markdown, text), up to ${MAX_INGEST_FILES}`,
        }),
        process: t.Optional(t.String({ enum: ['true', 'false'] })),
      }),
    },
  },
}

/** The URLs of a JSON body, normalized and without repeats; 400 for a body or URL that is not one. */
function requestedUrls(body: unknown): { additions: Addition[]; process: boolean } {
  const schema = typeof body === 'object' && body !== null && 'urls' in body ? SeveralUrls : OneUrl
  if (!Value.Check(schema, body)) {
    const problem = Value.Errors(schema, body).First()
    throw new HttpError(
      400,
      `invalid body: ${problem?.path.slice(1).replaceAll('/', '.') || 'body'}: ${problem?.message ?? 'expected {"url": "…"} or {"urls": […]}'}`,
    )
  }
  return { additions: urlAdditions('urls' in body ? body.urls : [body.url]), process: body.process ?? true }
}

export function ingestRoutes(options: IngestRoutesOptions) {
  const { scope, writes, jobs, blobs, quotas, log, maxFileBytes, uploadPace } = options
  const discard = (key: string) => discardUpload({ blobs, log }, key)
  const tooLarge = `a file exceeds the limit of ${maxFileBytes} bytes (MEDIA_UPLOAD_MAX_BYTES)`

  /** Streams one file to a new blob, hashing it on the way; on any failure nothing is left. */
  const storeFile = async (
    repositoryId: string,
    stream: Readable,
    fileName: string,
    contentType: string,
  ): Promise<Addition> => {
    const key = ingestUploadKey(repositoryId)
    const hash = createHash('sha256')
    async function* hashed() {
      try {
        for await (const chunk of stream) {
          hash.update(chunk as Uint8Array)
          yield chunk as Uint8Array
        }
      } catch {
        throw new UploadInterrupted()
      }
    }
    let bytes: number
    try {
      ;({ bytes } = await blobs.put(key, hashed(), { maxBytes: maxFileBytes, contentType: contentType || undefined }))
    } catch (error) {
      await discard(key)
      throw uploadError(error, { tooLarge, empty: `the file ${JSON.stringify(fileName)} is empty (0 bytes)` })
    }
    if (bytes === 0) {
      await discard(key)
      throw new HttpError(400, `the file ${JSON.stringify(fileName)} is empty (0 bytes)`)
    }
    return {
      url: uploadIdentity(hash.digest('hex')),
      kind: guessKind(fileName),
      upload: { key, content_type: contentType, file_name: fileName },
    }
  }

  /** Every `file` of a multipart body stored, and its `process` field; on a failure none is kept. */
  const storeFiles = async (
    request: Request,
    repositoryId: string,
  ): Promise<{ additions: Addition[]; process: boolean }> => {
    let refusal: unknown
    const { form, close } = multipartUpload(request, uploadPace, {
      limits: { files: MAX_INGEST_FILES, fields: 10 },
      onInputError: (error) => {
        refusal ??= uploadError(error, { tooLarge, empty: 'request body is empty' })
      },
    })
    const stored: Promise<Addition>[] = []
    let process = 'true'
    const done = new Promise<void>((resolve, reject) => {
      form.on('file', (name, stream, info) => {
        stream.on('error', () => {})
        if (name !== 'file' || refusal) {
          stream.resume()
          return
        }
        const file = storeFile(repositoryId, stream, info.filename ?? '', (info.mimeType ?? '').toLowerCase())
        // The request is refused as a whole: the rest of the body is not read.
        file.catch((error) => {
          refusal ??= error
          form.destroy(error)
        })
        stored.push(file)
      })
      form.on('field', (name, value) => {
        if (name === 'process') process = value
        else if (name === 'file') refusal ??= new HttpError(400, 'the form field "file" must be a file')
      })
      form.on('filesLimit', () => {
        refusal ??= new HttpError(400, `at most ${MAX_INGEST_FILES} files in one request`)
      })
      form.on('close', resolve)
      form.on('error', (error: Error) =>
        reject(refusal ?? new HttpError(400, `malformed multipart body: ${error.message}`)),
      )
    })
    const formEnd = await Promise.allSettled([done])
    close()
    const settled = [...formEnd, ...(await Promise.allSettled(stored))]
    const failed = settled.find((outcome) => outcome.status === 'rejected')
    const additions = settled
      .slice(1)
      .flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value as Addition] : []))
    if (!refusal && !failed && additions.length === 0)
      refusal = new HttpError(400, 'the multipart body has no file field "file"')
    if (!refusal && process !== 'true' && process !== 'false')
      refusal = new HttpError(400, 'invalid body: process: expected true or false')
    if (refusal || failed) {
      for (const addition of additions) await discard(addition.upload!.key)
      throw refusal ?? (failed as PromiseRejectedResult).reason
    }
    return { additions, process: process === 'true' }
  }

  const start = async ({
    request,
    principal,
    repository,
    set,
  }: {
    request: Request
    principal: Principal
    repository: Repository
    set: { status?: number | string }
  }) => {
    const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
    if (type !== 'application/json' && type !== 'multipart/form-data')
      throw new HttpError(
        415,
        `unsupported Content-Type ${JSON.stringify(type)}; expected application/json (URLs) or multipart/form-data (files)`,
      )
    // Before an upload is stored: a full queue would only throw it away.
    await quotas.checkQueue(repository.id)
    let additions: Addition[]
    let process: boolean
    if (type === 'application/json') {
      ;({ additions, process } = requestedUrls(
        parseJsonBody(await readBodyLimited(request, options.bodyLimit, options.bodyTimeoutMs)),
      ))
    } else {
      if (!request.body || request.headers.get('content-length') === '0')
        throw new HttpError(400, 'request body is empty: send the files as the multipart fields "file"')
      ;({ additions, process } = await storeFiles(request, repository.id))
    }
    const queued = await queueAdditions(
      { writes, jobs, blobs, log },
      { repositoryId: repository.id, createdBy: principal.userId, additions, process },
    )
    set.status = 202
    return { jobs: queued.map(({ job, source_id }) => ({ id: job.id, source_id, status: job.status })) }
  }

  return repositoryScopedRoutes('kgs/ingest', scope, (app, at) => {
    const describe = (summary: string, extra: Record<string, unknown> = {}) =>
      at.detail({ tags: ['graph'], summary, ...extra })
    return app
      .use(pagination)
      .post('/ingest', start, {
        repository: 'source:write',
        params: at.repositoryParams,
        response: { 202: IngestAccepted, ...errors },
        detail: describe(
          'Add documents as sources: URLs (JSON) or files (multipart fields "file"); each is its source (the same URL or bytes again: the same source) and an ingest_source job that fetches and parses it (202 with the jobs)',
          { requestBody },
        ),
      })
      .get(
        '/sources/:sourceID/chunks',
        async ({ db, params, range }) => {
          const chunks = await sourceChunks(await db(), params.sourceID, range)
          if (!chunks) throw new HttpError(404, 'source not found')
          return rankedPage(chunks.rows, chunks.total)
        },
        {
          repository: 'source:read',
          ranked: CHUNK_WINDOW,
          params: at.params({ sourceID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) }),
          response: { 200: t.Array(SourceChunk), ...errors },
          detail: describe(
            "A source's chunks in order (what a fact cites as chunk_index); X-Total-Count says how many",
          ),
        },
      )
  })
}
