// The queue of embed_changes jobs the write API calls after each write of facts or concepts:
// writes that finish together ask the job queue once, and a write that committed after a
// question was asked does not rely on its answer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import type { TestServer } from '../helpers/server.ts'
import { embeddingQueue } from '../../src/vectors/embed-jobs.ts'

let server: TestServer
let repository: { id: string; slug: string }

beforeAll(async () => {
  // No workers: the queued jobs stay queued, so the queue's own coalescing is what is seen.
  ;({
    server,
    repositories: { repository },
  } = await fixture({
    server: { env: { WORKERS: '0' } },
    users: { owner: 'member' },
    repositories: { repository: { by: 'owner' } },
  }))
})
afterAll(() => server.stop())

/** The real job queue, with each question it is asked recorded, held until `release` when `hold` is set. */
function recordingQueue() {
  const asked: { at: number; queued: boolean }[] = []
  let held: (() => void)[] | undefined
  return {
    asked,
    hold: () => void (held = []),
    release: () => {
      for (const go of held ?? []) go()
      held = undefined
    },
    jobs: {
      enqueue: async (
        request: Parameters<typeof server.context.jobs.enqueue>[0] & { coalesce: { afterMs: number } },
      ) => {
        const at = performance.now()
        if (held) await new Promise<void>((go) => held!.push(go))
        const job = await server.context.jobs.enqueue(request)
        asked.push({ at, queued: job !== undefined })
        return job
      },
    },
  }
}

describe(`embedding queue (${BACKEND})`, () => {
  test("sixteen writes finishing together ask once; later ones within the job's delay not at all", async () => {
    const queue = recordingQueue()
    const changed = embeddingQueue(queue.jobs)
    await Promise.all(Array.from({ length: 16 }, () => changed(repository.id, ['facts'])))
    expect(queue.asked).toHaveLength(1)
    await changed(repository.id, ['facts'])
    expect(queue.asked).toHaveLength(1)
  })

  test('a write that committed while a question was out asks again once it is answered', async () => {
    const queue = recordingQueue()
    const changed = embeddingQueue(queue.jobs)
    queue.hold()
    // The first write's question finds the previous test's job queued: no new job, no cover.
    const first = changed(repository.id, ['facts'])
    await Bun.sleep(10)
    const second = changed(repository.id, ['facts'])
    queue.release()
    await Promise.all([first, second])
    expect(queue.asked.map((q) => q.queued)).toEqual([false, false])
  })
})
