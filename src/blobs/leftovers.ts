// Some blobs are written before the row that owns them: an upload before its import job, a
// registry push before its index row. A process that dies in between leaves a blob nothing
// refers to, which a sweeper must tell apart from one whose owner is about to be written. Such
// keys carry a UUIDv7, whose first 48 bits are its creation time in milliseconds: one older than
// the grace period has lost its owner for good.
import { runtime } from '../runtime/index.ts'

/** Far longer than any upload or push takes. */
export const LEFTOVER_GRACE_MS = 24 * 60 * 60 * 1000

/** A UUID for a key whose age a sweeper must be able to read. */
export const timestampedId = (): string => runtime.uuidv7()

const UUID_V7 = /([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/

/** Whether the key's UUIDv7 is older than the grace period (false for a key without one). */
export function isAbandoned(key: string, now = Date.now()): boolean {
  const match = UUID_V7.exec(key)
  if (!match) return false
  return now - parseInt(match[1]! + match[2]!, 16) > LEFTOVER_GRACE_MS
}
