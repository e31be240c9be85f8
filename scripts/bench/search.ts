// Search latency on a large repository, on PostgreSQL: keyword and hybrid search of facts (and
// keyword search of concepts) next to a plain indexed lookup, GET /{repoID}/facts/{id}, on the
// same kgs process, one request at a time.
// 1. A kgs process (WORKERS=1, a fresh database), a repository filled by gen-graph, ANALYZE.
// 2. The lookup and keyword search (no vectors needed, nothing else running).
// 3. The vectors: embed_facts and embed_concepts through the API, and the optimize_vectors jobs
//    they queue (which build an ANN index past 100,000 vectors), waited for; then hybrid search.
// Per operation, a warm-up, then `--searches` requests in sequence: p50, p99 and their ratio to
// the lookup's. Queries are drawn (seeded) from the generator's vocabulary: one word (each in
//    a few per cent of the facts: thousands of matches to rank at 1M), two words, a word and a
//    phrase, and a rare word that matches nothing.
// Usage: bun scripts/bench/search.ts [--facts 100000] [--searches 300] [--keyword-only] [--keep NAME]
// PG_URL names a maintenance database (default postgres://postgres@127.0.0.1:5432/postgres).
// --keyword-only stops before the vectors. --keep NAME fills the database NAME (and the data
// directory $TMPDIR/NAME) on its first run and keeps them: later runs measure the same
// repository again, without filling or embedding it anew (drop the database and its
// repository databases, NAME_*, and the directory when done).
import postgres from 'postgres'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { generateGraph } from '../gen-graph.ts'
import { createBenchDatabase, openNamedDatabase } from '../lib/scratch-database.ts'
import { benchKgsEnvironment, format, jsonClient, percentile, spawnKgs } from '../lib/load.ts'
import { QUALIFIERS, random, VERBS, WORDS } from '../lib/synthetic.ts'

const { values: args } = parseArgs({
  options: {
    facts: { type: 'string', default: '100000' },
    searches: { type: 'string', default: '300' },
    'keyword-only': { type: 'boolean', default: false },
    keep: { type: 'string' },
  },
})
const facts = Number(args.facts)
const searches = Number(args.searches)
for (const n of [facts, searches])
  if (!Number.isInteger(n) || n < 1) throw new Error('--facts and --searches take positive integers')
const WARMUP = 30
/** Embedding, and an index over 100k+ vectors, take a while on two cores. */
const JOBS_DEADLINE_MS = 3 * 3600_000

const kept = args.keep
  ? await openNamedDatabase(process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', args.keep)
  : undefined
const database = kept ?? (await createBenchDatabase())
const system = postgres(database.url, { max: 2, onnotice: () => {} })
const dataDir = args.keep ? join(tmpdir(), args.keep) : mkdtempSync(join(tmpdir(), 'kgs-bench-search-'))
mkdirSync(dataDir, { recursive: true })
const next = random(42)
const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!

/** A query as a person types one, in four shapes. */
function query(i: number): string {
  switch (i % 4) {
    case 0:
      return pick(WORDS)
    case 1:
      return `${pick(WORDS)} ${pick(VERBS)}`
    case 2:
      return `${pick(WORDS)} "${pick(QUALIFIERS)}"`
    default:
      return `${pick(WORDS)}x${Math.floor(next() * 1000)}`
  }
}

let kgs: Awaited<ReturnType<typeof spawnKgs>> | undefined
try {
  kgs = await spawnKgs(benchKgsEnvironment(dataDir, database.url), join(dataDir, 'kgs.log'))
  const kgsUrl = kgs.url
  const call = jsonClient(() => kgsUrl)
  const account = { email: 'bench@example.com', password: 'correct horse battery' }
  const fresh = !kept || kept.created
  const { token } = await call('POST', `/api/v1/auth/${fresh ? 'register' : 'login'}`, undefined, account)
  const repo = (
    fresh
      ? await call('POST', '/api/v1/repositories', token, { name: 'Search bench' })
      : (await call('GET', '/api/v1/repositories', token))[0]
  ) as { id: string; slug: string }
  const [{ dsn }] = (await system<
    { dsn: string }[]
  >`SELECT dsn FROM repository_databases WHERE repository_id = ${repo.id}`) as unknown as [{ dsn: string }]
  const sql = postgres(dsn, { max: 2, onnotice: () => {} })

  let started = performance.now()
  if (fresh) {
    await generateGraph(sql, repo.id, { facts, seed: 1 })
    console.error(`gen-graph: ${format(facts)} facts in ${((performance.now() - started) / 1000).toFixed(0)} s`)
    await sql`ANALYZE`
  }
  const [{ count }] = (await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM facts`) as unknown as [
    { count: number },
  ]
  const ids = (await sql<{ id: string }[]>`SELECT id FROM facts TABLESAMPLE SYSTEM (1) LIMIT 1000`).map((row) => row.id)
  await sql.end()
  const headers = { authorization: `Bearer ${token}` }
  const lookup = await measure(
    'GET /{repoID}/facts/{id} (indexed lookup)',
    (i) => `/${repo.slug}/facts/${ids[i % ids.length]}`,
  )
  const report = (r: Measured) =>
    console.log(
      r.name.padEnd(45),
      r.p50.toFixed(1).padStart(8),
      r.p99.toFixed(1).padStart(8),
      `  ${(r.p50 / lookup.p50).toFixed(1).padStart(10)}  ${(r.p99 / lookup.p99).toFixed(1).padStart(10)}  ${[...r.modes].join(', ')}`,
    )
  console.log(`search on ${format(count)} facts (PostgreSQL), ${searches} requests one at a time per line; ms`)
  console.log('operation'.padEnd(45), 'p50'.padStart(8), 'p99'.padStart(8), '  p50/lookup  p99/lookup  modes')
  report(lookup)
  // Keyword first: it needs no vectors, and nothing else runs meanwhile.
  report(
    await measure(
      'search mode=keyword kind=facts',
      (i) => `/${repo.slug}/search?mode=keyword&q=${encodeURIComponent(query(i))}`,
    ),
  )
  report(
    await measure(
      'search mode=keyword kind=concepts',
      (i) => `/${repo.slug}/search?mode=keyword&kind=concepts&q=${encodeURIComponent(query(i))}`,
    ),
  )

  if (!args['keyword-only']) {
    started = performance.now()
    const embedded = async () =>
      ((await call('GET', `/${repo.slug}/jobs?limit=100`, token)) as { kind: string }[]).some(
        (job) => job.kind === 'embed_facts',
      )
    if (!(await embedded()))
      for (const kind of ['embed_facts', 'embed_concepts']) await call('POST', `/${repo.slug}/jobs`, token, { kind })
    for (;;) {
      const jobs = (await call('GET', `/${repo.slug}/jobs?limit=100`, token)) as {
        kind: string
        status: string
        error: string | null
      }[]
      const failed = jobs.find((job) => job.status === 'failed' || job.status === 'cancelled')
      if (failed) throw new Error(`job ${failed.kind} ${failed.status}: ${failed.error}`)
      if (jobs.length === 4 && jobs.every((job) => job.status === 'succeeded')) break
      if (performance.now() - started > JOBS_DEADLINE_MS) throw new Error('the embedding jobs did not finish in time')
      await Bun.sleep(2000)
    }
    console.error(
      `embedding and optimize jobs (kgs-hash-v1 vectors): ${((performance.now() - started) / 1000).toFixed(0)} s`,
    )
    report(await measure('search (hybrid) kind=facts', (i) => `/${repo.slug}/search?q=${encodeURIComponent(query(i))}`))
    report(
      await measure(
        'search (hybrid) kind=concepts',
        (i) => `/${repo.slug}/search?kind=concepts&q=${encodeURIComponent(query(i))}`,
      ),
    )
  }

  interface Measured {
    name: string
    p50: number
    p99: number
    modes: Set<string>
  }
  /** A warm-up, then `searches` requests in sequence. */
  async function measure(name: string, path: (i: number) => string): Promise<Measured> {
    const latencies: number[] = []
    const modes = new Set<string>()
    for (let i = 0; i < WARMUP + searches; i++) {
      const t0 = performance.now()
      const res = await fetch(kgsUrl + path(i), { headers })
      await res.arrayBuffer()
      if (!res.ok) throw new Error(`${name}: ${res.status}`)
      if (i >= WARMUP) latencies.push(performance.now() - t0)
      const mode = res.headers.get('x-search-mode')
      if (mode)
        modes.add(
          mode + (res.headers.get('x-search-fallback') ? ` (fallback: ${res.headers.get('x-search-fallback')})` : ''),
        )
    }
    latencies.sort((a, b) => a - b)
    return { name, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), modes }
  }
} finally {
  await kgs?.stop()
  await system.end()
  if (!kept) {
    await database.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
