// Multi-member gzip (RFC 1952 §2.2) compressed on threads of its own, beside the one that makes
// the bytes: the uncompressed stream is cut into members of MEMBER_BYTES, each compressed on a
// compression thread (src/gzip-thread.ts), and the members come out in order. Every gzip reader
// reads the concatenation as one stream (Go's compress/gzip, Python's gzip, Node's zlib,
// gzip(1)). Memory holds a few members per thread.
import { runtime } from '../../runtime/index.ts'
import { availableParallelism } from 'node:os'
import { GZIP_WORKER_URL } from '../../workers.ts'

/** What a compression thread is asked: one member's uncompressed bytes. */
export interface GzipRequest {
  id: number
  data: Uint8Array
  level: number
}
export type GzipResult = { id: number; member: Uint8Array } | { id: number; error: string }

/**
 * Uncompressed bytes per member. Each member starts with an empty dictionary, which costs a
 * little ratio at the start of each (about 0.1 % at 1 MiB); smaller members would spread the
 * work more evenly, larger ones hold more memory in flight.
 */
const MEMBER_BYTES = 1024 * 1024
/** Members in flight per thread: one compressing, one waiting, so no thread idles between two. */
const IN_FLIGHT_PER_THREAD = 2

interface Task {
  id: number
  data: Uint8Array
  resolve(member: Uint8Array): void
  reject(error: Error): void
}

/** A fixed set of compression threads, each handed the next waiting member when it is free. */
class GzipThreads {
  private readonly idle: Worker[] = []
  private readonly all: Worker[] = []
  private readonly waiting: Task[] = []
  private readonly running = new Map<Worker, Task>()
  private nextId = 0

  constructor(
    threads: number,
    private readonly level: number,
  ) {
    for (let i = 0; i < threads; i++) {
      const worker = runtime.startWorker(GZIP_WORKER_URL, { smol: true })
      worker.onmessage = (event: MessageEvent<GzipResult>) => this.done(worker, event.data)
      worker.onerror = (event) => this.failed(worker, new Error(`a compression thread failed: ${event.message}`))
      this.all.push(worker)
      this.idle.push(worker)
    }
  }

  compress(data: Uint8Array): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ id: this.nextId++, data, resolve, reject })
      this.dispatch()
    })
  }

  private dispatch(): void {
    while (this.idle.length > 0 && this.waiting.length > 0) {
      const worker = this.idle.pop()!
      const task = this.waiting.shift()!
      this.running.set(worker, task)
      const request: GzipRequest = { id: task.id, data: task.data, level: this.level }
      const whole = task.data.byteOffset === 0 && task.data.byteLength === task.data.buffer.byteLength
      worker.postMessage(request, whole ? [task.data.buffer as ArrayBuffer] : [])
    }
  }

  private done(worker: Worker, result: GzipResult): void {
    const task = this.running.get(worker)!
    this.running.delete(worker)
    this.idle.push(worker)
    if ('error' in result) task.reject(new Error(`gzip failed: ${result.error}`))
    else task.resolve(result.member)
    this.dispatch()
  }

  private failed(worker: Worker, error: Error): void {
    this.running.get(worker)?.reject(error)
    this.running.delete(worker)
    for (const task of this.waiting.splice(0)) task.reject(error)
  }

  close(): void {
    for (const worker of this.all) worker.terminate()
  }
}

/**
 * Compression threads by default. The thread that feeds them encodes the rows at about half the
 * rate one thread compresses them at level 3, and PostgreSQL needs a core to send them: one
 * thread keeps up, a second is there where a core is spare, and more would only hold memory
 * (each thread has a heap of its own).
 */
const DEFAULT_THREADS = Math.min(2, Math.max(1, availableParallelism() - 1))

/**
 * The gzip members of `source`, in order. The threads (DEFAULT_THREADS unless `threads` says
 * otherwise) live as long as the iteration, and end with it however it ends.
 */
export async function* gzipMembers(
  source: AsyncIterable<Uint8Array>,
  options: { level?: number; threads?: number } = {},
): AsyncGenerator<Uint8Array> {
  const threadCount = options.threads ?? DEFAULT_THREADS
  const threads = new GzipThreads(threadCount, options.level ?? 6)
  const inFlight: Promise<Uint8Array>[] = []
  const submit = (data: Uint8Array) => {
    const member = threads.compress(data)
    // Awaited in order below; one that fails while an earlier one is awaited must not go unhandled.
    member.catch(() => {})
    inFlight.push(member)
  }
  try {
    let parts: Uint8Array[] = []
    let size = 0
    for await (const chunk of source) {
      parts.push(chunk)
      size += chunk.byteLength
      if (size < MEMBER_BYTES) continue
      submit(Buffer.concat(parts, size))
      parts = []
      size = 0
      while (inFlight.length >= threadCount * IN_FLIGHT_PER_THREAD) yield await inFlight.shift()!
    }
    if (size > 0) submit(Buffer.concat(parts, size))
    while (inFlight.length > 0) yield await inFlight.shift()!
  } finally {
    threads.close()
  }
}
