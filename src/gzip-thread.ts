// Entry point of a compression thread (src/bundle/export/gzip-members.ts): each message is the
// uncompressed bytes of one gzip member, compressed here beside the thread that encodes them.
import { gzipSync } from 'node:zlib'
import type { GzipRequest, GzipResult } from './bundle/export/gzip-members.ts'

declare const self: Worker

/** The bytes' own buffer, to move instead of copy, when they fill all of it. */
const movable = (bytes: Uint8Array) =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? [bytes.buffer as ArrayBuffer] : []

self.onmessage = (event: MessageEvent<GzipRequest>) => {
  const { id, data, level } = event.data
  let result: GzipResult
  try {
    // Node's gzip header (no name, mtime 0) and a fixed level: the same input, the same member.
    result = { id, member: gzipSync(data, { level }) }
  } catch (error) {
    result = { id, error: (error as Error).message ?? String(error) }
  }
  self.postMessage(result, 'member' in result ? movable(result.member) : [])
}
