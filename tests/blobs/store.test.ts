// The blob store contract, run against both implementations: the local directory (a temporary
// DATA_DIR) and S3 (against a loopback fake S3 that verifies SigV4 signatures, and against Ceph's
// RADOS Gateway where the run has one), the latter through each runtime's S3 client: Bun's, and
// the signed-fetch one Deno uses (src/runtime/fetch-s3.ts). Then what only one of them has: file
// modes and the temporary folder; the bucket prefix, multipart uploads, refused credentials and
// conditional writes. Last, the server's context carries the store.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { AwsClient } from 'aws4fetch'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from '../../src/config.ts'
import { openBlobStore } from '../../src/blobs/open.ts'
import {
  BlobNotFoundError,
  BlobTooLargeError,
  InvalidBlobKeyError,
  type BlobBody,
  type BlobStore,
} from '../../src/blobs/store.ts'
import { LocalBlobStore } from '../../src/blobs/local.ts'
import { S3BlobStore } from '../../src/blobs/s3.ts'
import { fetchS3Client } from '../../src/runtime/fetch-s3.ts'
import { runtime, type Runtime } from '../../src/runtime/index.ts'
import { startFakeS3, type FakeS3 } from '../helpers/fake-s3.ts'
import {
  OBJECT_STORE,
  conditionalPut,
  createBucket,
  openUploads,
  recordingRelay,
  type ObjectStore,
} from '../helpers/object-store.ts'
import { tempDir } from '../helpers/backend.ts'
import { startTestServer } from '../helpers/server.ts'
import { rejected } from '../helpers/promises.ts'

const MiB = 1024 * 1024
const CHUNK = 64 * 1024

interface Subject {
  store: BlobStore
  /** What a failed put could have left behind: temporary files (local), open multipart uploads (S3). */
  leftovers(): Promise<number>
  /** Resolves once the store has begun persisting a large body (a part uploaded); call before the put. */
  persisting(): Promise<void>
  maxKeyLength: number
  stop(): Promise<void>
}

/** The S3 clients of both runtimes, each run here under Bun. */
const S3_CLIENTS: { name: string; openClient: Runtime['s3'] }[] = [
  { name: "Bun's client", openClient: runtime.s3 },
  { name: "Deno's client: signed fetch", openClient: fetchS3Client },
]

const implementations: { name: string; open(): Subject | Promise<Subject> }[] = [
  {
    name: 'local directory',
    open() {
      const dataDir = tempDir('kgs-blobs-')
      const store = openBlobStore(parseEnv({ DATA_DIR: dataDir }))
      expect(store).toBeInstanceOf(LocalBlobStore)
      return {
        store,
        leftovers: async () => readdirSync(join(dataDir, 'blobs', '.tmp')).length,
        // Each chunk is written before the next is read: once the source is asked again, it is on disk.
        persisting: async () => {},
        maxKeyLength: 1024,
        stop: async () => rmSync(dataDir, { recursive: true, force: true }),
      }
    },
  },
  ...S3_CLIENTS.map(({ name, openClient }) => ({
    name: `S3 (${name})`,
    open(): Subject {
      // Three keys per list page, so listing and deletePrefix cross pages.
      const fake = startFakeS3({ region: 'eu-west-3', pageSize: 3 })
      const store = new S3BlobStore(s3Config(fake).s3!, openClient)
      return {
        store,
        // Bun aborts the multipart upload of a failed put after rejecting it.
        leftovers: async () => {
          await fake.uploadsSettled()
          return fake.openUploads()
        },
        persisting: () => fake.nextOperation('UploadPart'),
        // S3's limit of 1024 counts the object key, S3_PREFIX ('kgs/') included.
        maxKeyLength: 1020,
        stop: () => fake.stop(),
      }
    },
  })),
  // The real thing, where this run has it: Ceph's RADOS Gateway (tests/helpers/object-store.ts).
  ...(OBJECT_STORE
    ? S3_CLIENTS.map(({ name, openClient }) => ({
        name: `S3 on Ceph RGW (${name})`,
        open: () => rgwSubject(OBJECT_STORE!, openClient),
      }))
    : []),
]

let rgwBucket: Promise<string> | undefined

/** A store under a prefix of its own in one bucket of the gateway, reached through a relay that sees its operations. */
async function rgwSubject(objectStore: ObjectStore, openClient: Runtime['s3']): Promise<Subject> {
  const bucket = await (rgwBucket ??= createBucket(objectStore, 'contract'))
  const relay = recordingRelay(objectStore)
  const prefix = `t-${crypto.randomUUID().slice(0, 8)}/`
  const store = new S3BlobStore(
    parseEnv({
      DATA_DIR: '/nonexistent/kgs-blobs-not-used',
      S3_BUCKET: bucket,
      S3_ENDPOINT: relay.endpoint,
      S3_REGION: objectStore.region,
      S3_ACCESS_KEY_ID: objectStore.accessKeyId,
      S3_SECRET_ACCESS_KEY: objectStore.secretAccessKey,
      S3_PREFIX: prefix,
    }).s3!,
    openClient,
  )
  return {
    store,
    leftovers: async () => {
      await relay.uploadsSettled()
      return openUploads(objectStore, bucket, prefix)
    },
    persisting: () => relay.nextOperation('UploadPart'),
    maxKeyLength: 1024 - prefix.length,
    stop: async () => {
      for await (const key of store.list('')) await store.delete(key)
      await relay.stop()
    },
  }
}

function s3Config(fake: FakeS3, overrides: Record<string, string> = {}) {
  return parseEnv({
    DATA_DIR: '/nonexistent/kgs-blobs-not-used',
    S3_BUCKET: fake.bucket,
    S3_ENDPOINT: fake.endpoint,
    S3_REGION: fake.region,
    S3_ACCESS_KEY_ID: fake.accessKeyId,
    S3_SECRET_ACCESS_KEY: fake.secretAccessKey,
    S3_PREFIX: 'kgs/',
    ...overrides,
  })
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = []
  for await (const item of items) all.push(item)
  return all
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; chunks: number }> {
  const parts = await collect(stream)
  return { bytes: new Uint8Array(Buffer.concat(parts)), chunks: parts.length }
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes))

/** `total` random bytes as 64 KiB chunks. */
function randomChunks(total: number): Uint8Array[] {
  return Array.from({ length: Math.ceil(total / CHUNK) }, (_, i) =>
    crypto.getRandomValues(new Uint8Array(Math.min(CHUNK, total - i * CHUNK))),
  )
}

async function* generate(chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let next = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]!)
      else controller.close()
    },
  })
}

/** A promise with its resolver, for holding a body mid-way without sleeping. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

const INVALID_KEYS = [
  '../x',
  '/abs',
  'a//b',
  'a/./b',
  'a/../b',
  'a\\b',
  '',
  'a/',
  '.tmp/x',
  'a b',
  'é',
  'x'.repeat(256),
  `${'a'.repeat(204)}/`.repeat(4) + 'a'.repeat(205),
]

for (const implementation of implementations) {
  describe(`blob store contract: ${implementation.name}`, () => {
    let subject: Subject
    let store: BlobStore
    beforeEach(async () => {
      subject = await implementation.open()
      store = subject.store
    })
    afterEach(() => subject.stop())

    test('bytes, strings, Blobs, streams and async iterables round-trip', async () => {
      const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i)
      expect(await store.put('kinds/bytes', allBytes)).toEqual({ bytes: 256 })
      expect(await store.put('kinds/string', 'héllo ✓')).toEqual({ bytes: 10 })
      expect(await store.put('kinds/blob', new Blob(['blob ', 'body']))).toEqual({ bytes: 9 })
      expect(await store.put('kinds/stream', streamOf([allBytes, allBytes.subarray(0, 10)]))).toEqual({ bytes: 266 })
      expect(await store.put('kinds/iterable', generate([new Uint8Array([1, 2]), new Uint8Array([3])]))).toEqual({
        bytes: 3,
      })

      expect(await store.get('kinds/bytes')).toEqual(allBytes)
      expect(text(await store.get('kinds/string'))).toBe('héllo ✓')
      expect(text(await store.get('kinds/blob'))).toBe('blob body')
      expect(await store.get('kinds/stream')).toEqual(new Uint8Array([...allBytes, ...allBytes.subarray(0, 10)]))
      expect(await store.get('kinds/iterable')).toEqual(new Uint8Array([1, 2, 3]))
      expect(await store.stat('kinds/stream')).toEqual({ bytes: 266 })
    })

    test('an empty blob is a blob', async () => {
      expect(await store.put('empty', '')).toEqual({ bytes: 0 })
      expect(await store.get('empty')).toEqual(new Uint8Array(0))
      expect(await store.stat('empty')).toEqual({ bytes: 0 })
      expect((await readAll((await store.stream('empty'))!)).bytes).toEqual(new Uint8Array(0))
      expect(await collect(store.list(''))).toEqual(['empty'])
    })

    test('a multi-megabyte stream in many chunks goes in and comes out in pieces, byte for byte', async () => {
      const chunks = randomChunks(12 * MiB + 123)
      const expected = sha256(new Uint8Array(Buffer.concat(chunks)))
      expect(await store.put('bundles/large.json.gz', streamOf(chunks), { contentType: 'application/gzip' })).toEqual({
        bytes: 12 * MiB + 123,
      })
      expect(await store.stat('bundles/large.json.gz')).toEqual({ bytes: 12 * MiB + 123 })
      const { bytes, chunks: pieces } = await readAll((await store.stream('bundles/large.json.gz'))!)
      expect(bytes.byteLength).toBe(12 * MiB + 123)
      expect(sha256(bytes)).toBe(expected)
      expect(pieces).toBeGreaterThan(1)
      expect(sha256((await store.get('bundles/large.json.gz'))!)).toBe(expected)
      // As an HTTP response body: the same bytes.
      const response = new Response(await store.responseBody('bundles/large.json.gz'))
      expect(sha256(new Uint8Array(await response.arrayBuffer()))).toBe(expected)
    })

    test('put replaces a blob', async () => {
      await store.put('doc', 'first version, longer')
      expect(await store.put('doc', 'second')).toEqual({ bytes: 6 })
      expect(text(await store.get('doc'))).toBe('second')
      expect(await store.stat('doc')).toEqual({ bytes: 6 })
    })

    test('missing keys: get, stream, responseBody and stat answer undefined', async () => {
      await store.put('present/a', 'a')
      expect(await store.get('missing')).toBeUndefined()
      expect(await store.stream('missing')).toBeUndefined()
      expect(await store.responseBody('missing')).toBeUndefined()
      expect(await store.stat('missing')).toBeUndefined()
      // A folder of keys is not a blob either.
      expect(await store.get('present')).toBeUndefined()
      expect(await store.stream('present')).toBeUndefined()
      expect(await store.responseBody('present')).toBeUndefined()
      expect(await store.stat('present')).toBeUndefined()
    })

    test('delete is idempotent', async () => {
      await store.put('to/delete', 'x')
      await store.put('to/keep', 'y')
      await store.delete('to/delete')
      expect(await store.get('to/delete')).toBeUndefined()
      await store.delete('to/delete')
      await store.delete('never/existed')
      expect(await collect(store.list(''))).toEqual(['to/keep'])
    })

    test('deletePrefix deletes exactly the keys under the prefix, across list pages', async () => {
      const doomed = ['repo1/images/a', 'repo1/images/b', 'repo1/images/c', 'repo1/sources/d', 'repo1/x']
      const kept = ['repo10/a', 'repo2/a', 'repo1.txt']
      for (const key of [...doomed, ...kept]) await store.put(key, key)
      expect(await store.deletePrefix('repo1/')).toBe(5)
      expect(await collect(store.list(''))).toEqual(['repo1.txt', 'repo10/a', 'repo2/a'])
      expect(await store.deletePrefix('repo1/')).toBe(0)
      expect(await store.deletePrefix('nothing/')).toBe(0)
      // A string prefix, as in list: 'repo' takes repo1.txt, repo10/a and repo2/a.
      expect(await store.deletePrefix('repo')).toBe(3)
      expect(await collect(store.list(''))).toEqual([])
    })

    test('deletePrefix refuses the empty prefix', async () => {
      await store.put('a', 'a')
      expect(await rejected(store.deletePrefix(''))).toThrow(InvalidBlobKeyError)
      expect(await collect(store.list(''))).toEqual(['a'])
    })

    test('move replaces the target and removes the source; a missing source throws', async () => {
      await store.put('tmp/import-1/img', 'image bytes')
      await store.put('repo/img', 'old image')
      await store.move('tmp/import-1/img', 'repo/img')
      expect(text(await store.get('repo/img'))).toBe('image bytes')
      expect(await store.get('tmp/import-1/img')).toBeUndefined()

      await store.move('repo/img', 'repo/new/folder/img')
      expect(text(await store.get('repo/new/folder/img'))).toBe('image bytes')

      await store.move('repo/new/folder/img', 'repo/new/folder/img')
      expect(text(await store.get('repo/new/folder/img'))).toBe('image bytes')

      await store.put('target', 'untouched')
      const error = await store.move('no/such/blob', 'target').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(BlobNotFoundError)
      expect((error as Error).message).toBe('blob no/such/blob not found')
      expect(text(await store.get('target'))).toBe('untouched')
      expect(await collect(store.list(''))).toEqual(['repo/new/folder/img', 'target'])
    })

    test('a large blob moves whole', async () => {
      const chunks = randomChunks(7 * MiB)
      await store.put('staging/bundle', generate(chunks))
      await store.move('staging/bundle', 'registry/bundle')
      expect(sha256((await store.get('registry/bundle'))!)).toBe(sha256(new Uint8Array(Buffer.concat(chunks))))
      expect(await collect(store.list(''))).toEqual(['registry/bundle'])
    })

    test('list is sorted and limited to a plain string prefix', async () => {
      // Byte order puts '-' < '.' < '/' < digits < upper case < '_' < lower case.
      const keys = ['a0', 'a/b/c', 'a.b', 'A', 'a-b', 'a_b', 'a/b.c', 'ab', 'b', 'a/b-c', 'a/a/z', '0']
      for (const key of keys) await store.put(key, key)
      const sorted = ['0', 'A', 'a-b', 'a.b', 'a/a/z', 'a/b-c', 'a/b.c', 'a/b/c', 'a0', 'a_b', 'ab', 'b']
      expect(await collect(store.list(''))).toEqual(sorted)
      expect(await collect(store.list('a'))).toEqual(sorted.filter((key) => key.startsWith('a')))
      expect(await collect(store.list('a/'))).toEqual(['a/a/z', 'a/b-c', 'a/b.c', 'a/b/c'])
      expect(await collect(store.list('a/b'))).toEqual(['a/b-c', 'a/b.c', 'a/b/c'])
      expect(await collect(store.list('a/b/'))).toEqual(['a/b/c'])
      expect(await collect(store.list('zzz'))).toEqual([])
      expect(await collect(store.list('zzz/'))).toEqual([])
    })

    test('readers never see a put in progress: before it completes, the previous blob (or none) is what they get', async () => {
      await store.put('doc', 'version 1')
      const asked = gate()
      const release = gate()
      const body = async function* () {
        yield new TextEncoder().encode('version ')
        asked.open() // the store asked for more: the first chunk is in its hands
        await release.promise
        yield new TextEncoder().encode('2')
      }
      const freshAsked = gate()
      const fresh = async function* () {
        yield new TextEncoder().encode('new')
        freshAsked.open()
        await release.promise
      }
      const puts = Promise.all([store.put('doc', body()), store.put('fresh/doc', fresh())])
      await Promise.all([asked.promise, freshAsked.promise])
      expect(text(await store.get('doc'))).toBe('version 1')
      expect(await store.stat('doc')).toEqual({ bytes: 9 })
      expect(await store.get('fresh/doc')).toBeUndefined()
      expect(await store.stat('fresh/doc')).toBeUndefined()
      expect(await collect(store.list(''))).toEqual(['doc'])
      release.open()
      expect(await puts).toEqual([{ bytes: 9 }, { bytes: 3 }])
      expect(text(await store.get('doc'))).toBe('version 2')
      expect(await collect(store.list(''))).toEqual(['doc', 'fresh/doc'])
      expect(await subject.leftovers()).toBe(0)
    })

    test('maxBytes: a body of exactly maxBytes is stored; one byte more is BlobTooLargeError and stores nothing', async () => {
      expect(await store.put('exact', new Uint8Array(1000), { maxBytes: 1000 })).toEqual({ bytes: 1000 })
      await store.put('kept', 'previous')
      const before = await collect(store.list(''))
      const tooLarge: (() => BlobBody)[] = [
        () => new Uint8Array(1001),
        () => 'x'.repeat(1001),
        () => new Blob([new Uint8Array(1001)]),
        () => streamOf([new Uint8Array(600), new Uint8Array(401)]),
        () => generate([new Uint8Array(1000), new Uint8Array(1)]),
      ]
      for (const body of tooLarge) {
        for (const key of ['kept', 'new/blob']) {
          const error = await store.put(key, body(), { maxBytes: 1000 }).catch((e: unknown) => e)
          expect(error).toBeInstanceOf(BlobTooLargeError)
          expect((error as Error).message).toBe('blob exceeds 1000 bytes')
        }
      }
      expect(await collect(store.list(''))).toEqual(before)
      expect(text(await store.get('kept'))).toBe('previous')
      expect(await subject.leftovers()).toBe(0)
    })

    test('a body yielding something other than bytes is refused and stores nothing', async () => {
      const strings = generate(['not', 'bytes'] as unknown as Uint8Array[])
      const error = await store.put('doc', strings, { maxBytes: 2 }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toBe('a blob body must yield Uint8Array chunks')
      expect(await collect(store.list(''))).toEqual([])
      expect(await subject.leftovers()).toBe(0)
    })

    test('maxBytes passed deep into a multi-megabyte stream stores nothing and stops reading the source', async () => {
      let pulled = 0
      let cancelled = false
      const chunks = randomChunks(16 * MiB)
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled === chunks.length) return controller.close()
          controller.enqueue(chunks[pulled++]!)
        },
        cancel() {
          cancelled = true
        },
      })
      const error = await store.put('bundles/too-large', source, { maxBytes: 7 * MiB }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(BlobTooLargeError)
      expect(pulled).toBeLessThan(chunks.length)
      expect(cancelled).toBe(true)
      expect(await collect(store.list(''))).toEqual([])
      expect(await subject.leftovers()).toBe(0)
    })

    test('a body that fails midway rethrows its error and stores nothing, even after parts were persisted', async () => {
      await store.put('bundles/b', 'previous')
      const persisting = subject.persisting()
      const failure = new Error('the source connection dropped')
      const body = async function* () {
        yield* randomChunks(6 * MiB)
        await persisting
        throw failure
      }
      expect(await store.put('bundles/b', body()).catch((e: unknown) => e)).toBe(failure)
      // A small body failing where it should end: S3 would otherwise send it as one PUT.
      const failsAtEnd = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array(10))
        },
        pull(controller) {
          controller.error(failure)
        },
      })
      expect(await store.put('bundles/new', failsAtEnd).catch((e: unknown) => e)).toBe(failure)
      expect(text(await store.get('bundles/b'))).toBe('previous')
      expect(await collect(store.list(''))).toEqual(['bundles/b'])
      expect(await subject.leftovers()).toBe(0)
    })

    test('invalid keys are refused by every method, and nothing is touched', async () => {
      await store.put('ok', 'ok')
      for (const key of INVALID_KEYS) {
        const attempts: [string, () => Promise<unknown>][] = [
          ['put', () => store.put(key, 'x')],
          ['get', () => store.get(key)],
          ['stream', () => store.stream(key)],
          ['stat', () => store.stat(key)],
          ['delete', () => store.delete(key)],
          ['move from', () => store.move(key, 'elsewhere')],
          ['move to', () => store.move('ok', key)],
        ]
        for (const [method, attempt] of attempts) {
          const error = await attempt().catch((e: unknown) => e)
          expect([method, key, error]).toEqual([method, key, expect.any(InvalidBlobKeyError)])
          expect((error as Error).message).toStartWith('invalid blob key "')
        }
      }
      for (const prefix of ['../', '/abs', 'a//', '.tmp', 'a b']) {
        expect(await rejected(collect(store.list(prefix)))).toThrow(`invalid blob key prefix ${JSON.stringify(prefix)}`)
        expect(await rejected(store.deletePrefix(prefix))).toThrow(InvalidBlobKeyError)
      }
      expect(await collect(store.list(''))).toEqual(['ok'])
    })

    test('keys are at most 1024 characters (on S3 with S3_PREFIX included), in segments of at most 255', async () => {
      const longest = `${'a'.repeat(200)}/`.repeat(5) + 'a'.repeat(subject.maxKeyLength - 1005)
      expect(longest.length).toBe(subject.maxKeyLength)
      expect(await rejected(store.put(`${longest}a`, 'too long'))).toThrow(InvalidBlobKeyError)
      const widest = 'w'.repeat(255)
      await store.put(longest, 'long')
      await store.put(widest, 'wide')
      expect(text(await store.get(longest))).toBe('long')
      expect(await collect(store.list(''))).toEqual([longest, widest])
    })

    test('concurrent puts to one key leave one of them, whole', async () => {
      const first = randomChunks(MiB)
      const second = randomChunks(MiB)
      await Promise.all([store.put('contended', generate(first)), store.put('contended', generate(second))])
      const stored = sha256((await store.get('contended'))!)
      expect([sha256(new Uint8Array(Buffer.concat(first))), sha256(new Uint8Array(Buffer.concat(second)))]).toContain(
        stored,
      )
      expect(await subject.leftovers()).toBe(0)
    })
  })
}

describe('local directory store', () => {
  let dataDir: string
  let store: LocalBlobStore
  beforeEach(() => {
    dataDir = tempDir('kgs-blobs-')
    store = openBlobStore(parseEnv({ DATA_DIR: dataDir })) as LocalBlobStore
  })
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }))

  test('a key is a path under DATA_DIR/blobs; files are 0600 and folders 0700', async () => {
    await store.put('repos/r1/images/abc.png', 'png')
    const blobs = join(dataDir, 'blobs')
    expect(store.root).toBe(blobs)
    expect(statSync(join(blobs, 'repos/r1/images/abc.png')).mode & 0o777).toBe(0o600)
    for (const folder of ['', '.tmp', 'repos', 'repos/r1', 'repos/r1/images'])
      expect(statSync(join(blobs, folder)).mode & 0o777).toBe(0o700)
    expect(readdirSync(dataDir)).toEqual(['blobs'])
  })

  test('a put in progress is a file in .tmp, which list never shows; a failed one leaves none', async () => {
    const asked = gate()
    const release = gate()
    const body = async function* () {
      yield new Uint8Array(100)
      asked.open()
      await release.promise
    }
    const put = store.put('doc', body())
    await asked.promise
    const temporary = readdirSync(join(dataDir, 'blobs', '.tmp'))
    expect(temporary).toHaveLength(1)
    expect(statSync(join(dataDir, 'blobs', '.tmp', temporary[0]!)).size).toBe(100)
    expect(await collect(store.list(''))).toEqual([])
    release.open()
    await put
    expect(readdirSync(join(dataDir, 'blobs', '.tmp'))).toEqual([])
    expect(await collect(store.list(''))).toEqual(['doc'])
  })

  test('temporary files of a put that died with its process are removed when a store opens; recent ones stay', () => {
    const temp = join(dataDir, 'blobs', '.tmp')
    writeFileSync(join(temp, 'stale'), 'left by a crash')
    const twoDaysAgo = new Date(Date.now() - 48 * 3600 * 1000)
    utimesSync(join(temp, 'stale'), twoDaysAgo, twoDaysAgo)
    writeFileSync(join(temp, 'recent'), 'another process is writing this')
    new LocalBlobStore(join(dataDir, 'blobs'))
    expect(readdirSync(temp)).toEqual(['recent'])
  })

  test('a key cannot also be a folder of keys: such a put or move is refused, reads find nothing', async () => {
    await store.put('a', 'blob a')
    await store.put('x/y', 'blob x/y')
    const conflicts = [
      () => store.put('a/b', 'under a blob'),
      () => store.put('x', 'over a folder'),
      () => store.move('a', 'x'),
      () => store.move('x/y', 'a/y'),
    ]
    for (const attempt of conflicts) {
      const error = await attempt().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidBlobKeyError)
      expect((error as Error).message).toEndWith('conflicts with another blob: a key cannot also be a folder of keys')
    }
    expect(await store.get('a/b')).toBeUndefined()
    expect(await store.stat('a/b')).toBeUndefined()
    await store.delete('a/b')
    await store.delete('x')
    expect(await rejected(store.move('x', 'z'))).toThrow(BlobNotFoundError)
    expect(await collect(store.list(''))).toEqual(['a', 'x/y'])
    expect(readdirSync(join(dataDir, 'blobs', '.tmp'))).toEqual([])
  })

  test('files that are not blobs are not listed', async () => {
    await store.put('repo/doc', 'doc')
    mkdirSync(join(dataDir, 'blobs', 'repo', '.hidden'))
    writeFileSync(join(dataDir, 'blobs', 'repo', '.hidden', 'file'), 'x')
    writeFileSync(join(dataDir, 'blobs', 'repo', 'with space'), 'x')
    expect(await collect(store.list(''))).toEqual(['repo/doc'])
    expect(existsSync(join(dataDir, 'blobs', 'repo', 'with space'))).toBe(true)
  })
})

for (const { name, openClient } of S3_CLIENTS)
  describe(`S3 store (${name})`, () => {
    let fake: FakeS3
    beforeEach(() => {
      fake = startFakeS3({ region: 'eu-west-3' })
    })
    afterEach(() => fake.stop())
    const openS3 = (overrides: Record<string, string> = {}) =>
      new S3BlobStore(s3Config(fake, overrides).s3!, openClient)

    test('objects live under S3_PREFIX with their content type; objects outside it are not listed', async () => {
      const store = openS3({ S3_PREFIX: 'tenant-a' })
      await store.put('repo/img.png', new Uint8Array([137, 80, 78, 71]), { contentType: 'image/png' })
      fake.objects.set('tenant-b/repo/other', { body: new Uint8Array(1), contentType: 'text/plain' })
      expect([...fake.objects.keys()].sort()).toEqual(['tenant-a/repo/img.png', 'tenant-b/repo/other'])
      expect(fake.objects.get('tenant-a/repo/img.png')!.contentType).toBe('image/png')
      expect(await collect(store.list(''))).toEqual(['repo/img.png'])
      expect(await store.deletePrefix('repo/')).toBe(1)
      expect([...fake.objects.keys()]).toEqual(['tenant-b/repo/other'])
    })

    test('a moved blob keeps its content type', async () => {
      const store = openS3()
      await store.put('staging/img', 'gif', { contentType: 'image/gif' })
      await store.move('staging/img', 'repo/img')
      expect(fake.objects.get('kgs/repo/img')).toEqual({
        body: new TextEncoder().encode('gif'),
        contentType: 'image/gif',
      })
    })

    test('a large stream goes up as a multipart upload, a small one as a single PUT', async () => {
      const store = openS3()
      await store.put('small', streamOf([new Uint8Array(1000)]))
      expect(fake.operations).toEqual(['PutObject'])
      fake.operations.length = 0
      await store.put('large', streamOf(randomChunks(12 * MiB)))
      expect(fake.operations[0]).toBe('CreateMultipartUpload')
      expect(fake.operations.filter((operation) => operation === 'UploadPart')).toHaveLength(3)
      expect(fake.operations.at(-1)).toBe('CompleteMultipartUpload')
      expect(fake.openUploads()).toBe(0)
    })

    test('requests are signed with the configured key pair: a wrong secret or key id is refused', async () => {
      for (const [overrides, code] of [
        [{ S3_SECRET_ACCESS_KEY: 'not-the-secret' }, 'SignatureDoesNotMatch'],
        [{ S3_ACCESS_KEY_ID: 'AKIAUNKNOWN' }, 'InvalidAccessKeyId'],
        [{ S3_REGION: 'us-west-2' }, 'AuthorizationHeaderMalformed'],
      ] as const) {
        const store = openS3(overrides)
        const refusedBefore = fake.refused()
        const error = await store.put('doc', 'x').catch((e: unknown) => e)
        expect([(error as Error).name, (error as { code?: string }).code]).toEqual(['S3Error', code])
        expect(fake.refused()).toBeGreaterThan(refusedBefore)
      }
      expect(fake.objects.size).toBe(0)
      expect(fake.operations).toEqual([])
    })
  })

// LanceDB's commits rely on it: of two writers of one key with If-None-Match: *, the second gets 412.
describe('conditional writes', () => {
  test('the fake refuses a conditional PUT of a key that exists, as S3 does', async () => {
    const fake = startFakeS3()
    try {
      const put = (body: string) =>
        new AwsClient({
          accessKeyId: fake.accessKeyId,
          secretAccessKey: fake.secretAccessKey,
          region: fake.region,
          service: 's3',
        }).fetch(`${fake.endpoint}/${fake.bucket}/commit`, {
          method: 'PUT',
          body,
          headers: { 'if-none-match': '*' },
        })
      expect((await put('first')).status).toBe(200)
      const refused = await put('second')
      expect([refused.status, await refused.text()]).toEqual([
        412,
        expect.stringContaining('<Code>PreconditionFailed</Code>'),
      ])
      expect(new TextDecoder().decode(fake.objects.get('commit')!.body)).toBe('first')
    } finally {
      await fake.stop()
    }
  })

  test.skipIf(!OBJECT_STORE)('Ceph RGW refuses a conditional PUT of a key that exists', async () => {
    const bucket = await createBucket(OBJECT_STORE!, 'conditional')
    expect(await conditionalPut(OBJECT_STORE!, bucket, 'commit', 'first')).toBe(200)
    expect(await conditionalPut(OBJECT_STORE!, bucket, 'commit', 'second')).toBe(412)
  })
})

test('openBlobStore opens the S3 store when S3_BUCKET is set', async () => {
  const fake = startFakeS3()
  try {
    expect(openBlobStore(s3Config(fake))).toBeInstanceOf(S3BlobStore)
  } finally {
    await fake.stop()
  }
})

describe('the server', () => {
  test('context.blobs is the local store under DATA_DIR/blobs unless S3 is configured', async () => {
    const server = await startTestServer()
    try {
      const blobs = server.context.blobs
      expect(blobs).toBeInstanceOf(LocalBlobStore)
      expect((blobs as LocalBlobStore).root).toBe(join(server.dataDir, 'blobs'))
      await blobs.put('check/doc', 'stored by the server')
      expect(text(await blobs.get('check/doc'))).toBe('stored by the server')
      expect(existsSync(join(server.dataDir, 'blobs', 'check', 'doc'))).toBe(true)
    } finally {
      await server.stop()
    }
  })
})
