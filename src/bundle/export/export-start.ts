// Starting an export: the export route and the MCP export tool both queue it here.
import type { Principal } from '../../http/auth.ts'
import { HttpError } from '../../http/errors.ts'
import type { Jobs } from '../../jobs/jobs.ts'
import type { Job } from '../../jobs/schemas.ts'
import type { Quotas } from '../../quotas.ts'
import type { Repository } from '../../repositories/repositories.ts'
import { normalizeExportedAt, type ExportParams } from './export-params.ts'

/** Queues an export_graph job of `repository` for `principal`, within the queue and registry quotas. */
export async function startExport(
  services: { jobs: Jobs; quotas: Pick<Quotas, 'checkQueue' | 'checkRegistry'> },
  principal: Principal,
  repository: Repository,
  params: ExportParams,
): Promise<Job> {
  // The request's time unless given: a retried job then writes the very same bundle.
  const exportedAt = params.exported_at ?? new Date().toISOString()
  if (!normalizeExportedAt(exportedAt))
    throw new HttpError(
      400,
      `invalid body: exported_at: expected an RFC 3339 date-time such as 2026-01-02T03:04:05Z (got ${JSON.stringify(exportedAt)})`,
    )
  await services.quotas.checkQueue(repository.id)
  await services.quotas.checkRegistry(principal.userId)
  return services.jobs.enqueue({
    kind: 'export_graph',
    repositoryId: repository.id,
    params: { ...params, exported_at: exportedAt },
    createdBy: principal.userId,
  })
}
