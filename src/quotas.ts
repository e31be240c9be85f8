// Per-user and per-repository quotas (QUOTA_*; 0 is unlimited): what one self-registered user
// can make the service store or queue. Each is checked before the action, against the rows as
// they stand: concurrent requests of one user can pass a quota by as many as arrive together.
// Stock (repositories, registry graphs and bytes) past its quota is 403; a full queue, which
// drains by itself, is 429 with Retry-After.
import type { QuotaLimits } from './config.ts'
import type { Db } from './db/sql.ts'
import { HttpError } from './http/errors.ts'

/** How long a client should wait for a repository's queue to drain. */
const QUEUE_RETRY_AFTER_SECONDS = 30

export class Quotas {
  constructor(
    private readonly system: Db,
    private readonly limits: QuotaLimits,
    /** Sysadmins run the instance: their own stock is not limited. */
    private readonly isSysadmin: (userId: string) => boolean,
  ) {}

  /** Before a user creates a repository. */
  async checkRepositories(userId: string): Promise<void> {
    const most = this.limits.repositories
    if (most === 0 || this.isSysadmin(userId)) return
    const [row] = await this.system<
      { owned: number }[]
    >`SELECT count(*)::int AS owned FROM repositories WHERE owner_id = ${userId}`
    if (row!.owned >= most)
      throw new HttpError(
        403,
        `quota reached: you own ${row!.owned} repositories, at most ${most} (QUOTA_REPOSITORIES); delete one first`,
      )
  }

  /** Before a user adds to the registry (a push, an export, which pushes on their behalf): theirs are the graphs they own. */
  async checkRegistry(userId: string): Promise<void> {
    const { registryGraphs, registryBytes } = this.limits
    if ((registryGraphs === 0 && registryBytes === 0) || this.isSysadmin(userId)) return
    const [row] = await this.system<{ graphs: number; bytes: number }[]>`
      SELECT count(*)::int AS graphs, coalesce(sum(bytes), 0)::float8 AS bytes FROM graphs WHERE owner_id = ${userId}`
    const { graphs, bytes } = row!
    if (registryGraphs > 0 && graphs >= registryGraphs) {
      throw new HttpError(
        403,
        `quota reached: you own ${graphs} registry graphs, at most ${registryGraphs} (QUOTA_REGISTRY_GRAPHS); delete one first`,
      )
    }
    if (registryBytes > 0 && bytes >= registryBytes) {
      throw new HttpError(
        403,
        `quota reached: your registry graphs take ${bytes} bytes, at most ${registryBytes} (QUOTA_REGISTRY_BYTES); delete one first`,
      )
    }
  }

  /** Before a user queues a job in a repository. */
  async checkQueue(repositoryId: string): Promise<void> {
    const most = this.limits.queuedJobs
    if (most === 0) return
    const [row] = await this.system<
      { queued: number }[]
    >`SELECT count(*)::int AS queued FROM jobs WHERE repository_id = ${repositoryId} AND status = 'queued'`
    if (row!.queued >= most) {
      throw new HttpError(
        429,
        `quota reached: this repository has ${row!.queued} jobs queued, at most ${most} (QUOTA_QUEUED_JOBS); retry once some have run`,
        {
          'retry-after': String(QUEUE_RETRY_AFTER_SECONDS),
        },
      )
    }
  }
}
