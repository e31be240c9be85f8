// Queueing the processing of sources on demand: the REST routes (process-routes.ts), and any
// other surface, queue it here. What cannot be processed is refused before anything is queued.
import type { Sql } from 'postgres'
import type { Principal } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import type { Jobs } from '../jobs/jobs.ts'
import type { Job } from '../jobs/schemas.ts'
import type { Quotas } from '../quotas.ts'
import type { Repository } from '../repositories/repositories.ts'
import { PROCESS_SOURCE } from './process-job.ts'
import { processableSources, sourceReadiness } from './store.ts'

const REFUSAL_STATUS = { not_found: 404, not_parsed: 409, failed: 409 } as const

/**
 * Queues a process_source job of one source (`sourceId`) or of every processable source of the
 * repository (none given), for `principal`: 404 for a source that is not there, 409 for one not
 * parsed yet or failed, and for a repository with no parsed source.
 */
export async function startProcessing(
  services: { jobs: Jobs; quotas: Pick<Quotas, 'checkQueue'> },
  sql: Sql,
  principal: Principal,
  repository: Repository,
  sourceId?: string,
): Promise<Job> {
  if (sourceId) {
    const readiness = await sourceReadiness(sql, sourceId)
    if (!readiness.ready) throw new HttpError(REFUSAL_STATUS[readiness.reason], readiness.message)
  } else if ((await processableSources(sql)).length === 0)
    throw new HttpError(409, 'nothing to process: no source of the repository is parsed')
  await services.quotas.checkQueue(repository.id)
  return services.jobs.enqueue({
    kind: PROCESS_SOURCE,
    repositoryId: repository.id,
    params: sourceId ? { source_id: sourceId } : {},
    createdBy: principal.userId,
  })
}
