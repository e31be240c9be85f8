// Mutated bundles against the streaming reader (in this process, hundreds of cases) and through
// POST /{repoID}/import-graph (the import job reads them in a worker thread). The gzip stream
// and the JSON text are damaged byte-wise (flips, cuts, duplicated and deleted ranges, inserted
// bytes), the JSON structurally (wrong types, huge numbers, deep nesting, long strings, unknown
// fields), and read with the default limits or lowered ones, in random chunks, by a consumer
// that reads, skips or abandons media data. The reader must accept or refuse with a
// BundleError, never anything else, never hang, and hold no memory after.
// The seed is printed; FUZZ_SEED replays a run, FUZZ_ROUNDS runs more cases (see fuzz.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BundleError, readBundle, type ReaderLimits } from '../../src/bundle/format/reader.ts'
import type { api, Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { gzipBundle, v1Json, validBundle, validBundleJson } from '../helpers/broken-bundles.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { fuzzRounds, fuzzSeed, mutateBytes, mutateJson, Rng, stringifyWithRaw, type Json } from './fuzz.ts'

/** How long one case may take before it counts as a hang (generous: the machine is shared). */
const CASE_DEADLINE_MS = 15_000
/** A BundleError's message: "<where>: <problem>". */
const BUNDLE_MESSAGE = /^(bundle|gzip|[a-z_]+(\.[a-z_]+)?(\[[^\]]+\])?): \S/

interface FuzzCase {
  description: string
  bytes: Uint8Array
}

/** A damaged bundle: its gzip stream, its JSON text or its structure mutated (sometimes several at once). */
function fuzzCase(rng: Rng): FuzzCase {
  const version = rng.chance(0.2) ? 1 : 2
  const steps: string[] = [`v${version}`]
  let text: string
  if (rng.chance(0.45)) {
    const bundle = (version === 1 ? JSON.parse(v1Json()) : validBundle()) as Json
    const mutations = rng.between(1, 3)
    for (let i = 0; i < mutations; i++) steps.push(mutateJson(rng, bundle))
    text = stringifyWithRaw(bundle)
  } else {
    text = version === 1 ? v1Json() : validBundleJson()
  }
  let bytes: Uint8Array = new TextEncoder().encode(text)
  if (rng.chance(0.5)) {
    const damage = mutateBytes(rng, bytes)
    steps.push(`JSON: ${damage.name}`)
    bytes = damage.bytes
  }
  bytes = gzipBundle(bytes)
  if (steps.length === 1 || rng.chance(0.3)) {
    const damage = mutateBytes(rng, bytes)
    steps.push(`gzip: ${damage.name}`)
    bytes = damage.bytes
  }
  return { description: steps.join('; '), bytes }
}

/** The default limits, or some of them lowered so that the limit checks meet the mutations. */
function fuzzLimits(rng: Rng): Partial<ReaderLimits> {
  if (rng.chance(0.5)) return {}
  const limits: Partial<ReaderLimits> = {}
  if (rng.chance(0.4)) limits.maxDepth = rng.between(1, 40)
  if (rng.chance(0.4)) limits.maxStringBytes = rng.between(1, 4096)
  if (rng.chance(0.4)) limits.maxRowBytes = rng.between(1, 8192)
  if (rng.chance(0.3)) limits.maxRows = rng.between(1, 40)
  if (rng.chance(0.3)) limits.maxDecompressedBytes = rng.between(1, 20_000)
  return limits
}

async function* randomChunks(rng: Rng, bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  const tiny = rng.chance(0.2)
  for (let i = 0; i < bytes.length; ) {
    const n = tiny ? rng.between(1, 16) : rng.between(1, 70_000)
    yield bytes.subarray(i, i + n)
    i += n
  }
}

type Outcome = { accepted: true; items: number } | { accepted: false; error: unknown }

/** Reads the bundle as a consumer might: reading, skipping or half-reading media data, sometimes stopping early. */
async function consume(rng: Rng, bytes: Uint8Array, limits: Partial<ReaderLimits>): Promise<Outcome> {
  const stopAfter = rng.chance(0.1) ? rng.between(0, 30) : Infinity
  let items = 0
  try {
    for await (const item of readBundle(randomChunks(rng, bytes), limits)) {
      if (++items > stopAfter) break
      if (item.type !== 'media' || !item.data) continue
      const mode = rng.int(3)
      if (mode === 0) continue
      for await (const _ of item.data) if (mode === 2) break
    }
    return { accepted: true, items }
  } catch (error) {
    return { accepted: false, error }
  }
}

function withDeadline<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: Timer | undefined
  const deadline = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(
        () => reject(new Error(`${what}: no answer within ${CASE_DEADLINE_MS} ms (hang)`)),
        CASE_DEADLINE_MS,
      )),
  )
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

describe('the reader, fuzzed', () => {
  test('accepts or refuses with a BundleError; never hangs; holds no memory after', async () => {
    const seed = fuzzSeed('bundle reader fuzz')
    const cases = 800 * fuzzRounds()
    Bun.gc(true)
    const heapBefore = process.memoryUsage().heapUsed
    let accepted = 0
    let refused = 0
    const problems: string[] = []
    for (let i = 0; i < cases; i++) {
      const rng = Rng.forCase(seed, i)
      const { description, bytes } = fuzzCase(rng)
      const limits = fuzzLimits(rng)
      const where = `FUZZ_SEED=${seed} case ${i} (${description}; limits ${JSON.stringify(limits)})`
      const outcome = await withDeadline(consume(rng, bytes, limits), where)
      if (outcome.accepted) accepted++
      else if (outcome.error instanceof BundleError && BUNDLE_MESSAGE.test(outcome.error.message)) refused++
      else
        problems.push(
          `${where}: ${outcome.error instanceof Error ? `${outcome.error.name}: ${outcome.error.message}\n${outcome.error.stack}` : String(outcome.error)}`,
        )
    }
    console.log(`bundle reader fuzz: ${cases} cases, ${accepted} accepted, ${refused} refused`)
    expect(problems).toEqual([])
    // Both outcomes occur, or the mutations would not be reaching the reader's two sides.
    expect(accepted).toBeGreaterThan(0)
    expect(refused).toBeGreaterThan(cases / 2)
    Bun.gc(true)
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(32 * 1024 ** 2)
  }, 120_000)
})

describe(`mutated bundles through POST /{repoID}/import-graph (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let slug: string

  beforeAll(async () => {
    // Retries come quickly: an import that fails with anything but a bundle problem is retried,
    // and the test sees it in the job's attempts.
    const fuzzed = await fixture({
      server: { env: { WORKERS: '2' }, jobs: { timing: { backoffBaseMs: 10, pollMs: 50 } } },
      users: { owner: 'member' },
      repositories: { imports: { by: 'owner', name: 'Fuzzed imports' } },
    })
    ;({
      server,
      http,
      users: { owner },
    } = fuzzed)
    slug = fuzzed.repositories.imports.slug
  })
  afterAll(() => server.stop())

  test('each is refused at the door (not gzip), or its job succeeds or fails at once with a bundle problem', async () => {
    const seed = fuzzSeed('import-graph fuzz')
    const cases = 24 * fuzzRounds()
    const outcomes: string[] = []
    for (let i = 0; i < cases; i++) {
      const rng = Rng.forCase(seed, i)
      const { description, bytes } = fuzzCase(rng)
      const where = `FUZZ_SEED=${seed} case ${i} (${description})`
      const res = await http.call('POST', `/${slug}/import-graph`, {
        token: owner.token,
        raw: bytes,
        headers: { 'content-type': 'application/gzip' },
      })
      if (res.status === 400) {
        expect({ where, body: res.body }).toEqual({
          where,
          body: { error: expect.stringMatching(/^the bundle is (not gzip|empty)/) },
        })
        outcomes.push('refused')
        continue
      }
      expect({ where, status: res.status }).toEqual({ where, status: 202 })
      const job = await waitForJob(http, `/${slug}/jobs/${res.body.id}`, owner.token)
      if (job.status === 'succeeded') {
        expect({ where, attempts: job.attempts }).toEqual({ where, attempts: 1 })
        outcomes.push('succeeded')
        continue
      }
      // A bundle problem fails the job on its first attempt, with the reader's (or the database's) words.
      expect({ where, status: job.status, attempts: job.attempts, error: job.error }).toEqual({
        where,
        status: 'failed',
        attempts: 1,
        error: expect.stringMatching(BUNDLE_MESSAGE),
      })
      outcomes.push('failed')
    }
    expect(outcomes).toContain('failed')
    const health = await http.get('/readyz')
    expect(health.status).toBe(200)
  }, 300_000)
})
