// S3 blob storage on Deno: the S3 store (src/blobs/s3.ts, through Deno's runtime client over
// fetch) run by `deno run` against a loopback fake S3 that this script serves with Bun
// (tests/helpers/fake-s3.ts, which verifies every SigV4 signature). Under Deno the store puts a
// small blob, a large stream as a multipart upload and reads it back byte for byte, stats, lists,
// moves, has a body fail after its first part went up (the put rejects with that very error),
// and deletes; back under Bun, the fake must hold no object and no open upload, and have seen
// the multipart uploads completed and the failed one aborted. The whole blob store contract runs
// on both runtimes' clients in tests/blobs/store.test.ts (under Bun); this proves Deno's fetch
// and streams carry them. Exit 1 on the first failure.
//   bun scripts/deno-s3.ts
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'
import { openBlobStore } from '../src/blobs/open.ts'
import { parseEnv } from '../src/config.ts'
import { startFakeS3 } from '../tests/helpers/fake-s3.ts'

const MiB = 1024 * 1024
const script = fileURLToPath(import.meta.url)

function check(condition: unknown, message: string): asserts condition {
  if (condition) return
  console.error(`deno-s3: ${message}`)
  process.exit(1)
}

if ('Deno' in globalThis) await onDeno()
else await onBun()

async function onBun(): Promise<void> {
  // Two keys per list page, so listing and deletePrefix cross pages.
  const fake = startFakeS3({ region: 'eu-west-3', pageSize: 2 })
  const root = join(script, '..', '..')
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? root,
    S3_BUCKET: fake.bucket,
    S3_ENDPOINT: fake.endpoint,
    S3_REGION: fake.region,
    S3_ACCESS_KEY_ID: fake.accessKeyId,
    S3_SECRET_ACCESS_KEY: fake.secretAccessKey,
    S3_PREFIX: 'deno/',
  }
  const child = Bun.spawn([join(root, 'node_modules', '.bin', 'deno'), 'run', '-A', script], {
    cwd: root,
    env,
    stdout: 'inherit',
    stderr: 'inherit',
  })
  check((await child.exited) === 0, `deno run ${script} exited ${child.exitCode}`)
  const count = (operation: string) => fake.operations.filter((seen) => seen === operation).length
  check(fake.refused() === 0, `${fake.refused()} requests refused for their signature`)
  check(
    fake.openUploads() === 0 && fake.objects.size === 0,
    `left behind: ${fake.openUploads()} open uploads, objects ${JSON.stringify([...fake.objects.keys()])}`,
  )
  // The large put and its move completed as multipart uploads; the failed put was aborted.
  check(
    count('CompleteMultipartUpload') === 2 && count('AbortMultipartUpload') === 1,
    `multipart: ${JSON.stringify(fake.operations)}`,
  )
  await fake.stop()
  console.log(`ok   the S3 blob store on Deno (${fake.operations.length} S3 requests)`)
}

async function onDeno(): Promise<void> {
  const store = openBlobStore(
    parseEnv({
      DATA_DIR: '/nonexistent/kgs-deno-s3-not-used',
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('S3_'))),
    }),
  )
  const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
  const list = async (prefix = '') => {
    const keys: string[] = []
    for await (const key of store.list(prefix)) keys.push(key)
    return keys
  }

  check((await store.put('small', 'hello')).bytes === 5, 'small put')
  check(new TextDecoder().decode(await store.get('small')) === 'hello', 'small get')

  const chunks = Array.from({ length: (12 * MiB) / (64 * 1024) }, () =>
    crypto.getRandomValues(new Uint8Array(64 * 1024)),
  )
  const whole = new Uint8Array(12 * MiB)
  chunks.forEach((chunk, index) => whole.set(chunk, index * chunk.byteLength))
  let next = 0
  const source = new ReadableStream<Uint8Array>({
    pull: (controller) => (next < chunks.length ? controller.enqueue(chunks[next++]!) : controller.close()),
  })
  check((await store.put('large', source, { contentType: 'application/gzip' })).bytes === 12 * MiB, 'large put')
  check((await store.stat('large'))?.bytes === 12 * MiB, 'large stat')
  const streamed = createHash('sha256')
  for await (const chunk of (await store.stream('large'))!) streamed.update(chunk)
  check(streamed.digest('hex') === sha256(whole), 'large stream: not the bytes put')

  await store.move('large', 'moved/large')
  check((await store.stat('large')) === undefined, 'move left the source')
  check(sha256((await store.get('moved/large'))!) === sha256(whole), 'moved: not the bytes put')
  check(JSON.stringify(await list()) === '["moved/large","small"]', `list: ${JSON.stringify(await list())}`)

  const failure = new Error('the source connection dropped')
  const failing = async function* () {
    yield* chunks.slice(0, 96)
    throw failure
  }
  check(
    (await store.put('failed', failing()).catch((error: unknown) => error)) === failure,
    'a failing body: the put did not reject with its error',
  )
  check((await store.get('failed')) === undefined, 'a failing body left an object')

  check((await store.deletePrefix('moved/')) === 1, 'deletePrefix')
  await store.delete('small')
  await store.delete('small')
  check((await list()).length === 0, `after deleting: ${JSON.stringify(await list())}`)
}
