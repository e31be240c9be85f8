// argon2id through the runtime (src/runtime/) at the configured cost (PASSWORD_HASH_MEMORY,
// PASSWORD_HASH_TIME), on threads of its own at a lower CPU priority. Unknown e-mails are checked
// against a dummy hash so that login takes as long whether or not the account exists.
import { runtime } from '../runtime/index.ts'
import { availableParallelism } from 'node:os'
import type { PasswordCost } from '../config.ts'
import { HttpError } from '../http/errors.ts'
import { HASHER_WORKER_URL } from '../workers.ts'

export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 256

/** What the main thread asks of a hashing thread: a hash of `password` at `cost`, or a verification against `hash`. */
export type HashRequest =
  | { password: string; cost: PasswordCost; hash?: undefined }
  | { password: string; hash: string }
export type HashResult = { value: string | boolean; error?: undefined } | { error: string }

/**
 * Hashing threads at most: a quarter of the cores, at least one. A hash takes tens of milliseconds
 * of a core and streams its memory cost (19 MiB by default) through memory, so a burst of sign-ins keeps cores busy
 * for seconds. The threads lower their own priority (src/hasher-thread.ts), but that does not keep
 * the reads fast: a hashing thread on every core slowed the reads of scripts/bench/open-load.ts
 * as much as it would at full priority. With a quarter, hashing takes at most that share of the
 * machine, and sign-ins queue instead (up to PASSWORD_QUEUE_MAX, then 503).
 */
export const HASHER_THREADS = Math.max(1, Math.floor(availableParallelism() / 4))
/** An idle hashing thread ends after this long; each holds a JavaScript heap of its own. */
const HASHER_IDLE_MS = 30_000
/**
 * Hashes that may wait per hashing thread unless PASSWORD_QUEUE_MAX says otherwise: 256 clear in
 * about half a minute (docs/benchmarks.md). Past the limit a flood of sign-ins is refused at once
 * (503) instead of holding its requests, and their memory, ever longer.
 */
const DEFAULT_WAITING_PER_THREAD = 256
/** Seconds a refused sign-in is told to wait. */
const BUSY_RETRY_AFTER = 5

let waitingLimit = DEFAULT_WAITING_PER_THREAD * HASHER_THREADS

/** Sets how many hashes may wait (PASSWORD_QUEUE_MAX); unset, 256 per hashing thread. */
export function limitWaitingHashes(limit: number | undefined): void {
  waitingLimit = limit ?? DEFAULT_WAITING_PER_THREAD * HASHER_THREADS
}

/** 503 with Retry-After: the hashing queue is full. */
export class HashingBusyError extends HttpError {
  constructor() {
    super(503, 'too many sign-ins in progress; try again shortly', { 'retry-after': String(BUSY_RETRY_AFTER) })
  }
  readonly retryAfterSeconds = BUSY_RETRY_AFTER
}

interface Hasher {
  worker: Worker
  idleTimer?: Timer
}

const idleHashers: Hasher[] = []
const waitingForHasher: ((hasher: Hasher) => void)[] = []
let hasherCount = 0

function startHasher(): Hasher {
  hasherCount++
  const worker = runtime.startWorker(HASHER_WORKER_URL, { smol: true })
  // Idle hashing threads must not keep the process alive.
  runtime.unref(worker)
  return { worker }
}

function acquireHasher(): Promise<Hasher> {
  const idle = idleHashers.pop()
  if (idle) {
    clearTimeout(idle.idleTimer)
    return Promise.resolve(idle)
  }
  if (hasherCount < HASHER_THREADS) return Promise.resolve(startHasher())
  if (waitingForHasher.length >= waitingLimit) return Promise.reject(new HashingBusyError())
  return new Promise((resolve) => waitingForHasher.push(resolve))
}

function releaseHasher(hasher: Hasher): void {
  const next = waitingForHasher.shift()
  if (next) return next(hasher)
  hasher.idleTimer = setTimeout(() => {
    idleHashers.splice(idleHashers.indexOf(hasher), 1)
    endHasher(hasher)
  }, HASHER_IDLE_MS)
  runtime.unref(hasher.idleTimer)
  idleHashers.push(hasher)
}

/** Ends a thread; one that failed is replaced for the next in line, if any. */
function endHasher(hasher: Hasher): void {
  hasher.worker.terminate()
  hasherCount--
  const next = waitingForHasher.shift()
  if (next) next(startHasher())
}

/** Hashing threads running now (idle ones included). */
export const runningHashers = () => hasherCount

async function onHasher(request: HashRequest): Promise<string | boolean> {
  const hasher = await acquireHasher()
  let result: HashResult
  try {
    result = await new Promise<HashResult>((resolve, reject) => {
      hasher.worker.onmessage = (event: MessageEvent<HashResult>) => resolve(event.data)
      hasher.worker.onerror = (event) => reject(new Error(`the password-hashing thread failed: ${event.message}`))
      hasher.worker.postMessage(request)
    })
  } catch (error) {
    endHasher(hasher)
    throw error
  }
  releaseHasher(hasher)
  if (result.error !== undefined) throw new Error(`password hashing failed: ${result.error}`)
  return result.value
}

export async function hashPassword(password: string, cost: PasswordCost): Promise<string> {
  return (await onHasher({ password, cost })) as string
}

/** One dummy hash per cost, so that an unknown e-mail costs what a known one does. */
const dummyHashes = new Map<string, Promise<string>>()

/** Verifies `password` against `hash`, or against a dummy hash of `cost` (always false) when there is none. */
export async function verifyPassword(password: string, hash: string | undefined, cost: PasswordCost): Promise<boolean> {
  if (hash !== undefined) return (await onHasher({ password, hash })) as boolean
  const key = `${cost.memoryKiB},${cost.timeCost}`
  let dummy = dummyHashes.get(key)
  if (!dummy) {
    dummy = hashPassword(crypto.randomUUID(), cost)
    dummyHashes.set(key, dummy)
    dummy.catch(() => dummyHashes.delete(key))
  }
  await onHasher({ password, hash: await dummy })
  return false
}

const PHC_ARGON2ID = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/

/** Whether a stored hash was made otherwise than argon2id at `cost` (p=1): then it is re-hashed at the next sign-in. */
export function needsRehash(hash: string, cost: PasswordCost): boolean {
  const parameters = PHC_ARGON2ID.exec(hash)
  return (
    !parameters ||
    Number(parameters[1]) !== cost.memoryKiB ||
    Number(parameters[2]) !== cost.timeCost ||
    parameters[3] !== '1'
  )
}
