// Values an import must refuse before PostgreSQL does (SECURITY.md, "Bounded by design", findings 6
// and 9): a value too long for its index and a media type that is none fail the job at once, with
// no retry, naming the row and the field; the repository keeps nothing of the bundle.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../../helpers/backend.ts'
import { api, registerAccount, type Account } from '../../helpers/api.ts'
import { gzipBundle, validBundle, validBundleJson } from '../../helpers/broken-bundles.ts'
import { waitForJob } from '../../helpers/jobs.ts'
import { uploadBundle } from '../../helpers/imports.ts'
import { startTestServer, type TestServer } from '../../helpers/server.ts'

type Obj = Record<string, any>

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let repo: { id: string; slug: string }

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  http = api(server.url)
  owner = await registerAccount(http)
  repo = (await http.post('/api/v1/repositories', { name: 'Checked imports' }, owner.token)).body
})
afterAll(() => server.stop())

/** Not compressible, as a real long value is: PostgreSQL compresses index entries that are. */
const noise = (bytes: number) =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(bytes)))
    .toString('base64')
    .slice(0, bytes)

async function importFails(change: (bundle: Obj) => void, error: string) {
  const bundle = validBundle() as Obj
  change(bundle)
  const started = await uploadBundle(http, repo.slug, owner.token, gzipBundle(validBundleJson(bundle)))
  expect(started.status).toBe(202)
  const job = await waitForJob(http, `/${repo.slug}/jobs/${started.body.id}`, owner.token)
  expect({ status: job.status, error: job.error, attempts: job.attempts }).toEqual({
    status: 'failed',
    error,
    attempts: 1,
  })
  const sql = await server.context.pools.forRepository(repo.id)
  expect((await sql`SELECT count(*)::int AS n FROM sources`)[0]!.n).toBe(0)
}

describe(`values an import refuses (${BACKEND})`, () => {
  test('an over-long indexed value or full-text document: section[position]: field is N bytes, at most M; one attempt', async () => {
    await importFails(
      (b) => (b.concepts[1].canonical_name = noise(12_000)),
      'concepts[1]: canonical_name is 12000 bytes, at most 1300',
    )
    await importFails(
      (b) => (b.sources[1].url = `https://example.org/${noise(12_000)}`),
      'sources[1]: url is 12020 bytes, at most 2600',
    )
    await importFails(
      (b) => (b.concept_aliases[0].alias_text = noise(3_000)),
      'concept_aliases[0]: alias_text is 3000 bytes, at most 2600',
    )
    await importFails(
      (b) => (b.concepts[1].description = noise(300_000)),
      `concepts[1]: canonical_name and description are ${300_000 + Buffer.byteLength((validBundle() as Obj).concepts[1].canonical_name)} bytes together, at most 262144 (its full-text document)`,
    )
  })

  test('the longest accepted values import', async () => {
    const bundle = validBundle() as Obj
    bundle.concepts[1].canonical_name = noise(1300)
    bundle.concepts[1].context = noise(1300)
    bundle.sources[1].url = `https://example.org/${noise(2580)}`
    bundle.reports[0].title = noise(2600)
    const other = (await http.post('/api/v1/repositories', { name: 'Long values' }, owner.token)).body
    const started = await uploadBundle(http, other.slug, owner.token, gzipBundle(validBundleJson(bundle)))
    const job = await waitForJob(http, `/${other.slug}/jobs/${started.body.id}`, owner.token)
    expect({ status: job.status, error: job.error }).toEqual({ status: 'succeeded', error: null })
  })

  test('a media content_type that is not a media type fails the import', async () => {
    const forged = 'text/html\r\nSet-Cookie: session=stolen'
    await importFails(
      (b) => (b.images['img-0'].content_type = forged),
      `images["img-0"]: content_type ${JSON.stringify(forged)} is not a media type`,
    )
    await importFails(
      (b) => (b.source_images[0].content_type = 'image/png\u0007'),
      `source_images[0]: content_type "image/png\\u0007" is not a media type`,
    )
    await importFails(
      (b) => (b.source_bodies[0].content_type = 'html'),
      'source_bodies[0]: content_type "html" is not a media type',
    )
  })
})
