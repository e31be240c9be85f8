// Enqueueing and cancelling, shared by the API (main thread) and by running jobs (worker
// threads) that queue follow-ups. Workers are woken through the event bus: LISTEN/NOTIFY reaches
// every instance on PostgreSQL; embedded, the main thread relays to its worker threads.
import { runtime } from '../runtime/index.ts'
import type { EventBus } from '../db/events.ts'
import type { Db } from '../db/sql.ts'
import { HttpError } from '../http/errors.ts'
import { paramsProblem, type EnqueueRequest, type JobKind } from './kinds.ts'
import type { Repository } from '../repositories/repositories.ts'
import {
  cancelRepositoryJobs,
  enqueueCoalesced,
  enqueueJob,
  explainCancelled,
  getJob,
  requestCancel,
  type Job,
} from './queue.ts'

/** The job, if it exists and belongs to the scope it was asked in (none: every job): the job routes and the MCP tools alike. */
export async function jobInScope(system: Db, id: string, repository: Repository | undefined): Promise<Job> {
  const job = await getJob(system, id.toLowerCase())
  if (!job || (repository && job.repository_id !== repository.id)) throw new HttpError(404, 'job not found')
  return job
}

/** A job was queued (payload: its kind). */
export const JOBS_QUEUED = 'kgs_jobs_queued'
/** A running job was asked to stop (payload: its id). */
export const JOB_CANCEL_REQUESTED = 'kgs_job_cancel'

class UnknownJobKindError extends Error {}

/** How often a repository's deletion looks whether its jobs have stopped. */
const STOP_POLL_MS = 50

export class Jobs {
  private readonly kinds: ReadonlyMap<string, JobKind>

  constructor(
    private readonly system: Db,
    private readonly bus: Pick<EventBus, 'publish'>,
    kinds: readonly JobKind[],
  ) {
    this.kinds = new Map(kinds.map((k) => [k.kind, k]))
  }

  kind(name: string): JobKind | undefined {
    return this.kinds.get(name)
  }

  /** Queues a job; a coalesced request (EnqueueRequest.coalesce) that finds its twin queued adds nothing and answers undefined. */
  async enqueue(request: EnqueueRequest & { coalesce: { afterMs: number } }): Promise<Job | undefined>
  async enqueue(request: EnqueueRequest): Promise<Job>
  async enqueue(request: EnqueueRequest): Promise<Job | undefined> {
    const kind = this.kinds.get(request.kind)
    if (!kind) throw new UnknownJobKindError(`unknown job kind ${JSON.stringify(request.kind)}`)
    if (kind.repositoryScoped !== Boolean(request.repositoryId))
      throw new Error(`job kind ${kind.kind} ${kind.repositoryScoped ? 'needs' : 'takes no'} repository`)
    const params = request.params ?? {}
    const problem = paramsProblem(kind, params)
    if (problem) throw new HttpError(400, problem)
    const job = request.coalesce
      ? await enqueueCoalesced(this.system, {
          ...request,
          params,
          maxAttempts: kind.maxAttempts,
          afterMs: request.coalesce.afterMs,
        })
      : await enqueueJob(this.system, { ...request, params, maxAttempts: kind.maxAttempts })
    // A delayed job is found by the workers' polling; waking them now would find it not ready.
    if (job && !request.coalesce?.afterMs) await this.bus.publish(this.system, JOBS_QUEUED, kind.kind)
    return job
  }

  /**
   * Cancels every job of a repository about to lose its database, and waits until none runs: a
   * job left running would write to a dropped database, or retry against it. Each ends
   * `cancelled` with `reason`. 503 when they do not stop within `timeoutMs` (the repository stays).
   */
  async stopRepository(repositoryId: string, reason: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs
    const asked = new Set<string>()
    // Again until none runs: an attempt that failed meanwhile may have queued its job again.
    for (;;) {
      const running = await cancelRepositoryJobs(this.system, repositoryId, reason)
      for (const id of running.filter((id) => !asked.has(id))) {
        asked.add(id)
        await this.bus.publish(this.system, JOB_CANCEL_REQUESTED, id)
      }
      if (running.length === 0) break
      if (Date.now() > deadline)
        throw new HttpError(503, "the repository's jobs have not stopped yet; try again", { 'retry-after': '5' })
      await runtime.sleep(STOP_POLL_MS)
    }
    await explainCancelled(this.system, [...asked], reason)
  }

  /** undefined for an unknown job. */
  async cancel(id: string): Promise<Job | undefined> {
    const job = await requestCancel(this.system, id)
    if (job?.status === 'running') await this.bus.publish(this.system, JOB_CANCEL_REQUESTED, id)
    return job
  }
}
