// A bundle arriving in a request body (a registry push, an import upload), streamed into blob
// storage as it comes. The chunks are checked on the way: the first two bytes must be gzip's
// magic number, and a body that breaks off (the client went away) fails, so the store's put
// fails and keeps nothing. Each route turns these errors into its own HTTP answer.

export class NotGzip extends Error {}
export class EmptyUpload extends Error {}
export class UploadInterrupted extends Error {
  constructor() {
    super('the upload broke off before the bundle was complete')
  }
}

/** The chunks of a request body as they arrive; a body that breaks off fails as UploadInterrupted. */
export async function* requestChunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader()
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>
      try {
        next = await reader.read()
      } catch {
        throw new UploadInterrupted()
      }
      if (next.done) return
      yield next.value
    }
  } finally {
    // Ends our read of the request when the store stops early (limit, not gzip); a no-op after the end.
    reader.cancel().catch(() => {})
  }
}

/** The chunks of an upload, refused (NotGzip, EmptyUpload) unless its first two bytes are gzip's magic number. */
export async function* gzipChunks(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const magic: number[] = []
  for await (const chunk of chunks) {
    for (let i = 0; magic.length < 2 && i < chunk.byteLength; i++) magic.push(chunk[i]!)
    if ((magic.length >= 1 && magic[0] !== 0x1f) || (magic.length === 2 && magic[1] !== 0x8b)) throw new NotGzip()
    if (chunk.byteLength > 0) yield chunk
  }
  if (magic.length === 0) throw new EmptyUpload()
  if (magic.length < 2) throw new NotGzip()
}
