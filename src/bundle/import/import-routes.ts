// POST /{repoID}/import-graph (docs/spec/bundle.md §5), also at /api/v1/import-graph with X-Repository-ID:
// queues an import_graph job (202 with the job). The bundle comes
// - from the registry: a JSON body {"graph_id": "<uuid>"} or {"name": "...", "sha256": "<hex>"},
//   looked up at once (404 when the registry does not hold it, 502 when it cannot be asked), so
//   a typo fails here and not later in a job;
// - or with the request: a raw application/gzip body, or the file field `bundle` of a
//   multipart/form-data body, streamed (never held) to blob storage under uploads/ with the
//   IMPORT_MAX_BYTES limit (413 past it) and the gzip magic checked on the first two bytes (400);
//   a refused upload leaves nothing behind. The job deletes the upload when it ends for good.
//
// Registered before the JSON body parser (see app.ts): the route reads its body itself.
import type { Readable } from 'node:stream'
import { t } from 'elysia'
import { discardBlobs, type BlobStore } from '../../blobs/store.ts'
import { parseJsonBody, readBodyLimited } from '../../http/body.ts'
import type { Principal } from '../../http/auth.ts'
import { HttpError } from '../../http/errors.ts'
import {
  gzipChunks,
  multipartUpload,
  requestChunks,
  uploadError,
  UploadInterrupted,
  type UploadPace,
  UPLOAD_ERRORS,
} from '../../http/upload.ts'
import { ErrorBody } from '../../http/schemas.ts'
import type { Jobs } from '../../jobs/jobs.ts'
import { JobBody, accepted, type AcceptedSet } from '../../jobs/routes.ts'
import type { Logger } from '../../log.ts'
import type { RegistryClient } from '../../registry/client.ts'
import type { Quotas } from '../../quotas.ts'
import type { Repository } from '../../repositories/repositories.ts'
import type { repositoryScope } from '../../repositories/scope.ts'
import { repositoryScopedRoutes } from '../../repositories/scoped-routes.ts'
import { uploadKey } from './import-job.ts'
import { startRegistryImport } from './import-start.ts'
import { FORMS, RegistryImportBody, registryImportParams } from './import-body.ts'

type Scope = ReturnType<typeof repositoryScope>

export interface ImportRoutesOptions {
  scope: Scope
  jobs: Jobs
  blobs: BlobStore
  registry: RegistryClient
  /** Largest JSON body (BODY_LIMIT). */
  bodyLimit: number
  /** Longest a JSON body may take to arrive (BODY_TIMEOUT). */
  bodyTimeoutMs: number
  /** Slowest an upload may arrive (UPLOAD_MIN_RATE over BODY_TIMEOUT). */
  uploadPace: UploadPace
  /** Largest upload (IMPORT_MAX_BYTES). */
  maxUploadBytes: number
  quotas: Pick<Quotas, 'checkQueue'>
  log: Logger
}

const GZIP_TYPES = new Set(['application/gzip', 'application/x-gzip'])
/** The registry could not be asked (502). */
const errors = { ...UPLOAD_ERRORS, 502: ErrorBody }

const requestBody = {
  required: true,
  content: {
    'application/json': {
      schema: RegistryImportBody,
    },
    'application/gzip': { schema: t.String({ format: 'binary', description: 'the bundle (.json.gz)' }) },
    'multipart/form-data': {
      schema: t.Object({ bundle: t.String({ format: 'binary', description: 'the bundle (.json.gz)' }) }),
    },
  },
}

// ---------------------------------------------------------------------------------------------
// Uploads

/**
 * The file field `bundle` of a multipart body as it arrives (other parts are skipped): 400 when
 * the body is malformed or has no such file.
 */
async function* multipartBundle(request: Request, pace: UploadPace): AsyncGenerator<Uint8Array> {
  // A body that breaks off or trickles ends the form with its own error, answered as that.
  let inputError: Error | undefined
  const { form, close } = multipartUpload(request, pace, { onInputError: (error) => (inputError = error) })
  let file: Readable | undefined
  const found = new Promise<Readable>((resolve, reject) => {
    form.on('file', (name, stream) => {
      // Errors of a stream come through the form's 'error' (or the loop below): never unhandled.
      stream.on('error', () => {})
      if (name === 'bundle' && !file) resolve((file = stream))
      else stream.resume()
    })
    form.on('field', (name) => {
      if (name === 'bundle') reject(new HttpError(400, 'the form field "bundle" must be a file (the .json.gz bundle)'))
    })
    form.on('close', () => reject(new HttpError(400, 'the multipart body has no file field "bundle"')))
    form.on('error', (error: Error) =>
      reject(inputError ?? new HttpError(400, `malformed multipart body: ${error.message}`)),
    )
  })
  found.catch(() => {})
  try {
    const stream = await found
    try {
      for await (const chunk of stream) yield chunk as Uint8Array
    } catch {
      throw inputError ?? new UploadInterrupted()
    }
  } finally {
    close()
  }
}

/** The route at /{repoID}/import-graph and, with the repository in X-Repository-ID, at /api/v1/import-graph. */
export function importRoutes({
  scope,
  jobs,
  blobs,
  registry,
  bodyLimit,
  bodyTimeoutMs,
  uploadPace,
  maxUploadBytes,
  quotas,
  log,
}: ImportRoutesOptions) {
  /** Streams an upload to a new blob; on any failure nothing is left and the answer says why. */
  const storeUpload = async (chunks: AsyncIterable<Uint8Array>): Promise<string> => {
    const key = uploadKey()
    try {
      await blobs.put(key, gzipChunks(chunks), { maxBytes: maxUploadBytes, contentType: 'application/gzip' })
      return key
    } catch (error) {
      await discard(key)
      throw uploadError(error, {
        tooLarge: tooLarge(maxUploadBytes).message,
        notGzip: new HttpError(400, 'the bundle is not gzip: upload a .json.gz bundle'),
        empty: 'the bundle is empty: upload a .json.gz bundle',
      })
    }
  }

  const discard = (key: string) => discardBlobs(blobs, log, 'import: could not delete an upload', key)

  const start = async ({
    request,
    principal,
    repository,
    holds,
    set,
  }: {
    request: Request
    principal: Principal
    repository: Repository
    holds: { 'registry:pull'?: boolean }
    set: AcceptedSet
  }) => {
    const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
    if (type === 'application/json') {
      const wanted = registryImportParams(parseJsonBody(await readBodyLimited(request, bodyLimit, bodyTimeoutMs)))
      return accepted(
        set,
        await startRegistryImport({ jobs, quotas, registry }, principal, repository, wanted, holds['registry:pull']),
      )
    }
    // Before an upload is stored: a full queue would only throw it away.
    await quotas.checkQueue(repository.id)
    let jobParams: { upload: string }
    if (GZIP_TYPES.has(type) || type === 'multipart/form-data') {
      const declared = request.headers.get('content-length')
      if (declared !== null && GZIP_TYPES.has(type) && Number(declared) > maxUploadBytes) throw tooLarge(maxUploadBytes)
      if (!request.body || declared === '0') throw new HttpError(400, 'request body is empty: upload a .json.gz bundle')
      jobParams = {
        upload: await storeUpload(
          GZIP_TYPES.has(type) ? requestChunks(request.body, uploadPace) : multipartBundle(request, uploadPace),
        ),
      }
    } else if (type === '' && (!request.body || request.headers.get('content-length') === '0')) {
      throw new HttpError(
        400,
        `request body is empty: send ${FORMS} as application/json, or the bundle as application/gzip or multipart/form-data`,
      )
    } else {
      throw new HttpError(
        415,
        `unsupported Content-Type ${JSON.stringify(type)}; expected application/json, application/gzip or multipart/form-data`,
      )
    }
    try {
      return accepted(
        set,
        await jobs.enqueue({
          kind: 'import_graph',
          repositoryId: repository.id,
          params: jobParams,
          createdBy: principal.userId,
        }),
      )
    } catch (error) {
      await discard(jobParams.upload)
      throw error
    }
  }

  return repositoryScopedRoutes('kgs/import', scope, (app, at) =>
    app.post('/import-graph', start, {
      repository: { permission: 'graph:import', forForm: { 'registry:pull': 'to import from the registry' } },
      params: at.repositoryParams,
      response: { 202: JobBody, ...errors, 429: ErrorBody },
      detail: at.detail({
        tags: ['repositories'],
        summary:
          'Import a graph bundle into the repository: from the registry (JSON: graph_id, or name and sha256), or uploaded (application/gzip, or the multipart file field "bundle"). Queues an import_graph job (202)',
        requestBody,
      }),
    }),
  )
}

const tooLarge = (maxBytes: number) => new HttpError(413, `the bundle exceeds the import limit of ${maxBytes} bytes`)
