// An S3 client over fetch, requests signed (SigV4) by aws4fetch: the runtime S3 client where the
// runtime has none built in (Deno). It does what Bun's S3Client does for src/blobs/s3.ts, with
// Bun's defaults: the same S3_*/AWS_* variables for what the connection leaves unset, region
// us-east-1, path-style URLs, a body under one part size as a single PUT and a larger one as a
// multipart upload of 5 MiB parts, a few of them in flight while the body is read on; a failed
// body or part aborts the upload before the error is rethrown, so nothing partial is ever visible.
import { env } from 'node:process'
import { AwsClient } from 'aws4fetch'
import type { S3Client, S3Connection, S3File } from './types.ts'

/** S3's smallest part but the last, and Bun's part size. */
const PART_BYTES = 5 * 1024 * 1024
/** Parts uploading at once: the body is read at most this many parts ahead of S3. */
const PARTS_IN_FLIGHT = 4
/** Retries of a request answered 5xx or 429 (every body here is in memory, so each can be sent again). */
const RETRIES = 3

/** An error answered by S3, named and coded as Bun's: `code` is S3's error code (NoSuchKey, AccessDenied, …). */
class S3Error extends Error {
  override name = 'S3Error'
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

const setting = (value: string | undefined, name: string) => value ?? env[`S3_${name}`] ?? env[`AWS_${name}`]

export function fetchS3Client(connection: S3Connection): S3Client {
  const region = setting(connection.region, 'REGION') ?? 'us-east-1'
  const accessKeyId = setting(connection.accessKeyId, 'ACCESS_KEY_ID')
  const secretAccessKey = setting(connection.secretAccessKey, 'SECRET_ACCESS_KEY')
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw Object.assign(
      new Error(
        'S3 credentials missing: set S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)',
      ),
      { code: 'ERR_S3_MISSING_CREDENTIALS' },
    )
  }
  const signer = new AwsClient({
    accessKeyId,
    secretAccessKey,
    sessionToken: setting(undefined, 'SESSION_TOKEN'),
    service: 's3',
    region,
    retries: RETRIES,
  })
  const bucketUrl = `${(setting(connection.endpoint, 'ENDPOINT') ?? `https://s3.${region}.amazonaws.com`).replace(/\/+$/, '')}/${encodePath(connection.bucket)}`

  /** A signed request; any answer but 2xx becomes an S3Error. */
  const request = async (
    path: string,
    init: RequestInit & { query?: Record<string, string> } = {},
  ): Promise<Response> => {
    const { query, ...rest } = init
    const search = query
      ? `?${Object.entries(query)
          .map(([name, value]) =>
            value === '' ? encodeRfc3986(name) : `${encodeRfc3986(name)}=${encodeRfc3986(value)}`,
          )
          .join('&')}`
      : ''
    const response = await signer.fetch(`${bucketUrl}${path}${search}`, rest)
    if (!response.ok) throw await s3Error(response)
    return response
  }
  const objectPath = (key: string) => `/${encodePath(key)}`

  const file = (key: string): S3File => ({
    write: (body, options) => write(objectPath(key), body.body, options.type),
    bytes: async () => new Uint8Array(await (await request(objectPath(key))).arrayBuffer()),
    stream() {
      // The GET goes out when the stream is first pulled; its S3Error errors the stream, so the first read rejects with it (as Bun's does).
      let body: AsyncIterator<Uint8Array> | undefined
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          body ??= (await request(objectPath(key))).body?.[Symbol.asyncIterator]()
          const next = await body?.next()
          if (!next || next.done) controller.close()
          else controller.enqueue(next.value)
        },
        cancel: async () => void (await body?.return?.()),
      })
    },
    async stat() {
      const { headers } = await request(objectPath(key), { method: 'HEAD' })
      const lastModified = headers.get('last-modified')
      return {
        size: Number(headers.get('content-length') ?? 0),
        etag: headers.get('etag') ?? undefined,
        lastModified: lastModified ? new Date(lastModified) : undefined,
        type: headers.get('content-type') ?? undefined,
      }
    },
  })

  const write = async (
    path: string,
    body: ReadableStream<Uint8Array> | null,
    type: string | undefined,
  ): Promise<number> => {
    const chunks = body?.[Symbol.asyncIterator]()
    const headers: Record<string, string> = type ? { 'content-type': type } : {}
    const first = await readPart(chunks)
    if (first.done) {
      await (await request(path, { method: 'PUT', headers, body: first.bytes })).arrayBuffer()
      return first.bytes.byteLength
    }
    let uploadId: string
    try {
      const created = xmlValue(
        await (await request(path, { method: 'POST', headers, query: { uploads: '' } })).text(),
        'UploadId',
      )
      if (!created) throw new S3Error('MalformedXML', 'CreateMultipartUpload answered without an UploadId')
      uploadId = created
    } catch (error) {
      await chunks?.return?.().catch(() => {})
      throw error
    }
    const parts: Promise<string>[] = []
    let failed: { error: unknown } | undefined
    const upload = (bytes: Uint8Array<ArrayBuffer>) => {
      const part = request(path, {
        method: 'PUT',
        body: bytes,
        query: { partNumber: String(parts.length + 1), uploadId },
      }).then(async (response) => {
        await response.arrayBuffer()
        return response.headers.get('etag') ?? ''
      })
      // Noticed at the next part read (or by Promise.all): never an unhandled rejection.
      part.catch((error: unknown) => (failed ??= { error }))
      parts.push(part)
    }
    try {
      upload(first.bytes)
      let size = first.bytes.byteLength
      for (let last = false; !last; ) {
        if (parts.length >= PARTS_IN_FLIGHT) await parts[parts.length - PARTS_IN_FLIGHT]
        const part = await readPart(chunks)
        if (failed) throw failed.error
        last = part.done
        if (part.bytes.byteLength > 0) upload(part.bytes)
        size += part.bytes.byteLength
      }
      const etags = await Promise.all(parts)
      const manifest = etags
        .map((etag, index) => `<Part><PartNumber>${index + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
        .join('')
      const completed = await (
        await request(path, {
          method: 'POST',
          headers: { 'content-type': 'application/xml' },
          body: `<CompleteMultipartUpload>${manifest}</CompleteMultipartUpload>`,
          query: { uploadId },
        })
      ).text()
      // S3 may answer 200 and still fail the completion: the error is in the body.
      if (xmlValue(completed, 'Code') !== undefined)
        throw new S3Error(
          xmlValue(completed, 'Code')!,
          xmlValue(completed, 'Message') ?? 'CompleteMultipartUpload failed',
        )
      return size
    } catch (error) {
      // Stops the body (a source that failed has ended already).
      await chunks?.return?.().catch(() => {})
      await Promise.allSettled(parts)
      // The error that ended the write is the one to report; an upload whose abort failed is left to the bucket's lifecycle rules.
      await request(path, { method: 'DELETE', query: { uploadId } })
        .then((response) => response.arrayBuffer())
        .catch(() => {})
      throw error
    }
  }

  return {
    file,
    async list({ prefix, continuationToken }) {
      const query: Record<string, string> = { 'list-type': '2' }
      if (prefix) query.prefix = prefix
      if (continuationToken) query['continuation-token'] = continuationToken
      const page = await (await request('', { query })).text()
      const contents = [...page.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)].map(([, entry]) => ({
        key: xmlValue(entry!, 'Key') ?? '',
        size: Number(xmlValue(entry!, 'Size') ?? 0),
      }))
      return {
        contents,
        isTruncated: xmlValue(page, 'IsTruncated') === 'true',
        nextContinuationToken: xmlValue(page, 'NextContinuationToken'),
      }
    },
    async delete(key) {
      await (await request(objectPath(key), { method: 'DELETE' })).arrayBuffer()
    },
  }
}

/** The next part of the body: at least PART_BYTES, unless the body ends first (`done`). */
async function readPart(
  body: AsyncIterator<Uint8Array> | undefined,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; done: boolean }> {
  const chunks: Uint8Array[] = []
  let size = 0
  let done = body === undefined
  while (!done && size < PART_BYTES) {
    const next = await body!.next()
    if (next.done) done = true
    else {
      chunks.push(next.value)
      size += next.value.byteLength
    }
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { bytes, done }
}

async function s3Error(response: Response): Promise<S3Error> {
  const body = await response.text()
  // A HEAD answer has no body: the status alone tells.
  const code =
    xmlValue(body, 'Code') ??
    (response.status === 404 ? 'NoSuchKey' : response.status === 403 ? 'AccessDenied' : `HTTP${response.status}`)
  return new S3Error(code, xmlValue(body, 'Message') ?? `S3 answered ${response.status} ${response.statusText}`)
}

/** A key or bucket in a URL path: each segment percent-encoded as SigV4 canonicalizes it (RFC 3986 unreserved kept). */
const encodePath = (path: string) => path.split('/').map(encodeRfc3986).join('/')
const encodeRfc3986 = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
/** The text of the first element `name` in `xml`, entities decoded. */
function xmlValue(xml: string, name: string): string | undefined {
  const text = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml)?.[1]
  return text?.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, entity: string) =>
    entity.startsWith('#x')
      ? String.fromCodePoint(Number.parseInt(entity.slice(2), 16))
      : entity.startsWith('#')
        ? String.fromCodePoint(Number(entity.slice(1)))
        : XML_ENTITIES[entity]!,
  )
}
const XML_ESCAPES = Object.fromEntries(Object.entries(XML_ENTITIES).map(([name, c]) => [c, `&${name};`]))
const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!)
