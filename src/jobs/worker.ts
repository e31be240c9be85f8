// One job worker: claims a job, runs it while renewing its lease, records the outcome, repeats.
// It runs on a worker thread of its own (src/job-thread.ts), so a job's CPU work (gzip, JSON,
// embedding) never stalls the API's event loop; tests can also run it in-process.
import type { Db } from '../db/sql.ts'
import { describeError, type Logger } from '../log.ts'
import { PermanentJobError, paramsProblem, type JobKind, type JobServices, type RunningJob } from './kinds.ts'
import {
  claimJob,
  failAttempt,
  finishJob,
  handBackOnShutdown,
  renewLease,
  reportProgress,
  type ClaimedJob,
  type JobProgress,
} from './queue.ts'

export interface JobTiming {
  /** How long a claim holds without a heartbeat before another worker may take the job. */
  leaseMs: number
  /** Lease renewal and progress flush period (the spec asks for progress at least every second). */
  heartbeatMs: number
  /** Idle re-check period, for retries coming due and missed wake-ups. */
  pollMs: number
  /** First retry delay; doubles per attempt. */
  backoffBaseMs: number
}

export const DEFAULT_JOB_TIMING: JobTiming = {
  leaseMs: 30_000,
  heartbeatMs: 1_000,
  pollMs: 2_000,
  backoffBaseMs: 1_000,
}

/**
 * The reasons a running job's signal is aborted with: cancelled (the job ends), its lease lost
 * (another worker takes it over), or the instance shutting down (the job goes back to the queue).
 */
export const CANCELLED = 'cancelled'
export const LEASE_LOST = 'lease lost'
export const SHUTTING_DOWN = 'shutting down'
/** The error a job handed back on shutdown carries until it runs again. */
export const SHUTDOWN_RELEASE = 'the instance shut down while it ran'

export class JobWorker {
  private readonly kinds: ReadonlyMap<string, JobKind>
  private stopping = false
  private wakeUp: (() => void) | undefined
  private current: { id: string; controller: AbortController } | undefined
  private loop: Promise<void> | undefined

  constructor(
    readonly id: string,
    private readonly system: Db,
    private readonly services: JobServices,
    kinds: readonly JobKind[],
    private readonly timing: JobTiming,
    private readonly log: Logger,
    /** What a change of a repository's graph entails (a root passes it in: jobs/ names no feature). Never throws. */
    private readonly graphChanged: (repositoryId: string) => Promise<void>,
  ) {
    this.kinds = new Map(kinds.map((k) => [k.kind, k]))
  }

  start(): void {
    this.loop ??= this.run()
  }

  /** New work may be waiting. */
  wake(): void {
    this.wakeUp?.()
  }

  /** Stops the job if this worker is running it. */
  cancel(jobId: string): void {
    if (this.current?.id === jobId) this.current.controller.abort(CANCELLED)
  }

  /**
   * Interrupts the job in hand (it stops at its next check of its signal and goes back to the
   * queue, ready at once for another instance), then stops claiming. Not waiting for it to
   * finish: an import can run for minutes, longer than any orchestrator waits for a stop.
   */
  async stop(): Promise<void> {
    this.stopping = true
    this.current?.controller.abort(SHUTTING_DOWN)
    this.wake()
    await this.loop
  }

  private async run(): Promise<void> {
    const kinds = [...this.kinds.keys()]
    while (!this.stopping) {
      let claimed: ClaimedJob | undefined
      try {
        claimed = await claimJob(this.system, this.id, this.timing.leaseMs, kinds)
      } catch (error) {
        this.log.warn('job claim failed', { worker: this.id, ...describeError(error) })
      }
      if (claimed) await this.execute(claimed)
      else await this.idle()
    }
  }

  private idle(): Promise<void> {
    if (this.stopping) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.timing.pollMs)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.wakeUp = () => {
        this.wakeUp = undefined
        done()
      }
    })
  }

  private async execute(claimed: ClaimedJob): Promise<void> {
    const kind = this.kinds.get(claimed.kind)!
    const started = performance.now()
    const about = { job: claimed.id, kind: claimed.kind, repository: claimed.repositoryId, attempt: claimed.attempts }
    this.log.info('job started', about)
    const controller = new AbortController()
    this.current = { id: claimed.id, controller }
    let pending: Partial<JobProgress> | undefined
    let beat: Promise<void> | undefined
    const heartbeat = setInterval(() => {
      beat ??= (async () => {
        try {
          const update = pending
          pending = undefined
          const lease = update
            ? await reportProgress(this.system, claimed.id, this.id, this.timing.leaseMs, update)
            : await renewLease(this.system, claimed.id, this.id, this.timing.leaseMs)
          if (!lease.held) controller.abort(LEASE_LOST)
          else if (lease.cancelRequested) controller.abort(CANCELLED)
        } catch (error) {
          // A missed beat is not fatal: the lease outlasts many of them.
          this.log.warn('job heartbeat failed', { job: claimed.id, ...describeError(error) })
        } finally {
          beat = undefined
        }
      })()
    }, this.timing.heartbeatMs)
    // Before the outcome is written: postgres.js may pipeline a beat still in flight on another
    // connection, where it could land after the last report and put older progress back.
    const stopBeating = async () => {
      clearInterval(heartbeat)
      await beat
    }

    const job: RunningJob = {
      id: claimed.id,
      repositoryId: claimed.repositoryId,
      params: claimed.params,
      ...(claimed.createdBy ? { createdBy: claimed.createdBy } : {}),
      attempt: claimed.attempts,
      signal: controller.signal,
      progress: (update) => (pending = { ...pending, ...update }),
      repository: () => {
        if (!claimed.repositoryId) throw new PermanentJobError(`job kind ${claimed.kind} has no repository`)
        return this.services.pools.forRepository(claimed.repositoryId)
      },
    }
    try {
      // Claimed while stop() was under way: straight back to the queue.
      if (this.stopping) controller.abort(SHUTTING_DOWN)
      controller.signal.throwIfAborted()
      const problem = paramsProblem(kind, claimed.params)
      if (problem) throw new PermanentJobError(problem)
      const result = await kind.run(job, this.services)
      await this.afterRun(kind, claimed)
      // Work that got to its end before it saw the shutdown is kept.
      if (controller.signal.reason !== SHUTTING_DOWN) controller.signal.throwIfAborted()
      await stopBeating()
      if (pending) await reportProgress(this.system, claimed.id, this.id, this.timing.leaseMs, pending)
      await finishJob(this.system, claimed.id, this.id, { status: 'succeeded', result })
      this.log.info('job succeeded', { ...about, ms: elapsed(started), ...resultCounts(result) })
    } catch (error) {
      // A failed attempt may have committed part of its work (an import that failed after its commit).
      await this.afterRun(kind, claimed)
      await stopBeating()
      await this.recordFailure(claimed, controller.signal, error, { ...about, ms: elapsed(started) })
    } finally {
      clearInterval(heartbeat)
      this.current = undefined
    }
  }

  private async afterRun(kind: JobKind, claimed: ClaimedJob): Promise<void> {
    if (kind.changesGraph && claimed.repositoryId) await this.graphChanged(claimed.repositoryId)
  }

  /** Records how an attempt ended other than in success, with one log line: `about` names the job and its duration. */
  private async recordFailure(
    claimed: ClaimedJob,
    signal: AbortSignal,
    error: unknown,
    about: Record<string, unknown>,
  ): Promise<void> {
    try {
      if (signal.aborted && signal.reason === LEASE_LOST) {
        this.log.warn('job lease lost; the job is left to its new owner', { ...about, worker: this.id })
      } else if (signal.aborted && signal.reason === CANCELLED) {
        await finishJob(this.system, claimed.id, this.id, { status: 'cancelled', error: CANCELLED })
        this.log.info('job cancelled', about)
      } else if (signal.aborted && signal.reason === SHUTTING_DOWN) {
        await handBackOnShutdown(this.system, this.id, SHUTDOWN_RELEASE)
        this.log.info('job handed back to the queue (shutdown)', about)
      } else {
        const message = error instanceof Error ? error.message : String(error)
        const status = await failAttempt(
          this.system,
          claimed.id,
          this.id,
          message,
          !(error instanceof PermanentJobError),
          this.timing.backoffBaseMs,
        )
        // status: queued (to be retried) or failed (for good).
        this.log.warn(status === 'failed' ? 'job failed' : 'job attempt failed; retrying', {
          ...about,
          status,
          error: message,
        })
      }
    } catch (recordError) {
      // The lease will expire and the reaper will re-queue the job.
      this.log.error('could not record a job failure', { job: claimed.id, ...describeError(recordError) })
    }
  }
}

const elapsed = (started: number) => Math.round(performance.now() - started)

/** The counts of a job's result, for its log line: its numeric fields and those of its `counts`. */
function resultCounts(result: unknown): Record<string, number> {
  if (typeof result !== 'object' || result === null) return {}
  const numbers = (object: object) =>
    Object.entries(object).filter((entry): entry is [string, number] => typeof entry[1] === 'number')
  const counts = (result as { counts?: unknown }).counts
  return Object.fromEntries([
    ...numbers(result),
    ...(typeof counts === 'object' && counts !== null ? numbers(counts) : []),
  ])
}
