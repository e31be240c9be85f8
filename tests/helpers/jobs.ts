// Waiting for a background job over HTTP: the worker threads run it while the test polls.
import { expect } from 'bun:test'
import type { api } from './api.ts'
import type { Job } from '../../src/jobs/queue.ts'
import type { JobServices } from '../../src/jobs/kinds.ts'
import type { AppContext } from '../../src/app.ts'
import { graphWrites } from '../../src/graph/write/service.ts'
import { embeddingQueue } from '../../src/vectors/embed-jobs.ts'
import { nearFactFinder } from '../../src/vectors/near-facts.ts'

export const finished = (job: Job) => ['succeeded', 'failed', 'cancelled'].includes(job.status)

/** Polls `path` (a job route) as `token` until `done` holds; fails after `timeoutMs`. */
export async function waitForJob(
  http: ReturnType<typeof api>,
  path: string,
  token: string,
  done: (job: Job) => boolean = finished,
  timeoutMs = 60_000,
): Promise<Job> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await http.get<Job>(path, token)
    expect(res.status).toBe(200)
    if (done(res.body)) return res.body
    if (Date.now() > deadline)
      throw new Error(`job at ${path} still ${res.body.status} (${JSON.stringify(res.body.progress)})`)
    await Bun.sleep(20)
  }
}

/** Polls the repository's jobs until none is queued or running (an import's follow-ups), and returns them. */
export async function settleJobs(http: ReturnType<typeof api>, slug: string, token: string): Promise<Job[]> {
  for (;;) {
    const jobs = (await http.get<Job[]>(`/${slug}/jobs?limit=100`, token)).body
    if (jobs.every((job) => !['queued', 'running'].includes(job.status))) return jobs
    await Bun.sleep(20)
  }
}

/** Polls the repository's jobs until `done` holds of them, and returns them; fails after `timeoutMs`. */
export async function jobsWhen(
  http: ReturnType<typeof api>,
  slug: string,
  token: string,
  done: (jobs: Job[]) => boolean,
  timeoutMs = 30_000,
): Promise<Job[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const jobs = (await http.get<Job[]>(`/${slug}/jobs?limit=100`, token)).body
    if (done(jobs)) return jobs
    if (Date.now() > deadline)
      throw new Error(
        `the jobs of ${slug} never came to the state waited for: ${JSON.stringify(jobs.map((job) => [job.kind, job.status]))}`,
      )
    await Bun.sleep(20)
  }
}

/** The graph's write service and the near-duplicate finder a job's services carry (src/job-thread.ts builds the same), over a test server's stores. */
export function jobWrites(
  context: AppContext,
  enqueue: JobServices['enqueue'],
): Pick<JobServices, 'writes' | 'nearFacts'> {
  return {
    writes: graphWrites({
      pools: context.pools,
      blobs: context.blobs,
      log: context.log,
      baseUrl: context.baseUrl,
      embeddingChanged: embeddingQueue({ enqueue }),
      graphChanged: (repositoryId) => context.repositories.graphChanged(repositoryId),
    }),
    nearFacts: nearFactFinder({
      pools: context.pools,
      vectors: context.vectors,
      embedder: context.embedder,
      similarity: context.config.factMergeSimilarity,
    }),
  }
}
