// The write API: single fact creations (POST /{repoID}/facts, each with two sources and two
// concepts, each its own request and transaction) as requests per second, next to
// GET /{repoID}/facts/{id} of those facts on the same kgs process (target: writes >= 0.25 of
// reads). The embedding jobs the writes queue run meanwhile (WORKERS=1), as they would in use;
// the script reports how many there were (coalesced: far fewer than the writes).
// Usage: bun scripts/bench/writes.ts [facts=1000] [concurrency=16] [seconds=5] [--postgres] (in 5 rounds of each)
// --postgres: a fresh database on the server of PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// dropped afterwards; else the embedded database.
import { benchKgs, format, mapConcurrently, measure, percentile, type LoadResult } from '../lib/load.ts'

const postgresBackend = process.argv.includes('--postgres')
const [facts = 1000, concurrency = 16, seconds = 5] = process.argv
  .slice(2)
  .filter((arg) => arg !== '--postgres')
  .map(Number)
const SOURCES = 100
const ROUNDS = 5
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  )
const CONCEPTS = 100
const { kgs, call, token, stop } = await benchKgs('writes', postgresBackend)
try {
  const post = (path: string, body: unknown, token?: string): Promise<Record<string, unknown>> =>
    call('POST', path, token, body)
  const { slug } = (await post('/api/v1/repositories', { name: 'writes' }, token)) as { slug: string }
  const sources = await mapConcurrently(
    Array.from({ length: SOURCES }),
    8,
    async (_, i) =>
      (await post(`/${slug}/sources`, { url: `https://example.org/${i}`, kind: 'web', status: 'parsed' }, token))
        .id as string,
  )
  const concepts = await mapConcurrently(
    Array.from({ length: CONCEPTS }),
    8,
    async (_, i) => (await post(`/${slug}/concepts`, { canonical_name: `Concept ${i}` }, token)).id as string,
  )

  // Fact `i`, by one request.
  const createFact = async (i: number) =>
    (
      await post(
        `/${slug}/facts`,
        {
          text: `Fact ${i}: measured under load, with two sources and two concepts.`,
          sources: [
            { source_id: sources[i % SOURCES] },
            { source_id: sources[(i * 7 + 1) % SOURCES], chunk_index: i % 5 },
          ],
          concepts: [{ concept_id: concepts[i % CONCEPTS] }, { concept_id: concepts[(i * 3 + 1) % CONCEPTS] }],
        },
        token,
      )
    ).id as string
  // Warmed up as the reads are (measure's first second): creations not counted, numbered past the counted ones.
  const warmup = Math.ceil(facts / 10)
  await mapConcurrently(Array.from({ length: warmup }), concurrency, (_, j) => createFact(facts + j))
  // The creations and the reads alternate in rounds (each round: its share of the creations,
  // `concurrency` at a time, then reads of the facts written so far for its share of the
  // seconds), so both rates see the same process and background (the embedding jobs, the
  // database's vacuum) rather than one the start of the run and the other its end.
  const latencies: number[] = []
  const ids: string[] = []
  const rounds: { writes: number; writeSeconds: number; reads: LoadResult }[] = []
  let next = 0
  for (let round = 0; round < ROUNDS; round++) {
    const count = Math.floor((facts * (round + 1)) / ROUNDS) - Math.floor((facts * round) / ROUNDS)
    const first = ids.length
    const started = performance.now()
    await mapConcurrently(Array.from({ length: count }), concurrency, async (_, j) => {
      const at = performance.now()
      const id = await createFact(first + j)
      latencies.push(performance.now() - at)
      ids.push(id)
    })
    const writeSeconds = (performance.now() - started) / 1000
    const reads = await measure(
      () =>
        fetch(`${kgs.url}/${slug}/facts/${ids[next++ % ids.length]}`, {
          headers: { authorization: `Bearer ${token}` },
        }),
      {
        seconds: seconds / ROUNDS,
        concurrency,
        warmupSeconds: round === 0 ? 1 : 0.2,
      },
    )
    if (reads.errors > 0) throw new Error(`reads: ${reads.errors} errors`)
    rounds.push({ writes: count, writeSeconds, reads })
  }
  const writeSeconds = rounds.reduce((sum, r) => sum + r.writeSeconds, 0)
  const writeRate = facts / writeSeconds
  const readRate = rounds.reduce((sum, r) => sum + r.reads.requests, 0) / seconds
  const roundRatios = rounds.map((r) => r.writes / r.writeSeconds / r.reads.requestsPerSecond)
  latencies.sort((a, b) => a - b)

  let jobs = 0
  for (let page: string | undefined = `/${slug}/jobs?kind=embed_changes&limit=100`; page; ) {
    const res: Response = await fetch(`${kgs.url}${page}`, { headers: { authorization: `Bearer ${token}` } })
    jobs += ((await res.json()) as unknown[]).length
    page = /<[^>]*?(\/[^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
  }
  const backend = postgresBackend ? 'PostgreSQL' : 'embedded'
  console.log(`\n${backend}, ${concurrency} clients`)
  console.log(
    `POST /{repoID}/facts        ${format(writeRate).padStart(8)} req/s  (${facts} facts in ${writeSeconds.toFixed(1)} s; p50 ${percentile(latencies, 0.5).toFixed(1)} ms  p99 ${percentile(latencies, 0.99).toFixed(1)} ms)`,
  )
  console.log(
    `GET /{repoID}/facts/{id}    ${format(readRate).padStart(8)} req/s  (${seconds} s; p50 of the rounds' p50 ${median(rounds.map((r) => r.reads.p50)).toFixed(1)} ms, highest p99 ${Math.max(...rounds.map((r) => r.reads.p99)).toFixed(1)} ms)`,
  )
  console.log(
    `ratio writes : reads        ${(writeRate / readRate).toFixed(2)} (target >= 0.25); by round ${roundRatios.map((r) => r.toFixed(2)).join(' ')}, median ${median(roundRatios).toFixed(2)}`,
  )
  console.log(`embed_changes jobs queued   ${jobs} for ${facts + warmup + CONCEPTS} writes of facts and concepts`)
} finally {
  await stop()
}
