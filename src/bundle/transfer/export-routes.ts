// Export routes (docs/spec/bundle.md §4): POST /{repoID}/export-graph queues an export_graph job (202 with
// the job); GET /{repoID}/export-graph/download streams the repository's latest export. Both
// are also served at /api/v1/... with the repository in X-Repository-ID (docs/spec/decisions.md §2).
import type { Quotas } from '../../quotas.ts'
import type { BlobStore } from '../../blobs/store.ts'
import type { Principal } from '../../http/auth.ts'
import { HttpError } from '../../http/errors.ts'
import { ErrorBody } from '../../http/schemas.ts'
import type { Jobs } from '../../jobs/jobs.ts'
import { JobBody, accepted, type AcceptedSet } from '../../jobs/routes.ts'
import type { Repository } from '../../repositories/repositories.ts'
import type { repositoryScope } from '../../repositories/scope.ts'
import { repositoryScopedRoutes } from '../../repositories/scoped-routes.ts'
import { latestExportKey } from './export-job.ts'
import { ExportParams, normalizeExportedAt } from './export-params.ts'

type Scope = ReturnType<typeof repositoryScope>
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
const gzipBody = { description: 'the gzipped bundle (.json.gz)', content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } } }

/** Every route at /{repoID}/… and, with the repository in X-Repository-ID, at /api/v1/…. */
export function exportRoutes(scope: Scope, jobs: Jobs, blobs: BlobStore, quotas: Pick<Quotas, 'checkQueue' | 'checkRegistry'>) {
  const start = async ({ principal, repository, body, set }: { principal: Principal; repository: Repository; body: ExportParams; set: AcceptedSet }) => {
    // The request's time unless given: a retried job then writes the very same bundle.
    const exportedAt = body.exported_at ?? new Date().toISOString()
    if (!normalizeExportedAt(exportedAt)) throw new HttpError(400, `invalid body: exported_at: expected an RFC 3339 date-time such as 2026-01-02T03:04:05Z (got ${JSON.stringify(exportedAt)})`)
    await quotas.checkQueue(repository.id)
    await quotas.checkRegistry(principal.userId)
    return accepted(set, await jobs.enqueue({ kind: 'export_graph', repositoryId: repository.id, params: { ...body, exported_at: exportedAt }, createdBy: principal.userId }))
  }

  const download = async ({ repository }: { repository: Repository }) => {
    const body = await blobs.responseBody(latestExportKey(repository.id))
    if (!body) throw new HttpError(404, `no export yet: POST /${repository.slug}/export-graph first`)
    return new Response(body, {
      headers: { 'content-type': 'application/gzip', 'content-disposition': `attachment; filename="${repository.slug}.json.gz"` },
    })
  }

  return repositoryScopedRoutes('kgs/export', scope, (app, at) => {
    const describe = (summary: string, extra: Record<string, unknown> = {}) => at.detail({ tags: ['repositories'], summary, ...extra })
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
        detail: describe('Export the repository as a graph bundle: queues an export_graph job (202) that builds the bundle, pushes it to the registry and keeps it as the latest export'),
      })
      .get('/export-graph/download', download, {
        repository: 'graph:export',
        params: at.repositoryParams,
        response: errors,
        // Documented by hand: the 200 is not JSON.
        detail: describe("Download the repository's latest export (streamed)", {
          responses: { 200: gzipBody, ...Object.fromEntries(Object.keys(errors).map((status) => [status, { description: 'error', content: { 'application/json': { schema: ErrorBody } } }])) },
        }),
      })
  })
}
