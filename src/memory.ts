// JavaScriptCore schedules collections by heap growth, and the ArrayBuffers of streamed chunks
// weigh little in that count: a push streamed through the server left about its own size of dead
// chunks in RSS until the next full collection. Code that streams bundles counts its bytes and
// asks for a collection every COLLECT_EVERY_BYTES.
//
// On the main thread, which serves requests, only a request (runtime.gc(false)): a synchronous full
// collection there would stall every request in flight. Job worker threads serve nobody and
// collect fully and more often: that is what bounds an export's peak (scripts/bench/graph.ts
// measures it, with requests alone and with full collections).
import { runtime } from './runtime/index.ts'
import { isMainThread } from 'node:worker_threads'

export const COLLECT_EVERY_BYTES = isMainThread ? 16 * 1024 * 1024 : 4 * 1024 * 1024

export class GarbageMeter {
  private sinceCollection = 0

  /** Counts streamed bytes; past the threshold, collects (or asks for a collection, on the main thread). */
  add(bytes: number): void {
    this.sinceCollection += bytes
    if (this.sinceCollection < COLLECT_EVERY_BYTES) return
    this.sinceCollection = 0
    runtime.gc(!isMainThread)
  }
}

/**
 * The chunks of `source` as they come, counted towards collections; `onTotal` hears the bytes
 * passed so far after each chunk (progress, sizes).
 */
export async function* metered(
  source: AsyncIterable<Uint8Array>,
  onTotal?: (bytes: number) => void,
): AsyncGenerator<Uint8Array> {
  const garbage = new GarbageMeter()
  let total = 0
  for await (const chunk of source) {
    total += chunk.byteLength
    garbage.add(chunk.byteLength)
    onTotal?.(total)
    yield chunk
  }
}
