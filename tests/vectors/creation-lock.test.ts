// The vector-table creation lock keeps creations of one table apart across connections to the
// system database (as across processes and job threads), on both backends.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { CreationLock } from '../../src/vectors/creation-lock.ts'
import { sharedCreationLocks } from '../helpers/creation-locks.ts'
import { rejected } from '../helpers/promises.ts'

let shared: Awaited<ReturnType<typeof sharedCreationLocks>>
beforeAll(async () => {
  shared = await sharedCreationLocks(4)
})
afterAll(() => shared?.close())

/** The most creations of `table` running at once when each holder of `locks` creates it. */
async function mostAtOnce(locks: CreationLock[], table: string): Promise<number> {
  let running = 0
  let most = 0
  await Promise.all(
    locks.map((lock) =>
      lock(table, async () => {
        most = Math.max(most, ++running)
        // A creation takes turns of the event loop (LanceDB's I/O); the others get theirs meanwhile.
        for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve))
        running--
      }),
    ),
  )
  return most
}

test('holders on separate connections create one table one at a time; the answer of each creation is its own', async () => {
  expect(await mostAtOnce(shared.locks, 'facts_one')).toBe(1)
  // The same creations without the lock overlap: the measure can see overlap.
  const unlocked: CreationLock = (_table, create) => create()
  expect(await mostAtOnce([unlocked, unlocked, unlocked, unlocked], 'facts_one')).toBe(4)
  expect(await Promise.all(shared.locks.map((lock, i) => lock('facts_two', async () => i)))).toEqual([0, 1, 2, 3])
})

test('a creation that fails releases the lock and its error reaches the caller', async () => {
  const [first, second] = shared.locks
  expect(await rejected(first!('facts_three', async () => Promise.reject(new Error('creation failed'))))).toThrow(
    'creation failed',
  )
  expect(await second!('facts_three', async () => 'created')).toBe('created')
})
