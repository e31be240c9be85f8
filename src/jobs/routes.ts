// Job routes (docs/spec/bundle.md §6): a repository's jobs at /{repoID}/jobs (or /api/v1/jobs with
// X-Repository-ID), every job at /api/v1/jobs without the header (system domain).
import type { Quotas } from '../quotas.ts'
import { Elysia, t } from 'elysia'
import type { Db } from '../db/sql.ts'
import type { Principal } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import { pagination } from '../http/pagination.ts'
import type { PageRequest } from '../db/pages.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { Repository } from '../repositories/repositories.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { jobInScope, type Jobs } from './jobs.ts'
import { listJobs } from './queue.ts'
import { JOB_STATUSES, JobBody, Status, type Job } from './schemas.ts'

const JobParams = t.Object({ jobID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const RepositoryJobParams = t.Object({
  repoID: t.String(),
  jobID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }),
})
const ListQuery = t.Object({
  status: t.Optional(Status({ error: `expected one of ${JOB_STATUSES.join(', ')}` })),
  kind: t.Optional(t.String({ maxLength: 63 })),
  order: t.Optional(
    t.Union([t.Literal('asc'), t.Literal('desc')], {
      error: 'expected asc or desc',
      description: 'asc (the default): oldest first; desc: newest first',
    }),
  ),
})
// Each route's own error answers (the OpenAPI document lists exactly these).
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
/** Cancelling a job that already finished. */
const cancelErrors = { ...errors, 409: ErrorBody }
/** A JSON body: too large (413), of another type (415); the repository's queue full (429, QUOTA_QUEUED_JOBS). */
const startErrors = { ...errors, 413: ErrorBody, 415: ErrorBody, 429: ErrorBody }

// For the routes of other features that answer with a job they queued (a 202).
export { JobBody }

export interface AcceptedSet {
  status?: number | string
  headers: Record<string, string | number>
}

/** What a route that queues a job in a repository is handed. */
export interface QueueingContext<Body> {
  principal: Principal
  repository: Repository
  body: Body
  set: AcceptedSet
}

/** The 202 of a route that queued a job: the job, and in Location where to follow it. */
export function accepted(set: AcceptedSet, job: Job): Job {
  set.status = 202
  set.headers.location = `/${job.repository_id}/jobs/${job.id}`
  return job
}

export interface JobRoutesOptions {
  system: Db
  jobs: Jobs
  scope: ReturnType<typeof repositoryScope>
  quotas: Pick<Quotas, 'checkQueue'>
}

export function jobRoutes({ system, jobs, scope, quotas }: JobRoutesOptions) {
  const describe = (summary: string) => ({ tags: ['jobs'], summary })
  const list = ({
    repository,
    query,
    page,
  }: {
    repository?: Repository
    query: typeof ListQuery.static
    page: PageRequest
  }) =>
    listJobs(
      system,
      { repositoryId: repository?.id, status: query.status, kind: query.kind, newestFirst: query.order === 'desc' },
      page.limit,
      page.after,
    )
  const cancel = async ({ repository, params }: { repository?: Repository; params: { jobID: string } }) => {
    const job = await jobInScope(system, params.jobID, repository)
    if (job.status !== 'queued' && job.status !== 'running') throw new HttpError(409, `job already ${job.status}`)
    return (await jobs.cancel(job.id)) ?? job
  }
  const start = async ({ principal, repository, body, set }: QueueingContext<typeof startBody.static>) => {
    await quotas.checkQueue(repository.id)
    return accepted(
      set,
      await jobs.enqueue({
        kind: body.kind,
        repositoryId: repository.id,
        params: body.params,
        createdBy: principal.userId,
      }),
    )
  }
  const startOptions = {
    repository: 'graph:import',
    body: startBody,
    response: { 202: JobBody, ...startErrors },
    detail: describe(
      'Start a job on the repository: (re)compute the vectors of its facts or concepts with the configured embedder, or fetch its missing media',
    ),
  } as const
  const listDetail = describe(
    'Jobs, oldest first (?order=desc: newest first): of the repository named by the path or X-Repository-ID, else every job (system job:read)',
  )

  return new Elysia({ name: 'kgs/jobs' })
    .use(scope)
    .use(pagination)
    .get('/api/v1/jobs', list, {
      repositoryOrSystem: 'job:read',
      paginated: true,
      query: ListQuery,
      response: { 200: t.Array(JobBody), ...errors },
      detail: listDetail,
    })
    .get('/api/v1/jobs/:jobID', ({ repository, params }) => jobInScope(system, params.jobID, repository), {
      repositoryOrSystem: 'job:read',
      params: JobParams,
      response: { 200: JobBody, ...errors },
      detail: describe('A job'),
    })
    .post('/api/v1/jobs/:jobID/cancel', cancel, {
      repositoryOrSystem: 'job:cancel',
      params: JobParams,
      response: { 200: JobBody, ...cancelErrors },
      detail: describe(
        'Cancel a job: a queued job at once, a running one at its next heartbeat (409 if it already finished)',
      ),
    })
    .get('/:repoID/jobs', list, {
      repositoryOrSystem: 'job:read',
      paginated: true,
      query: ListQuery,
      response: { 200: t.Array(JobBody), ...errors },
      detail: listDetail,
    })
    .get('/:repoID/jobs/:jobID', ({ repository, params }) => jobInScope(system, params.jobID, repository), {
      repositoryOrSystem: 'job:read',
      params: RepositoryJobParams,
      response: { 200: JobBody, ...errors },
      detail: describe("A repository's job"),
    })
    .post('/:repoID/jobs/:jobID/cancel', cancel, {
      repositoryOrSystem: 'job:cancel',
      params: RepositoryJobParams,
      response: { 200: JobBody, ...cancelErrors },
      detail: describe("Cancel a repository's job"),
    })
    .post('/:repoID/jobs', start, startOptions)
    .post('/api/v1/jobs', start, startOptions)
}

const startBody = t.Object(
  {
    // Kinds a client may start directly; export and import have routes of their own.
    kind: t.Union([t.Literal('embed_facts'), t.Literal('embed_concepts'), t.Literal('fetch_media')], {
      error: 'expected one of embed_facts, embed_concepts, fetch_media',
    }),
    params: t.Optional(
      t.Object(
        { ids: t.Optional(t.Array(t.String({ pattern: UUID_PATTERN }), { maxItems: 10_000 })) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
