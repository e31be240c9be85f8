// A fleet on real object storage: two kgs processes on one PostgreSQL, their blobs and vectors in
// one bucket of Ceph's RADOS Gateway (S3_* and LANCEDB_URI=s3://…, one configuration for both).
// What one instance writes the other serves; vector writes to one table from both lose nothing;
// a repository deleted through one leaves no object behind. Runs on the PostgreSQL leg of CI,
// where the gateway is started (tests/helpers/object-store.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { parseEnv } from '../../src/config.ts'
import { VectorStore } from '../../src/vectors/store.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { BACKEND, instanceEnvironment, tempDir } from '../helpers/backend.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { OBJECT_STORE, createBucket, listKeys } from '../helpers/object-store.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'

const FACTS = 300
const SLICES = 6

describe.if(BACKEND === 'postgres' && OBJECT_STORE !== undefined)('a fleet on Ceph RGW (postgres)', () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let env: Record<string, string>
  let bucket: string
  let a: ServerProcess
  let b: ServerProcess
  let owner: Account
  let repo: { id: string; slug: string }

  beforeAll(async () => {
    const objectStore = OBJECT_STORE!
    instance = await instanceEnvironment()
    bucket = await createBucket(objectStore, 'fleet')
    env = {
      ...instance.env,
      JWT_SECRET: randomBytes(32).toString('hex'),
      BASE_URL: 'https://kgs.fleet.test',
      WORKERS: '2',
      S3_BUCKET: bucket,
      S3_ENDPOINT: objectStore.endpoint,
      S3_REGION: objectStore.region,
      S3_ACCESS_KEY_ID: objectStore.accessKeyId,
      S3_SECRET_ACCESS_KEY: objectStore.secretAccessKey,
      LANCEDB_URI: `s3://${bucket}/lance`,
    }
    ;[a, b] = await Promise.all([
      startServerProcess(env),
      startServerProcess({ ...env, DATA_DIR: join(instance.dataDir, 'b') }),
    ])
    owner = await registerAccount(api(a.url))
    repo = (await api(a.url).post('/api/v1/repositories', { name: 'Fleet on RGW' }, owner.token)).body
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await instance?.cleanup()
  })

  test('an import through A is searched and its media served through B', async () => {
    const bundle = await generateBundle(join(tempDir('kgs-fleet-'), 'fleet.json.gz'), {
      facts: FACTS,
      vectors: 'kgs-hash-v1',
    })
    const queued = await uploadBundle(
      api(a.url),
      repo.slug,
      owner.token,
      new Uint8Array(await Bun.file(bundle.path).arrayBuffer()),
    )
    expect(queued.status).toBe(202)
    expect((await waitForJob(api(a.url), `/${repo.slug}/jobs/${queued.body.id}`, owner.token)).status).toBe('succeeded')

    const fact = (await api(b.url).get(`/${repo.slug}/facts?limit=1`, owner.token)).body[0] as {
      id: string
      text: string
    }
    const hits = await api(b.url).get(
      `/${repo.slug}/search?${new URLSearchParams({ q: fact.text, kind: 'facts', k: '3' })}`,
      owner.token,
    )
    expect(hits.status).toBe(200)
    expect(JSON.stringify(hits.body)).toContain(fact.id)

    const sources = (await api(b.url).get(`/${repo.slug}/sources?limit=50`, owner.token)).body as { id: string }[]
    const withImage = (
      await Promise.all(
        sources.map(async ({ id }) => (await api(b.url).get(`/${repo.slug}/sources/${id}`, owner.token)).body),
      )
    ).find((source: { images: unknown[] }) => source.images.length > 0) as { images: { id: string }[] }
    const image = await fetch(`${b.url}/${repo.slug}/images/${withImage.images[0]!.id}`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect(image.status).toBe(200)
    expect((await image.arrayBuffer()).byteLength).toBeGreaterThan(0)
    expect((await listKeys(OBJECT_STORE!, bucket, `repositories/${repo.id}/`)).length).toBeGreaterThan(0)
  })

  // Four workers (two per instance, each thread with a connection of its own) commit to one table at once.
  test('embedding jobs queued through both instances write one vector table at once, and every vector is there once', async () => {
    const ids = ((await api(a.url).get(`/${repo.slug}/facts?limit=500`, owner.token)).body as { id: string }[]).map(
      ({ id }) => id,
    )
    expect(ids).toHaveLength(FACTS)
    const slice = Math.ceil(FACTS / SLICES)
    const queued = await Promise.all(
      Array.from({ length: SLICES }, (_, i) =>
        api(i % 2 ? b.url : a.url).post(
          `/${repo.slug}/jobs`,
          { kind: 'embed_facts', params: { ids: ids.slice(i * slice, (i + 1) * slice) } },
          owner.token,
        ),
      ),
    )
    const jobs = await Promise.all(
      queued.map((response) => waitForJob(api(a.url), `/${repo.slug}/jobs/${response.body.id}`, owner.token)),
    )
    expect(jobs.map((job) => job.status)).toEqual(Array(SLICES).fill('succeeded'))

    const config = parseEnv(env)
    const vectors = await VectorStore.open(config.lancedbUri, { storageOptions: config.lancedbStorageOptions })
    try {
      const stored: string[] = []
      for await (const batch of vectors.ids(repo.id, 'facts', 1000)) stored.push(...batch)
      expect(stored.toSorted()).toEqual(ids.toSorted())
    } finally {
      await vectors.close()
    }
  })

  test('a repository deleted through A leaves no object behind', async () => {
    expect(
      (
        await api(a.url).call('DELETE', `/api/v1/repositories/${repo.id}`, {
          token: owner.token,
          body: { confirm: repo.slug },
        })
      ).status,
    ).toBe(200)
    const left = (await listKeys(OBJECT_STORE!, bucket)).filter(
      (key) => key.includes(repo.id) || key.includes(repo.id.replaceAll('-', '')),
    )
    expect(left).toEqual([])
  })
})
