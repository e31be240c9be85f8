// import_graph (bundle.md §5): a bundle from the registry (by id, or by name and sha256) or from
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
//   its vectors were of another model), each step flipping its flag in the row. A crash between
//   queueing and flipping queues them twice on the retry: they are idempotent.
// - A failed import rolls back, and its media and staged vectors are deleted: the repository is
//   as before. Bad input (BundleError: "section[position]: problem") fails the job at once.
// - The upload is deleted once the job ends for good (success, bad input, last attempt, cancel).
import { Type, type Static } from '@sinclair/typebox'
import type { Sql } from 'postgres'
import { repositoryBlobPrefix } from '../blobs/store.ts'
import { UUID_PATTERN } from '../http/schemas.ts'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../jobs/kinds.ts'
import { CANCELLED, LEASE_LOST } from '../jobs/worker.ts'
import { describeError } from '../log.ts'
import { localImageUrl } from '../media/urls.ts'
import { RegistryError } from '../registry/client.ts'
import { VECTOR_KINDS } from '../vectors/store.ts'
import { GraphImport, isDataError, type ImportCounts, type ImportedCounts } from './import-transaction.ts'
import { BundleError, readBundle } from './reader.ts'

export const IMPORT_ATTEMPTS = 3
/** Arbitrary constant: one import at a time per repository (each has its own database). */
const IMPORT_LOCK = 5_610_388_244

export const SHA256_PATTERN = '^[0-9a-f]{64}$'
const UPLOAD_KEY_PATTERN = '^uploads/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\.json\\.gz$'

export const ImportParams = Type.Union([
  Type.Object({ graph_id: Type.String({ pattern: UUID_PATTERN }) }, { additionalProperties: false }),
  Type.Object({ name: Type.String({ minLength: 1 }), sha256: Type.String({ pattern: SHA256_PATTERN }) }, { additionalProperties: false }),
  Type.Object({ upload: Type.String({ pattern: UPLOAD_KEY_PATTERN, description: 'blob key of an uploaded bundle' }) }, { additionalProperties: false }),
])
export type ImportParams = Static<typeof ImportParams>

/** Where an upload waits for its job. */
export const uploadKey = () => `uploads/${crypto.randomUUID()}.json.gz`

/** The blob prefix of one import's media (decision 5): live once the import commits. */
export const importMediaPrefix = (repositoryId: string, jobId: string) => `${repositoryBlobPrefix(repositoryId)}imports/${jobId}/`

/** The job result (decision 7). */
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
    endsForGood = failure instanceof PermanentJobError || job.attempt >= IMPORT_ATTEMPTS || job.signal.reason === CANCELLED
    throw failure
  } finally {
    if (endsForGood && 'upload' in job.params) {
      const key = job.params.upload
      await services.blobs.delete(key).catch((error) => services.log.error('import: could not delete the upload', { key, ...describeError(error) }))
    }
  }
}

export const importGraphJob = defineJobKind({
  kind: 'import_graph',
  params: ImportParams,
  maxAttempts: IMPORT_ATTEMPTS,
  repositoryScoped: true,
  run: (job, services) => importGraph(job, services),
})

/** The committed import of this job: found from an earlier attempt, or made now. */
async function importOnce(job: ImportJob, services: JobServices, sql: Sql): Promise<CommittedImport> {
  const repositoryId = job.repositoryId!
  const mediaPrefix = importMediaPrefix(repositoryId, job.id)
  try {
    return await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${IMPORT_LOCK})`
      const [earlier] = await tx<CommittedImport[]>`SELECT result, vectors_pending, followups_pending FROM graph_imports WHERE job_id = ${job.id}`
      if (earlier) return earlier
      await discardAttempt(job, services)
      const { stream, bytes } = await openBundle(job, services)
      const reader = readBundle(stream, { maxDecompressedBytes: services.config.importMaxExpandedBytes })
      job.progress({ phase: 'reading', done: 0, total: bytes ?? 0, bytes: 0 })
      const counts = await new GraphImport({
        tx,
        repositoryId,
        jobId: job.id,
        mediaPrefix,
        localImageUrlPrefix: localImageUrl(services.config.baseUrl, repositoryId, ''),
        blobs: services.blobs,
        vectors: services.vectors,
        embedder: services.embedder,
        signal: job.signal,
        progress: job.progress,
      }).run(reader)
      const added = counts.imported.facts + counts.imported.concepts
      const result: ImportResult = {
        imported: counts.imported,
        reused: counts.reused,
        citations: counts.citations,
        embeddings: counts.staged > 0 ? 'upserted' : added > 0 ? 're-embedding' : 'none',
        media: counts.media,
      }
      const committed: CommittedImport = { result, vectors_pending: counts.staged > 0, followups_pending: followUps(result).length > 0 }
      await tx`
        INSERT INTO graph_imports (job_id, result, vectors_pending, followups_pending)
        VALUES (${job.id}, ${tx.json(result as never)}, ${committed.vectors_pending}, ${committed.followups_pending})`
      return committed
    })
  } catch (error) {
    // Rolled back: the attempt's media and staged vectors go too. Not when another worker has
    // taken the job over (it cleans up itself), nor when the commit may have happened after all.
    if (job.signal.reason !== LEASE_LOST && !(await committedImport(sql, job.id).catch(() => true))) {
      await discardAttempt(job, services).catch((cleanup) => services.log.error('import: could not clean up a failed attempt', { job: job.id, ...describeError(cleanup) }))
    }
    throw error
  }
}

async function committedImport(sql: Sql, jobId: string): Promise<boolean> {
  return (await sql`SELECT 1 FROM graph_imports WHERE job_id = ${jobId}`).length > 0
}

/** Deletes what an attempt that did not commit left: media under the job's prefix, staged vectors. */
async function discardAttempt(job: ImportJob, { blobs, vectors }: JobServices): Promise<void> {
  await blobs.deletePrefix(importMediaPrefix(job.repositoryId!, job.id))
  await vectors.dropStaged(job.id)
}

/** What follows the commit, each step recorded once done. */
async function completeImport(job: ImportJob, services: JobServices, sql: Sql, committed: CommittedImport): Promise<void> {
  const repositoryId = job.repositoryId!
  if (committed.vectors_pending) {
    job.progress({ phase: 'vectors' })
    for (const kind of VECTOR_KINDS) await services.vectors.promoteStaged(job.id, repositoryId, kind)
    await sql`UPDATE graph_imports SET vectors_pending = false WHERE job_id = ${job.id}`
  }
  if (committed.followups_pending) {
    job.progress({ phase: 'follow-ups' })
    for (const kind of followUps(committed.result)) await services.enqueue({ kind, repositoryId })
    await sql`UPDATE graph_imports SET followups_pending = false WHERE job_id = ${job.id}`
  }
  job.progress({ phase: 'imported' })
}

/** The jobs an import queues: media to fetch, vectors to compute (whole repository: no ids). */
function followUps(result: ImportResult): string[] {
  return [...(result.media.to_fetch > 0 ? ['fetch_media'] : []), ...(result.embeddings === 're-embedding' ? ['embed_facts', 'embed_concepts'] : [])]
}

/** The bundle's bytes as they come, and its compressed size. */
async function openBundle(job: ImportJob, { blobs, registry }: JobServices): Promise<{ stream: AsyncIterable<Uint8Array>; bytes?: number }> {
  const params = job.params
  if ('upload' in params) {
    const [stat, stream] = await Promise.all([blobs.stat(params.upload), blobs.stream(params.upload)])
    if (!stat || !stream) throw new PermanentJobError('the uploaded bundle is gone; upload it again')
    return { stream, bytes: stat.bytes }
  }
  const graph = 'graph_id' in params ? await registry.get(params.graph_id, job.signal) : await registry.find(params.name, params.sha256, job.signal)
  if (!graph) throw new PermanentJobError(`${describeGraph(params)} is not in the registry`)
  return { stream: await registry.download(graph.id, job.signal), bytes: graph.bytes }
}

export function describeGraph(params: { graph_id: string } | { name: string; sha256: string }): string {
  return 'graph_id' in params ? `graph ${params.graph_id}` : `graph ${JSON.stringify(params.name)} with sha256 ${params.sha256}`
}

/** Whether a registry answer is final: a client error other than a timeout or rate limit. */
function isFinalRegistryError(error: unknown): boolean {
  return error instanceof RegistryError && error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429
}

/** Failures another attempt cannot fix become PermanentJobError; the rest stay retryable. */
function jobError(error: unknown): unknown {
  if (error instanceof BundleError || isFinalRegistryError(error)) return new PermanentJobError((error as Error).message)
  // Values PostgreSQL refused outside a row batch (a media content type, say).
  if (isDataError(error)) return new PermanentJobError(`bundle: ${(error as Error).message}`)
  return error
}
