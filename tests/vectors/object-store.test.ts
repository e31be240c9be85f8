// The vector store on object storage as a fleet runs it: LANCEDB_URI=s3://… on Ceph's RADOS
// Gateway, reached with the S3_* settings (config.lancedbStorageOptions). Several stores on one
// table stand for several instances: LanceDB's commits rely on the store's conditional PUT, and
// none of their rows may be lost. Runs where the run has a gateway (tests/helpers/object-store.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parseEnv } from '../../src/config.ts'
import { VectorStore } from '../../src/vectors/store.ts'
import { sharedCreationLocks } from '../helpers/creation-locks.ts'
import { OBJECT_STORE, createBucket, listKeys } from '../helpers/object-store.ts'

const uuid = () => crypto.randomUUID()
const unit = (axis: number) => Float32Array.from({ length: 64 }, (_, d) => (d === axis ? 1 : 0))

async function collect<T>(items: AsyncIterable<T[]>): Promise<T[]> {
  const all: T[] = []
  for await (const batch of items) all.push(...batch)
  return all
}

describe.skipIf(!OBJECT_STORE)('vector store on Ceph RGW (s3://)', () => {
  let bucket: string
  let config: ReturnType<typeof parseEnv>
  let store: VectorStore
  const open = () => VectorStore.open(config.lancedbUri, { storageOptions: config.lancedbStorageOptions })

  beforeAll(async () => {
    const objectStore = OBJECT_STORE!
    bucket = await createBucket(objectStore, 'vectors')
    config = parseEnv({
      DATA_DIR: '/nonexistent/kgs-vectors-not-used',
      LANCEDB_URI: `s3://${bucket}/lance`,
      S3_BUCKET: bucket,
      S3_ENDPOINT: objectStore.endpoint,
      S3_REGION: objectStore.region,
      S3_ACCESS_KEY_ID: objectStore.accessKeyId,
      S3_SECRET_ACCESS_KEY: objectStore.secretAccessKey,
    })
    store = await open()
  })
  afterAll(() => store?.close())

  test('upsert, search, delete and optimize keep their tables in the bucket', async () => {
    const repo = uuid()
    const ids = Array.from({ length: 8 }, () => uuid())
    await store.upsert(
      repo,
      'facts',
      ids.map((id, axis) => ({ id, vector: unit(axis) })),
    )
    expect(await store.count(repo, 'facts')).toBe(8)
    expect((await store.search(repo, 'facts', unit(3), 1)).map((hit) => hit.id)).toEqual([ids[3]!])
    await store.delete(repo, 'facts', [ids[3]!])
    expect((await store.search(repo, 'facts', unit(3), 8)).map((hit) => hit.id)).not.toContain(ids[3])
    await store.optimize(repo, 'facts')
    expect(await store.count(repo, 'facts')).toBe(7)
    expect(
      (await listKeys(OBJECT_STORE!, bucket, `lance/facts_${repo.replaceAll('-', '')}.lance/`)).length,
    ).toBeGreaterThan(0)
  })

  test('several stores (as several instances, sharing the creation lock) creating tables and writing them at once lose no row', async () => {
    const shared = await sharedCreationLocks(4)
    const others = await Promise.all(
      shared.locks.map((creationLock) =>
        VectorStore.open(config.lancedbUri, { storageOptions: config.lancedbStorageOptions, creationLock }),
      ),
    )
    try {
      // Each round races to create a new table, then to append to it: every acknowledged row must be there once.
      for (let round = 0; round < 3; round++) {
        const repo = uuid()
        const written: string[] = []
        for (let write = 0; write < 2; write++) {
          await Promise.all(
            others.map((other, i) => {
              const rows = Array.from({ length: 5 }, (_, j) => ({ id: uuid(), vector: unit((i * 5 + j) % 64) }))
              written.push(...rows.map((row) => row.id))
              return other.upsert(repo, 'facts', rows)
            }),
          )
        }
        expect((await collect(store.ids(repo, 'facts', 100))).toSorted()).toEqual(written.toSorted())
      }
    } finally {
      await Promise.all(others.map((other) => other.close()))
      await shared.close()
    }
  })

  test("dropping a repository's vectors leaves no object of its tables behind", async () => {
    const repo = uuid()
    await store.upsert(repo, 'facts', [{ id: uuid(), vector: unit(1) }])
    await store.upsert(repo, 'concepts', [{ id: uuid(), vector: unit(2) }])
    // LanceDB names a table's directory <table>.lance; kgs names tables <kind>_<repository id without dashes>.
    const mine = async () =>
      (await listKeys(OBJECT_STORE!, bucket, 'lance/')).filter((key) =>
        key.includes(`_${repo.replaceAll('-', '')}.lance/`),
      )
    expect((await mine()).length).toBeGreaterThan(0)
    await store.dropRepository(repo)
    expect(await mine()).toEqual([])
  })
})
