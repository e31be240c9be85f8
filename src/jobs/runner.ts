// The main thread's side of the job system: starts WORKERS worker threads, relays wake-ups and
// cancellations from the event bus to them, replaces a thread that dies (releasing its job at
// once instead of waiting for the lease), and periodically re-queues jobs whose lease expired
// anywhere in the fleet.
//
// The threads start when there is first work for them (a job queued, here or elsewhere in the
// fleet, or found waiting by the reaper), not with the process: each loads the whole program
// and opens connections of its own, which an instance that runs no job never needs. Once
// started they stay.
import { runtime } from '../runtime/index.ts'
import type { Config } from '../config.ts'
import type { EventBus } from '../db/events.ts'
import type { Pools } from '../db/pools.ts'
import { describeError, type Logger } from '../log.ts'
import { JOB_WORKER_URL } from '../workers.ts'
import { JOB_CANCEL_REQUESTED, JOBS_QUEUED } from './jobs.ts'
import type { FromWorker, ToWorker } from './protocol.ts'
import {
  anyJobQueued,
  handBackOnShutdown,
  releaseWorkerJobs,
  renewWorkerLeases,
  requeueExpiredLeases,
} from './queue.ts'
import { DEFAULT_JOB_TIMING, SHUTDOWN_RELEASE, type JobTiming } from './worker.ts'
import { hostname } from 'node:os'

/** How long stop() waits for the threads to wind down (a job stops at its next check of its signal) before terminating them. */
const STOP_GRACE_MS = 10_000
const RESTART_DELAY_MS = 1_000

export interface JobRunnerOptions {
  config: Config
  pools: Pools
  bus: EventBus
  log: Logger
  timing?: Partial<JobTiming>
  /** Modules whose default export is a list of extra job kinds (tests). */
  extraKindModules?: string[]
}

interface WorkerThread {
  id: string
  thread: Worker
  stopped: Promise<void>
}

export class JobRunner {
  private readonly threads = new Set<WorkerThread>()
  private readonly timing: JobTiming
  private stopping = false
  private reaper: Timer | undefined
  private leases: Timer | undefined
  private generation = 0
  /** The threads' start, once there was work for them. */
  private started: Promise<void> | undefined

  private constructor(private readonly options: JobRunnerOptions) {
    this.timing = { ...DEFAULT_JOB_TIMING, leaseMs: options.config.jobLeaseMs, ...options.timing }
  }

  static async start(options: JobRunnerOptions): Promise<JobRunner> {
    const runner = new JobRunner(options)
    await options.bus.subscribe(JOBS_QUEUED, () => runner.workArrived())
    await options.bus.subscribe(JOB_CANCEL_REQUESTED, (jobId) => runner.broadcast({ type: 'cancel', jobId }))
    runner.reaper = setInterval(() => void runner.reap(), Math.max(1000, runner.timing.leaseMs / 3))
    void runner.reap()
    return runner
  }

  /** Wakes the threads, starting them first if this is their first work. */
  private workArrived(): void {
    if (this.started) this.broadcast({ type: 'wake' })
    else void this.startThreads()
  }

  /** Starts the threads (which look for work as they start), once; a failed start is retried at the next work. */
  private startThreads(): Promise<void> {
    if (this.options.config.workers === 0 || this.stopping) return Promise.resolve()
    this.started ??= (async () => {
      await Promise.all(Array.from({ length: this.options.config.workers - this.threads.size }, () => this.spawn()))
      // The leases of this process's threads are renewed from here, not by the threads: a job busy
      // on its CPU (a huge row, a long parse) keeps its lease while its own event loop is blocked.
      // A thread that dies has its job released by onExit; a process that dies stops renewing.
      this.leases ??= setInterval(() => void this.renewLeases(), this.timing.heartbeatMs)
      this.options.log.info('job worker threads started', { workers: this.threads.size })
    })().catch((error) => {
      this.options.log.error('job worker threads could not start; trying again at the next job', describeError(error))
      this.started = undefined
    })
    return this.started
  }

  /** Worker ids of the live threads (tests, diagnostics). */
  get workerIds(): string[] {
    return [...this.threads].map((t) => t.id)
  }

  private broadcast(message: ToWorker): void {
    for (const { thread } of this.threads) thread.postMessage(message)
  }

  private async reap(): Promise<void> {
    try {
      const requeued = await requeueExpiredLeases(this.options.pools.system, this.timing.backoffBaseMs)
      if (requeued > 0) {
        this.options.log.warn('jobs with expired leases re-queued', { jobs: requeued })
        this.workArrived()
      } else if (!this.started && this.options.config.workers > 0 && (await anyJobQueued(this.options.pools.system))) {
        // Queued before this process started, or while a wake-up was missed.
        void this.startThreads()
      }
    } catch (error) {
      this.options.log.warn('job reaper failed', describeError(error))
    }
  }

  private async renewLeases(): Promise<void> {
    try {
      await renewWorkerLeases(this.options.pools.system, this.workerIds, this.timing.leaseMs)
    } catch (error) {
      // A missed renewal is not fatal: the lease outlasts many of them.
      this.options.log.warn('job lease renewal failed', describeError(error))
    }
  }

  private spawn(): Promise<void> {
    const { config, pools, bus, log } = this.options
    const id = `${hostname()}:${process.pid}:${++this.generation}:${crypto.randomUUID().slice(0, 8)}`
    const thread = runtime.startWorker(JOB_WORKER_URL, { onExit: () => void this.onExit(entry) })
    let resolveStopped!: () => void
    const entry: WorkerThread = { id, thread, stopped: new Promise((resolve) => (resolveStopped = resolve)) }
    this.threads.add(entry)
    const started = new Promise<void>((resolve, reject) => {
      thread.onmessage = async (event: MessageEvent<FromWorker>) => {
        const message = event.data
        switch (message.type) {
          case 'started':
            return resolve()
          case 'failed':
            // It holds no job: ended without a replacement (whoever started it hears of the failure).
            this.threads.delete(entry)
            thread.terminate()
            return reject(new Error(`job worker could not start: ${message.error}`))
          case 'stopped':
            return resolveStopped()
          case 'publish':
            return void bus
              .publish(pools.system, message.channel, message.payload)
              .catch((error) => log.warn('job event not published', describeError(error)))
          case 'socket':
            try {
              thread.postMessage({
                type: 'socket',
                requestId: message.requestId,
                path: await pools.embeddedSocket(message.name),
              } satisfies ToWorker)
            } catch (error) {
              thread.postMessage({
                type: 'socket',
                requestId: message.requestId,
                error: (error as Error).message,
              } satisfies ToWorker)
            }
            return
        }
      }
    })
    thread.postMessage({
      type: 'start',
      workerId: id,
      config,
      timing: this.timing,
      extraKindModules: this.options.extraKindModules ?? [],
    } satisfies ToWorker)
    return started
  }

  /** A thread ended: hand its job back to the queue now, and replace it unless we are stopping. */
  private async onExit(entry: WorkerThread): Promise<void> {
    if (!this.threads.delete(entry) || this.stopping) return
    try {
      const released = await releaseWorkerJobs(
        this.options.pools.system,
        entry.id,
        'the worker thread running it exited',
        this.timing.backoffBaseMs,
      )
      if (released > 0)
        this.options.log.warn('job worker thread exited while running a job; the job was re-queued', {
          worker: entry.id,
        })
    } catch (error) {
      this.options.log.warn('could not release the jobs of an exited worker thread', {
        worker: entry.id,
        ...describeError(error),
      })
    }
    if (this.stopping) return
    this.options.log.error('job worker thread exited unexpectedly; starting another', { worker: entry.id })
    setTimeout(() => {
      if (!this.stopping)
        this.spawn().catch((error) => this.options.log.error('job worker restart failed', describeError(error)))
    }, RESTART_DELAY_MS)
  }

  /**
   * Tells each thread to stop (its job is interrupted and handed back to the queue), waits for
   * them up to a grace period, then ends them, handing back the job of one that did not stop.
   */
  async stop(): Promise<void> {
    this.stopping = true
    clearInterval(this.reaper)
    await this.started
    clearInterval(this.leases)
    const threads = [...this.threads]
    for (const { thread } of threads) thread.postMessage({ type: 'stop' } satisfies ToWorker)
    let timer: Timer | undefined
    await Promise.race([
      Promise.all(threads.map((t) => t.stopped)),
      new Promise((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS))),
    ])
    clearTimeout(timer)
    await Promise.all(
      threads.map(async (t) => {
        t.thread.terminate()
        await handBackOnShutdown(this.options.pools.system, t.id, SHUTDOWN_RELEASE).catch(() => 0)
      }),
    )
  }
}
