// A repository's stored media: the bytes of a source image and of a source's body, at the URLs
// of urls.ts (/{repoID}/...) and, with the repository in X-Repository-ID, under /api/v1. Reading
// them takes source:read, like the source itself.
import { t } from 'elysia'
import type { BlobStore } from '../blobs/store.ts'
import { HttpError } from '../http/errors.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { servedAs } from './types.ts'
import { storedBody, storedImage, type StoredMedium } from './store.ts'

type Scope = ReturnType<typeof repositoryScope>

const Uuid = t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' })
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
// Documented by hand: the 200 is not JSON, and documenting it replaces the generated answers.
const responses = {
  200: {
    description: 'the stored bytes, with the media type they were stored with',
    content: { '*/*': { schema: { type: 'string' as const, format: 'binary' } } },
  },
  ...Object.fromEntries(
    Object.keys(errors).map((status) => [
      status,
      { description: 'error', content: { 'application/json': { schema: ErrorBody } } },
    ]),
  ),
}

/** The medium's bytes as a response; 404 when its row is unknown (`what` not found) or it has no stored bytes. */
async function mediumResponse(
  blobs: BlobStore,
  medium: StoredMedium | undefined,
  what: { row: string; medium: string },
): Promise<Response> {
  if (!medium) throw new HttpError(404, `${what.row} not found`)
  if (!medium.storage_key) throw new HttpError(404, `${what.medium} not stored`)
  const body = await blobs.responseBody(medium.storage_key)
  if (!body) throw new Error(`media: the blob of a stored ${what.medium} (${medium.storage_key}) is missing`)
  const { type, disposition } = servedAs(medium.content_type)
  return new Response(body, {
    headers: {
      'content-type': type,
      'content-disposition': disposition,
      // Bytes from anywhere, served from this origin: never sniffed into a page, never run as one.
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
    },
  })
}

export interface MediaRoutesOptions {
  scope: Scope
  blobs: BlobStore
}

/** Every route at /{repoID}/… and, with the repository in X-Repository-ID, at /api/v1/…. */
export function mediaRoutes({ scope, blobs }: MediaRoutesOptions) {
  return repositoryScopedRoutes('kgs/media', scope, (app, at) => {
    const describe = (summary: string) => at.detail({ tags: ['graph'], summary, responses })
    return app
      .get(
        '/images/:imageID',
        async ({ db, params }) =>
          mediumResponse(blobs, await storedImage(await db(), params.imageID), { row: 'image', medium: 'image' }),
        {
          repository: 'source:read',
          params: at.params({ imageID: Uuid }),
          response: errors,
          detail: describe("A source image's stored bytes"),
        },
      )
      .get(
        '/sources/:sourceID/body',
        async ({ db, params }) =>
          mediumResponse(blobs, await storedBody(await db(), params.sourceID), { row: 'source', medium: 'body' }),
        {
          repository: 'source:read',
          params: at.params({ sourceID: Uuid }),
          response: errors,
          detail: describe("A source's stored original (a PDF, an HTML page)"),
        },
      )
  })
}
