// import_graph (docs/spec/bundle.md §5): a bundle from the registry (by id, or by name and sha256) or from
// an upload (POST /{repoID}/import-graph streamed it to blob storage) is read in one streaming
// pass into the repository, inside one transaction on its pool (import-transaction.ts does the
// work), exactly once whatever happens to the worker:
//
// - The transaction inserts the job's graph_imports row last, so the row exists exactly when
//   the import committed. An attempt starts (under a per-repository lock, so it also waits for
//   an earlier attempt of its own still running) by looking for it: found, the rows are in and
//   only what follows the commit is left; not found, the leftovers of an earlier attempt (its
//   media under the job's prefix, its staged vectors) are deleted and the import starts over.
// - After the commit: staged vectors are promoted into the repository's tables, follow-up jobs
//   queued (fetch_media for media the bundle did not carry, embed_facts and embed_concepts when
//   its vectors were of another model, optimize_vectors when they were kept), each step flipping
//   its flag in the row. A crash between
//   queueing and flipping queues them twice on the retry: they are idempotent.
// - A failed import rolls back, and its media and staged vectors are deleted: the repository is
//   as before. Bad input (BundleError: "section[position]: problem") fails the job at once.
// - The upload is deleted once the job ends for good (success, bad input, last attempt, cancel).
import { runtime } from '../../runtime/index.ts'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { pipeline } from 'node:stream/promises'
import { Type, type Static } from '@sinclair/typebox'
import type { Sql, TransactionSql } from 'postgres'
import { isAbandoned, timestampedId } from '../../blobs/leftovers.ts'
import { isUniqueViolation } from '../../db/conflict.ts'
import { discardBlobs, repositoryBlobPrefix, type BlobStore } from '../../blobs/store.ts'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../../jobs/kinds.ts'
import { FINISHED, type JobStatus } from '../../jobs/queue.ts'
import { CANCELLED, LEASE_LOST, SHUTTING_DOWN } from '../../jobs/worker.ts'
import { describeError } from '../../log.ts'
import { localImageUrl } from '../../media/urls.ts'
import { metered } from '../../memory.ts'
import { RegistryError } from '../../registry/client.ts'
import { OPTIMIZE_VECTORS } from '../../vectors/optimize-job.ts'
import { VECTOR_KINDS } from '../../vectors/store.ts'
import { RegistryImportBody } from './import-body.ts'
import { deferIndexesIfEmpty } from './import-indexes.ts'
import { GraphImport, isDataError, type ImportCounts, type ImportedCounts } from './import-transaction.ts'
import { BundleError, readBundle } from '../format/reader.ts'
import { scratchFile } from '../scratch.ts'
import { hashAlongside } from '../format/tools.ts'

const IMPORT_ATTEMPTS = 3
/** Arbitrary constant: one import at a time per repository (each has its own database). */
const IMPORT_LOCK = 5_610_388_244

const UPLOAD_KEY_PATTERN = '^uploads/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\.json\\.gz$'

/** The route's registry forms (its JSON body), or an upload the route stored. */
const ImportParams = Type.Union([
  ...RegistryImportBody.anyOf,
  Type.Object(
    { upload: Type.String({ pattern: UPLOAD_KEY_PATTERN, description: 'blob key of an uploaded bundle' }) },
    { additionalProperties: false },
  ),
])
type ImportParams = Static<typeof ImportParams>

const UPLOADS = 'uploads/'
/** Where an upload waits for its job. */
export const uploadKey = () => `${UPLOADS}${timestampedId()}.json.gz`

/**
 * Deletes the uploads no job will read: those of jobs that ended without deleting them (a job
 * cancelled while still queued never runs) and those whose job was never queued (the process
 * died between the upload and the enqueue), once past the grace period. Returns how many.
 */
export async function sweepUploads(system: Sql, blobs: BlobStore, now = Date.now()): Promise<number> {
  const keys: string[] = []
  for await (const key of blobs.list(UPLOADS)) keys.push(key)
  if (keys.length === 0) return 0
  const owners = new Map(
    (
      await system<{ upload: string; status: string }[]>`
      SELECT params->>'upload' AS upload, status FROM jobs WHERE kind = 'import_graph' AND params->>'upload' = ANY(${keys}::text[])`
    ).map((row) => [row.upload, row.status]),
  )
  const orphans = keys.filter((key) => {
    const status = owners.get(key)
    return status === undefined ? isAbandoned(key, now) : FINISHED.includes(status as JobStatus)
  })
  for (const key of orphans) await blobs.delete(key)
  return orphans.length
}

/** The blob prefix of one import's media (docs/spec/bundle.md §5): live once the import commits. */
const importMediaPrefix = (repositoryId: string, jobId: string) =>
  `${repositoryBlobPrefix(repositoryId)}imports/${jobId}/`

/** The job result (docs/spec/bundle.md §5). */
export interface ImportResult {
  imported: ImportedCounts
  reused: ImportCounts['reused']
  citations: ImportCounts['citations']
  embeddings: 'upserted' | 're-embedding' | 'none'
  media: ImportCounts['media']
}

interface CommittedImport {
  result: ImportResult
  vectors_pending: boolean
  followups_pending: boolean
}

export type ImportJob = RunningJob<ImportParams>

/** The import job's work: see the top of this file. */
export async function importGraph(job: ImportJob, services: JobServices): Promise<ImportResult> {
  let endsForGood = false
  try {
    const sql = await job.repository()
    const committed = await importOnce(job, services, sql)
    await completeImport(job, services, sql, committed)
    endsForGood = true
    return committed.result
  } catch (error) {
    const failure = jobError(error)
    // A shutdown hands the job back to the queue (its attempt given back): the upload stays for the next run.
    endsForGood =
      job.signal.reason !== SHUTTING_DOWN &&
      (failure instanceof PermanentJobError || job.attempt >= IMPORT_ATTEMPTS || job.signal.reason === CANCELLED)
    throw failure
  } finally {
    if (endsForGood && 'upload' in job.params)
      await discardBlobs(services.blobs, services.log, 'import: could not delete the upload', job.params.upload)
  }
}

export const importGraphJob = defineJobKind({
  kind: 'import_graph',
  params: ImportParams,
  maxAttempts: IMPORT_ATTEMPTS,
  repositoryScoped: true,
  changesGraph: true,
  run: (job, services) => importGraph(job, services),
})

/** The committed import of this job: found from an earlier attempt, or made now. */
async function importOnce(job: ImportJob, services: JobServices, sql: Sql): Promise<CommittedImport> {
  const repositoryId = job.repositoryId!
  const mediaPrefix = importMediaPrefix(repositoryId, job.id)
  const [committed] = await committedImport(sql, job.id)
  if (committed) return committed
  const bundle = await openBundle(job, services)
  const attempt = (bulk: boolean) =>
    sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${IMPORT_LOCK})`
      const [earlier] = await committedImport(tx, job.id)
      if (earlier) return earlier
      await discardAttempt(job, services)
      // Each batch's statement is planned alone and run once: compiling it (JIT, above the planner's
      // cost threshold on large batches) costs more than it saves.
      await tx`SET LOCAL jit = off`
      const reader = readBundle(await bundle.open(), { maxDecompressedBytes: services.config.importMaxExpandedBytes })
      // Asked for by (name, sha256): what the registry sent must be that graph, not whatever was pushed under the pair first.
      const expected = 'sha256' in job.params ? job.params.sha256 : undefined
      const hashed = expected ? hashAlongside(reader) : undefined
      job.progress({ phase: 'reading', done: 0, total: bundle.bytes ?? 0, bytes: 0 })
      const deferred = await deferIndexesIfEmpty(tx, { bulk })
      let counts: ImportCounts
      try {
        counts = await new GraphImport({
          tx,
          repositoryId,
          jobId: job.id,
          mediaPrefix,
          localImageUrlPrefix: localImageUrl(services.config.baseUrl, repositoryId, ''),
          blobs: services.blobs,
          vectors: services.vectors,
          embedder: services.embedder,
          signal: job.signal,
          bulk: deferred?.bulk ?? false,
          copy: (deferred?.bulk ?? false) && services.pools.backend === 'postgres',
          progress: job.progress,
        }).run(reader, hashed?.items)
        if (deferred) {
          job.progress({ phase: 'indexing' })
          await deferred.build()
        }
      } catch (error) {
        if (deferred?.bulk && isUniqueViolation(error)) throw new RepeatedRows()
        throw error
      }
      const hashes = (await hashed?.digest) ?? []
      if (expected && !hashes.includes(expected))
        throw new BundleError(
          `the canonical hash of the bundle is ${hashes[0]}, not the sha256 ${expected} it was imported by`,
        )
      const added = counts.imported.facts + counts.imported.concepts
      const result: ImportResult = {
        imported: counts.imported,
        reused: counts.reused,
        citations: counts.citations,
        embeddings: counts.staged > 0 ? 'upserted' : added > 0 ? 're-embedding' : 'none',
        media: counts.media,
      }
      const committed: CommittedImport = {
        result,
        vectors_pending: counts.staged > 0,
        followups_pending: followUps(result).length > 0,
      }
      await tx`
        INSERT INTO graph_imports (job_id, result, vectors_pending, followups_pending)
        VALUES (${job.id}, ${tx.json(result as never)}, ${committed.vectors_pending}, ${committed.followups_pending})`
      return committed
    })
  try {
    try {
      return await attempt(true)
    } catch (error) {
      if (!(error instanceof RepeatedRows)) throw error
      services.log.info('import: the bundle repeats rows; importing it again, deduplicating as it goes', {
        job: job.id,
      })
      return await attempt(false)
    }
  } catch (error) {
    // Rolled back: the attempt's media and staged vectors go too. Not when another worker has
    // taken the job over (it cleans up itself), nor when the commit may have happened after all.
    const maybeCommitted = await committedImport(sql, job.id).then(
      (rows) => rows.length > 0,
      () => true,
    )
    if (job.signal.reason !== LEASE_LOST && !maybeCommitted) {
      await discardAttempt(job, services).catch((cleanup) =>
        services.log.error('import: could not clean up a failed attempt', { job: job.id, ...describeError(cleanup) }),
      )
    }
    throw error
  } finally {
    await bundle.close()
  }
}

function committedImport(sql: Sql | TransactionSql, jobId: string) {
  return sql<
    CommittedImport[]
  >`SELECT result, vectors_pending, followups_pending FROM graph_imports WHERE job_id = ${jobId}`
}

/** Deletes what an attempt that did not commit left: media under the job's prefix, staged vectors. */
async function discardAttempt(job: ImportJob, { blobs, vectors }: JobServices): Promise<void> {
  await blobs.deletePrefix(importMediaPrefix(job.repositoryId!, job.id))
  await vectors.dropStaged(job.id)
}

/** What follows the commit, each step recorded once done. */
async function completeImport(
  job: ImportJob,
  services: JobServices,
  sql: Sql,
  committed: CommittedImport,
): Promise<void> {
  const repositoryId = job.repositoryId!
  if (committed.vectors_pending) {
    job.progress({ phase: 'vectors', done: 0, total: VECTOR_KINDS.length })
    for (const [index, kind] of VECTOR_KINDS.entries()) {
      await services.vectors.promoteStaged(job.id, repositoryId, kind)
      job.progress({ done: index + 1 })
    }
    await sql`UPDATE graph_imports SET vectors_pending = false WHERE job_id = ${job.id}`
  }
  if (committed.followups_pending) {
    const queued = followUps(committed.result)
    job.progress({ phase: 'follow-ups', done: 0, total: queued.length })
    for (const [index, followUp] of queued.entries()) {
      await services.enqueue({ ...followUp, repositoryId })
      job.progress({ done: index + 1 })
    }
    await sql`UPDATE graph_imports SET followups_pending = false WHERE job_id = ${job.id}`
  }
  job.progress({ phase: 'imported' })
}

/**
 * The jobs an import queues: media to fetch; vectors to compute (whole repository: no ids), or
 * the vectors it kept to compact and index (the embedding jobs queue that themselves).
 */
function followUps(result: ImportResult): { kind: string; params?: Record<string, unknown> }[] {
  return [
    ...(result.media.to_fetch > 0 ? [{ kind: 'fetch_media' }] : []),
    ...(result.embeddings === 're-embedding' ? [{ kind: 'embed_facts' }, { kind: 'embed_concepts' }] : []),
    ...(result.embeddings === 'upserted'
      ? VECTOR_KINDS.map((kind) => ({ kind: OPTIMIZE_VECTORS, params: { kind } }))
      : []),
  ]
}

/** A bulk load met a row the bundle repeats (import-indexes.ts): rolled back, to be run again without bulk. */
class RepeatedRows extends Error {}

interface OpenedBundle {
  /** The bundle's bytes from the start, each time asked. */
  open(): Promise<AsyncIterable<Uint8Array>>
  /** Its compressed size, when known. */
  bytes?: number
  close(): Promise<void>
}

/**
 * The bundle to read. A registry bundle is first copied to a scratch file: the import writes
 * batches between reads, and a download left waiting that long is cut by the registry's idle
 * timeout (or any proxy's), so the transaction never waits on a remote connection.
 */
async function openBundle(job: ImportJob, { blobs, registry, config }: JobServices): Promise<OpenedBundle> {
  const params = job.params
  if ('upload' in params) {
    const stat = await blobs.stat(params.upload)
    if (!stat) throw new PermanentJobError('the uploaded bundle is gone; upload it again')
    const open = async () => {
      const stream = await blobs.stream(params.upload)
      if (!stream) throw new PermanentJobError('the uploaded bundle is gone; upload it again')
      return stream
    }
    return { open, bytes: stat.bytes, close: async () => {} }
  }
  const graph =
    'graph_id' in params
      ? await registry.get(params.graph_id, job.signal)
      : await registry.find(params.name, params.sha256, job.signal)
  if (!graph) throw new PermanentJobError(`${describeGraph(params)} is not in the registry`)
  const path = await scratchFile(config.dataDir, 'import', job)
  const remove = () => rm(path, { force: true })
  // The size is what arrives: a Go registry's record does not say it (bytes is null).
  let bytes = 0
  try {
    job.progress({ phase: 'downloading', done: 0, total: graph.bytes ?? 0, bytes: 0 })
    const downloaded = (chunks: AsyncIterable<Uint8Array>) =>
      metered(chunks, (received) => {
        bytes = received
        job.progress({ done: received, bytes: received })
      })
    await pipeline(
      await registry.download(graph.id, job.signal),
      downloaded,
      createWriteStream(path, { mode: 0o600 }),
      { signal: job.signal },
    )
  } catch (error) {
    await remove()
    throw error
  }
  return { open: async () => (await runtime.openFile(path)).stream(), bytes, close: remove }
}

export function describeGraph(params: { graph_id: string } | { name: string; sha256: string }): string {
  return 'graph_id' in params
    ? `graph ${params.graph_id}`
    : `graph ${JSON.stringify(params.name)} with sha256 ${params.sha256}`
}

/** Failures another attempt cannot fix become PermanentJobError; the rest stay retryable. */
function jobError(error: unknown): unknown {
  if (error instanceof BundleError || (error instanceof RegistryError && error.final))
    return new PermanentJobError((error as Error).message)
  // Values PostgreSQL refused outside a row batch (a media content type, say).
  if (isDataError(error)) return new PermanentJobError(`bundle: ${(error as Error).message}`)
  return error
}
