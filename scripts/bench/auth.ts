// Authenticated GET /api/v1/users/me (target: >= 0.6 of /healthz) and the repository-scoped,
// permission-checked GET /{repoID} (target: >= 0.5) next to GET /healthz on the same kgs process,
// in alternating rounds; then login/s, which argon2id bounds by design.
// Usage: bun scripts/bench/auth.ts [seconds=5] [concurrency=64] [rounds=3]
// Set DATABASE_URL to measure against PostgreSQL instead of the embedded database.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { format, measure, spawnKgs } from '../lib/load.ts'

const [seconds = 5, concurrency = 64, rounds = 3] = process.argv.slice(2).map(Number)
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-'))
const kgs = await spawnKgs(
  {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
    ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  },
  join(dataDir, 'kgs.log'),
)
const email = `bench-${crypto.randomUUID()}@example.com`
const password = 'correct horse battery'
const registered = await fetch(`${kgs.url}/api/v1/auth/register`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email, password }),
})
const { token } = (await registered.json()) as { token: string }
const created = await fetch(`${kgs.url}/api/v1/repositories`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  body: JSON.stringify({ name: 'bench' }),
})
const { slug } = (await created.json()) as { slug: string }

const routes = {
  'GET /healthz': () => fetch(`${kgs.url}/healthz`),
  'GET /api/v1/users/me': () => fetch(`${kgs.url}/api/v1/users/me`, { headers: { authorization: `Bearer ${token}` } }),
  'GET /{repoID}': () => fetch(`${kgs.url}/${slug}`, { headers: { authorization: `Bearer ${token}` } }),
}
const best: Record<string, number> = {}
for (let round = 1; round <= rounds; round++) {
  for (const [name, request] of Object.entries(routes)) {
    const result = await measure(request, { seconds, concurrency })
    if (result.errors > 0) throw new Error(`${name}: ${result.errors} errors`)
    best[name] = Math.max(best[name] ?? 0, result.requestsPerSecond)
    console.log(
      `round ${round} ${name.padEnd(22)} ${format(result.requestsPerSecond).padStart(8)} req/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms`,
    )
  }
}
// Logins are CPU-bound (argon2id, 64 MiB); a few concurrent clients saturate the cores.
const logins = await measure(
  () =>
    fetch(`${kgs.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    }),
  {
    seconds,
    concurrency: 4,
  },
)
if (logins.errors > 0) throw new Error(`login: ${logins.errors} errors`)
await kgs.stop()
rmSync(dataDir, { recursive: true, force: true })

const backend = process.env.DATABASE_URL ? 'PostgreSQL' : 'embedded'
console.log(`\n${backend}, ${concurrency} clients, best of ${rounds} x ${seconds} s`)
for (const [name, rps] of Object.entries(best)) console.log(`${name.padEnd(22)} ${format(rps).padStart(8)} req/s`)
console.log(
  `ratio users/me : healthz   ${(best['GET /api/v1/users/me']! / best['GET /healthz']!).toFixed(2)} (target >= 0.60)`,
)
console.log(
  `ratio /{repoID} : healthz  ${(best['GET /{repoID}']! / best['GET /healthz']!).toFixed(2)} (target >= 0.50)`,
)
console.log(
  `POST /auth/login       ${logins.requestsPerSecond.toFixed(1).padStart(8)} logins/s (4 clients; p50 ${logins.p50.toFixed(0)} ms)`,
)
