// Memory of an idle `kgs serve` whose database went away: on a throwaway PostgreSQL cluster,
// the system database is dropped under it (`--mode drop`, the default: the server refuses every
// session) or the cluster is stopped (`--mode stop`: connections are refused). For `--seconds`
// the periodic work (job claims, catch-ups, the reaper, the LISTEN connection) keeps failing;
// every 10 s this prints the process's VmRSS, the failures kgs logged, and the connection
// attempts PostgreSQL saw (drop mode: one FATAL line each). Then the time from SIGTERM to exit.
// A leak shows as RSS growing with the failures; before the fix, about 1.5 MB/s in drop mode.
//
// Usage: bun scripts/bench/db-outage.ts [--mode drop|stop] [--seconds 60]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { createPostgresCluster } from '../lib/postgres-cluster.ts'
import { memoryOf, settledMemoryOf, spawnKgs } from '../lib/load.ts'

const { values } = parseArgs({
  options: { mode: { type: 'string', default: 'drop' }, seconds: { type: 'string', default: '60' } },
})
const mode = values.mode!
if (mode !== 'drop' && mode !== 'stop') throw new Error('--mode is drop or stop')
const seconds = Number(values.seconds)

const cluster = await createPostgresCluster()
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-outage-'))
const logFile = join(dataDir, 'kgs.log')
let kgsPid: number | undefined
try {
  const admin = postgres(cluster.url(), { max: 1, onnotice: () => {} })
  await admin`CREATE DATABASE kgs`
  const kgs = await spawnKgs(
    {
      DATABASE_URL: cluster.url('kgs'),
      DATA_DIR: dataDir,
      JWT_SECRET: randomBytes(32).toString('hex'),
      LOG_LEVEL: 'info',
    },
    logFile,
  )
  kgsPid = kgs.pid
  const before = await settledMemoryOf(kgs.pid)
  console.log(
    `kgs serve, database ${mode === 'drop' ? 'dropped' : 'stopped'}; RSS before: ${before.rssMB.toFixed(1)} MB`,
  )
  if (mode === 'drop') await admin`DROP DATABASE kgs WITH (FORCE)`
  await admin.end({ timeout: 1 })
  if (mode === 'stop') await cluster.stop()

  const failures = () =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => /"level":"(warn|error)"/.test(line)).length
  const started = performance.now()
  console.log('seconds  RSS MB  failures logged  connection attempts refused')
  for (let elapsed = 10; elapsed <= seconds; elapsed += 10) {
    await Bun.sleep(started + elapsed * 1000 - performance.now())
    const refused =
      mode === 'drop'
        ? String(
            cluster
              .log()
              .split('\n')
              .filter((line) => line.includes('FATAL:  database "kgs" does not exist')).length,
          )
        : '-'
    console.log(
      `${String(elapsed).padStart(7)}  ${memoryOf(kgs.pid).rssMB.toFixed(1).padStart(6)}  ${String(failures()).padStart(15)}  ${refused.padStart(27)}`,
    )
  }
  const after = memoryOf(kgs.pid).rssMB
  console.log(
    `RSS growth: ${(after - before.rssMB).toFixed(1)} MB in ${seconds} s (${(((after - before.rssMB) / seconds) * 60).toFixed(1)} MB/min)`,
  )

  const signalled = performance.now()
  await kgs.stop()
  kgsPid = undefined
  console.log(`SIGTERM to exit: ${Math.round(performance.now() - signalled)} ms`)
} finally {
  if (kgsPid !== undefined) process.kill(kgsPid, 'SIGKILL')
  await cluster.destroy()
  rmSync(dataDir, { recursive: true, force: true })
}
