// The write API: single fact creations (POST /{repoID}/facts, each with two sources and two
// concepts, each its own request and transaction) as requests per second, next to
// GET /{repoID}/facts/{id} of those facts on the same kgs process (target: writes >= 0.25 of
// reads). The embedding jobs the writes queue run meanwhile (WORKERS=1), as they would in use;
// the script reports how many there were (coalesced: far fewer than the writes).
// Usage: bun scripts/bench/writes.ts [facts=1000] [concurrency=16] [seconds=5] [--postgres]
// --postgres: a fresh database on the server of PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// dropped afterwards; else the embedded database.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { format, jsonClient, mapConcurrently, measure, percentile, spawnKgs } from '../lib/load.ts'
import { createBenchDatabase } from '../lib/scratch-database.ts'

const postgresBackend = process.argv.includes('--postgres')
const [facts = 1000, concurrency = 16, seconds = 5] = process.argv
  .slice(2)
  .filter((arg) => arg !== '--postgres')
  .map(Number)
const SOURCES = 100
const CONCEPTS = 100
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-writes-'))
const database = postgresBackend ? await createBenchDatabase() : undefined
const kgs = await spawnKgs(
  { DATA_DIR: dataDir, LOG_LEVEL: 'warn', WORKERS: '1', JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(), ...(database ? { DATABASE_URL: database.url } : {}) },
  join(dataDir, 'kgs.log'),
)
try {
  const call = jsonClient(() => kgs.url)
  const post = (path: string, body: unknown, token?: string): Promise<Record<string, unknown>> => call('POST', path, token, body)
  const { token } = (await post('/api/v1/auth/register', { email: `bench-${crypto.randomUUID()}@example.com`, password: 'correct horse battery' })) as { token: string }
  const { slug } = (await post('/api/v1/repositories', { name: 'writes' }, token)) as { slug: string }
  const sources = await mapConcurrently(
    Array.from({ length: SOURCES }),
    8,
    async (_, i) => (await post(`/${slug}/sources`, { url: `https://example.org/${i}`, kind: 'web', status: 'parsed' }, token)).id as string,
  )
  const concepts = await mapConcurrently(Array.from({ length: CONCEPTS }), 8, async (_, i) => (await post(`/${slug}/concepts`, { canonical_name: `Concept ${i}` }, token)).id as string)

  // 1,000 single creations, `concurrency` at a time.
  const latencies: number[] = []
  const ids: string[] = []
  const started = performance.now()
  await mapConcurrently(Array.from({ length: facts }), concurrency, async (_, i) => {
    const at = performance.now()
    const fact = await post(
      `/${slug}/facts`,
      {
        text: `Fact ${i}: measured under load, with two sources and two concepts.`,
        sources: [{ source_id: sources[i % SOURCES] }, { source_id: sources[(i * 7 + 1) % SOURCES], chunk_index: i % 5 }],
        concepts: [{ concept_id: concepts[i % CONCEPTS] }, { concept_id: concepts[(i * 3 + 1) % CONCEPTS] }],
      },
      token,
    )
    latencies.push(performance.now() - at)
    ids.push(fact.id as string)
  })
  const writeSeconds = (performance.now() - started) / 1000
  const writeRate = facts / writeSeconds
  latencies.sort((a, b) => a - b)

  let next = 0
  const reads = await measure(() => fetch(`${kgs.url}/${slug}/facts/${ids[next++ % ids.length]}`, { headers: { authorization: `Bearer ${token}` } }), { seconds, concurrency })
  if (reads.errors > 0) throw new Error(`reads: ${reads.errors} errors`)

  let jobs = 0
  for (let page: string | undefined = `/${slug}/jobs?kind=embed_changes&limit=100`; page; ) {
    const res: Response = await fetch(`${kgs.url}${page}`, { headers: { authorization: `Bearer ${token}` } })
    jobs += ((await res.json()) as unknown[]).length
    page = /<[^>]*?(\/[^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
  }
  const backend = database ? 'PostgreSQL' : 'embedded'
  console.log(`\n${backend}, ${concurrency} clients`)
  console.log(
    `POST /{repoID}/facts        ${format(writeRate).padStart(8)} req/s  (${facts} facts in ${writeSeconds.toFixed(1)} s; p50 ${percentile(latencies, 0.5).toFixed(1)} ms  p99 ${percentile(latencies, 0.99).toFixed(1)} ms)`,
  )
  console.log(`GET /{repoID}/facts/{id}    ${format(reads.requestsPerSecond).padStart(8)} req/s  (${seconds} s; p50 ${reads.p50.toFixed(1)} ms  p99 ${reads.p99.toFixed(1)} ms)`)
  console.log(`ratio writes : reads        ${(writeRate / reads.requestsPerSecond).toFixed(2)} (target >= 0.25)`)
  console.log(`embed_changes jobs queued   ${jobs} for ${facts + CONCEPTS} writes of facts and concepts`)
} finally {
  await kgs.stop()
  await database?.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
