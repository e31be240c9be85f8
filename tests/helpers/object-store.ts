// A real S3-compatible store for the tests that need one: Ceph's RADOS Gateway, started by
// `.ci/run` for the PostgreSQL leg with ../shared/tools/ceph-rgw, its settings handed over as
// TEST_S3_ENDPOINT, TEST_S3_REGION, TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY. Without
// them the tests that need it are not run (the loopback fake, tests/helpers/fake-s3.ts, serves the
// contract everywhere). Each test makes buckets of its own, so test files can run in parallel.
import { AwsClient } from 'aws4fetch'
import type { S3Operation } from './fake-s3.ts'

export interface ObjectStore {
  endpoint: string
  region: string
  accessKeyId: string
  secretAccessKey: string
}

function fromEnvironment(): ObjectStore | undefined {
  const {
    TEST_S3_ENDPOINT: endpoint,
    TEST_S3_REGION: region,
    TEST_S3_ACCESS_KEY_ID: accessKeyId,
    TEST_S3_SECRET_ACCESS_KEY: secretAccessKey,
  } = process.env
  if (!endpoint) return undefined
  if (!region || !accessKeyId || !secretAccessKey)
    throw new Error(
      'TEST_S3_ENDPOINT is set: TEST_S3_REGION, TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY must be too',
    )
  return { endpoint, region, accessKeyId, secretAccessKey }
}

/** The real object store, when this run has one. */
export const OBJECT_STORE = fromEnvironment()

const client = (store: ObjectStore) =>
  new AwsClient({
    accessKeyId: store.accessKeyId,
    secretAccessKey: store.secretAccessKey,
    region: store.region,
    service: 's3',
  })

async function signed(store: ObjectStore, path: string, init: RequestInit = {}): Promise<Response> {
  const response = await client(store).fetch(`${store.endpoint}${path}`, init)
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${await response.text()}`)
  return response
}

/** A new, empty bucket with a unique name. */
export async function createBucket(store: ObjectStore, purpose: string): Promise<string> {
  const bucket = `kgs-${purpose}-${crypto.randomUUID().slice(0, 8)}`
  await (await signed(store, `/${bucket}`, { method: 'PUT' })).arrayBuffer()
  return bucket
}

/** Every object key in the bucket under `prefix`, sorted (ListObjectsV2, following its pages). */
export async function listKeys(store: ObjectStore, bucket: string, prefix = ''): Promise<string[]> {
  const keys: string[] = []
  let token: string | undefined
  do {
    const query = new URLSearchParams({ 'list-type': '2', prefix, ...(token ? { 'continuation-token': token } : {}) })
    const xml = await (await signed(store, `/${bucket}?${query}`)).text()
    for (const match of xml.matchAll(/<Key>([^<]*)<\/Key>/g)) keys.push(unescapeXml(match[1]!))
    token = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1]
  } while (token)
  return keys.sort()
}

/** Multipart uploads begun in the bucket under `prefix` and neither completed nor aborted. */
export async function openUploads(store: ObjectStore, bucket: string, prefix = ''): Promise<number> {
  const xml = await (await signed(store, `/${bucket}?${new URLSearchParams({ uploads: '', prefix })}`)).text()
  return [...xml.matchAll(/<Upload>/g)].length
}

/** A PUT of `key` with `If-None-Match: *`: the status the store answers (200, or 412 when the key exists). */
export async function conditionalPut(store: ObjectStore, bucket: string, key: string, body: string): Promise<number> {
  const response = await client(store).fetch(`${store.endpoint}/${bucket}/${key}`, {
    method: 'PUT',
    body,
    headers: { 'if-none-match': '*' },
  })
  await response.arrayBuffer()
  return response.status
}

/** The S3 operation a request asks for (path-style addressing). */
function operationOf(method: string, url: URL): S3Operation | undefined {
  const query = url.searchParams
  const onBucket = url.pathname.split('/').filter(Boolean).length === 1
  if (onBucket) return method === 'GET' && query.get('list-type') === '2' ? 'ListObjectsV2' : undefined
  if (method === 'POST' && query.has('uploads')) return 'CreateMultipartUpload'
  if (query.has('uploadId'))
    return ({ PUT: 'UploadPart', POST: 'CompleteMultipartUpload', DELETE: 'AbortMultipartUpload' } as const)[
      method as 'PUT'
    ]
  return ({ PUT: 'PutObject', GET: 'GetObject', HEAD: 'HeadObject', DELETE: 'DeleteObject' } as const)[method as 'PUT']
}

/**
 * A loopback relay in front of the store that sees each request's S3 operation, so a test can
 * wait for the moment a client reaches (a part uploaded) without sleeping, and for the client's
 * clean-up of a failed multipart upload. The client signs for the relay's host, which the store
 * checks as it arrives: the relay forwards the Host header as it came.
 */
export function recordingRelay(store: ObjectStore) {
  const waiters = new Set<{ operation: S3Operation; resolve: () => void }>()
  // Open uploads, and CreateMultipartUpload requests not yet answered (a client may give up on a
  // write, and abort its upload, only once the store has answered that it began).
  const uploads = new Set<string>()
  let creating = 0
  const settled = () => uploads.size === 0 && creating === 0
  const settledWaiters = new Set<() => void>()
  const checkSettled = () => {
    if (!settled()) return
    for (const resolve of settledWaiters) resolve()
    settledWaiters.clear()
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      const operation = operationOf(request.method, url)
      for (const waiter of waiters) {
        if (waiter.operation !== operation) continue
        waiters.delete(waiter)
        waiter.resolve()
      }
      if (operation === 'CreateMultipartUpload') creating++
      try {
        const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
        const answer = await fetch(`${store.endpoint}${url.pathname}${url.search}`, {
          method: request.method,
          headers: request.headers,
          body,
          redirect: 'manual',
        })
        const bytes = request.method === 'HEAD' ? null : await answer.arrayBuffer()
        if (answer.ok && operation === 'CreateMultipartUpload')
          uploads.add(/<UploadId>([^<]+)<\/UploadId>/.exec(new TextDecoder().decode(bytes!))![1]!)
        if (answer.ok && (operation === 'CompleteMultipartUpload' || operation === 'AbortMultipartUpload'))
          uploads.delete(url.searchParams.get('uploadId')!)
        return new Response(bytes, { status: answer.status, headers: answer.headers })
      } finally {
        if (operation === 'CreateMultipartUpload') creating--
        checkSettled()
      }
    },
  })
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    /** Resolves when the next request of this operation arrives (call it before causing that request). */
    nextOperation: (operation: S3Operation) => new Promise<void>((resolve) => waiters.add({ operation, resolve })),
    /** Resolves once no multipart upload begun through the relay is open (Bun aborts a failed one after rejecting the write). */
    uploadsSettled: () => new Promise<void>((resolve) => (settled() ? resolve() : settledWaiters.add(resolve))),
    stop: () => server.stop(true),
  }
}

const unescapeXml = (text: string) =>
  text.replace(
    /&(lt|gt|quot|apos|amp);/g,
    (_, name: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[name]!,
  )
