// Starting an import from the registry: the import route's JSON form and the MCP import tool both
// queue it here.
import type { Principal } from '../../http/auth.ts'
import { HttpError } from '../../http/errors.ts'
import type { Jobs } from '../../jobs/jobs.ts'
import type { Job } from '../../jobs/schemas.ts'
import type { Quotas } from '../../quotas.ts'
import type { RegistryClient } from '../../registry/client.ts'
import type { Repository } from '../../repositories/repositories.ts'
import { describeGraph } from './import-job.ts'
import type { RegistryImportBody } from './import-body.ts'

const notInRegistry = (wanted: RegistryImportBody) =>
  new HttpError(404, `${describeGraph(wanted)} is not in the registry`)

/**
 * Queues an import_graph job of the registry's graph `wanted` into `repository`, once the registry
 * holds it: checked now, so that a wrong name fails here rather than in a job. `mayPull`: whether
 * the caller holds registry:pull; the job pulls with the server's own token, so without it an
 * import would read what a download refuses. Refused like an unknown graph, so it tells nothing,
 * and before the registry is asked.
 */
export async function startRegistryImport(
  services: { jobs: Jobs; quotas: Pick<Quotas, 'checkQueue'>; registry: RegistryClient },
  principal: Principal,
  repository: Repository,
  wanted: RegistryImportBody,
  mayPull: boolean | undefined,
): Promise<Job> {
  await services.quotas.checkQueue(repository.id)
  if (!mayPull) throw notInRegistry(wanted)
  let graph
  try {
    graph =
      'graph_id' in wanted
        ? await services.registry.get(wanted.graph_id)
        : await services.registry.find(wanted.name, wanted.sha256)
  } catch (error) {
    throw new HttpError(502, `the registry could not be asked: ${(error as Error).message}`)
  }
  if (!graph) throw notInRegistry(wanted)
  return services.jobs.enqueue({
    kind: 'import_graph',
    repositoryId: repository.id,
    params: wanted,
    createdBy: principal.userId,
  })
}
