// An export whose process is killed (SIGKILL) in the middle of its pass leaves its scratch file
// (and on PostgreSQL the spools beside it) in DATA_DIR/tmp; once a server is started again, the job's next attempt removes it, writes the
// bundle whole, and leaves no file behind either.
import { expect, test, describe } from 'bun:test'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { BACKEND } from '../../helpers/backend.ts'
import { api, registerAccount } from '../../helpers/api.ts'
import { readStoppedInstance, serveInstances } from '../../helpers/imports.ts'
import { waitForJob } from '../../helpers/jobs.ts'
import { startServerProcess } from '../../helpers/server.ts'
import { loadConfig } from '../../../src/config.ts'
import { scratchDir, scratchFile } from '../../../src/bundle/scratch.ts'
import { generateGraph } from '../../../scripts/gen-graph.ts'

describe(`an export whose process is killed (${BACKEND})`, () => {
  const instances = serveInstances('kgs-export-kill-')

  test('leaves no scratch file once a server has started again, and the retry writes the whole bundle', async () => {
    const { env } = instances
    const dataDir = loadConfig(env).dataDir
    let kgs = await startServerProcess(env)
    const owner = await registerAccount(api(kgs.url))
    const repo = (await api(kgs.url).post('/api/v1/repositories', { name: 'Killed export' }, owner.token)).body as {
      id: string
      slug: string
    }
    await kgs.stop()
    // Enough rows that the pass takes a while (the file grows member by member).
    const facts = 20_000
    await readStoppedInstance(env, async (pools) =>
      generateGraph(await pools.forRepository(repo.id), repo.id, { facts, seed: 3 }),
    )

    kgs = await startServerProcess(env)
    let http = api(kgs.url)
    let { token } = (await http.post('/api/v1/auth/login', { email: owner.email, password: 'correct horse battery' }))
      .body
    const started = await http.post(`/${repo.slug}/export-graph`, { exported_at: '2026-01-02T03:04:05Z' }, token)
    expect(started.status).toBe(202)
    const path = `/${repo.slug}/jobs/${started.body.id}`
    // Killed once the first gzip members are in the file: rows are being read and written.
    const file = await scratchFile(dataDir, 'export', { id: started.body.id, attempt: 1 })
    // On PostgreSQL, also once a spool of the sections read ahead (export-prefetch.ts) is there.
    const spool = `${file}.fact_sources`
    const writing = () => existsSync(file) && statSync(file).size > 0 && (BACKEND !== 'postgres' || existsSync(spool))
    for (const deadline = Date.now() + 60_000; !writing(); await Bun.sleep(2)) {
      if (Date.now() > deadline) throw new Error('the export never started writing its file')
    }
    expect(await kgs.stop('SIGKILL')).not.toBe(0)
    const name = (path: string) => path.slice(path.lastIndexOf('/') + 1)
    const left = readdirSync(scratchDir(dataDir))
    expect(left).toContain(name(file))
    if (BACKEND === 'postgres') expect(left).toContain(name(spool))
    for (const other of left) expect(other.startsWith(name(file))).toBe(true)

    // The dead worker's lease runs out (JOB_LEASE), the job is queued again and retried.
    kgs = await startServerProcess(env)
    try {
      http = api(kgs.url)
      ;({ token } = (
        await http.post('/api/v1/auth/login', { email: owner.email, password: 'correct horse battery' })
      ).body)
      const job = await waitForJob(http, path, token, undefined, 120_000)
      expect(job.status).toBe('succeeded')
      // A retry; on a loaded machine a 2 s lease may lapse once more and make it a third attempt.
      expect(job.attempts).toBeGreaterThanOrEqual(2)
      expect((job.result as { counts: { facts: number } }).counts.facts).toBe(facts)
      expect(readdirSync(scratchDir(dataDir))).toEqual([])
    } finally {
      await kgs.stop()
    }
  }, 300_000)
})
