// A loopback S3 for tests: path-style bucket, objects in memory, and exactly the requests Bun's
// S3 client and Deno's (src/runtime/fetch-s3.ts) send (PUT/GET/HEAD/DELETE object, ListObjectsV2,
// multipart create/upload part/complete/abort), with S3's conditional write (`If-None-Match: *`
// refuses a key that exists, 412). Every request must carry a valid AWS SigV4
// Authorization header for the configured key pair and region; anything else is refused (403, or
// 400 for a wrong region), as S3 does.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

export interface FakeS3Object {
  body: Uint8Array<ArrayBuffer>
  contentType: string
}

/** The S3 operations the fake implements, as AWS names them. */
export type S3Operation =
  | 'PutObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject'
  | 'ListObjectsV2'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'

export interface FakeS3 {
  /** The endpoint to give the client (path-style: the bucket is the first path segment). */
  endpoint: string
  bucket: string
  region: string
  accessKeyId: string
  secretAccessKey: string
  /** Stored objects by full object key. */
  objects: Map<string, FakeS3Object>
  /** Every authenticated request's operation, in order of arrival. */
  operations: S3Operation[]
  /** Resolves when the next request of this operation arrives (call it before causing that request). */
  nextOperation(operation: S3Operation): Promise<void>
  /** How many requests were refused for their credentials. */
  refused(): number
  /** Multipart uploads begun and neither completed nor aborted. */
  openUploads(): number
  /** Resolves once no multipart upload is open (Bun aborts a failed upload after rejecting the write). */
  uploadsSettled(): Promise<void>
  stop(): Promise<void>
}

export interface FakeS3Options {
  bucket?: string
  region?: string
  accessKeyId?: string
  secretAccessKey?: string
  /** Keys per ListObjectsV2 page (S3: 1000); small values exercise pagination. */
  pageSize?: number
}

/** S3's smallest part, except the last one. */
const MIN_PART_BYTES = 5 * 1024 * 1024

interface Upload {
  key: string
  contentType: string
  parts: Map<number, { body: Uint8Array; etag: string }>
}

export function startFakeS3(options: FakeS3Options = {}): FakeS3 {
  const bucket = options.bucket ?? 'kgs-test'
  const region = options.region ?? 'us-east-1'
  const accessKeyId = options.accessKeyId ?? 'AKIAFAKES3TEST'
  const secretAccessKey = options.secretAccessKey ?? 'fake-s3-secret-access-key'
  const pageSize = options.pageSize ?? 1000
  const objects = new Map<string, FakeS3Object>()
  const uploads = new Map<string, Upload>()
  const operations: S3Operation[] = []
  const operationWaiters = new Set<{ operation: S3Operation; resolve: () => void }>()
  const record = (operation: S3Operation) => {
    operations.push(operation)
    for (const waiter of operationWaiters) {
      if (waiter.operation !== operation) continue
      operationWaiters.delete(waiter)
      waiter.resolve()
    }
  }
  const settledWaiters = new Set<() => void>()
  let refused = 0
  let uploadSequence = 0

  const closeUpload = (uploadId: string) => {
    uploads.delete(uploadId)
    if (uploads.size === 0) for (const resolve of settledWaiters) resolve()
  }

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    const authError = checkSignature(request, url, { accessKeyId, secretAccessKey, region })
    if (authError) {
      refused++
      return s3Error(authError.status, authError.code, authError.message)
    }
    const [, bucketName = '', ...keySegments] = url.pathname.split('/')
    if (bucketName !== bucket) return s3Error(404, 'NoSuchBucket', 'The specified bucket does not exist')
    const key = keySegments.map(decodeURIComponent).join('/')
    const query = url.searchParams
    const method = request.method

    if (key === '') {
      if (method === 'GET' && query.get('list-type') === '2') {
        record('ListObjectsV2')
        return listObjects(query)
      }
      return s3Error(501, 'NotImplemented', `${method} on the bucket is not implemented by the fake`)
    }
    if (method === 'POST' && query.has('uploads')) {
      record('CreateMultipartUpload')
      const uploadId = `upload-${++uploadSequence}`
      uploads.set(uploadId, {
        key,
        contentType: request.headers.get('content-type') ?? 'application/octet-stream',
        parts: new Map(),
      })
      return xml(
        `<InitiateMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`,
      )
    }
    const uploadId = query.get('uploadId')
    if (uploadId !== null) {
      const upload = uploads.get(uploadId)
      if (!upload || upload.key !== key) return s3Error(404, 'NoSuchUpload', 'The specified upload does not exist')
      if (method === 'PUT' && query.has('partNumber')) {
        record('UploadPart')
        const body = new Uint8Array(await request.arrayBuffer())
        const etag = md5Tag(body)
        upload.parts.set(Number(query.get('partNumber')), { body, etag })
        return new Response(null, { headers: { etag } })
      }
      if (method === 'POST') {
        record('CompleteMultipartUpload')
        if (exists(request, key)) return preconditionFailed()
        return completeUpload(uploadId, upload, await request.text())
      }
      if (method === 'DELETE') {
        record('AbortMultipartUpload')
        closeUpload(uploadId)
        return new Response(null, { status: 204 })
      }
    }
    switch (method) {
      case 'PUT': {
        record('PutObject')
        const body = new Uint8Array(await request.arrayBuffer())
        // Checked once the body has arrived, as S3 does: of two racing conditional PUTs, one wins.
        if (exists(request, key)) return preconditionFailed()
        objects.set(key, { body, contentType: request.headers.get('content-type') ?? 'application/octet-stream' })
        return new Response(null, { headers: { etag: md5Tag(body) } })
      }
      case 'GET':
      case 'HEAD': {
        record(method === 'GET' ? 'GetObject' : 'HeadObject')
        const object = objects.get(key)
        if (!object) return s3Error(404, 'NoSuchKey', 'The specified key does not exist.', method === 'HEAD')
        const headers = {
          'content-type': object.contentType,
          'content-length': String(object.body.byteLength),
          etag: md5Tag(object.body),
          'last-modified': new Date().toUTCString(),
        }
        return new Response(method === 'GET' ? object.body : null, { headers })
      }
      case 'DELETE':
        record('DeleteObject')
        objects.delete(key)
        return new Response(null, { status: 204 })
    }
    return s3Error(501, 'NotImplemented', `${method} ${url.search} is not implemented by the fake`)
  }

  /** A conditional write (`If-None-Match: *`, which LanceDB's commits rely on) of a key that is already there. */
  const exists = (request: Request, key: string) =>
    request.headers.get('if-none-match')?.trim() === '*' && objects.has(key)
  const preconditionFailed = () =>
    s3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold')

  const listObjects = (query: URLSearchParams): Response => {
    if (query.has('delimiter') || query.has('start-after'))
      return s3Error(501, 'NotImplemented', 'delimiter and start-after are not implemented by the fake')
    const prefix = query.get('prefix') ?? ''
    const token = query.get('continuation-token')
    const after = token === null ? undefined : Buffer.from(token, 'base64url').toString()
    const maxKeys = Math.min(Number(query.get('max-keys') ?? 1000), pageSize)
    // Sorted by UTF-16 code units, which is S3's UTF-8 byte order for the ASCII keys used here.
    const matching = [...objects.keys()]
      .filter((key) => key.startsWith(prefix) && (after === undefined || key > after))
      .sort()
    const page = matching.slice(0, maxKeys)
    const truncated = matching.length > page.length
    const contents = page
      .map(
        (key) =>
          `<Contents><Key>${escapeXml(key)}</Key><Size>${objects.get(key)!.body.byteLength}</Size><ETag>${escapeXml(md5Tag(objects.get(key)!.body))}</ETag><StorageClass>STANDARD</StorageClass></Contents>`,
      )
      .join('')
    const next = truncated
      ? `<NextContinuationToken>${Buffer.from(page.at(-1)!).toString('base64url')}</NextContinuationToken>`
      : ''
    return xml(
      `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${bucket}</Name><Prefix>${escapeXml(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${contents}${next}</ListBucketResult>`,
    )
  }

  const completeUpload = (uploadId: string, upload: Upload, body: string): Response => {
    const listed = [
      ...body.matchAll(/<Part>\s*<PartNumber>(\d+)<\/PartNumber>\s*<ETag>([^<]*)<\/ETag>\s*<\/Part>/g),
    ].map((m) => ({ number: Number(m[1]), etag: unescapeXml(m[2]!) }))
    if (listed.length === 0) return s3Error(400, 'MalformedXML', 'The XML you provided was not well-formed')
    const parts: Uint8Array[] = []
    for (const [index, { number, etag }] of listed.entries()) {
      const part = upload.parts.get(number)
      if (!part || part.etag !== etag)
        return s3Error(400, 'InvalidPart', `part ${number} was not uploaded or its ETag differs`)
      if (index > 0 && number <= listed[index - 1]!.number)
        return s3Error(400, 'InvalidPartOrder', 'parts must be listed in ascending order')
      if (index < listed.length - 1 && part.body.byteLength < MIN_PART_BYTES)
        return s3Error(400, 'EntityTooSmall', `part ${number} is smaller than 5 MiB`)
      parts.push(part.body)
    }
    objects.set(upload.key, { body: new Uint8Array(Buffer.concat(parts)), contentType: upload.contentType })
    closeUpload(uploadId)
    return xml(
      `<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${escapeXml(upload.key)}</Key><ETag>"${uploadId}"</ETag></CompleteMultipartUploadResult>`,
    )
  }

  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handle })

  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    bucket,
    region,
    accessKeyId,
    secretAccessKey,
    objects,
    operations,
    nextOperation: (operation) => new Promise<void>((resolve) => operationWaiters.add({ operation, resolve })),
    refused: () => refused,
    openUploads: () => uploads.size,
    uploadsSettled: () =>
      new Promise<void>((resolve) => {
        if (uploads.size === 0) return resolve()
        const waiter = () => {
          settledWaiters.delete(waiter)
          resolve()
        }
        settledWaiters.add(waiter)
      }),
    stop: () => server.stop(true),
  }
}

/**
 * Verifies AWS Signature Version 4 (header form) the way S3 does: rebuild the canonical request
 * from what arrived, sign it with the secret, compare. Returns the S3 error to answer, if any.
 */
function checkSignature(
  request: Request,
  url: URL,
  expected: { accessKeyId: string; secretAccessKey: string; region: string },
): { status: number; code: string; message: string } | undefined {
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
      request.headers.get('authorization') ?? '',
    )
  if (!match) return { status: 403, code: 'AccessDenied', message: 'Access Denied' }
  const [, accessKeyId, date, region, signedHeaders, signature] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
  ]
  if (accessKeyId !== expected.accessKeyId)
    return {
      status: 403,
      code: 'InvalidAccessKeyId',
      message: 'The AWS Access Key Id you provided does not exist in our records.',
    }
  // S3 answers a wrong region as a malformed request, 400, not 403.
  if (region !== expected.region)
    return {
      status: 400,
      code: 'AuthorizationHeaderMalformed',
      message: `The authorization header is malformed; the region '${region}' is wrong; expecting '${expected.region}'`,
    }
  const amzDate = request.headers.get('x-amz-date') ?? ''
  const payloadHash = request.headers.get('x-amz-content-sha256')
  const headerNames = signedHeaders.split(';')
  if (!amzDate.startsWith(date) || payloadHash === null || !headerNames.includes('host'))
    return { status: 403, code: 'AccessDenied', message: 'Access Denied' }
  const canonicalRequest = [
    request.method,
    url.pathname,
    canonicalQuery(url.search),
    headerNames.map((name) => `${name}:${(request.headers.get(name) ?? '').trim().replace(/\s+/g, ' ')}\n`).join(''),
    signedHeaders,
    payloadHash,
  ].join('\n')
  const scope = `${date}/${region}/s3/aws4_request`
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n')
  let key: Buffer = hmac(`AWS4${expected.secretAccessKey}`, date)
  for (const part of [region, 's3', 'aws4_request']) key = hmac(key, part)
  const computed = createHmac('sha256', key).update(stringToSign).digest()
  if (!timingSafeEqual(computed, Buffer.from(signature, 'hex'))) {
    return {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message:
        'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    }
  }
  return undefined
}

/** Parameters sorted by name, names and values percent-encoded as SigV4 prescribes (RFC 3986 unreserved kept). */
function canonicalQuery(search: string): string {
  if (search.length <= 1) return ''
  return search
    .slice(1)
    .split('&')
    .map((pair) => {
      const [name = '', value = ''] = pair
        .split('=', 2)
        .map((part) => sigV4Encode(decodeURIComponent(part.replaceAll('+', ' '))))
      return [name, value] as const
    })
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&')
}

function sigV4Encode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest()
const sha256Hex = (data: string) => createHash('sha256').update(data).digest('hex')
const md5Tag = (body: Uint8Array) => `"${createHash('md5').update(body).digest('hex')}"`

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }
const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!)
const unescapeXml = (text: string) =>
  text.replace(/&(amp|lt|gt|quot|apos);/g, (entity) => Object.entries(XML_ESCAPES).find(([, e]) => e === entity)![0])

function xml(body: string, status = 200): Response {
  return new Response(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`, {
    status,
    headers: { 'content-type': 'application/xml' },
  })
}

function s3Error(status: number, code: string, message: string, headOnly = false): Response {
  // A HEAD answer has no body; the client reads the status alone.
  if (headOnly) return new Response(null, { status })
  return xml(`<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`, status)
}
