// The export_graph job: the repository exported into a scratch file from one snapshot
// (export-file.ts), pushed to the registry, and kept as the repository's latest export.
import { runtime } from '../../runtime/index.ts'
import { rm } from 'node:fs/promises'
import type { Sql } from 'postgres'
import { repositoryBlobPrefix } from '../../blobs/store.ts'
import { FINISHED, getJob, listJobs } from '../../jobs/queue.ts'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../../jobs/kinds.ts'
import { RegistryError, type PushMetadata } from '../../registry/client.ts'
import { findRepository } from '../../repositories/store.ts'
import { metered } from '../../memory.ts'
import { SCHEMA_VERSION, type Metadata } from '../format/schema.ts'
import { ExportParams, normalizeExportedAt } from './export-params.ts'
import { exportRepository, type ExportOptions, type ExportSummary } from './export-file.ts'
import type { ExportCounts } from './export-positions.ts'
import type { ExportServices } from './export-snapshot.ts'
import { scratchFile } from '../scratch.ts'

const exportsPrefix = (repositoryId: string) => `${repositoryBlobPrefix(repositoryId)}exports/`
/** The blob of one export, which the download routes serve (export-download.ts). */
export const exportKey = (repositoryId: string, jobId: string) => `${exportsPrefix(repositoryId)}${jobId}.json.gz`
/** How many exports of a repository keep their bundle for download: the newest succeeded ones; older ones are deleted. */
export const EXPORTS_KEPT = 3
/**
 * work_mem of an export on PostgreSQL: a large repository's sorts fit in memory. Not on the
 * embedded database, whose memory is this process's.
 */
const POSTGRES_WORK_MEM = '256MB'

/** exportRepository into the file at `path` (created or truncated); the file is removed if anything fails. */
async function exportToFile(
  sql: Sql,
  services: ExportServices,
  options: ExportOptions,
  path: string,
): Promise<ExportSummary & { path: string }> {
  try {
    return { ...(await exportRepository(sql, services, options, path)), path }
  } catch (error) {
    await rm(path, { force: true })
    // The system's "ENOSPC: no space left on device, write" does not say what was being written.
    // Retried like any failure: the disk may have room again by the next attempt.
    if ((error as NodeJS.ErrnoException).code === 'ENOSPC')
      throw new Error('no space left on device writing the export file', { cause: error })
    throw error
  }
}

export interface ExportJobResult {
  graph_id: string
  name: string
  sha256: string
  /** The bundle's metadata.exported_at. */
  exported_at: string
  /** Size of the pushed .json.gz. */
  bytes: number
  counts: ExportCounts
  /** false when the registry already held this (name, sha256). */
  new: boolean
}

async function exportGraph(job: RunningJob<ExportParams>, services: JobServices): Promise<ExportJobResult> {
  const repositoryId = job.repositoryId!
  const repository = await findRepository(services.pools.system, { id: repositoryId })
  if (!repository) throw new PermanentJobError('repository not found')
  const exportedAt =
    job.params.exported_at === undefined
      ? normalizeExportedAt(new Date().toISOString())
      : normalizeExportedAt(job.params.exported_at)
  if (!exportedAt)
    throw new PermanentJobError(
      `invalid exported_at ${JSON.stringify(job.params.exported_at)}: expected an RFC 3339 date-time`,
    )

  const exported = await exportToFile(
    await job.repository(),
    services,
    {
      repositoryId,
      name: job.params.name ?? repository.name,
      description: job.params.description ?? repository.description,
      tags: job.params.tags,
      includeImages: job.params.include_images,
      includeBodies: job.params.include_bodies,
      exportedAt,
      workMem: services.pools.backend === 'postgres' ? POSTGRES_WORK_MEM : undefined,
      prefetch: services.pools.backend === 'postgres',
      signal: job.signal,
      onProgress: (progress) => job.progress(progress),
    },
    await scratchFile(services.config.dataDir, 'export', job),
  )
  try {
    const { metadata, counts, bytes, path } = exported
    job.progress({ phase: 'pushing', done: 0, total: bytes, bytes: 0 })
    // The registry's copy and the job's own are written from the one file at once. If the push
    // fails, the job's copy goes: no download serves a failed job's bundle, and pruning is later.
    const key = exportKey(repositoryId, job.id)
    const [pushing, storing] = await Promise.allSettled([
      pushFile(services, path, pushMetadata(metadata), (sent) => job.progress({ done: sent, bytes: sent }), job),
      runtime.openFile(path).then((file) => services.blobs.put(key, file, { contentType: 'application/gzip' })),
    ])
    if (pushing.status === 'rejected') {
      if (storing.status === 'fulfilled') await services.blobs.delete(key)
      throw pushing.reason
    }
    if (storing.status === 'rejected') throw storing.reason
    const pushed = pushing.value
    await pruneExports(services, repositoryId, job.id)
    return {
      graph_id: pushed.graph_id,
      name: metadata.name,
      sha256: metadata.sha256!,
      exported_at: metadata.exported_at,
      bytes,
      counts,
      new: pushed.new,
    }
  } finally {
    await rm(exported.path, { force: true })
  }
}

/**
 * Deletes the bundles of finished exports but this one (about to succeed) and the
 * EXPORTS_KEPT - 1 newest succeeded before it; those of exports still queued or running stay.
 */
async function pruneExports(services: JobServices, repositoryId: string, current: string): Promise<void> {
  const system = services.pools.system
  const newest = await listJobs(
    system,
    { repositoryId, kind: 'export_graph', status: 'succeeded', newestFirst: true },
    EXPORTS_KEPT - 1,
    undefined,
  )
  const kept = new Set([current, ...newest.slice(0, EXPORTS_KEPT - 1).map((job) => job.id)])
  for await (const key of services.blobs.list(exportsPrefix(repositoryId))) {
    const id = key.slice(exportsPrefix(repositoryId).length).replace(/\.json\.gz$/, '')
    if (kept.has(id)) continue
    const job = await getJob(system, id)
    if (!job || FINISHED.includes(job.status)) await services.blobs.delete(key)
  }
}

function pushMetadata(metadata: Metadata): PushMetadata {
  return {
    name: metadata.name,
    description: metadata.description,
    tags: metadata.tags,
    sha256: metadata.sha256,
    schema_version: SCHEMA_VERSION,
    source_count: metadata.source_count,
    fact_count: metadata.fact_count,
    concept_count: metadata.concept_count,
    summary_count: metadata.summary_count,
    synthesis_count: metadata.synthesis_count,
    report_count: metadata.report_count,
    investigation_count: metadata.investigation_count,
  }
}

/**
 * Streams the file to the registry, reporting the bytes sent, for the user who asked for the
 * export (who then owns the graph, docs/spec/bundle.md §7). A refusal (4xx) is final; the rest is retried.
 */
async function pushFile(
  services: JobServices,
  path: string,
  metadata: PushMetadata,
  onSent: (bytes: number) => void,
  job: RunningJob<ExportParams>,
) {
  try {
    return await services.registry.push(metered((await runtime.openFile(path)).stream(), onSent), metadata, {
      signal: job.signal,
      onBehalfOf: job.createdBy,
    })
  } catch (error) {
    throw error instanceof RegistryError && error.final ? new PermanentJobError(error.message) : error
  }
}

export const exportGraphJob = defineJobKind({
  kind: 'export_graph',
  params: ExportParams,
  maxAttempts: 3,
  repositoryScoped: true,
  run: exportGraph,
})
