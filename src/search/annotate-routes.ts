// POST /{repoID}/reports/{id}/annotate (and /api/v1/… with X-Repository-ID): queues the
// annotate_report job of the report (annotate-job.ts) and answers 202 with it.
import { t } from 'elysia'
import { ErrorBody } from '../http/schemas.ts'
import type { Jobs } from '../jobs/jobs.ts'
import { accepted, JobBody } from '../jobs/routes.ts'
import type { Quotas } from '../quotas.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { startAnnotation } from './annotate-start.ts'

export interface AnnotateRoutesOptions {
  scope: ReturnType<typeof repositoryScope>
  jobs: Jobs
  quotas: Pick<Quotas, 'checkQueue'>
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody }

export function annotateRoutes({ scope, jobs, quotas }: AnnotateRoutesOptions) {
  return repositoryScopedRoutes('kgs/annotate', scope, (app, at) =>
    app.post(
      '/reports/:reportID/annotate',
      async ({ principal, repository, db, params, set }) =>
        accepted(set, await startAnnotation({ jobs, quotas }, await db(), principal, repository, params.reportID)),
      {
        repository: 'report:write',
        params: at.params({ reportID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) }),
        response: { 202: JobBody, ...errors },
        detail: at.detail({
          tags: ['graph'],
          summary:
            "Link each sentence of the report to its most similar facts: queues an annotate_report job (202), which replaces the report's automatic annotations and sets its status to annotated",
        }),
      },
    ),
  )
}
