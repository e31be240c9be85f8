// /api/v1/repositories (CRUD) and the repository itself at /{repoID} and, addressed by the
// X-Repository-ID header, at /api/v1/repository.
import { Elysia, t } from 'elysia'
import type { accessControl } from '../http/access.ts'
import { pagination } from '../http/pagination.ts'
import { etagOf } from '../http/etag.ts'
import { ErrorBody } from '../http/schemas.ts'
import type { Throttle } from '../http/throttle.ts'
import type { Quotas } from '../quotas.ts'
import { confirmDeletion, type Repositories, type Repository } from './repositories.ts'
import type { repositoryScope } from './scope.ts'
import { RepositoryRecord } from './schemas.ts'

const Name = t.String({ minLength: 1, maxLength: 200, error: 'expected a name of 1 to 200 characters' })
const Slug = t.String({
  maxLength: 63,
  description: '2–63 of a-z, 0-9 and inner hyphens; not UUID-shaped; not reserved',
  error: 'expected a slug of at most 63 characters',
})
const Description = t.String({ maxLength: 2000, error: 'expected a description of at most 2000 characters' })
// Each route's own error answers (the OpenAPI document lists exactly these, with its rule's).
const readErrors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
/** A JSON body: invalid (400), too large (413), of another type (415); a slug already taken (409). */
const bodyErrors = { 400: ErrorBody, 409: ErrorBody, 413: ErrorBody, 415: ErrorBody }
const writeErrors = { ...readErrors, ...bodyErrors }

/**
 * The record, with the ETag of the repository's own fields (a rename or re-slug changes it; its
 * counts and the caller's role do not): what a deletion's If-Match names.
 */
function versioned<T>(set: { headers: Record<string, unknown> }, repository: Repository, record: T): T {
  set.headers.etag = etagOf(repository)
  return record
}

export interface RepositoryRoutesOptions {
  repositories: Repositories
  access: ReturnType<typeof accessControl>
  scope: ReturnType<typeof repositoryScope>
  throttle: Throttle
  quotas: Quotas
}

export function repositoryRoutes({ repositories, access, scope, throttle, quotas }: RepositoryRoutesOptions) {
  const describe = (summary: string) => ({ tags: ['repositories'], summary })
  return new Elysia({ name: 'kgs/repositories' })
    .use(access)
    .use(scope)
    .use(pagination)
    .post(
      '/api/v1/repositories',
      async ({ principal, body, set, request }) => {
        const repository = await throttle.guard(request, undefined, async () => {
          await quotas.checkRepositories(principal.userId)
          return repositories.create(principal.userId, body)
        })
        set.status = 201
        return repository
      },
      {
        permission: 'repository:create',
        body: t.Object(
          { name: Name, slug: t.Optional(Slug), description: t.Optional(Description) },
          { additionalProperties: false },
        ),
        // 403 also for a caller at QUOTA_REPOSITORIES.
        response: { 201: RepositoryRecord, ...bodyErrors, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
        detail: describe('Create a repository (its own database; the creator becomes repoadmin)'),
      },
    )
    .get(
      '/api/v1/repositories',
      async ({ principal, page }) => repositories.list(principal.userId, page.limit, page.after),
      {
        auth: true,
        paginated: true,
        response: { 200: t.Array(RepositoryRecord), 400: ErrorBody, 401: ErrorBody },
        detail: describe(
          "Repositories the caller holds a role in (all, for a sysadmin), with the caller's role and each one's counts",
        ),
      },
    )
    .get(
      '/api/v1/repositories/:repoID',
      ({ principal, repository, set }) => versioned(set, repository, repositories.record(principal.userId, repository)),
      {
        repository: 'repository:read',
        response: { 200: RepositoryRecord, ...readErrors },
        detail: describe("A repository, by UUID or slug, with the caller's role and its counts"),
      },
    )
    .put(
      '/api/v1/repositories/:repoID',
      async ({ principal, repository, body, set }) => {
        const updated = await repositories.update(repository, body)
        return versioned(set, updated, repositories.record(principal.userId, updated))
      },
      {
        repository: 'repository:update',
        body: t.Object(
          { name: t.Optional(Name), slug: t.Optional(Slug), description: t.Optional(Description) },
          { additionalProperties: false },
        ),
        response: { 200: RepositoryRecord, ...writeErrors },
        detail: describe('Rename, re-slug or describe a repository'),
      },
    )
    .delete(
      '/api/v1/repositories/:repoID',
      async ({ principal, repository, body, request }) => {
        confirmDeletion(repository, body?.confirm, request.headers.get('if-match') ?? undefined)
        // Its record as it was, counts included, before they go with it.
        const record = await repositories.record(principal.userId, repository)
        await repositories.remove(repository.id)
        return record
      },
      {
        repository: 'repository:delete',
        body: t.Optional(
          t.Object(
            {
              confirm: t.String({
                maxLength: 63,
                description: "the repository's slug",
                error: "expected the repository's slug",
              }),
            },
            { additionalProperties: false },
          ),
        ),
        // 428: neither confirmation sent; 412: If-Match names another version.
        response: {
          200: RepositoryRecord,
          ...readErrors,
          412: ErrorBody,
          413: ErrorBody,
          415: ErrorBody,
          428: ErrorBody,
        },
        detail: {
          ...describe(
            'Delete a repository with its database and role assignments, for good: the request confirms it with {"confirm": "<its slug>"} or If-Match: <its ETag> (428 without either, 400 for another slug, 412 for another ETag)',
          ),
          parameters: [
            {
              in: 'header',
              name: 'If-Match',
              required: false,
              schema: { type: 'string' },
              description: "the repository's ETag (from its GET), confirming the deletion; `*` does not",
            },
          ],
        },
      },
    )
    .get(
      '/api/v1/repository',
      ({ principal, repository, set }) => versioned(set, repository, repositories.record(principal.userId, repository)),
      {
        repository: 'repository:read',
        response: { 200: RepositoryRecord, ...readErrors },
        // The rule documents the header.
        detail: describe('The repository named by the X-Repository-ID header'),
      },
    )
    .get(
      '/:repoID',
      ({ principal, repository, set }) => versioned(set, repository, repositories.record(principal.userId, repository)),
      {
        repository: 'repository:read',
        response: { 200: RepositoryRecord, ...readErrors },
        detail: describe('The repository at the root of its scoped routes (/{repoID}/...)'),
      },
    )
}
