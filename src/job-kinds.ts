// Every job kind this build can run.
import type { JobKind } from './jobs/kinds.ts'
import { noopJob } from './jobs/noop.ts'
import { embedChangesJob, embedConceptsJob, embedFactsJob } from './vectors/embed-jobs.ts'
import { exportGraphJob } from './bundle/export/export-job.ts'
import { importGraphJob } from './bundle/import/import-job.ts'
import { fetchMediaJob } from './media/fetch-job.ts'
import { ingestSourceJob } from './ingest/ingest-job.ts'
import { processSourceJob } from './extract/process-job.ts'
import { optimizeVectorsJob } from './vectors/optimize-job.ts'
import { annotateReportJob } from './search/annotate-job.ts'

const BUILTIN_JOB_KINDS: readonly JobKind[] = [
  noopJob,
  embedFactsJob,
  embedConceptsJob,
  embedChangesJob,
  optimizeVectorsJob,
  exportGraphJob,
  importGraphJob,
  fetchMediaJob,
  ingestSourceJob,
  processSourceJob,
  annotateReportJob,
]

/** The built-in kinds and those of `extraKindModules` (each default-exports a list; tests). */
export async function loadJobKinds(extraKindModules: readonly string[] = []): Promise<JobKind[]> {
  const extra = await Promise.all(
    extraKindModules.map(async (url) => ((await import(url)) as { default: JobKind[] }).default),
  )
  return [...BUILTIN_JOB_KINDS, ...extra.flat()]
}
