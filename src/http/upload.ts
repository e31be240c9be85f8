// A bundle arriving in a request body (a registry push, an import upload), or the files of a
// multipart body (an import, added documents), streamed into blob storage as it comes. The chunks are checked on the way: the first two bytes must be gzip's
// magic number, a body that breaks off (the client went away) fails, and so does one arriving
// slower than the minimum rate (a client trickling bytes to hold the request open), so the
// store's put fails and keeps nothing. Each route turns these errors into its own HTTP answer.
import { Readable } from 'node:stream'
import Busboy from 'busboy'
import { LATE, within } from './deadline.ts'
import { HttpError } from './errors.ts'
import { ErrorBody } from './schemas.ts'
import { BlobTooLargeError } from '../blobs/store.ts'

class NotGzip extends Error {}
export class EmptyUpload extends Error {}
export class UploadInterrupted extends Error {
  constructor() {
    super('the upload broke off before the bundle was complete')
  }
}
class UploadTooSlow extends Error {
  constructor(pace: UploadPace) {
    super(
      `the upload arrived slower than ${pace.minBytesPerSecond} bytes per second over ${pace.windowMs / 1000} s and was cut off`,
    )
  }
}

/** The slowest an upload may arrive: at least minBytesPerSecond, averaged over each window. */
export interface UploadPace {
  minBytesPerSecond: number
  windowMs: number
}

/**
 * The chunks of a request body as they arrive; a body that breaks off fails as
 * UploadInterrupted, one slower than `pace` as UploadTooSlow. A window's clock runs only while
 * the client is waited for, not while the consumer (the store) takes its time.
 */
export async function* requestChunks(body: ReadableStream<Uint8Array>, pace: UploadPace): AsyncGenerator<Uint8Array> {
  const reader = body.getReader()
  const needed = (pace.minBytesPerSecond * pace.windowMs) / 1000
  let waited = 0
  let received = 0
  // A read outlasting its window stays pending into the next one.
  let pending: ReturnType<typeof reader.read> | undefined
  try {
    for (;;) {
      pending ??= reader.read()
      const started = performance.now()
      let next: Awaited<typeof pending> | typeof LATE
      try {
        next = await within(pending, pace.windowMs - waited)
      } catch {
        throw new UploadInterrupted()
      }
      waited += performance.now() - started
      if (next !== LATE) {
        pending = undefined
        if (next.done) return
        received += next.value.byteLength
        yield next.value
      }
      if (waited >= pace.windowMs) {
        if (received < needed) throw new UploadTooSlow(pace)
        waited = received = 0
      }
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

/**
 * The error answers of a route that takes an upload: refused or unknown (400, 401, 403, 404),
 * arriving too slowly (408), past its limit (413), of another type (415).
 */
export const UPLOAD_ERRORS = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  408: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
}

/** How a route words the refusals of an upload it could not store. */
export interface UploadRefusals {
  /** 413: past the route's limit. */
  tooLarge: string
  /** Not gzip: 415 where the body's type is the problem (a push), 400 where the file is (an import); absent where any bytes do. */
  notGzip?: HttpError
  /** 400: no bytes at all. */
  empty: string
}

/** The HTTP answer for an upload that could not be stored; an unknown error as it is (a 500). */
export function uploadError(error: unknown, refusals: UploadRefusals): unknown {
  if (error instanceof BlobTooLargeError) return new HttpError(413, refusals.tooLarge)
  if (error instanceof NotGzip && refusals.notGzip) return refusals.notGzip
  if (error instanceof EmptyUpload) return new HttpError(400, refusals.empty)
  if (error instanceof UploadInterrupted) return new HttpError(400, error.message)
  if (error instanceof UploadTooSlow) return new HttpError(408, error.message, { connection: 'close' })
  return error
}

/** A multipart body being parsed as it arrives; `close` stops reading it. */
export interface MultipartUpload {
  form: Busboy.Busboy
  close(): void
}

/**
 * Parses a multipart request body as it arrives at `pace` (400 when its Content-Type is not a
 * multipart one busboy can read). A body that breaks off or trickles is handed to `onInputError`
 * and then ends the form with its error, else the form would wait for ever. The caller listens
 * to the form's events (in the same turn) and closes the upload when it is done with it.
 */
export function multipartUpload(
  request: Request,
  pace: UploadPace,
  { limits, onInputError }: { limits?: Busboy.Limits; onInputError?: (error: Error) => void } = {},
): MultipartUpload {
  let form: Busboy.Busboy
  try {
    form = Busboy({ headers: { 'content-type': request.headers.get('content-type') ?? '' }, limits })
  } catch (error) {
    throw new HttpError(400, `malformed multipart body: ${(error as Error).message}`)
  }
  const input = Readable.from(requestChunks(request.body!, pace))
  input.on('error', (error) => {
    onInputError?.(error)
    form.destroy(error)
  })
  input.pipe(form)
  return {
    form,
    close() {
      input.unpipe(form)
      input.destroy()
    },
  }
}
