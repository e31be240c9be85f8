// Requests/s of kgs's GET /healthz (the full request path: request id, JSON log line, error
// handling) next to a bare Elysia hello-world, both started by this script as separate processes
// and driven by the same client. Rounds alternate so that drift affects both alike.
// Usage: bun scripts/bench/http.ts [seconds=5] [concurrency=64] [rounds=3]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { format, measure, spawnKgs, spawnServer } from '../lib/load.ts'

const [seconds = 5, concurrency = 64, rounds = 3] = process.argv.slice(2).map(Number)
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-'))

// The log goes to a file: the bench pays for every line, as production does.
const kgs = await spawnKgs(
  {
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  },
  join(dataDir, 'kgs.log'),
)
const bare = await spawnServer([process.execPath, join(import.meta.dir, 'baseline-elysia.ts')], {})

const best = { kgs: 0, bare: 0 }
for (let round = 1; round <= rounds; round++) {
  for (const [name, server] of [
    ['kgs', kgs],
    ['bare', bare],
  ] as const) {
    const result = await measure(() => fetch(`${server.url}/healthz`), { seconds, concurrency })
    if (result.errors > 0) throw new Error(`${name}: ${result.errors} errors`)
    best[name] = Math.max(best[name], result.requestsPerSecond)
    console.log(
      `round ${round} ${name.padEnd(4)} ${format(result.requestsPerSecond).padStart(8)} req/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms`,
    )
  }
}
await Promise.all([kgs.stop(), bare.stop()])
rmSync(dataDir, { recursive: true, force: true })
console.log(`\nGET /healthz, ${concurrency} clients, best of ${rounds} x ${seconds} s`)
console.log(`kgs          ${format(best.kgs).padStart(8)} req/s`)
console.log(`bare Elysia  ${format(best.bare).padStart(8)} req/s`)
console.log(`ratio        ${(best.kgs / best.bare).toFixed(2)} (target >= 0.80)`)
