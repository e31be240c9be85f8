// Password hashing runs on threads of its own at a lower CPU priority (src/accounts/passwords.ts):
// what it answers, how many threads it uses, that they really are below the main thread, and
// the bound on the hashes waiting for them.
import { beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { parseEnv } from '../../src/config.ts'
import {
  HASHER_THREADS,
  HashingBusyError,
  hashPassword,
  limitWaitingHashes,
  runningHashers,
  verifyPassword,
} from '../../src/accounts/passwords.ts'
import { rejected } from '../helpers/promises.ts'

/** Niceness of each thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function threadNiceness(): Map<number, number> {
  const niceness = new Map<number, number>()
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    niceness.set(Number(tid), Number(fields[16]))
  }
  return niceness
}

/** The default cost (PASSWORD_HASH_MEMORY, PASSWORD_HASH_TIME unset). */
const COST = parseEnv({}).passwordCost

// The default bound, whatever a server started earlier in this process set.
beforeAll(() => limitWaitingHashes(undefined))

test('a hash is argon2id with Bun`s parameters and verifies its password only', async () => {
  const hash = await hashPassword('correct horse battery staple', COST)
  expect(hash).toStartWith('$argon2id$v=19$m=19456,t=2,p=1$')
  expect(await verifyPassword('correct horse battery staple', hash, COST)).toBe(true)
  expect(await verifyPassword('correct horse battery stapler', hash, COST)).toBe(false)
})

test('hashes made by Bun.password on the main thread (stored before) still verify', async () => {
  const stored = await Bun.password.hash('an older password', { algorithm: 'argon2id' })
  expect(await verifyPassword('an older password', stored, COST)).toBe(true)
  expect(await verifyPassword('another password', stored, COST)).toBe(false)
})

test('no account: the password is checked against a dummy hash and refused', async () => {
  expect(await verifyPassword('anything at all', undefined, COST)).toBe(false)
})

test('a malformed stored hash fails with an error, and the next verification still works', async () => {
  expect(await rejected(verifyPassword('password', 'not a hash', COST))).toThrow(/password hashing failed/)
  const hash = await hashPassword('password', COST)
  expect(await verifyPassword('password', hash, COST)).toBe(true)
})

test('a burst queues: every answer is right, on at most a quarter of the cores (at least one thread)', async () => {
  const cores = availableParallelism()
  const threads = Math.max(1, Math.floor(cores / 4))
  expect(HASHER_THREADS).toBe(threads)
  const hash = await hashPassword('burst password', COST)
  let most = 0
  const answers = await Promise.all(
    Array.from({ length: cores * 3 }, async (_, i) => {
      const answer = verifyPassword(i % 2 === 0 ? 'burst password' : `wrong ${i}`, hash, COST)
      most = Math.max(most, runningHashers())
      return answer
    }),
  )
  expect(answers).toEqual(Array.from({ length: cores * 3 }, (_, i) => i % 2 === 0))
  expect(most).toBeGreaterThanOrEqual(1)
  expect(most).toBeLessThanOrEqual(threads)
})

test.skipIf(process.platform !== 'linux')(
  'hashing threads run at niceness 10 (or the process`s own, if higher), the main thread at its own',
  async () => {
    const before = threadNiceness()
    await hashPassword('niceness', COST)
    const after = threadNiceness()
    const main = after.get(process.pid)
    expect(main).toBe(before.get(process.pid)!)
    const hashing = [...after].filter(([tid, nice]) => tid !== process.pid && nice === Math.max(10, main!))
    expect(hashing.length).toBeGreaterThanOrEqual(runningHashers())
  },
)

test('past the queue limit a hash is refused at once (503, Retry-After); those admitted complete', async () => {
  limitWaitingHashes(1)
  try {
    // One per hashing thread runs, one waits: the queue is full.
    const admitted = Array.from({ length: HASHER_THREADS + 1 }, (_, i) => hashPassword(`admitted ${i}`, COST))
    const refused = await hashPassword('one too many', COST).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(HashingBusyError)
    expect(refused).toMatchObject({
      status: 503,
      message: 'too many sign-ins in progress; try again shortly',
      headers: { 'retry-after': '5' },
    })
    for (const hash of await Promise.all(admitted)) expect(hash).toStartWith('$argon2id$')
    // Drained, the queue admits again.
    expect(await verifyPassword('one too many', await hashPassword('one too many', COST), COST)).toBe(true)
  } finally {
    limitWaitingHashes(undefined)
  }
})
