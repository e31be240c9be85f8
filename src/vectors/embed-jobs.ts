// embed_facts and embed_concepts: (re)compute the vectors of a repository's facts or concepts
// with the configured embedder, in batches, into the vector store. Queued after an import whose
// bundle carried no usable vectors, or on request (POST /{repoID}/jobs).
// embed_changes: brings the vectors up to date with the rows the write API marked
// (graph/write/common.ts markForEmbedding), queued coalesced after each write (embeddingQueue)
// and, for marks a crash left without their job, at a repository's first use in a process
// (queueMarkedEmbeddings).
import { Type, type Static } from '@sinclair/typebox'
import type { Sql } from 'postgres'
import { defineJobKind, type RunningJob, type JobServices } from '../jobs/kinds.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { VectorKind, VectorStore } from './store.ts'
import type { Embedder } from './embedder.ts'
import { OPTIMIZE_VECTORS } from './optimize-job.ts'

const BATCH = 1000

const EmbedParams = Type.Object(
  {
    ids: Type.Optional(
      Type.Array(Type.String({ pattern: UUID_PATTERN }), {
        maxItems: 10_000,
        description: 'only these rows; all of them when absent',
      }),
    ),
  },
  { additionalProperties: false },
)

/** The text a concept is embedded as: its name, with its description for context. */
export function conceptEmbeddingText(row: { canonical_name: string; description: string }): string {
  return row.description ? `${row.canonical_name}: ${row.description}` : row.canonical_name
}

interface Row {
  id: string
  text: string
}

/** Each kind's table, the columns its text is made of, and that text. */
const SOURCES: Record<VectorKind, { table: string; columns: string[]; text(row: Record<string, string>): string }> = {
  facts: { table: 'facts', columns: ['text'], text: (row) => row.text! },
  concepts: {
    table: 'concepts',
    columns: ['canonical_name', 'description'],
    text: (row) => conceptEmbeddingText(row as { canonical_name: string; description: string }),
  },
}

async function embedAll(
  kind: VectorKind,
  job: RunningJob<{ ids?: string[] }>,
  { embedder, vectors, enqueue }: JobServices,
) {
  const sql = await job.repository()
  const repositoryId = job.repositoryId!
  const ids = job.params.ids
  const { table, columns, text } = SOURCES[kind]
  const only = ids ? sql`id = ANY(${ids}::uuid[])` : sql`true`
  const [{ total }] = (await sql`SELECT count(*)::int AS total FROM ${sql(table)} WHERE ${only}`) as unknown as [
    { total: number },
  ]
  job.progress({ phase: `embedding ${kind}`, done: 0, total })
  // A full re-embedding with another model replaces the table (its dimensions may differ).
  if (!ids && (await vectors.dimensions(repositoryId, kind)) !== undefined) await vectors.dropTable(repositoryId, kind)
  let done = 0
  let after = '00000000-0000-0000-0000-000000000000'
  for (;;) {
    job.signal.throwIfAborted()
    const rows = (
      await sql<
        Record<string, string>[]
      >`SELECT id, ${sql(columns)} FROM ${sql(table)} WHERE id > ${after}::uuid AND ${only} ORDER BY id LIMIT ${BATCH}`
    ).map((row): Row => ({ id: row.id!, text: text(row) }))
    if (rows.length === 0) break
    const embedded = await embedder.embed(rows.map((r) => r.text))
    await vectors.upsert(
      repositoryId,
      kind,
      rows.map((r, i) => ({ id: r.id, vector: embedded[i]! })),
    )
    done += rows.length
    after = rows.at(-1)!.id
    job.progress({ done })
  }
  // Each batch's upsert left a file: they are compacted (and indexed, past the threshold) by a job of their own.
  if (done > 0) await enqueue({ kind: OPTIMIZE_VECTORS, repositoryId, params: { kind } })
  return { embedded: done, model: embedder.model, dimensions: embedder.dimensions }
}

export const embedFactsJob = defineJobKind({
  kind: 'embed_facts',
  params: EmbedParams,
  maxAttempts: 3,
  repositoryScoped: true,
  run: (job, services) => embedAll('facts', job, services),
})

export const embedConceptsJob = defineJobKind({
  kind: 'embed_concepts',
  params: EmbedParams,
  maxAttempts: 3,
  repositoryScoped: true,
  run: (job, services) => embedAll('concepts', job, services),
})

const ChangesParams = Type.Object(
  { kind: Type.Union([Type.Literal('facts'), Type.Literal('concepts')]) },
  { additionalProperties: false },
)

/** How long a burst of writes gathers before its embedding job starts, and before the vector store is compacted after it. */
const CHANGES_AFTER_MS = 1000
const OPTIMIZE_AFTER_MS = 30_000

/** How much earlier than its start a queued job stops counting as covering new marks: clock differences between this process and the database. */
const COVER_MARGIN_MS = 300

const EMBED_CHANGES = 'embed_changes'

/** An embed_changes job for the repository's marked rows of `kind`, unless one is queued already (the queue's coalescing, fleet-wide). */
const queueChanges = (jobs: Pick<JobServices, 'enqueue'>, repositoryId: string, kind: VectorKind) =>
  jobs.enqueue({ kind: EMBED_CHANGES, repositoryId, params: { kind }, coalesce: { afterMs: CHANGES_AFTER_MS } })

/**
 * What the write API calls after a write of facts or concepts: an embed_changes job for each
 * kind, unless one is queued already, so a burst of writes makes one job per kind, not one per
 * write. A job this process queued cannot start before CHANGES_AFTER_MS, so until then (less a
 * margin) it takes every mark committed meanwhile, and the queue is not asked again. Writes that
 * finish while the queue is being asked share that question when it was asked after their marks
 * committed (any job it found or queued starts later), and otherwise wait for it and look again.
 */
export function embeddingQueue(jobs: Pick<JobServices, 'enqueue'>) {
  const coveredUntil = new Map<string, number>()
  const asking = new Map<string, { since: number; answer: Promise<void> }>()
  const ask = async (key: string, repositoryId: string, kind: VectorKind) => {
    const now = Date.now()
    try {
      const job = await queueChanges(jobs, repositoryId, kind)
      if (job) coveredUntil.set(key, now + CHANGES_AFTER_MS - COVER_MARGIN_MS)
    } finally {
      asking.delete(key)
    }
  }
  return async (repositoryId: string, kinds: readonly VectorKind[]): Promise<void> => {
    for (const kind of kinds) {
      const key = `${repositoryId}/${kind}`
      const committed = performance.now()
      for (;;) {
        if ((coveredUntil.get(key) ?? 0) > Date.now()) break
        const current = asking.get(key)
        if (current && current.since >= committed) {
          await current.answer
          break
        }
        if (current) {
          await current.answer.catch(() => {})
          continue
        }
        coveredUntil.delete(key)
        const question = { since: performance.now(), answer: ask(key, repositoryId, kind) }
        asking.set(key, question)
        await question.answer
        break
      }
    }
  }
}

/**
 * What a process calls when it first opens a repository's database: a job for each kind with rows
 * marked, unless one is queued, so marks a crash left between a write's commit and its job's
 * queueing are not stranded until the next write. Where a job is queued (the usual case after a
 * clean stop) or no row is marked, it queues nothing. A running job does not count: it may have
 * read its last batch before the marks committed.
 */
export async function queueMarkedEmbeddings(
  jobs: Pick<JobServices, 'enqueue'>,
  repository: Sql,
  repositoryId: string,
): Promise<void> {
  const marked = await repository<{ kind: VectorKind }[]>`
    SELECT kind FROM unnest(${Object.keys(SOURCES)}::text[]) AS k(kind) WHERE EXISTS (SELECT 1 FROM embedding_changes m WHERE m.kind = k.kind)`
  for (const { kind } of marked) await queueChanges(jobs, repositoryId, kind)
}

async function embedChanges(
  job: RunningJob<Static<typeof ChangesParams>>,
  { embedder, vectors, enqueue }: JobServices,
) {
  const sql = await job.repository()
  const repositoryId = job.repositoryId!
  const { kind } = job.params
  const { table, columns, text } = SOURCES[kind]
  let embedded = 0
  let removed = 0
  for (;;) {
    job.signal.throwIfAborted()
    // The row as of the mark: a later edit moves changed_at on, so its mark outlives this batch.
    const marks = await sql<({ id: string; changed_at: string; present: boolean } & Record<string, string>)[]>`
      SELECT m.id, m.changed_at::text, t.id IS NOT NULL AS present, ${sql(columns.map((column) => `t.${column}`))}
      FROM embedding_changes m LEFT JOIN ${sql(table)} t ON t.id = m.id
      WHERE m.kind = ${kind} ORDER BY m.changed_at LIMIT ${BATCH}`
    if (marks.length === 0) break
    const present = marks.filter((mark) => mark.present)
    const gone = marks.filter((mark) => !mark.present).map((mark) => mark.id)
    if (present.length > 0) {
      const vectorsOf = await embedder.embed(present.map((row) => text(row)))
      await vectors.upsert(
        repositoryId,
        kind,
        present.map((row, i) => ({ id: row.id, vector: vectorsOf[i]! })),
      )
    }
    if (gone.length > 0) await vectors.delete(repositoryId, kind, gone)
    // The times travel as text: typed timestamptz, postgres.js would send them through a Date and lose the microseconds.
    const { count: cleared } = await sql`
      DELETE FROM embedding_changes m USING unnest(${marks.map((mark) => mark.id)}::uuid[], ${marks.map((mark) => mark.changed_at)}::text[]::timestamptz[]) AS done(id, changed_at)
      WHERE m.kind = ${kind} AND m.id = done.id AND m.changed_at = done.changed_at`
    embedded += present.length
    removed += gone.length
    job.progress({ done: embedded + removed })
    // Every mark of the batch moved on meanwhile: their writes queued the job that takes them now.
    if (cleared === 0) break
  }
  if (embedded + removed > 0)
    await enqueue({ kind: OPTIMIZE_VECTORS, repositoryId, params: { kind }, coalesce: { afterMs: OPTIMIZE_AFTER_MS } })
  return { kind, embedded, removed }
}

export const embedChangesJob = defineJobKind({
  kind: EMBED_CHANGES,
  params: ChangesParams,
  maxAttempts: 3,
  repositoryScoped: true,
  run: embedChanges,
})

declare module '../jobs/kinds.ts' {
  interface JobServices {
    vectors: VectorStore
    embedder: Embedder
  }
}
