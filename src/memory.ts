// JavaScriptCore schedules collections by heap growth, and the ArrayBuffers of streamed chunks
// weigh little in that count: a 110 MB push streamed through the server left about 110 MB of dead
// chunks in RSS until the next full collection (measured: +113 MB peak; +23 MB with this).
// Code that streams bundles counts its bytes and asks for a collection every
// COLLECT_EVERY_BYTES; Bun.gc(false) only requests one, it does not block.
export const COLLECT_EVERY_BYTES = 16 * 1024 * 1024

export class GarbageMeter {
  private sinceCollection = 0

  /** Counts streamed bytes; past the threshold, requests a collection. */
  add(bytes: number): void {
    this.sinceCollection += bytes
    if (this.sinceCollection < COLLECT_EVERY_BYTES) return
    this.sinceCollection = 0
    Bun.gc(false)
  }
}
