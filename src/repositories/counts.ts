// A repository's graph counts (sources, facts, concepts, reports, investigations) without counting
// rows on every request. Its database keeps them exact by triggers (repository migration
// 0005_graph_counts: one row of net change per writing statement); the system database keeps a
// copy per repository (repository_counts), so a list of repositories reads them all in its own
// query instead of opening one database per repository. The copy is refreshed after each change:
// queued by the graph's write service after each write (graph/write/service.ts, whoever called
// it: a REST route, an MCP tool), which answers without waiting for it, and by the job that did (a job kind that
// changesGraph, jobs/worker.ts), which ends after it; the refresh tells every instance, whose
// caches of the copy (Repositories) then drop it. The exact figures stay in the repository's
// database, so any later refresh repairs a copy whose refresh was lost (a crash, an error); each
// process queues one when it first opens the repository's database (server.ts), so a copy a
// crash lost lasts until the repository's next use, not its next write.
import type { Sql } from 'postgres'
import type { EventBus } from '../db/events.ts'
import type { Pools } from '../db/pools.ts'
import type { Db } from '../db/sql.ts'
import { describeError, type Logger } from '../log.ts'

/** Published (payload: the repository id) when a repository's copy changed. */
export const COUNTS_CHANGED = 'kgs_repository_counts'

export const COUNTED_KINDS = ['sources', 'facts', 'concepts', 'reports', 'investigations'] as const
export type GraphCounts = Record<(typeof COUNTED_KINDS)[number], number>

/** Counts copied from the system database's row, or undefined when it has none yet. */
export function countsFromRow(
  row: Partial<Record<(typeof COUNTED_KINDS)[number], string | number | null>>,
): GraphCounts | undefined {
  if (row.sources === null || row.sources === undefined) return undefined
  return Object.fromEntries(COUNTED_KINDS.map((kind) => [kind, Number(row[kind])])) as GraphCounts
}

/** The copy's columns, for a query that joins repository_counts as `c`. */
export const countColumns = (sql: Db) => sql`c.sources, c.facts, c.concepts, c.reports, c.investigations`

const FOREIGN_KEY_VIOLATION = '23503'

/** Past this many change rows, reading the counts folds them first (a write of the repository database, which most reads then need not make). */
const FOLD_PAST_ROWS = 1000

/**
 * The repository's counts: the sums of its change rows, read without writing while they are few;
 * once there are many, folded into one row per kind, in one statement, as they are read. Reads of
 * one repository take turns (an advisory lock in its database: two folds at once could each miss
 * the rows the other deleted and inserted), and each takes its transaction's id there after the
 * lock: a read with a higher version saw every change a lower one saw.
 */
async function readCounts(repository: Sql): Promise<{ counts: GraphCounts; version: string }> {
  return repository.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended('kgs graph counts', 0))`
    const [{ version }] = (await tx`SELECT pg_current_xact_id()::text AS version`) as unknown as [{ version: string }]
    const counts = Object.fromEntries(COUNTED_KINDS.map((kind) => [kind, 0])) as GraphCounts
    const sums = await tx<{ kind: keyof GraphCounts; delta: string; rows: number }[]>`
      SELECT kind, sum(delta) AS delta, sum(count(*)) OVER ()::int AS rows FROM graph_count_changes GROUP BY kind`
    const rows =
      (sums[0]?.rows ?? 0) > FOLD_PAST_ROWS
        ? await tx<{ kind: keyof GraphCounts; delta: string }[]>`
            WITH folded AS (DELETE FROM graph_count_changes RETURNING kind, delta)
            INSERT INTO graph_count_changes (kind, delta) SELECT kind, sum(delta) FROM folded GROUP BY kind
            RETURNING kind, delta`
        : sums
    for (const row of rows) counts[row.kind] = Number(row.delta)
    return { counts, version }
  }) as Promise<{ counts: GraphCounts; version: string }>
}

/**
 * Copies the repository's counts into the system database and tells every instance (after the
 * write: told before it, an instance could read the old copy again and keep it); undefined when
 * the repository is gone. The read and the write are two statements in two databases, with no
 * transaction of the system database open while the repository's answers (on the embedded
 * database that would hold back every other query of the system database meanwhile, for as long
 * as an import keeps the repository's database busy); the copy only moves to a later read.
 */
export async function refreshCounts(
  pools: Pools,
  bus: Pick<EventBus, 'publish'>,
  repositoryId: string,
): Promise<GraphCounts | undefined> {
  const [present] = await pools.system`SELECT 1 FROM repositories WHERE id = ${repositoryId}`
  if (!present) return undefined
  const { counts, version } = await readCounts(await pools.forRepository(repositoryId))
  try {
    await pools.system`
      INSERT INTO repository_counts (repository_id, sources, facts, concepts, reports, investigations, counted_version)
      VALUES (${repositoryId}, ${counts.sources}, ${counts.facts}, ${counts.concepts}, ${counts.reports}, ${counts.investigations}, ${version})
      ON CONFLICT (repository_id) DO UPDATE SET
        sources = excluded.sources, facts = excluded.facts, concepts = excluded.concepts,
        reports = excluded.reports, investigations = excluded.investigations, counted_at = now(),
        counted_version = excluded.counted_version
      WHERE repository_counts.counted_version IS NULL OR repository_counts.counted_version <= excluded.counted_version`
  } catch (error) {
    // Deleted since it was looked up: its row would reference no repository.
    if ((error as { code?: string }).code === FOREIGN_KEY_VIOLATION) return undefined
    throw error
  }
  await bus.publish(pools.system, COUNTS_CHANGED, repositoryId)
  return counts
}

/** The copy for one repository, if it has one. */
export async function copiedCounts(system: Sql, repositoryId: string): Promise<GraphCounts | undefined> {
  const [row] =
    await system`SELECT ${countColumns(system)} FROM repository_counts c WHERE c.repository_id = ${repositoryId}`
  return row ? countsFromRow(row) : undefined
}

/**
 * A burst of writes to one repository copies its counts at most this often (the first write after a
 * quiet spell is copied at once): each copy is three commits, which a continuous burst would
 * otherwise repeat back to back beside the writes themselves.
 */
const COPY_INTERVAL_MS = 250

/**
 * Per repository: the last refresh scheduled, when the one before it started, and the one not
 * started yet that changes made meanwhile share, with what starts it before its time.
 */
const scheduled = new Map<
  string,
  { last: Promise<void>; startedAt: number; waiting?: Promise<void>; hurry?: () => void }
>()

/**
 * What the route or job that changed a repository's graph calls once its change committed: queues
 * a copy of the counts. The promise (which never rejects) settles when a refresh that started
 * after the call has ended, but changes made while one runs share the next one, which starts
 * `intervalMs` after the one before it started (or at once, hurryCountsCopy), so a burst of
 * writes makes one refresh in flight and at most one pending per repository, not one each on the
 * repository's lock. A failure is logged and left to the next change, or to the next read of a
 * repository without a copy.
 */
export function graphChanged(
  pools: Pools,
  bus: Pick<EventBus, 'publish'>,
  repositoryId: string,
  log: Logger,
  intervalMs = COPY_INTERVAL_MS,
): Promise<void> {
  const state = scheduled.get(repositoryId)
  if (state?.waiting) return state.waiting
  let hurry!: () => void
  const hurried = new Promise<void>((resolve) => (hurry = resolve))
  const waiting: Promise<void> = (state?.last ?? Promise.resolve()).then(async () => {
    const wait = state ? state.startedAt + intervalMs - Date.now() : 0
    if (wait > 0) {
      const timer = setTimeout(hurry, wait)
      await hurried
      clearTimeout(timer)
    }
    Object.assign(scheduled.get(repositoryId)!, { waiting: undefined, hurry: undefined, startedAt: Date.now() })
    try {
      await refreshCounts(pools, bus, repositoryId)
    } catch (error) {
      log.warn('repository counts not copied', { repository: repositoryId, ...describeError(error) })
    }
    if (scheduled.get(repositoryId)?.last === waiting) scheduled.delete(repositoryId)
  })
  scheduled.set(repositoryId, { last: waiting, startedAt: state?.startedAt ?? Date.now(), waiting, hurry })
  return waiting
}

/** Starts the repository's pending copy now, if one waits for its time (a reader needs it, or the process stops). */
export function hurryCountsCopy(repositoryId: string): void {
  scheduled.get(repositoryId)?.hurry?.()
}
