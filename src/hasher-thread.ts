// A password-hashing thread (see src/accounts/passwords.ts): argon2id runs here synchronously, one hash at a
// time, at a lower CPU priority than the threads that serve requests.
import { runtime } from './runtime/index.ts'
import { readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'
import type { HashRequest, HashResult } from './accounts/passwords.ts'

declare const self: Worker

/**
 * The niceness of this thread. Under contention Linux gives a nice-10 thread about a tenth of the
 * CPU time of a nice-0 one (weights 110 and 1,024), so hashing takes the cores that kgs's other
 * threads leave idle. Only within the process's scheduling group, though: a PostgreSQL on the same
 * machine is in another, and groups share the CPU evenly.
 */
const HASHING_NICENESS = 10

/**
 * On Linux setpriority(PRIO_PROCESS, tid) sets one thread's niceness; /proc/thread-self names this
 * thread. Elsewhere the thread keeps its priority: hashing still works, only less politely.
 */
function lowerThisThreadsPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    // A process started at a higher niceness keeps it (and lowering it would need privileges).
    if (Number.isInteger(tid) && tid > 0 && getPriority(tid) < HASHING_NICENESS) setPriority(tid, HASHING_NICENESS)
  } catch {
    // Not Linux, or /proc is not mounted.
  }
}

lowerThisThreadsPriority()

self.onmessage = async (event: MessageEvent<HashRequest>) => {
  const request = event.data
  let result: HashResult
  try {
    result = {
      value:
        request.hash === undefined
          ? await runtime.hashPassword(request.password, request.cost)
          : await runtime.verifyPassword(request.password, request.hash),
    }
  } catch (error) {
    result = { error: (error as Error).message ?? String(error) }
  }
  self.postMessage(result)
}
