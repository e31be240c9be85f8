// Export routes (docs/spec/bundle.md §4): POST /{repoID}/export-graph queues an export_graph job (202 with
// the job); GET /{repoID}/export-graph/download streams the repository's newest export, and
// GET /{repoID}/export-graph/{jobID}/download one export (export-download.ts). All are also
// served at /api/v1/... with the repository in X-Repository-ID (docs/spec/decisions.md §2).
import type { Quotas } from '../../quotas.ts'
import { t } from 'elysia'
import type { BlobStore } from '../../blobs/store.ts'
import { ErrorBody } from '../../http/schemas.ts'
import type { Jobs } from '../../jobs/jobs.ts'
import { JobBody, accepted, type QueueingContext } from '../../jobs/routes.ts'
import type { repositoryScope } from '../../repositories/scope.ts'
import { repositoryScopedRoutes } from '../../repositories/scoped-routes.ts'
import type { Db } from '../../db/sql.ts'
import { UUID_PATTERN } from '../../uuid.ts'
import { downloadExport, downloadNewestExport } from './export-download.ts'
import { ExportParams } from './export-params.ts'
import { startExport } from './export-start.ts'

type Scope = ReturnType<typeof repositoryScope>
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
const gzipBody = {
  description: 'the gzipped bundle (.json.gz)',
  content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
}
/** The download of an export that is queued or running: its job, with Retry-After. */
const PendingExport = t.Object(
  { error: t.String(), job: JobBody },
  { description: 'the export is queued or running: try again after Retry-After' },
)
const downloadErrors = { ...errors, 409: ErrorBody, 410: ErrorBody }
// Documented by hand: the 200 is not JSON.
const downloadResponses = {
  200: gzipBody,
  503: { description: PendingExport.description, content: { 'application/json': { schema: PendingExport } } },
  ...Object.fromEntries(
    Object.keys(downloadErrors).map((status) => [
      status,
      { description: 'error', content: { 'application/json': { schema: ErrorBody } } },
    ]),
  ),
}
const jobID = t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' })

export interface ExportRoutesOptions {
  scope: Scope
  system: Db
  jobs: Jobs
  blobs: BlobStore
  quotas: Pick<Quotas, 'checkQueue' | 'checkRegistry'>
}

/** Every route at /{repoID}/… and, with the repository in X-Repository-ID, at /api/v1/…. */
export function exportRoutes({ scope, system, jobs, blobs, quotas }: ExportRoutesOptions) {
  const start = async ({ principal, repository, body, set }: QueueingContext<ExportParams>) =>
    accepted(set, await startExport({ jobs, quotas }, principal, repository, body))

  return repositoryScopedRoutes('kgs/export', scope, (app, at) => {
    const describe = (summary: string, extra: Record<string, unknown> = {}) =>
      at.detail({ tags: ['repositories'], summary, ...extra })
    return app
      .post('/export-graph', start, {
        repository: 'graph:export',
        params: at.repositoryParams,
        body: ExportParams,
        // Every field is optional, and so is the body itself.
        transform: (context) => {
          context.body ??= {}
        },
        response: { 202: JobBody, ...errors, 413: ErrorBody, 415: ErrorBody, 429: ErrorBody },
        detail: describe(
          'Export the repository as a graph bundle: queues an export_graph job (202) that builds the bundle, pushes it to the registry and keeps it as the latest export',
        ),
      })
      .get('/export-graph/download', ({ repository }) => downloadNewestExport(system, blobs, repository), {
        repository: 'graph:export',
        params: at.repositoryParams,
        response: { ...downloadErrors, 503: PendingExport },
        detail: describe(
          "Download the repository's newest succeeded export (streamed; X-Export-Job, X-Graph-SHA256 and X-Graph-Exported-At name it); while a newer export is queued or running, 503 with its job and Retry-After",
          { responses: downloadResponses },
        ),
      })
      .get(
        '/export-graph/:jobID/download',
        ({ repository, params }) => downloadExport(system, blobs, repository, params.jobID),
        {
          repository: 'graph:export',
          params: at.params({ jobID }),
          response: { ...downloadErrors, 503: PendingExport },
          detail: describe(
            'Download the export of this export_graph job (409 if it failed, 410 once newer exports replaced it; 503 with Retry-After while it is queued or running)',
            {
              responses: downloadResponses,
            },
          ),
        },
      )
  })
}
