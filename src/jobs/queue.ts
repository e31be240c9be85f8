// The jobs table (docs/spec/bundle.md §6) as plain functions over the system database. Every state change
// a worker makes is conditional on it still holding the lease (lease_owner = its id), so a
// worker that lost its job (lease expired, job re-queued and claimed elsewhere) can never
// overwrite the new owner's state: a job is run to completion by exactly one claim.
import { isoTimestamp, storableText, type Db } from '../db/sql.ts'
import { afterCursor, pageKeyColumn, withPageKeys, type PageKey, pageOrder } from '../db/pages.ts'
import type { Job, JobProgress, JobStatus } from './schemas.ts'

export type { Job, JobProgress, JobStatus }
export const FINISHED: readonly JobStatus[] = ['succeeded', 'failed', 'cancelled']

/** A job as its worker sees it. */
export interface ClaimedJob {
  id: string
  kind: string
  repositoryId: string | null
  params: Record<string, unknown>
  createdBy: string | null
  attempts: number
  maxAttempts: number
}

/** What a worker learns when it touches its job: whether it still holds it, and whether to stop. */
export interface LeaseState {
  held: boolean
  cancelRequested: boolean
}

// progress.percent: done of total, every phase reporting both in one unit (0 to 100; null while
// the total is unknown; 100 once the job succeeded).
const jobColumns = (sql: Db) => sql`
  id, kind, repository_id, status,
  progress || jsonb_build_object('percent', CASE WHEN status = 'succeeded' THEN 100 WHEN (progress->>'total')::numeric > 0
    THEN least(100, round(100 * (progress->>'done')::numeric / (progress->>'total')::numeric, 1)) END) AS progress,
  result, error, attempts,
  ${isoTimestamp(sql, 'created_at')} AS created_at,
  ${isoTimestamp(sql, 'started_at')} AS started_at,
  ${isoTimestamp(sql, 'finished_at')} AS finished_at`

/** A job to queue: its kind, where it runs, its parameters, who asked. */
export interface NewJob {
  kind: string
  repositoryId?: string | null
  params?: Record<string, unknown>
  createdBy?: string | null
  maxAttempts: number
}

export async function enqueueJob(sql: Db, job: NewJob): Promise<Job> {
  const [row] = await sql<Job[]>`
    INSERT INTO jobs (id, kind, repository_id, params, created_by, max_attempts)
    VALUES (${crypto.randomUUID()}, ${job.kind}, ${job.repositoryId ?? null}, ${sql.json((job.params ?? {}) as never)}, ${job.createdBy ?? null}, ${job.maxAttempts})
    RETURNING ${jobColumns(sql)}`
  return row!
}

/**
 * Queues the job, not before `afterMs` from now, unless one of its kind, repository and params is
 * queued already: then nothing (undefined). Two racing callers may both queue one; the second
 * finds nothing left to do.
 */
export async function enqueueCoalesced(
  sql: Db,
  job: NewJob & {
    afterMs: number
  },
): Promise<Job | undefined> {
  const params = sql.json((job.params ?? {}) as never)
  const [row] = await sql<Job[]>`
    INSERT INTO jobs (id, kind, repository_id, params, created_by, max_attempts, run_after)
    SELECT ${crypto.randomUUID()}, ${job.kind}, ${job.repositoryId ?? null}, ${params}, ${job.createdBy ?? null}, ${job.maxAttempts}, now() + ${job.afterMs} * interval '1 millisecond'
    WHERE NOT EXISTS (
      SELECT 1 FROM jobs WHERE status = 'queued' AND kind = ${job.kind} AND repository_id IS NOT DISTINCT FROM ${job.repositoryId ?? null}::uuid AND params = ${params}::jsonb
    )
    RETURNING ${jobColumns(sql)}`
  return row
}

/**
 * Takes a ready job of the given kinds for `workerId`, or nothing: the oldest of the repository
 * served least recently (jobs of no repository first), so that one repository's long queue
 * cannot hold back another's. SKIP LOCKED lets any number of workers on any number of
 * instances claim concurrently without waiting on each other.
 */
export async function claimJob(
  sql: Db,
  workerId: string,
  leaseMs: number,
  kinds: readonly string[],
): Promise<ClaimedJob | undefined> {
  const [row] = await sql<
    {
      id: string
      kind: string
      repository_id: string | null
      params: Record<string, unknown>
      created_by: string | null
      attempts: number
      max_attempts: number
    }[]
  >`
    WITH picked AS (
      SELECT j.id FROM jobs j LEFT JOIN job_turns t ON t.repository_id = j.repository_id
      WHERE j.status = 'queued' AND j.run_after <= now() AND j.kind = ANY(${kinds as string[]}::text[])
      ORDER BY t.served_at NULLS FIRST, j.run_after, j.created_at
      LIMIT 1
      FOR UPDATE OF j SKIP LOCKED
    ), claimed AS (
      UPDATE jobs SET
        status = 'running',
        attempts = attempts + 1,
        lease_owner = ${workerId},
        claimed_by = ${workerId},
        lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
        started_at = coalesce(started_at, now()),
        progress = progress || '{"phase": "running"}'
      FROM picked WHERE jobs.id = picked.id
      RETURNING jobs.id, kind, repository_id, params, created_by, attempts, max_attempts
    ), turn AS (
      INSERT INTO job_turns (repository_id, served_at)
      SELECT repository_id, clock_timestamp() FROM claimed WHERE repository_id IS NOT NULL
      ON CONFLICT (repository_id) DO UPDATE SET served_at = excluded.served_at
    )
    SELECT * FROM claimed`
  return (
    row && {
      id: row.id,
      kind: row.kind,
      repositoryId: row.repository_id,
      params: row.params,
      createdBy: row.created_by,
      attempts: row.attempts,
      maxAttempts: row.max_attempts,
    }
  )
}

const leaseState = (rows: { cancel_requested: boolean }[]): LeaseState => ({
  held: rows.length === 1,
  cancelRequested: rows[0]?.cancel_requested ?? false,
})

/** Extends the lease; the answer says whether the job is still this worker's and whether to stop. */
export async function renewLease(sql: Db, id: string, workerId: string, leaseMs: number): Promise<LeaseState> {
  return leaseState(
    await sql<{ cancel_requested: boolean }[]>`
      UPDATE jobs SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
      WHERE id = ${id} AND lease_owner = ${workerId} AND status = 'running'
      RETURNING cancel_requested`,
  )
}

/** Records progress (and extends the lease, since the worker is evidently alive). */
export async function reportProgress(
  sql: Db,
  id: string,
  workerId: string,
  leaseMs: number,
  progress: Partial<JobProgress>,
): Promise<LeaseState> {
  return leaseState(
    await sql<{ cancel_requested: boolean }[]>`
      UPDATE jobs SET progress = progress || ${sql.json(progress as never)}, lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
      WHERE id = ${id} AND lease_owner = ${workerId} AND status = 'running'
      RETURNING cancel_requested`,
  )
}

/** Finishes a job the worker still holds; false if it no longer does (its result is discarded). */
export async function finishJob(
  sql: Db,
  id: string,
  workerId: string,
  outcome: { status: 'succeeded'; result: unknown } | { status: 'failed' | 'cancelled'; error: string },
): Promise<boolean> {
  const result = outcome.status === 'succeeded' ? sql.json((outcome.result ?? null) as never) : null
  const error = outcome.status === 'succeeded' ? null : storableText(outcome.error)
  const rows = await sql`
    UPDATE jobs SET status = ${outcome.status}, result = ${result}, error = ${error}, finished_at = now(),
      lease_owner = NULL, lease_expires_at = NULL,
      progress = progress || ${sql.json({ phase: outcome.status } as never)}
    WHERE id = ${id} AND lease_owner = ${workerId} AND status = 'running'
    RETURNING id`
  return rows.length === 1
}

/** Exponential backoff with ±20% jitter, so jobs that failed together do not retry in lockstep. */
export function retryDelayMs(attempts: number, baseMs = 1000, capMs = 300_000): number {
  const delay = Math.min(capMs, baseMs * 2 ** Math.max(0, attempts - 1))
  return Math.round(delay * (0.8 + Math.random() * 0.4))
}

/**
 * A failed attempt: queued again after a backoff while attempts remain, otherwise failed for
 * good. Returns the resulting status, or undefined if the worker no longer held the job.
 */
export async function failAttempt(
  sql: Db,
  id: string,
  workerId: string,
  error: string,
  retryable: boolean,
  backoffBaseMs = 1000,
): Promise<JobStatus | undefined> {
  const [row] = await sql<{ attempts: number; max_attempts: number }[]>`
    SELECT attempts, max_attempts FROM jobs WHERE id = ${id} AND lease_owner = ${workerId} AND status = 'running' FOR UPDATE`
  if (!row) return undefined
  if (!retryable || row.attempts >= row.max_attempts) {
    const message = retryable && row.max_attempts > 1 ? `${error} (gave up after ${row.attempts} attempts)` : error
    return (await finishJob(sql, id, workerId, { status: 'failed', error: message })) ? 'failed' : undefined
  }
  const rows = await sql`
    UPDATE jobs SET status = 'queued', error = ${storableText(error)}, lease_owner = NULL, lease_expires_at = NULL,
      run_after = now() + ${retryDelayMs(row.attempts, backoffBaseMs)} * interval '1 millisecond',
      progress = progress || '{"phase": "retrying"}'
    WHERE id = ${id} AND lease_owner = ${workerId} AND status = 'running'
    RETURNING id`
  return rows.length === 1 ? 'queued' : undefined
}

/** Whether any job waits to run (now or after a back-off), for any instance to claim. */
export async function anyJobQueued(sql: Db): Promise<boolean> {
  const [row] = await sql<{ queued: boolean }[]>`SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'queued') AS queued`
  return row!.queued
}

/**
 * Returns to the queue the running jobs whose lease has expired (their worker died or hung), or
 * fails those that have used up their attempts. Safe to run on every instance at once.
 */
export async function requeueExpiredLeases(sql: Db, backoffBaseMs = 1000): Promise<number> {
  return releaseJobs(
    sql,
    sql`status = 'running' AND lease_expires_at < now()`,
    'lease expired: the worker stopped responding',
    backoffBaseMs,
  )
}

/** Releases at once every job held by a worker known to be gone (its thread exited). */
export async function releaseWorkerJobs(
  sql: Db,
  workerId: string,
  reason: string,
  backoffBaseMs = 1000,
): Promise<number> {
  return releaseJobs(sql, sql`status = 'running' AND lease_owner = ${workerId}`, reason, backoffBaseMs)
}

/**
 * Hands back, ready at once, the jobs of a worker whose instance is shutting down. The attempt
 * is given back too: the job did not fail, it was stopped, and a few rolling restarts during a
 * long import must not use up its attempts.
 */
export async function handBackOnShutdown(sql: Db, workerId: string, reason: string): Promise<number> {
  return releaseJobs(sql, sql`status = 'running' AND lease_owner = ${workerId}`, reason, 0, 1)
}

async function releaseJobs(
  sql: Db,
  which: ReturnType<Db>,
  reason: string,
  backoffBaseMs: number,
  refunded = 0,
): Promise<number> {
  const rows = await sql`
    WITH lost AS (
      SELECT id, attempts - ${refunded}::int AS attempts FROM jobs WHERE ${which} FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs SET
      attempts = lost.attempts,
      status = CASE WHEN cancel_requested THEN 'cancelled' WHEN lost.attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
      error = CASE WHEN cancel_requested THEN 'cancelled' WHEN lost.attempts >= max_attempts THEN ${reason} || ' (gave up after ' || lost.attempts || ' attempts)' ELSE ${reason} END,
      finished_at = CASE WHEN cancel_requested OR lost.attempts >= max_attempts THEN now() END,
      run_after = now() + ${backoffBaseMs} * interval '1 millisecond',
      lease_owner = NULL, lease_expires_at = NULL
    FROM lost WHERE jobs.id = lost.id
    RETURNING jobs.id`
  return rows.length
}

/**
 * Cancels a queued job at once; asks a running one to stop (its worker sees the request at its
 * next heartbeat or progress report, or sooner through the job event). A finished job is left
 * as it is; the caller sees its status.
 */
export async function requestCancel(sql: Db, id: string): Promise<Job | undefined> {
  const [row] = await sql<Job[]>`
    UPDATE jobs SET
      cancel_requested = status IN ('queued', 'running'),
      status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
      error = CASE WHEN status = 'queued' THEN 'cancelled' ELSE error END,
      finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
      progress = CASE WHEN status = 'queued' THEN progress || '{"phase": "cancelled"}' ELSE progress END
    WHERE id = ${id}
    RETURNING ${jobColumns(sql)}`
  return row
}

/**
 * Every job of a repository about to be deleted: queued ones end cancelled with `reason` at
 * once, running ones are asked to stop. Returns the ids still running.
 */
export async function cancelRepositoryJobs(sql: Db, repositoryId: string, reason: string): Promise<string[]> {
  const rows = await sql<{ id: string; status: JobStatus }[]>`
    UPDATE jobs SET
      cancel_requested = true,
      status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
      error = CASE WHEN status = 'queued' THEN ${reason} ELSE error END,
      finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
      progress = CASE WHEN status = 'queued' THEN progress || '{"phase": "cancelled"}' ELSE progress END
    WHERE repository_id = ${repositoryId} AND status IN ('queued', 'running')
    RETURNING id, status`
  return rows.filter((row) => row.status === 'running').map((row) => row.id)
}

/** The error of these jobs, where they ended cancelled (their worker writes only "cancelled"). */
export async function explainCancelled(sql: Db, ids: string[], reason: string): Promise<void> {
  if (ids.length > 0)
    await sql`UPDATE jobs SET error = ${reason} WHERE id = ANY(${ids}::uuid[]) AND status = 'cancelled'`
}

/** Extends the leases of every job these workers hold (their threads are alive: see runner.ts). */
export async function renewWorkerLeases(sql: Db, workerIds: string[], leaseMs: number): Promise<void> {
  if (workerIds.length === 0) return
  await sql`
    UPDATE jobs SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE status = 'running' AND lease_owner = ANY(${workerIds}::text[])`
}

export async function getJob(sql: Db, id: string): Promise<Job | undefined> {
  const [row] = await sql<Job[]>`SELECT ${jobColumns(sql)} FROM jobs WHERE id = ${id}`
  return row
}

export interface JobFilter {
  /** undefined: every repository's and the system's jobs. */
  repositoryId?: string
  status?: JobStatus
  kind?: string
  /** ?order=desc: the latest jobs first. */
  newestFirst?: boolean
}

export async function listJobs(sql: Db, filter: JobFilter, limit: number, after: PageKey | undefined) {
  const rows = await sql<(Job & { key_at: string })[]>`
    SELECT ${jobColumns(sql)}, ${pageKeyColumn(sql)} FROM jobs
    WHERE ${filter.repositoryId ? sql`repository_id = ${filter.repositoryId}` : sql`true`}
      AND ${filter.status ? sql`status = ${filter.status}` : sql`true`}
      AND ${filter.kind ? sql`kind = ${filter.kind}` : sql`true`}
      AND ${afterCursor(sql, after, filter.newestFirst)}
    ORDER BY ${pageOrder(sql, 'jobs', filter.newestFirst)}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}
