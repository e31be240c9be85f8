// Queueing a report's annotation: the REST route (annotate-routes.ts) and the MCP tool both queue
// it here. A report that is not there is refused before anything is queued.
import type { Sql } from 'postgres'
import type { Principal } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import type { Jobs } from '../jobs/jobs.ts'
import type { Job } from '../jobs/schemas.ts'
import type { Quotas } from '../quotas.ts'
import type { Repository } from '../repositories/repositories.ts'
import { ANNOTATE_REPORT } from './annotate-job.ts'

/** Queues an annotate_report job of the report for `principal`: 404 for a report that is not there. */
export async function startAnnotation(
  services: { jobs: Jobs; quotas: Pick<Quotas, 'checkQueue'> },
  sql: Sql,
  principal: Principal,
  repository: Repository,
  reportId: string,
): Promise<Job> {
  const [report] = await sql`SELECT 1 FROM reports WHERE id = ${reportId}`
  if (!report) throw new HttpError(404, 'report not found')
  await services.quotas.checkQueue(repository.id)
  return services.jobs.enqueue({
    kind: ANNOTATE_REPORT,
    repositoryId: repository.id,
    params: { report_id: reportId },
    createdBy: principal.userId,
  })
}
