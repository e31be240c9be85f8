// What the MCP tools call: the services the REST routes call, passed in by the composition root.
import type { BlobStore } from '../blobs/store.ts'
import type { Pools } from '../db/pools.ts'
import type { Jobs } from '../jobs/jobs.ts'
import type { Logger } from '../log.ts'
import type { Quotas } from '../quotas.ts'
import type { Rbac } from '../rbac/rbac.ts'
import type { RegistryClient } from '../registry/client.ts'
import type { Repositories } from '../repositories/repositories.ts'
import type { Embedder } from '../vectors/embedder.ts'
import type { GraphWrites } from '../graph/write/service.ts'
import type { VectorStore } from '../vectors/store.ts'

export interface ToolServices {
  pools: Pools
  rbac: Rbac
  repositories: Repositories
  jobs: Jobs
  quotas: Pick<Quotas, 'checkQueue' | 'checkRegistry'>
  vectors: VectorStore
  embedder: Embedder
  /** The registry imports pull from (REGISTRY_URL, else this server). */
  registry: RegistryClient
  /** The graph's writes, each with what it sets off, as the write routes call them (the same instance). */
  writes: GraphWrites
  /** Where a document given to add_source waits for its job, as an upload does. */
  blobs: BlobStore
  /** The largest such document (MEDIA_UPLOAD_MAX_BYTES). */
  maxUploadBytes: number
  log: Logger
}
