// Export and import of a whole repository on PostgreSQL, next to what PostgreSQL itself does
// with the same database: `pg_dump -Fc` of the repository's database and `pg_restore
// --single-transaction` of that dump into an empty database (the peers a person would use to move
// or back up a repository), and `COPY ... TO STDOUT` / `COPY ... FROM STDIN` by psql, all tables
// in one psql session (one transaction for the load), the same rows as the bundle holds.
// 1. A kgs process (WORKERS=1, a fresh database) and a repository filled by gen-graph (rows
//    only: the COPY baseline has no blobs or vectors to move, so neither does the bundle).
// 2. export_graph through the API: from the POST to the job's success (the file written, the push
//    into the registry), the first job of the process and then once more (its thread and code
//    warm); then pg_dump -Fc and COPY TO of every graph table.
// 3. import_graph of that registry graph into an empty repository (one transaction, dedup
//    lookups, remapping); then pg_restore of the dump into an empty database and COPY FROM of the
//    dumped tables into another empty repository.
// Rates are rows (of all tables) per second and MB of bundle JSON per second; a ratio is the
// peer's time over kgs's (1 = as fast as the peer). Peak RSS is the kgs process's VmHWM (main
// thread and worker threads share the process), read after each phase.
// 4. With --object-store: the export and the import again, by a kgs whose blobs (the export file,
//    the registry's bundle) and vectors are on the S3-compatible store that TEST_S3_* name (Ceph
//    RGW from ../shared/tools/ceph-rgw, docs/operations.md), printed beside the local directory's.
// Usage: bun scripts/bench/graph.ts [facts=100000] [--object-store]
// PG_URL names a maintenance database (default postgres://postgres@127.0.0.1:5432/postgres).
import postgres from 'postgres'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { createGunzip, createGzip } from 'node:zlib'
import { generateGraph } from '../gen-graph.ts'
import { ROW_SECTIONS } from '../../src/bundle/format/schema.ts'
import { createBenchDatabase } from '../lib/scratch-database.ts'
import { benchKgsEnvironment, cpuSecondsOf, format, jsonClient, memoryOf, spawnKgs } from '../lib/load.ts'
import { OBJECT_STORE, createBucket } from '../../tests/helpers/object-store.ts'

const onObjectStore = process.argv.includes('--object-store')
const facts = Number(process.argv.slice(2).find((arg) => arg !== '--object-store') ?? 100_000)
if (onObjectStore && !OBJECT_STORE)
  throw new Error(
    '--object-store: set TEST_S3_ENDPOINT, TEST_S3_REGION, TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY (ceph-rgw start prints them as S3_*)',
  )

// Every row section of a bundle is a table of the same name, and their bundle order satisfies
// the foreign keys (COPY FROM follows it).
const TABLES = ROW_SECTIONS

const database = await createBenchDatabase()
const system = postgres(database.url, { max: 2, onnotice: () => {} })
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-graph-'))

/** The bundle's JSON: the repository's latest export, gunzipped (held: the gzip floor compresses it again). */
async function bundleJson(url: string, slug: string, token: string): Promise<Buffer[]> {
  const res = await fetch(`${url}/${slug}/export-graph/download`, { headers: { authorization: `Bearer ${token}` } })
  if (!res.ok) throw new Error(`download: ${res.status} ${await res.text()}`)
  const chunks: Buffer[] = []
  for await (const chunk of Readable.fromWeb(res.body! as never).pipe(createGunzip())) chunks.push(chunk as Buffer)
  return chunks
}

/**
 * Floors of the export, each on its own: reading every row of the tables once through
 * postgres.js (the export does this at least), and gzip at level 6 of the bundle's JSON on one
 * thread (the export spreads this over the cores). Seconds; and the size gzip -6 makes.
 */
async function exportFloors(dsn: string, json: Buffer[]): Promise<{ read: number; gzip: number; gzipBytes: number }> {
  const sql = postgres(dsn, { max: 1, onnotice: () => {} })
  let started = performance.now()
  await sql.begin(async (tx) => {
    for (const table of TABLES) for await (const _batch of tx`SELECT * FROM ${tx(table)}`.cursor(2000));
  })
  const read = (performance.now() - started) / 1000
  await sql.end()
  started = performance.now()
  let gzipBytes = 0
  for await (const chunk of Readable.from(json).pipe(createGzip({ level: 6 })))
    gzipBytes += (chunk as Buffer).byteLength
  return { read, gzip: (performance.now() - started) / 1000, gzipBytes }
}

/** CPU seconds of the server processes serving `dsn`'s database so far, by pid (read from /proc: a server on this machine). */
async function sampleBackends(dsn: string, seen: Map<number, number>): Promise<void> {
  const name = decodeURIComponent(new URL(dsn).pathname.slice(1))
  for (const { pid } of await system<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE datname = ${name}`) {
    try {
      seen.set(pid, Math.max(seen.get(pid) ?? 0, cpuSecondsOf(pid)))
    } catch {
      // Ended between the query and the read, or not on this machine.
    }
  }
}

/**
 * Runs `work` while sampling the CPU of `dsn`'s server processes every 20 ms (a process that
 * comes and goes between two samples is missed): seconds of wall time and of the database's CPU
 * spent meanwhile (backends already there count from the first sample).
 */
async function withDatabaseCpu<T>(
  dsn: string,
  work: () => Promise<T>,
): Promise<{ result: T; seconds: number; databaseCpu: number }> {
  const before = new Map<number, number>()
  await sampleBackends(dsn, before)
  const seen = new Map(before)
  let running = true
  const sampler = (async () => {
    while (running) {
      await sampleBackends(dsn, seen)
      await Bun.sleep(20)
    }
  })()
  const started = performance.now()
  try {
    const result = await work()
    return {
      result,
      seconds: (performance.now() - started) / 1000,
      databaseCpu: [...seen].reduce((sum, [pid, cpu]) => sum + cpu - (before.get(pid) ?? 0), 0),
    }
  } finally {
    running = false
    await sampler
  }
}

/** Runs a PostgreSQL client program to its end; seconds, and the program's own CPU seconds. */
async function timed(command: string[]): Promise<{ seconds: number; clientCpu: number }> {
  const started = performance.now()
  const child = Bun.spawn(command, { stdout: 'ignore', stderr: 'inherit' })
  if ((await child.exited) !== 0) throw new Error(`${command[0]} failed`)
  return {
    seconds: (performance.now() - started) / 1000,
    clientCpu: Number(child.resourceUsage()?.cpuTime.total ?? 0) / 1e6,
  }
}

function psql(dsn: string, script: string): Promise<{ seconds: number; clientCpu: number }> {
  const file = join(dataDir, 'copy.sql')
  writeFileSync(file, script)
  return timed(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-1', '-f', file, dsn])
}

let kgs: Awaited<ReturnType<typeof spawnKgs>> | undefined
try {
  const kgsEnv = benchKgsEnvironment(dataDir, database.url)
  kgs = await spawnKgs(kgsEnv, join(dataDir, 'kgs.log'))
  // The process the requests go to (step 4 starts another on the same database).
  let { url: kgsUrl, pid: kgsPid } = kgs
  const call = jsonClient(() => kgsUrl)
  const account = { email: 'bench@example.com', password: 'correct horse battery' }
  let { token } = await call('POST', '/api/v1/auth/register', undefined, account)
  const repository = async (title: string) => {
    const repo = await call('POST', '/api/v1/repositories', token, { name: title })
    const [{ dsn }] = (await system<
      { dsn: string }[]
    >`SELECT dsn FROM repository_databases WHERE repository_id = ${repo.id}`) as unknown as [{ dsn: string }]
    return { ...repo, dsn } as { id: string; slug: string; dsn: string }
  }
  /** Runs the job to its end; also the kgs process's highest RSS seen in each of its phases (sampled at every poll), and when each phase was first seen. */
  const runJob = async (path: string, body: unknown) => {
    const started = performance.now()
    const job = await call('POST', path, token, body)
    const peaks: Record<string, number> = {}
    const phaseStarts: Record<string, number> = {}
    for (;;) {
      const state = await call('GET', `${path.slice(0, path.lastIndexOf('/'))}/jobs/${job.id}`, token)
      const phase = state.progress?.phase ?? state.status
      peaks[phase] = Math.max(peaks[phase] ?? 0, memoryOf(kgsPid).rssMB)
      phaseStarts[phase] ??= (performance.now() - started) / 1000
      if (state.status === 'succeeded')
        return { seconds: (performance.now() - started) / 1000, result: state.result, peaks, phaseStarts }
      if (state.status !== 'queued' && state.status !== 'running')
        throw new Error(`job ${state.status}: ${state.error}`)
      await Bun.sleep(20)
    }
  }

  const source = await repository('Bench source')
  const sourceSql = postgres(source.dsn, { max: 2, onnotice: () => {} })
  const started = performance.now()
  await generateGraph(sourceSql, source.id, { facts, seed: 1 })
  await sourceSql`ANALYZE`
  console.error(`gen-graph: ${facts} facts in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  const counts = await Promise.all(
    TABLES.map(async (table) => (await sourceSql`SELECT count(*)::int AS n FROM ${sourceSql(table)}`)[0]!.n as number),
  )
  const rows = counts.reduce((a, b) => a + b, 0)
  await sourceSql.end()
  const idleRss = memoryOf(kgsPid).peakMB

  // 2. Export, then COPY TO.
  const exportLoad = loadavg()[0]!
  const cpuBefore = cpuSecondsOf(kgsPid)
  const exported = await runJob(`/${source.slug}/export-graph`, { exported_at: '2026-01-02T03:04:05Z' })
  // The whole process (the polls too, a few ms): the job's thread, the compression threads.
  const exportCpu = cpuSecondsOf(kgsPid) - cpuBefore
  const exportRss = memoryOf(kgsPid).peakMB
  // Again, by the same process: its job thread started, and the export's code compiled, by the
  // first (a server pays those once); another exported_at, so that the registry stores a new graph.
  const exportedAgain = await runJob(`/${source.slug}/export-graph`, { exported_at: '2026-01-02T03:04:07Z' })
  const json = await bundleJson(kgsUrl, source.slug, token)
  const bundleMB = json.reduce((sum, chunk) => sum + chunk.length, 0) / 1e6
  const dumps = Object.fromEntries(TABLES.map((table) => [table, join(dataDir, `${table}.copy`)]))
  const dumpFile = join(dataDir, 'repository.dump')
  const { seconds: pgDump, clientCpu: pgDumpCpu } = await timed(['pg_dump', '-Fc', '-f', dumpFile, source.dsn])
  const copyTo = (await psql(source.dsn, TABLES.map((table) => `\\copy ${table} TO '${dumps[table]}'`).join('\n')))
    .seconds
  const copyMB = TABLES.reduce((sum, table) => sum + statSync(dumps[table]!).size, 0) / 1e6
  const floors = await exportFloors(source.dsn, json)
  json.length = 0 // not held through the import

  // 3. Import, then COPY FROM.
  const target = await repository('Bench import')
  const kgsCpuBefore = cpuSecondsOf(kgsPid)
  const importing = await withDatabaseCpu(target.dsn, () =>
    runJob(`/${target.slug}/import-graph`, { graph_id: exported.result.graph_id }),
  )
  const imported = importing.result
  const importCpu = { kgs: cpuSecondsOf(kgsPid) - kgsCpuBefore, database: importing.databaseCpu }
  const importRss = memoryOf(kgsPid).peakMB
  const copyTarget = await repository('Bench copy')
  const copying = await withDatabaseCpu(copyTarget.dsn, () =>
    psql(copyTarget.dsn, TABLES.map((table) => `\\copy ${table} FROM '${dumps[table]}'`).join('\n')),
  )
  const copyFrom = copying.result.seconds
  // pg_restore into an empty database named after the bench's, so that its drop() removes it too.
  const restoreUrl = new URL(database.url)
  restoreUrl.pathname = `${restoreUrl.pathname}_restore`
  await system`CREATE DATABASE ${system(restoreUrl.pathname.slice(1))}`
  const restoring = await withDatabaseCpu(restoreUrl.toString(), () =>
    timed(['pg_restore', '--single-transaction', '--no-owner', '-d', restoreUrl.toString(), dumpFile]),
  )
  const pgRestore = restoring.result.seconds
  await kgs.stop()
  kgs = undefined

  // 4. The same on object storage: a new export (another exported_at, so a new registry graph
  // whose bundle goes to the bucket) and its import into an empty repository.
  let onBucket: { exported: number; imported: number } | undefined
  if (onObjectStore) {
    const store = OBJECT_STORE!
    const bucket = await createBucket(store, 'bench')
    kgs = await spawnKgs(
      {
        ...kgsEnv,
        DATA_DIR: join(dataDir, 'object-store'),
        S3_BUCKET: bucket,
        S3_ENDPOINT: store.endpoint,
        S3_REGION: store.region,
        S3_ACCESS_KEY_ID: store.accessKeyId,
        S3_SECRET_ACCESS_KEY: store.secretAccessKey,
        LANCEDB_URI: `s3://${bucket}/lance`,
      },
      join(dataDir, 'kgs-object-store.log'),
    )
    ;({ url: kgsUrl, pid: kgsPid } = kgs)
    // Its address is another issuer: sign in there.
    ;({ token } = await call('POST', '/api/v1/auth/login', undefined, account))
    const exportedThere = await runJob(`/${source.slug}/export-graph`, { exported_at: '2026-01-02T03:04:06Z' })
    const importedThere = await runJob(`/${(await repository('Bench import on object storage')).slug}/import-graph`, {
      graph_id: exportedThere.result.graph_id,
    })
    onBucket = { exported: exportedThere.seconds, imported: importedThere.seconds }
    await kgs.stop()
    kgs = undefined
  }

  const gzMB = exported.result.bytes / 1e6
  const line = (label: string, seconds: number, mb: number, baseline?: number) =>
    console.log(
      `  ${label.padEnd(34)}${`${seconds.toFixed(2)} s`.padStart(10)}${`${format(rows / seconds)} rows/s`.padStart(18)}${`${(mb / seconds).toFixed(1)} MB/s`.padStart(12)}${baseline ? `${(baseline / seconds).toFixed(2)}`.padStart(8) : ''}`,
    )
  console.log(
    `graph bundle of ${format(facts)} facts on PostgreSQL: ${format(rows)} rows in ${TABLES.length} tables; bundle ${gzMB.toFixed(1)} MB gzip, ${bundleMB.toFixed(1)} MB JSON; COPY text ${copyMB.toFixed(1)} MB`,
  )
  const cores = availableParallelism()
  const dumpMB = statSync(dumpFile).size / 1e6
  console.log(
    `  ${''.padEnd(34)}${'time'.padStart(10)}${'rows'.padStart(18)}${'MB/s'.padStart(12)}${'ratio'.padStart(8)}   (export: pg_dump -Fc time / time)`,
  )
  line('export_graph (job, incl. push)', exported.seconds, bundleMB, pgDump)
  line('  the same again (warm thread)', exportedAgain.seconds, bundleMB, pgDump)
  line('pg_dump -Fc (the repository db)', pgDump, copyMB, pgDump)
  line('COPY TO (psql, all tables)', copyTo, copyMB, pgDump)
  line('  floor: rows read by postgres.js', floors.read, bundleMB, pgDump)
  line('  floor: gzip -6 of the JSON', floors.gzip, bundleMB, pgDump)
  const floor = floors.read + floors.gzip / cores
  console.log(
    `  export floor (1 read + gzip -6 over ${cores} cores, nothing encoded): ${floor.toFixed(2)} s, ratio at best ${(pgDump / floor).toFixed(2)}`,
  )
  const phases = (starts: Record<string, number>, end: number) =>
    Object.entries(starts)
      .map(([phase, at], i, all) => `${phase} ${((all[i + 1]?.[1] ?? end) - at).toFixed(2)} s`)
      .join(', ')
  console.log(`  export job by phase: ${phases(exported.phaseStarts, exported.seconds)}`)
  console.log(
    `  CPU seconds (client side; the server's work is not counted): kgs process during the export ${exportCpu.toFixed(2)} s, pg_dump -Fc ${pgDumpCpu.toFixed(2)} s; load average (1 min) when the export started ${exportLoad.toFixed(2)} on ${cores} cores`,
  )
  console.log(
    `  file sizes: export ${gzMB.toFixed(1)} MB (${(exported.result.bytes / floors.gzipBytes).toFixed(3)} x gzip -6 of its JSON, ${(floors.gzipBytes / 1e6).toFixed(1)} MB; target <= 1.15), pg_dump -Fc ${dumpMB.toFixed(1)} MB`,
  )
  console.log(
    `  ${''.padEnd(34)}${'time'.padStart(10)}${'rows'.padStart(18)}${'MB/s'.padStart(12)}${'ratio'.padStart(8)}   (import: pg_restore time / time)`,
  )
  line('import_graph (job, from registry)', imported.seconds, bundleMB, pgRestore)
  line('pg_restore --single-transaction', pgRestore, copyMB, pgRestore)
  line('COPY FROM (psql, one transaction)', copyFrom, copyMB, pgRestore)
  console.log(`  import_graph / COPY FROM: ${(copyFrom / imported.seconds).toFixed(2)} (COPY FROM time / import time)`)
  // CPU seconds hold up better than time on a machine others load too: each process is charged its own.
  const cpuLine = (label: string, client: string, clientCpu: number, databaseCpu: number) =>
    `${label} ${(clientCpu + databaseCpu).toFixed(2)} s (${client} ${clientCpu.toFixed(2)} + database ${databaseCpu.toFixed(2)})`
  const importCpuTotal = importCpu.kgs + importCpu.database
  const restoreCpuTotal = restoring.result.clientCpu + restoring.databaseCpu
  console.log(
    `  CPU: ${cpuLine('import_graph', 'kgs', importCpu.kgs, importCpu.database)}; ${cpuLine('pg_restore', 'client', restoring.result.clientCpu, restoring.databaseCpu)}; ${cpuLine('COPY FROM', 'psql', copying.result.clientCpu, copying.databaseCpu)}; ratio ${(restoreCpuTotal / importCpuTotal).toFixed(2)} (pg_restore CPU / import CPU)`,
  )
  console.log(`  import job by phase: ${phases(imported.phaseStarts, imported.seconds)}`)
  if (onBucket) {
    console.log(`  on object storage (${OBJECT_STORE!.endpoint}), beside the local directory above:`)
    line('export_graph (job, incl. push)', onBucket.exported, bundleMB, pgDump)
    line('import_graph (job, from registry)', onBucket.imported, bundleMB, pgRestore)
  }
  console.log(
    '  targets: export >= 1.0 x pg_dump -Fc; import >= 0.5 x pg_restore and >= 0.5 x COPY FROM; MB/s of bundle JSON for kgs, of COPY text for the others',
  )
  console.log(
    `kgs peak RSS (VmHWM): ${idleRss.toFixed(0)} MB after start-up, ${exportRss.toFixed(0)} MB after the export, ${importRss.toFixed(0)} MB after the import (target < 300 MB)`,
  )
  const byPhase = (peaks: Record<string, number>) =>
    Object.entries(peaks)
      .map(([phase, mb]) => `${phase} ${mb.toFixed(0)}`)
      .join(', ')
  console.log(
    `kgs RSS by job phase (highest sampled, MB): export: ${byPhase(exported.peaks)}; import: ${byPhase(imported.peaks)}`,
  )
  console.log(`import result: ${JSON.stringify(imported.result.imported)}`)
} finally {
  await kgs?.stop()
  await system.end()
  await database.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
