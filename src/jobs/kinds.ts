// What a kind of job is: its parameters, how often it may be tried, and the work itself. Kinds
// live with the feature they belong to (embedding in vectors/, export and import in bundle/);
// the list of built-in kinds is in src/job-kinds.ts.
import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { Sql } from 'postgres'
import type { Logger } from '../log.ts'
import type { Pools } from '../db/pools.ts'
import type { BlobStore } from '../blobs/store.ts'
import type { Config } from '../config.ts'
import type { Job, JobProgress } from './queue.ts'

/**
 * What a running job may use. Built once per worker thread (src/job-thread.ts). A feature adds the
 * services of its own to it by module augmentation (vectors/embed-jobs.ts, registry/client.ts),
 * so that jobs/ names no feature.
 */
export interface JobServices {
  pools: Pools
  blobs: BlobStore
  /** This process's configuration; `baseUrl` is always set (the URL actually in use). */
  config: Config & { baseUrl: string }
  log: Logger
  /** Queues a follow-up job (same validation as the API's). */
  enqueue(request: EnqueueRequest): Promise<Job>
}

export interface EnqueueRequest {
  kind: string
  repositoryId?: string | null
  params?: Record<string, unknown>
  createdBy?: string | null
}

/** The job being run, as its kind sees it. */
export interface RunningJob<P = Record<string, unknown>> {
  id: string
  repositoryId: string | null
  params: P
  /** The user who queued the job; absent for jobs of the system. */
  createdBy?: string
  /** 1 on the first try. */
  attempt: number
  /** Aborted when the job is cancelled, its lease is lost or the instance shuts down: stop, and let the error propagate. */
  signal: AbortSignal
  /** Records progress; it reaches the database within a second (with the lease heartbeat). */
  progress(update: Partial<JobProgress>): void
  /** The repository's pool (the job must have a repository). */
  repository(): Promise<Sql>
}

export interface JobKind<S extends TSchema = TSchema> {
  kind: string
  /** Checked on enqueue, and again when a worker starts the job. */
  params: S
  /** Tries before the job is failed for good (failures of a PermanentJobError are never retried). */
  maxAttempts: number
  /** Whether the job belongs to a repository (most do). */
  repositoryScoped: boolean
  /**
   * Whether the job writes its repository's graph (an import): the worker then has what a change
   * entails done (its counts copied) before it records how the job ended.
   */
  changesGraph?: boolean
  run(job: RunningJob<Static<S>>, services: JobServices): Promise<unknown>
}

/** What is wrong with `params` for this kind, or undefined when they fit its schema. */
export function paramsProblem(kind: JobKind, params: unknown): string | undefined {
  const problem = Value.Errors(kind.params, params).First()
  return problem && `invalid job parameters: ${problem.path.slice(1) || 'params'}: ${problem.message}`
}

/** A failure that another attempt cannot fix (bad input): the job fails at once. */
export class PermanentJobError extends Error {}

export function defineJobKind<S extends TSchema>(kind: JobKind<S>): JobKind {
  return kind as unknown as JobKind
}
