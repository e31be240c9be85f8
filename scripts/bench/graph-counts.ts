// What keeping a repository's counts costs an import: the same bundle imported into fresh
// repositories of one kgs on PostgreSQL, alternately with the counting triggers (repository
// migration 0005_graph_counts) disabled and enabled, from the POST to the job's success. The ratio
// is the mean time with them over the mean time without (1 = free). Then the statements alone,
// less noisy: 100,000 rows inserted in batches of 2,000 (as an import writes them) into a narrow
// table and into a wide one (1.4 KB a row, as sources), and deleted, best of three each way.
// Usage: bun scripts/bench/graph-counts.ts [facts=100000] [rounds=2]   (rounds=0: the statements only)
// PG_URL names a maintenance database (default postgres://postgres@127.0.0.1:5432/postgres).
import postgres from 'postgres'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateBundle } from '../gen-bundle.ts'
import { createBenchDatabase } from '../lib/scratch-database.ts'
import { benchKgsEnvironment, format, spawnKgs } from '../lib/load.ts'

const [facts = 100_000, rounds = 2] = process.argv.slice(2).map(Number)
const COUNTED = ['sources', 'facts', 'concepts', 'reports', 'investigations']

const database = await createBenchDatabase()
const system = postgres(database.url, { max: 2, onnotice: () => {} })
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-counts-'))
let kgs: Awaited<ReturnType<typeof spawnKgs>> | undefined
try {
  const bundle = await generateBundle(join(dataDir, 'graph.json.gz'), { facts: rounds > 0 ? facts : 20, dimensions: 0 })
  const bytes = readFileSync(bundle.path)
  kgs = await spawnKgs(benchKgsEnvironment(dataDir, database.url), join(dataDir, 'kgs.log'))
  const url = kgs.url
  const call = async (
    method: string,
    path: string,
    token?: string,
    body?: unknown,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ) => {
    const res = await fetch(url + path, {
      method,
      headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : body instanceof Uint8Array ? body : JSON.stringify(body),
    })
    const json = (await res.json()) as any
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
  const { token } = await call('POST', '/api/v1/auth/register', undefined, {
    email: 'bench@example.com',
    password: 'correct horse battery',
  })

  /** Imports the bundle into a new repository; seconds from the upload's start to the job's success. */
  const importInto = async (counting: boolean) => {
    const repo = await call('POST', '/api/v1/repositories', token, {
      name: `counts ${counting ? 'on' : 'off'} ${crypto.randomUUID().slice(0, 6)}`,
    })
    if (!counting) {
      const [{ dsn }] = (await system<
        { dsn: string }[]
      >`SELECT dsn FROM repository_databases WHERE repository_id = ${repo.id}`) as unknown as [{ dsn: string }]
      const sql = postgres(dsn, { max: 1, onnotice: () => {} })
      for (const table of COUNTED) await sql`ALTER TABLE ${sql(table)} DISABLE TRIGGER USER`
      await sql.end()
    }
    const started = performance.now()
    const job = await call('POST', `/${repo.slug}/import-graph`, token, bytes, { 'content-type': 'application/gzip' })
    for (;;) {
      const state = await call('GET', `/${repo.slug}/jobs/${job.id}`, token)
      if (state.status === 'succeeded') break
      if (state.status !== 'queued' && state.status !== 'running')
        throw new Error(`import ${state.status}: ${state.error}`)
      await Bun.sleep(20)
    }
    const seconds = (performance.now() - started) / 1000
    const record = await call('GET', `/${repo.slug}`, token)
    if (counting && record.counts.facts !== bundle.counts.facts)
      throw new Error(`counted ${record.counts.facts} facts of ${bundle.counts.facts}`)
    return seconds
  }

  const times: Record<'off' | 'on', number[]> = { off: [], on: [] }
  for (let round = 1; round <= rounds; round++) {
    for (const counting of [false, true]) {
      const seconds = await importInto(counting)
      times[counting ? 'on' : 'off'].push(seconds)
      console.log(`round ${round} triggers ${counting ? 'on ' : 'off'}  ${seconds.toFixed(2)} s`)
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
  if (rounds > 0)
    console.log(
      `import_graph of ${format(facts)} facts (${(bytes.length / 1e6).toFixed(1)} MB gzip) on PostgreSQL, mean of ${rounds}`,
    )
  if (rounds > 0) console.log(`  counting triggers off  ${mean(times.off).toFixed(2)} s`)
  if (rounds > 0) console.log(`  counting triggers on   ${mean(times.on).toFixed(2)} s`)
  if (rounds > 0) console.log(`  ratio on / off         ${(mean(times.on) / mean(times.off)).toFixed(3)} (1 = free)`)

  // The statements alone, in a repository of their own.
  const scratch = await call('POST', '/api/v1/repositories', token, { name: 'counts statements' })
  const [{ dsn }] = (await system<
    { dsn: string }[]
  >`SELECT dsn FROM repository_databases WHERE repository_id = ${scratch.id}`) as unknown as [{ dsn: string }]
  const sql = postgres(dsn, { max: 1, onnotice: () => {} })
  const ROWS = 100_000
  const BATCH = 2_000
  const statements = {
    'investigations (narrow)': {
      insert: (from: number) =>
        sql`INSERT INTO investigations (id, title) SELECT gen_random_uuid(), 'investigation ' || i FROM generate_series(${from}::int, ${from + BATCH - 1}::int) i`,
      remove: () => sql`DELETE FROM investigations`,
    },
    'sources (1.4 KB a row)': {
      insert: (from: number) =>
        sql`INSERT INTO sources (id, url, kind, status, parsed_text) SELECT gen_random_uuid(), 'https://example.com/' || i, 'web', 'parsed', repeat('a parsed sentence of text. ', 52) FROM generate_series(${from}::int, ${from + BATCH - 1}::int) i`,
      remove: () => sql`DELETE FROM sources`,
    },
  }
  const timed = async (work: () => Promise<unknown>) => {
    const started = performance.now()
    await work()
    return (performance.now() - started) / 1000
  }
  console.log(`${format(ROWS)} rows in statements of ${format(BATCH)}, then one DELETE; best of 3`)
  for (const [name, table] of Object.entries(statements)) {
    const best = { off: { insert: Infinity, remove: Infinity }, on: { insert: Infinity, remove: Infinity } }
    for (let round = 0; round < 3; round++) {
      for (const mode of ['off', 'on'] as const) {
        const table_ = name.split(' ')[0]!
        await sql`ALTER TABLE ${sql(table_)} ${mode === 'on' ? sql`ENABLE` : sql`DISABLE`} TRIGGER USER`
        const insert = await timed(async () => {
          for (let from = 0; from < ROWS; from += BATCH) await table.insert(from)
        })
        const remove = await timed(table.remove)
        best[mode] = { insert: Math.min(best[mode].insert, insert), remove: Math.min(best[mode].remove, remove) }
      }
    }
    console.log(
      `  ${name.padEnd(24)} insert off ${best.off.insert.toFixed(2)} s, on ${best.on.insert.toFixed(2)} s (ratio ${(best.on.insert / best.off.insert).toFixed(3)}); ` +
        `delete off ${best.off.remove.toFixed(2)} s, on ${best.on.remove.toFixed(2)} s (ratio ${(best.on.remove / best.off.remove).toFixed(3)})`,
    )
  }
  await sql.end()
} finally {
  await kgs?.stop()
  await system.end()
  await database.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
