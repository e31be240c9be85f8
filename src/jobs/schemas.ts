// The job object of the API, and (by Static) the types the queue reads and writes.
import { t } from 'elysia'
import type { Static } from '@sinclair/typebox'

// Literal unions written out: t.UnionEnum would give the field a default (its first value), and
// an absent filter would silently become status=queued.
export const Status = (options?: { error: string }) =>
  t.Union(
    [t.Literal('queued'), t.Literal('running'), t.Literal('succeeded'), t.Literal('failed'), t.Literal('cancelled')],
    options,
  )
export type JobStatus = Static<ReturnType<typeof Status>>
export const JOB_STATUSES: readonly JobStatus[] = Status().anyOf.map((literal) => literal.const)

/** What a job's worker reports; the job object adds percent, computed when read. */
const JobProgress = t.Object({
  phase: t.String(),
  done: t.Number({
    description:
      'in the unit of total: bytes while a bundle is read, downloaded or pushed; rows, tables or items otherwise',
  }),
  total: t.Number(),
  bytes: t.Number(),
})
export type JobProgress = Static<typeof JobProgress>

/** The job object of every job route (and of the 202 of routes that enqueue one). */
export const JobBody = t.Object({
  id: t.String(),
  kind: t.String(),
  repository_id: t.Union([t.String(), t.Null()]),
  status: Status(),
  progress: t.Object({
    ...JobProgress.properties,
    percent: t.Union([t.Number(), t.Null()], {
      description: 'done of total, 0 to 100; null while the total is unknown',
    }),
  }),
  result: t.Unknown({ description: 'what the job produced, once it succeeded' }),
  error: t.Union([t.String(), t.Null()]),
  attempts: t.Integer(),
  created_at: t.String(),
  started_at: t.Union([t.String(), t.Null()]),
  finished_at: t.Union([t.String(), t.Null()]),
})
export type Job = Static<typeof JobBody>
