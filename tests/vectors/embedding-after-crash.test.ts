// A process killed between a fact's commit and the queueing of its embedding job leaves the fact
// marked for embedding with no job to take it; the next process that uses the repository queues
// one, unless one is queued already (by any instance: the job queue's coalescing).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { jobsWhen, waitForJob } from '../helpers/jobs.ts'
import { firstProcess, restarted } from '../helpers/restarts.ts'
import type { Instance } from '../helpers/server.ts'
import { queueMarkedEmbeddings } from '../../src/vectors/embed-jobs.ts'
import type { Job } from '../../src/jobs/queue.ts'

let instance: Instance
beforeAll(async () => {
  instance = await instanceEnvironment()
})
afterAll(() => instance.cleanup())

const embedChanges = (jobs: Job[]) => jobs.filter((job) => job.kind === 'embed_changes')

describe(`embedding after a crash (${BACKEND})`, () => {
  test("rows a crash left marked are queued for embedding at the repository's first use by the next process, once", async () => {
    // No workers: the job the write queues stays queued, to be removed as if never queued.
    const first = await firstProcess(instance)
    const { owner } = first
    const { id, slug } = first.repository
    const fact = await first.http.post(`/${slug}/facts`, { text: 'A fact written just before the crash.' }, owner.token)
    expect(fact.status).toBe(201)
    // What the killed process left: the fact and its mark committed, their job never queued.
    const system = first.server.systemSql()
    try {
      expect((await system`DELETE FROM jobs WHERE repository_id = ${id} AND kind = 'embed_changes'`).count).toBe(1)
    } finally {
      await system.end()
    }
    await first.server.stop()

    const queued = await restarted(instance, owner, { WORKERS: '0' }, async (server, http, token) => {
      expect(embedChanges((await http.get(`/${slug}/jobs`, token)).body)).toEqual([])
      expect((await http.get(`/${slug}/facts`, token)).status).toBe(200)
      const [job] = embedChanges(await jobsWhen(http, slug, token, (jobs) => embedChanges(jobs).length > 0))
      expect(job).toMatchObject({ status: 'queued' })
      // Another instance's first use, while that job waits: nothing more.
      await queueMarkedEmbeddings(server.context.jobs, await server.context.pools.forRepository(id), id)
      expect(embedChanges((await http.get(`/${slug}/jobs`, token)).body)).toEqual([job!])
      return job!
    })

    await restarted(instance, owner, { WORKERS: '1' }, async (server, http, token) => {
      const done = await waitForJob(http, `/${slug}/jobs/${queued.id}`, token)
      expect(done).toMatchObject({ status: 'succeeded', result: { kind: 'facts', embedded: 1, removed: 0 } })
      expect(await server.context.vectors.count(id, 'facts')).toBe(1)
    })
  })
})
