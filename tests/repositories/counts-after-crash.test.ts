// A process killed between a write's commit and the copy of its repository's counts leaves the
// system database's copy behind the repository's figures; the next process that uses the
// repository copies them again, without waiting for another write.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { firstProcess, restarted } from '../helpers/restarts.ts'
import type { Instance } from '../helpers/server.ts'

let instance: Instance

beforeAll(async () => {
  instance = await instanceEnvironment()
})
afterAll(() => instance.cleanup())

describe(`repository counts after a crash (${BACKEND})`, () => {
  test("a copy a crash left behind is made again at the repository's first use by the next process", async () => {
    const first = await firstProcess(instance)
    const { id, slug } = first.repository
    // What the killed process left: the write committed, its copy never queued.
    const sql = await first.server.context.pools.forRepository(id)
    await sql`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, 'committed before the crash')`
    await first.server.stop()

    await restarted(instance, first.owner, {}, async (_, again, token) => {
      // The record first: it waits for a copy its instance queued, the list does not (so, asked at
      // once, the list could still answer the copy from before).
      const investigations = async () => {
        const record = await again.get(`/${slug}`, token)
        const list = await again.get('/api/v1/repositories', token)
        return [
          record.body.counts.investigations,
          list.body.find((r: { id: string }) => r.id === id).counts.investigations,
        ]
      }
      // Reading the record reads the copy alone: still the one from before the write.
      expect(await investigations()).toEqual([0, 0])
      expect((await again.get(`/${slug}/facts`, token)).status).toBe(200)
      // The record waits for the copy this instance queued when it opened the repository's database.
      expect(await investigations()).toEqual([1, 1])
    })
  })
})
