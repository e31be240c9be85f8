// Messages between the main thread (runner.ts) and a job worker thread (src/job-thread.ts).
import type { Config } from '../config.ts'
import type { JobTiming } from './worker.ts'

export type ToWorker =
  | { type: 'start'; workerId: string; config: Config; timing: JobTiming; extraKindModules: string[] }
  /** New work may be waiting. */
  | { type: 'wake' }
  | { type: 'cancel'; jobId: string }
  /** Finish the job in hand, then exit. */
  | { type: 'stop' }
  /** Answer to a socket request. */
  | { type: 'socket'; requestId: number; path?: string; error?: string }

export type FromWorker =
  /** The embedded database `name` must be open; where is its socket? (only the main thread can open it) */
  | { type: 'socket'; requestId: number; name: string }
  /** Publish an event on the instance's bus (embedded: the bus lives in the main thread). */
  | { type: 'publish'; channel: string; payload: string }
  | { type: 'started' }
  | { type: 'failed'; error: string }
  | { type: 'stopped' }
