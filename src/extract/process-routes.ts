// Processing on demand (docs/extract.md): POST /{repoID}/sources/{id}/process queues a
// process_source job of the source, POST /{repoID}/process one of every parsed source; both
// answer 202 with the job, and are served at /api/v1/… with X-Repository-ID too.
import { t } from 'elysia'
import type { Sql } from 'postgres'
import type { Principal } from '../http/auth.ts'
import { ErrorBody } from '../http/schemas.ts'
import type { Jobs } from '../jobs/jobs.ts'
import { accepted, JobBody, type AcceptedSet } from '../jobs/routes.ts'
import type { Quotas } from '../quotas.ts'
import type { Repository } from '../repositories/repositories.ts'
import type { repositoryScope } from '../repositories/scope.ts'
import { repositoryScopedRoutes } from '../repositories/scoped-routes.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { startProcessing } from './process-start.ts'

export interface ProcessRoutesOptions {
  scope: ReturnType<typeof repositoryScope>
  jobs: Jobs
  quotas: Pick<Quotas, 'checkQueue'>
}

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody }

/** What a handler of these routes is given (the repository rule's principal and repository). */
interface ProcessRequest {
  principal: Principal
  repository: Repository
  db: () => Promise<Sql>
  set: AcceptedSet
}

export function processRoutes({ scope, jobs, quotas }: ProcessRoutesOptions) {
  const start = async ({ principal, repository, db, set }: ProcessRequest, sourceId?: string) =>
    accepted(set, await startProcessing({ jobs, quotas }, await db(), principal, repository, sourceId))
  return repositoryScopedRoutes('kgs/process', scope, (app, at) => {
    const describe = (summary: string) => at.detail({ tags: ['graph'], summary })
    return app
      .post('/sources/:sourceID/process', (request) => start(request, request.params.sourceID), {
        repository: 'fact:write',
        params: at.params({ sourceID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) }),
        response: { 202: JobBody, ...errors },
        detail: describe(
          "Draw the source's facts and concepts again: queues a process_source job (202); processing an unchanged source again adds nothing (409 for a source not parsed yet or failed)",
        ),
      })
      .post('/process', (request) => start(request), {
        repository: 'fact:write',
        params: at.repositoryParams,
        response: { 202: JobBody, ...errors },
        detail: describe(
          'Draw the facts and concepts of every parsed source of the repository: queues one process_source job (202; 409 when no source is parsed)',
        ),
      })
  })
}
