// Memory bounded whatever users create (SECURITY.md, "Bounded by design", finding 1): on the
// embedded default each open repository database is a PGlite of 65-170 MB, so at most
// EMBEDDED_MAX_OPEN are open at once and an idle one is closed; a request for a closed one reopens
// it. 50 repositories, each written and read, keep the server's RSS under a stated bound.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { api, registerAccount } from '../helpers/api.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'

/** The bound stated in docs/limits.md for EMBEDDED_MAX_OPEN=4: the process at rest plus four PGlites at their largest. */
const RSS_BOUND_MB = 1_300
const REPOSITORIES = 50

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

describe.skipIf(BACKEND !== 'embedded')('embedded repository databases open on demand (embedded)', () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let server: ServerProcess
  beforeAll(async () => {
    instance = await instanceEnvironment()
    server = await startServerProcess({
      ...instance.env,
      JWT_SECRET: randomBytes(32).toString('hex'),
      WORKERS: '0',
      EMBEDDED_MAX_OPEN: '4',
      EMBEDDED_IDLE_TIMEOUT: '2s',
    })
  })
  afterAll(async () => {
    await server.stop()
    await instance.cleanup()
  })

  test(`${REPOSITORIES} repositories created and read, 10 of them reopened: RSS stays under ${RSS_BOUND_MB} MB`, async () => {
    const http = api(server.url)
    const owner = await registerAccount(http)
    const slugs: string[] = []
    let peak = 0
    for (let i = 0; i < REPOSITORIES; i++) {
      const created = await http.post('/api/v1/repositories', { name: `Bounded ${i}` }, owner.token)
      expect(created.status).toBe(201)
      slugs.push(created.body.slug)
      expect((await http.get(`/${created.body.slug}/facts`, owner.token)).status).toBe(200)
      peak = Math.max(peak, rssMb(server.process.pid))
    }
    // The first ones again, long closed by now: each reopens on demand and answers.
    for (const slug of slugs.slice(0, 10)) {
      expect((await http.get(`/${slug}/facts`, owner.token)).status).toBe(200)
      peak = Math.max(peak, rssMb(server.process.pid))
    }
    console.log(`peak RSS with ${REPOSITORIES} repositories, EMBEDDED_MAX_OPEN=4: ${Math.round(peak)} MB`)
    expect(peak).toBeLessThan(RSS_BOUND_MB)
  }, 300_000)
})
