// Adding a Markdown document over HTTP and following its jobs: the ingest_source job, then the
// process_source job it queued.
import { expect } from 'bun:test'
import type { api } from './api.ts'
import { waitForJob } from './jobs.ts'
import type { Job } from '../../src/jobs/queue.ts'

/** Adds `text` as the file `name` to the repository as `token`, and answers the source and its ended process_source job. */
export async function addProcessed(
  http: ReturnType<typeof api>,
  slug: string,
  token: string,
  name: string,
  text: string,
): Promise<{ sourceId: string; processed: Job }> {
  const form = new FormData()
  form.append('file', new File([text], name, { type: 'text/markdown' }))
  const res = await http.call<{ jobs: { id: string; source_id: string }[] }>('POST', `/${slug}/ingest`, {
    raw: form,
    token,
  })
  expect(res.status).toBe(202)
  const ingested = await waitForJob(http, `/${slug}/jobs/${res.body.jobs[0]!.id}`, token)
  const next = (ingested.result as { process_job_id: string }).process_job_id
  return { sourceId: res.body.jobs[0]!.source_id, processed: await waitForJob(http, `/${slug}/jobs/${next}`, token) }
}
