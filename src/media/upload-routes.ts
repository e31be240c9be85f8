// Media of the write API: a source's original (PUT /{repoID}/sources/{id}/body) and its images
// (POST /{repoID}/sources/{id}/images), each the raw bytes of the request body with their
// Content-Type, streamed to blob storage as they arrive (never held whole), refused past
// MEDIA_UPLOAD_MAX_BYTES (413) or when they trickle (408), with nothing left behind. Stored as the
// media fetcher stores what it downloads (store.ts keys), and served by routes.ts. Registered
// before the JSON body parser, which would read these bodies itself.
import { t } from 'elysia'
import { discardBlobs, type BlobStore } from '../blobs/store.ts'
import { HttpError } from '../http/errors.ts'
import { ErrorBody } from '../http/schemas.ts'
import { requestChunks, uploadError, type UploadPace } from '../http/upload.ts'
import type { Logger } from '../log.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { getSource } from '../graph/store.ts'
import { SourceDetail, SourceImage } from '../graph/schemas.ts'
import { etagOf } from '../http/etag.ts'
import { ExistingRowBody } from '../graph/write/schemas.ts'
import { fetchedBodyKey, fetchedImageKey, recordUploadedBody, recordUploadedImage } from './store.ts'
import { localImageUrl } from './urls.ts'

export interface MediaUploadOptions {
  scope: ReturnType<typeof repositoryScope>
  blobs: BlobStore
  log: Logger
  baseUrl: string
  maxBytes: number
  pace: UploadPace
}

const Uuid = t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' })
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 408: ErrorBody, 413: ErrorBody }
const requestBody = (what: string) => ({
  required: true,
  content: {
    '*/*': {
      schema: {
        type: 'string' as const,
        format: 'binary',
        description: `${what}, with its media type as Content-Type`,
      },
    },
  },
})
/** A query parameter holding an integer from 0 to 999,999,999 (what an integer column holds, and more than any image needs). */
const natural = (description: string) =>
  t.String({ pattern: '^[0-9]{1,9}$', error: 'expected an integer from 0 to 999999999', description })
const ImageQuery = t.Object({
  kind: t.Union([t.Literal('inline'), t.Literal('page')], {
    error: 'expected inline or page',
    description: 'an image in the text, or the image of a page',
  }),
  position: natural("the image's place among the source's images of its kind (unique per source and kind)"),
  page_number: t.Optional(natural('the page it is on')),
  width: t.Optional(natural('in pixels')),
  height: t.Optional(natural('in pixels')),
  alt_text: t.Optional(t.String({ maxLength: 2000, error: 'expected at most 2000 characters' })),
  url: t.Optional(
    t.String({ maxLength: 2000, error: 'expected at most 2000 characters', description: 'where the image came from' }),
  ),
})

const contentType = (request: Request) =>
  (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase() || 'application/octet-stream'
const integer = (value: string | undefined) => (value === undefined ? null : Number(value))

export function mediaUploadRoutes({ scope, blobs, log, baseUrl, maxBytes, pace }: MediaUploadOptions) {
  /** Streams the request body to `key`: 400 when empty, 413 past the limit; on failure nothing is stored. */
  const store = async (request: Request, key: string, type: string): Promise<number> => {
    const declared = request.headers.get('content-length')
    if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes)
    if (!request.body || declared === '0') throw new HttpError(400, 'request body is empty: send the bytes')
    try {
      const { bytes } = await blobs.put(key, requestChunks(request.body, pace), { maxBytes, contentType: type })
      if (bytes === 0) throw new HttpError(400, 'request body is empty: send the bytes')
      return bytes
    } catch (error) {
      await discard(key)
      if (error instanceof HttpError) throw error
      throw uploadError(error, { tooLarge: tooLarge(maxBytes).message, empty: 'request body is empty: send the bytes' })
    }
  }
  const discard = (key: string) => discardBlobs(blobs, log, 'media: could not delete an upload', key)

  return repositoryScopedRoutes('kgs/media-upload', scope, (app, at) => {
    const describe = (summary: string, what: string) =>
      at.detail({ tags: ['graph'], summary, requestBody: requestBody(what) })
    return app
      .put(
        '/sources/:sourceID/body',
        async ({ db, params, request, repository, set }) => {
          const sql = await db()
          if (!(await getSource(sql, params.sourceID))) throw new HttpError(404, 'source not found')
          const key = `${fetchedBodyKey(repository.id, params.sourceID)}-${crypto.randomUUID()}`
          const type = contentType(request)
          const bytes = await store(request, key, type)
          const recorded = await recordUploadedBody(sql, {
            sourceId: params.sourceID,
            storageKey: key,
            bytes,
            contentType: type,
          })
          if (!recorded) {
            await discard(key)
            throw new HttpError(404, 'source not found')
          }
          if (recorded.replaced) await discard(recorded.replaced)
          const source = (await getSource(sql, params.sourceID))!
          set.headers.etag = etagOf(source)
          return source
        },
        {
          repository: 'source:write',
          params: at.params({ sourceID: Uuid }),
          response: { 200: SourceDetail, ...errors },
          detail: describe(
            "Store a source's original (a PDF, an HTML page), replacing the one it had; the answer is the source",
            'the original',
          ),
        },
      )
      .post(
        '/sources/:sourceID/images',
        async ({ db, params, query, request, repository, set, status }) => {
          const sql = await db()
          if (!(await getSource(sql, params.sourceID))) throw new HttpError(404, 'source not found')
          const id = crypto.randomUUID()
          const key = fetchedImageKey(repository.id, id)
          const type = contentType(request)
          const bytes = await store(request, key, type)
          const image = {
            id,
            sourceId: params.sourceID,
            kind: query.kind,
            position: Number(query.position),
            pageNumber: integer(query.page_number),
            url: query.url ?? '',
            width: integer(query.width),
            height: integer(query.height),
            altText: query.alt_text ?? '',
            contentType: type,
            storageKey: key,
            bytes,
          }
          const recorded = await recordUploadedImage(sql, image)
          if (!('created' in recorded)) {
            await discard(key)
            if ('missing' in recorded) throw new HttpError(404, 'source not found')
            return status(409, {
              error: 'the source has an image of this kind at this position already',
              existing_id: recorded.existing,
            })
          }
          const answer = {
            id,
            kind: image.kind,
            page_number: image.pageNumber,
            position: image.position,
            url: localImageUrl(baseUrl, repository.id, id),
            width: image.width,
            height: image.height,
            bytes,
            alt_text: image.altText,
            content_type: type,
          }
          set.headers.etag = etagOf(answer)
          set.headers.location = answer.url
          set.status = 201
          return answer
        },
        {
          repository: 'source:write',
          params: at.params({ sourceID: Uuid }),
          query: ImageQuery,
          response: { 201: SourceImage, ...errors, 409: ExistingRowBody },
          detail: describe(
            'Add an image to a source (an image fact names it as source_image_id); 409 with existing_id when its kind and position are taken',
            'the image',
          ),
        },
      )
  })
}

const tooLarge = (maxBytes: number) =>
  new HttpError(413, `the upload exceeds the limit of ${maxBytes} bytes (MEDIA_UPLOAD_MAX_BYTES)`)
