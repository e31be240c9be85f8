// SIGKILL while a `kgs serve` runs a process_source job over a repository's sources: each source
// is written in one transaction, so the killed instance leaves every source either processed
// whole or untouched, and once its lease runs out the next instance retries the job, whose
// finished sources add nothing. The graph is then the one an uninterrupted run makes of the same
// documents in another repository.
import { describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, registerAccount } from '../helpers/api.ts'
import { dumpGraph } from '../helpers/graph-dump.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { readStoppedInstance, serveInstances } from '../helpers/imports.ts'
import { startServerProcess } from '../helpers/server.ts'
import { openBlobStore } from '../../src/blobs/open.ts'
import { VectorStore } from '../../src/vectors/store.ts'
import type { Job } from '../../src/jobs/queue.ts'

const SOURCES = 40
/** Files one ingest request may carry. */
const FILES_PER_REQUEST = 20
/** Sections per document: enough that drawing and writing a source takes a while, so the kill lands between sources. */
const SECTIONS = 400

/** Document `n`: sentences of its own, and one every document says (a fact merged across sources). */
const document = (n: number) =>
  Array.from(
    { length: SECTIONS },
    (_, i) =>
      `## Unit ${n}-${i}\n\nThe cooling loop of plant ${n} carries river water past turbine ${i}. Engineers at plant ${n} inspect turbine ${i} every week.${i === 0 ? ' The river water returns to the river cooler than the law allows.' : ''}\n`,
  ).join('\n')

type Http = ReturnType<typeof api>

/** A new repository of the documents, parsed (not processed): its id and slug. */
async function parsedRepository(http: Http, token: string, name: string) {
  const repo = (await http.post('/api/v1/repositories', { name }, token)).body as { id: string; slug: string }
  for (let first = 0; first < SOURCES; first += FILES_PER_REQUEST) {
    const form = new FormData()
    form.append('process', 'false')
    for (let n = first; n < first + FILES_PER_REQUEST; n++)
      form.append('file', new File([document(n)], `plant-${n}.md`, { type: 'text/markdown' }))
    const added = await http.call<{ jobs: { id: string }[] }>('POST', `/${repo.slug}/ingest`, { raw: form, token })
    expect(added.status).toBe(202)
    for (const job of added.body.jobs)
      expect((await waitForJob(http, `/${repo.slug}/jobs/${job.id}`, token)).status).toBe('succeeded')
  }
  return repo
}

/** The source the job is at, and of how many, from its progress phase ("extracting (source 3 of 20)"). */
const at = (job: Job) => {
  const match = /\(source (\d+) of (\d+)\)$/.exec(job.progress.phase)
  return match ? { source: Number(match[1]), of: Number(match[2]) } : undefined
}

describe(`SIGKILL during the processing of sources (${BACKEND})`, () => {
  const instances = serveInstances('kgs-process-kill-')

  // Its time: two instances started, and two repositories of documents read and processed.
  test('leaves each source processed whole or untouched, and the retried job makes the graph an uninterrupted run makes', async () => {
    const { env } = instances
    const kgs = await startServerProcess(env)
    const http = api(kgs.url)
    const owner = await registerAccount(http)
    const killed = await parsedRepository(http, owner.token, 'Killed processing')
    const started = await http.post<Job>(`/${killed.slug}/process`, undefined, owner.token)
    expect(started.status).toBe(202)
    const path = `/${killed.slug}/jobs/${started.body.id}`
    // Some sources written, more not (the progress reaches the API within a second). The source
    // a phase names may be the one drawn while the one before it is written: past the fourth, two
    // are written.
    const midway = await waitForJob(http, path, owner.token, (job) => {
      const where = at(job)
      if (job.status !== 'running' && job.status !== 'queued') throw new Error(`the job ended first: ${job.status}`)
      return where !== undefined && where.source >= 4 && where.source <= where.of - 3
    })
    expect(at(midway)!.of).toBe(SOURCES)
    expect(await kgs.stop('SIGKILL')).not.toBe(0)

    const left = await readStoppedInstance(env, async (pools) => {
      const sql = await pools.forRepository(killed.id)
      const sources = await sql<{ status: string; citations: number }[]>`
        SELECT status, (SELECT count(*)::int FROM fact_sources fs WHERE fs.source_id = s.id) AS citations FROM sources s`
      const [job] = await pools.system`SELECT status, attempts FROM jobs WHERE id = ${started.body.id}`
      return { sources, job }
    })
    expect(left.job).toEqual({ status: 'running', attempts: 1 })
    const processed = left.sources.filter((s) => s.status === 'processed')
    const untouched = left.sources.filter((s) => s.status === 'parsed')
    expect(processed.length + untouched.length).toBe(SOURCES)
    expect(processed.length).toBeGreaterThanOrEqual(2)
    expect(untouched.length).toBeGreaterThanOrEqual(1)
    for (const source of processed) expect(source.citations).toBeGreaterThan(0)
    for (const source of untouched) expect(source.citations).toBe(0)

    const next = await startServerProcess(env)
    let reference: { id: string; slug: string }
    try {
      // A new port, so a new issuer: sign in again.
      const again = api(next.url)
      const { token } = (
        await again.post('/api/v1/auth/login', { email: owner.email, password: 'correct horse battery' })
      ).body
      const job = await waitForJob(again, path, token)
      expect(job).toMatchObject({ status: 'succeeded', attempts: 2 })
      // The sources the killed attempt wrote are found written: their facts are there already.
      const result = job.result as { sources: number; facts: { unchanged: number } }
      expect(result.sources).toBe(SOURCES)
      expect(result.facts.unchanged).toBeGreaterThan(0)

      reference = await parsedRepository(again, token, 'Uninterrupted processing')
      const run = await again.post<Job>(`/${reference.slug}/process`, undefined, token)
      expect((await waitForJob(again, `/${reference.slug}/jobs/${run.body.id}`, token)).status).toBe('succeeded')
    } finally {
      await next.stop()
    }

    const [retried, uninterrupted] = await readStoppedInstance(env, async (pools, config) => {
      const vectors = await VectorStore.open(config.lancedbUri)
      try {
        const stores = { blobs: openBlobStore(config), vectors }
        return await Promise.all(
          [killed, reference!].map(async (repo) => {
            // The vectors follow in their own jobs, which the stop may have cut short: the rows are compared.
            const { vectors: _, ...rows } = await dumpGraph(await pools.forRepository(repo.id), repo.id, stores)
            return rows
          }),
        )
      } finally {
        await vectors.close()
      }
    })
    expect(retried!.facts.length).toBeGreaterThan(SOURCES)
    expect(retried).toEqual(uninterrupted!)
  }, 180_000)
})
