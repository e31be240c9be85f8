// Blobs (images, source bodies, export temp files, registry bundles) go through one small
// interface: a directory under DATA_DIR by default, an S3-compatible bucket when S3_BUCKET is
// set. Bodies stream through in bounded memory, so multi-gigabyte bundles are fine; only get()
// holds a whole blob. The layout of keys is up to the callers.
import { describeError, type Logger } from '../log.ts'
import { GarbageMeter } from '../memory.ts'

export type BlobBody = Uint8Array | string | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>

export interface PutOptions {
  /** The put fails with BlobTooLargeError, storing nothing, as soon as the body passes this size. */
  maxBytes?: number
  /** Kept by S3 (for clients reading the bucket directly); the local store ignores it. */
  contentType?: string
}

/**
 * Keys are paths: segments of `[A-Za-z0-9._-]` joined by `/`, at most 1024 characters (on S3
 * S3_PREFIX counts too); see assertValidKey. A key cannot also be the folder of other keys (`a`
 * and `a/b`): a filesystem cannot hold both, so the local store refuses such a put with
 * InvalidBlobKeyError (S3 would accept it; do not rely on that).
 */
export interface BlobStore {
  /** Atomic: readers never see a partial blob; on any failure (incl. maxBytes exceeded) nothing is left behind and a previous blob under the key stays. */
  put(key: string, body: BlobBody, options?: PutOptions): Promise<{ bytes: number }>
  /** The whole blob in memory: for small blobs only; use stream() for anything large. */
  get(key: string): Promise<Uint8Array | undefined>
  stream(key: string): Promise<ReadableStream<Uint8Array> | undefined>
  /**
   * The blob as an HTTP response body. Bun drops a Content-Length given with a stream body and
   * sends it chunked (oven-sh/bun#10507), but sends a file body with its length (sendfile), so
   * a store that has files hands one out; others give their stream.
   */
  responseBody(key: string): Promise<Blob | ReadableStream<Uint8Array> | undefined>
  stat(key: string): Promise<{ bytes: number } | undefined>
  /** Idempotent. */
  delete(key: string): Promise<void>
  /** Deletes every blob whose key starts with `prefix` (never empty); returns how many. */
  deletePrefix(prefix: string): Promise<number>
  /** Replaces `to`; BlobNotFoundError if `from` is missing. */
  move(from: string, to: string): Promise<void>
  /** Keys starting with `prefix` (a plain string prefix, as in S3: 'a' matches 'ab/c'), sorted. */
  list(prefix: string): AsyncIterable<string>
}

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob exceeds ${maxBytes} bytes`)
  }
}

export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`blob ${key} not found`)
  }
}

export class InvalidBlobKeyError extends Error {}

/** Every blob of a repository (images, bodies) lives under this prefix, and goes with it. */
export const repositoryBlobPrefix = (repositoryId: string) => `repositories/${repositoryId}/`

export const MAX_KEY_LENGTH = 1024
/**
 * 255 is a file name's limit on common filesystems. No leading dot: that rules out `.` and `..`,
 * hidden files, and the local store's own `.tmp` folder.
 */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/

export function isValidKey(key: string): boolean {
  return key.length > 0 && key.length <= MAX_KEY_LENGTH && key.split('/').every((segment) => SEGMENT.test(segment))
}

export function assertValidKey(key: string): void {
  if (!isValidKey(key)) throw new InvalidBlobKeyError(`invalid blob key ${describeKey(key)}`)
}

/** A list prefix is empty, a key, or a key followed by `/`. */
export function assertValidPrefix(prefix: string): void {
  if (prefix !== '' && !isValidKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix)) {
    throw new InvalidBlobKeyError(`invalid blob key prefix ${describeKey(prefix)}`)
  }
}

/** Quoted and cut short: keys are not secret, but a rejected one may be long or odd. */
export function describeKey(key: string): string {
  return JSON.stringify(key.length > 100 ? `${key.slice(0, 100)}…` : key)
}

const encoder = new TextEncoder()

/** The body as chunks; fails with BlobTooLargeError as soon as more than maxBytes have come. */
export async function* bodyChunks(body: BlobBody, maxBytes = Infinity): AsyncGenerator<Uint8Array> {
  const source: AsyncIterable<Uint8Array> | Iterable<Uint8Array> =
    typeof body === 'string'
      ? [encoder.encode(body)]
      : body instanceof Uint8Array
        ? [body]
        : body instanceof Blob
          ? body.stream()
          : body
  let bytes = 0
  const garbage = new GarbageMeter()
  // Leaving the loop by a throw cancels a stream source, so its producer stops too.
  for await (const chunk of source) {
    // The types rule this out, but an untyped stream of strings would otherwise slip past maxBytes.
    if (!(chunk instanceof Uint8Array)) throw new TypeError('a blob body must yield Uint8Array chunks')
    bytes += chunk.byteLength
    if (bytes > maxBytes) throw new BlobTooLargeError(maxBytes)
    garbage.add(chunk.byteLength)
    yield chunk
  }
}

/**
 * Deletes blobs no longer wanted (a refused upload, a deleted source's bytes, a failed push): a
 * failure is logged as `failure`, with the key, and not raised, for what they belonged to is gone
 * or refused either way.
 */
export async function discardBlobs(blobs: BlobStore, log: Logger, failure: string, ...keys: string[]): Promise<void> {
  for (const key of keys) {
    try {
      await blobs.delete(key)
    } catch (error) {
      log.error(failure, { key, ...describeError(error) })
    }
  }
}
