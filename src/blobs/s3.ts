// Blobs as objects of an S3-compatible bucket, through the runtime's S3 client (Bun's; on Deno, one
// over fetch that behaves alike: src/runtime/fetch-s3.ts), under S3_PREFIX.
// A put hands Bun a streamed Response body: Bun sends a single PUT for a small body and a
// multipart upload otherwise, reading the body only as fast as parts go out (about
// partSize × queueSize ahead). When the body fails (a source error, or maxBytes passed), Bun
// rejects with that error and aborts the multipart upload; either way S3 publishes an object
// only on a complete PUT or CompleteMultipartUpload, so nothing partial is ever visible.
// (Bun 1.4's writer().end(error) completes the upload instead: not used.)
import type { Config } from '../config.ts'
import { runtime, type Runtime, type S3Client, type S3File } from '../runtime/index.ts'
import {
  BlobNotFoundError,
  InvalidBlobKeyError,
  MAX_KEY_LENGTH,
  assertValidKey,
  assertValidPrefix,
  bodyChunks,
  describeKey,
  isValidKey,
  type BlobBody,
  type BlobStore,
  type PutOptions,
} from './store.ts'

/** Deletes in flight at once while deleting a prefix (S3 has no prefix delete). */
const DELETE_CONCURRENCY = 16

const isMissing = (error: unknown) => (error as { code?: string }).code === 'NoSuchKey'

export class S3BlobStore implements BlobStore {
  private readonly client: S3Client
  /** '' or ending in '/'. */
  private readonly prefix: string

  /** `openClient`: the runtime's S3 client unless a test picks the other runtime's. */
  constructor(options: NonNullable<Config['s3']>, openClient: Runtime['s3'] = runtime.s3) {
    const { prefix, ...connection } = options
    // Unset credentials and region fall back to Bun's defaults (the AWS_* variables).
    this.client = openClient(connection)
    const trimmed = prefix.replace(/^\/+|\/+$/g, '')
    this.prefix = trimmed === '' ? '' : `${trimmed}/`
  }

  async put(key: string, body: BlobBody, options: PutOptions = {}): Promise<{ bytes: number }> {
    const file = this.file(key)
    const bytes = await file.write(
      new Response(readable(bodyChunks(body, options.maxBytes))),
      options.contentType ? { type: options.contentType } : {},
    )
    return { bytes }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await this.file(key).bytes()
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
  }

  async stream(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    // One GET: its first read tells a missing object from a present one.
    const reader = this.file(key).stream().getReader()
    let first: Awaited<ReturnType<typeof reader.read>>
    try {
      first = await reader.read()
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
    return new ReadableStream<Uint8Array>({
      start(controller) {
        if (first.done) controller.close()
        else controller.enqueue(first.value)
      },
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) controller.close()
        else controller.enqueue(value)
      },
      cancel: (reason) => reader.cancel(reason),
    })
  }

  /** Streamed, so chunked: an S3File body would be fetched by Bun on its own, outside this store's error handling. */
  responseBody(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    return this.stream(key)
  }

  async stat(key: string): Promise<{ bytes: number } | undefined> {
    const stats = await this.statObject(key)
    return stats && { bytes: stats.size }
  }

  async delete(key: string): Promise<void> {
    await this.deleteObject(this.objectKey(key))
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (prefix === '') throw new InvalidBlobKeyError('refusing to delete every blob (empty prefix)')
    assertValidPrefix(prefix)
    let deleted = 0
    let batch: string[] = []
    const flush = async () => {
      await Promise.all(batch.map((objectKey) => this.deleteObject(objectKey)))
      deleted += batch.length
      batch = []
    }
    for await (const objectKey of this.objectKeys(this.prefix + prefix)) {
      batch.push(objectKey)
      if (batch.length === DELETE_CONCURRENCY) await flush()
    }
    await flush()
    return deleted
  }

  /** S3 has no rename: a streamed copy, then the source is deleted. `to` is replaced atomically; after a crash between the two steps both exist. */
  async move(from: string, to: string): Promise<void> {
    const stats = await this.statObject(from)
    assertValidKey(to)
    if (!stats) throw new BlobNotFoundError(from)
    if (from === to) return
    const source = await this.stream(from)
    if (!source) throw new BlobNotFoundError(from)
    await this.put(to, source, { contentType: stats.type })
    await this.delete(from)
  }

  async *list(prefix: string): AsyncGenerator<string> {
    assertValidPrefix(prefix)
    for await (const objectKey of this.objectKeys(this.prefix + prefix)) {
      const key = objectKey.slice(this.prefix.length)
      // Objects that others put under our prefix with keys we could not address are not ours.
      if (isValidKey(key)) yield key
    }
  }

  /** Every object key starting with `prefix`, page by page, in S3's (sorted) order. */
  private async *objectKeys(prefix: string): AsyncGenerator<string> {
    let continuationToken: string | undefined
    do {
      const page = await this.client.list({ prefix, continuationToken })
      for (const { key } of page.contents ?? []) yield key
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined
    } while (continuationToken)
  }

  private async statObject(key: string): Promise<Awaited<ReturnType<S3File['stat']>> | undefined> {
    try {
      return await this.file(key).stat()
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
  }

  private async deleteObject(objectKey: string): Promise<void> {
    try {
      await this.client.delete(objectKey)
    } catch (error) {
      // S3 answers 204 for a missing key; some compatible servers answer 404.
      if (!isMissing(error)) throw error
    }
  }

  private objectKey(key: string): string {
    assertValidKey(key)
    if (this.prefix.length + key.length > MAX_KEY_LENGTH) {
      throw new InvalidBlobKeyError(
        `invalid blob key ${describeKey(key)}: with S3_PREFIX it passes S3's ${MAX_KEY_LENGTH} characters`,
      )
    }
    return this.prefix + key
  }

  private file(key: string): S3File {
    return this.client.file(this.objectKey(key))
  }
}

/** A pull stream over the chunks: Bun reads it only as fast as the upload goes. */
function readable(chunks: AsyncGenerator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await chunks.next()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel() {
      await chunks.return(undefined)
    },
  })
}
