// What the export download routes answer: the newest succeeded export of a repository, or one
// export by its job, named in headers; while the export asked for is queued or running, that
// job's state with Retry-After (a download never serves an older bundle than the one asked for).
import type { BlobStore } from '../../blobs/store.ts'
import type { Db } from '../../db/sql.ts'
import { HttpError, JSON_CONTENT_TYPE } from '../../http/errors.ts'
import { getJob, listJobs, type Job } from '../../jobs/queue.ts'
import type { Repository } from '../../repositories/repositories.ts'
import { exportKey, type ExportJobResult } from './export-job.ts'

const KIND = 'export_graph'
/** Seconds a client waits before asking again while its export is queued or running. */
const RETRY_AFTER_SECONDS = 2

/** The repository's newest export job, whatever its state, and its newest succeeded one. */
async function newestExports(system: Db, repositoryId: string): Promise<{ newest?: Job; succeeded?: Job }> {
  const newestOf = async (status?: 'succeeded'): Promise<Job | undefined> => {
    const [row] = await listJobs(system, { repositoryId, kind: KIND, status, newestFirst: true }, 1, undefined)
    if (!row) return undefined
    const { page_key: _, ...job } = row
    return job
  }
  const newest = await newestOf()
  return { newest, succeeded: newest?.status === 'succeeded' ? newest : await newestOf('succeeded') }
}

/**
 * 503 with Retry-After and the job (RFC 9110 §15.6.4: the bundle is unavailable for now), so
 * that `curl --retry` waits for it and `curl -f` saves no error as the bundle.
 */
function pending(repository: Repository, job: Job): Response {
  const progress =
    job.progress.percent === null ? job.progress.phase : `${job.progress.phase}, ${job.progress.percent}%`
  const follow = `/${repository.slug}/jobs/${job.id}`
  return new Response(
    JSON.stringify({
      error: `export ${job.id} is ${job.status} (${progress}): download it once it has succeeded; GET ${follow} follows it`,
      job,
    }),
    {
      status: 503,
      headers: { 'content-type': JSON_CONTENT_TYPE, 'retry-after': String(RETRY_AFTER_SECONDS), location: follow },
    },
  )
}

/** The succeeded export's bundle, named: its job, its sha256 and its time. */
async function bundleOf(blobs: BlobStore, repository: Repository, job: Job): Promise<Response> {
  const body = await blobs.responseBody(exportKey(repository.id, job.id))
  if (!body)
    throw new HttpError(
      410,
      `export ${job.id} is no longer kept: a newer export replaced it; GET /${repository.slug}/export-graph/download serves the newest`,
    )
  const result = job.result as ExportJobResult
  return new Response(body, {
    headers: {
      'content-type': 'application/gzip',
      'content-disposition': `attachment; filename="${repository.slug}.json.gz"`,
      'x-export-job': job.id,
      'x-graph-sha256': result.sha256,
      'x-graph-exported-at': result.exported_at,
      'last-modified': new Date(job.finished_at!).toUTCString(),
    },
  })
}

/** GET …/export-graph/download: the newest export, unless a newer one is still on its way. */
export async function downloadNewestExport(system: Db, blobs: BlobStore, repository: Repository): Promise<Response> {
  const { newest, succeeded } = await newestExports(system, repository.id)
  if (newest && (newest.status === 'queued' || newest.status === 'running')) return pending(repository, newest)
  if (succeeded) return bundleOf(blobs, repository, succeeded)
  if (newest)
    throw new HttpError(
      404,
      `no export has succeeded yet: the last one (${newest.id}) ${newest.status}: ${newest.error}; POST /${repository.slug}/export-graph to try again`,
    )
  throw new HttpError(404, `no export yet: POST /${repository.slug}/export-graph starts one`)
}

/** GET …/export-graph/{jobID}/download: that export's bundle. */
export async function downloadExport(
  system: Db,
  blobs: BlobStore,
  repository: Repository,
  jobId: string,
): Promise<Response> {
  const job = await getJob(system, jobId.toLowerCase())
  if (!job || job.kind !== KIND || job.repository_id !== repository.id) throw new HttpError(404, 'export not found')
  if (job.status === 'queued' || job.status === 'running') return pending(repository, job)
  if (job.status !== 'succeeded')
    throw new HttpError(409, `export ${job.id} ${job.status}: ${job.error}; nothing to download`)
  return bundleOf(blobs, repository, job)
}
