// argon2id through Bun.password (Bun's defaults: 64 MiB, t=2). Unknown e-mails are checked
// against a dummy hash so that login takes as long whether or not the account exists.
import { availableParallelism } from 'node:os'

export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 256

/**
 * Hashes in flight at once; the rest wait their turn here. Bun runs them on its worker pool (a
 * thread per core), which WebCrypto shares: unbounded, a burst of logins queued there in front of
 * every access token signed or verified, and a request with a fresh token waited behind all of
 * them (scripts/bench/load.ts: users/me p99 5.6-7.2 s; 58-190 ms with this). One pool thread
 * stays free for that work, and each hash in flight holds 64 MiB.
 */
const HASHES_AT_ONCE = Math.max(1, availableParallelism() - 1)
let hashing = 0
const waiting: (() => void)[] = []

async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (hashing < HASHES_AT_ONCE) hashing++
  else await new Promise<void>((resolve) => waiting.push(resolve))
  try {
    return await work()
  } finally {
    // The slot passes straight to the next in line, if any.
    const next = waiting.shift()
    if (next) next()
    else hashing--
  }
}

export function hashPassword(password: string): Promise<string> {
  return inTurn(() => Bun.password.hash(password, { algorithm: 'argon2id' }))
}

let dummyHash: Promise<string> | undefined

/** Verifies `password` against `hash`, or against a dummy hash (always false) when there is none. */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  if (hash !== undefined) return inTurn(() => Bun.password.verify(password, hash))
  dummyHash ??= hashPassword(crypto.randomUUID())
  const dummy = await dummyHash
  await inTurn(() => Bun.password.verify(password, dummy))
  return false
}
