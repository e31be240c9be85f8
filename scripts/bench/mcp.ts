// Requests/s of MCP tools/call next to the REST route doing the same work, on one kgs process:
// the fact search (tools/call search vs GET /{repo}/search) and get-fact (tools/call get_fact vs
// GET /{repo}/facts/{id}), the MCP side in both protocol revisions. The MCP requests are the very
// ones the official SDK clients send (captured from a real call of each, then replayed), a
// session-less 2026-07-28 request and a stateless 2025-11-25 one. Rounds alternate so that drift
// affects all alike. Target: MCP at >= 0.7 of REST.
// Usage: bun scripts/bench/mcp.ts [seconds=5] [concurrency=32] [rounds=3] [facts=2000]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateBundle } from '../gen-bundle.ts'
import { cpuSecondsOf, expectOk, format, measure, spawnKgs } from '../lib/load.ts'
import { capturedToolCall, type McpRevision } from '../lib/mcp-capture.ts'

const [seconds = 5, concurrency = 32, rounds = 3, facts = 2000] = process.argv.slice(2).map(Number)
const dataDir = mkdtempSync(join(tmpdir(), 'kgs-bench-mcp-'))
const kgs = await spawnKgs(
  {
    DATA_DIR: dataDir,
    WORKERS: '1',
    LOG_LEVEL: 'warn',
    ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  },
  join(dataDir, 'kgs.log'),
)

const post = async (path: string, body: unknown, token?: string) =>
  (
    await fetch(kgs.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    })
  ).json() as Promise<Record<string, any>>
const get = async (path: string, token: string) =>
  (await fetch(kgs.url + path, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<any>

// A repository imported from a generated bundle, with the built-in embedder's vectors.
const { token } = await post('/api/v1/auth/register', { email: 'bench@example.com', password: 'correct horse battery' })
const repo = await post('/api/v1/repositories', { name: 'MCP bench' }, token)
const bundle = join(dataDir, 'bundle.json.gz')
await generateBundle(bundle, { facts, vectors: 'kgs-hash-v1' })
const job = (await (
  await fetch(`${kgs.url}/${repo.slug}/import-graph`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip' },
    body: Bun.file(bundle),
  })
).json()) as { id: string }
while (!['succeeded', 'failed'].includes((await get(`/${repo.slug}/jobs/${job.id}`, token)).status))
  await Bun.sleep(200)
const [fact] = await get(`/${repo.slug}/facts?limit=1`, token)
const query = String(fact.text).split(' ').slice(0, 6).join(' ')

/** The request an SDK client of `revision` sends for `tools/call name(args)`, replayed as fast as the server answers. */
async function capturedCall(revision: McpRevision, name: string, args: Record<string, unknown>) {
  const url = new URL(`${kgs.url}/api/v1/mcp`)
  const { headers, body } = await capturedToolCall(url, token, revision, name, args)
  return async () => {
    const response = await fetch(url, { method: 'POST', headers, body })
    const text = await expectOk(response)
    if (text.includes('"isError":true')) throw new Error(`${name}: ${text.slice(0, 200)}`)
    return new Response(null)
  }
}

const rest = (path: string) => () => fetch(kgs.url + path, { headers: { authorization: `Bearer ${token}` } })
const cases = [
  {
    name: 'fact search',
    rest: rest(`/${repo.slug}/search?q=${encodeURIComponent(query)}&limit=10`),
    mcp: { search: { repository: repo.slug, query, limit: 10 } },
  },
  {
    name: 'get fact',
    rest: rest(`/${repo.slug}/facts/${fact.id}`),
    mcp: { get_fact: { repository: repo.slug, fact_id: fact.id } },
  },
]

const results: string[] = []
try {
  for (const c of cases) {
    const [[tool, args]] = Object.entries(c.mcp) as [[string, Record<string, unknown>]]
    const runs = {
      REST: c.rest,
      'MCP 2026-07-28': await capturedCall('2026-07-28', tool, args),
      'MCP 2025-11-25': await capturedCall('2025-11-25', tool, args),
    }
    const best: Record<string, number> = {}
    // CPU of the kgs process per request (after a warm-up of its own): on a loaded machine the request rate
    // says as much about the neighbours as about kgs, its CPU per request much less.
    const cpu: Record<string, number> = {}
    for (let round = 1; round <= rounds; round++) {
      for (const [name, request] of Object.entries(runs)) {
        await measure(request, { seconds: 1, concurrency, warmupSeconds: 0 })
        const before = cpuSecondsOf(kgs.pid)
        const result = await measure(request, { seconds, concurrency, warmupSeconds: 0 })
        const perRequest = ((cpuSecondsOf(kgs.pid) - before) * 1000) / result.requests
        if (result.errors > 0) throw new Error(`${c.name} ${name}: ${result.errors} errors`)
        best[name] = Math.max(best[name] ?? 0, result.requestsPerSecond)
        cpu[name] = Math.min(cpu[name] ?? Infinity, perRequest)
        console.log(
          `round ${round} ${c.name} ${name.padEnd(15)} ${format(result.requestsPerSecond).padStart(7)} req/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms  CPU ${perRequest.toFixed(2)} ms/req`,
        )
      }
    }
    for (const [name, rate] of Object.entries(best))
      results.push(
        `${c.name.padEnd(12)} ${name.padEnd(15)} ${format(rate).padStart(7)} req/s  CPU ${cpu[name]!.toFixed(2)} ms/req  ${name === 'REST' ? '' : `ratio ${(rate / best.REST!).toFixed(2)}, by CPU ${(cpu.REST! / cpu[name]!).toFixed(2)}`}`,
      )
  }
} finally {
  await kgs.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
console.log(
  `\n${concurrency} clients, best of ${rounds} x ${seconds} s, ${facts} facts (target: MCP >= 0.70 of REST); ratio by CPU: REST's CPU per request over MCP's`,
)
for (const line of results) console.log(line)
