// Vector search: the same exact cosine searches through VectorStore.search on a table held in
// memory (the default for small tables, src/vectors/resident.ts) and on the same table left to
// LanceDB (a second store on the directory with residentBytes 0), in this process, one search at
// a time and 8 at once. Per search: wall time and the CPU time of the whole process (LanceDB's
// own threads included); the ratio is LanceDB's CPU over the in-memory search's. Per table also
// the time to load the in-memory copy (in the background, after LOAD_AFTER_MISSES searches that
// LanceDB answers).
//
// Usage: bun scripts/bench/vectors.ts [--rows 2000,5000] [--dimensions 384] [--searches 400]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { LOAD_AFTER_MISSES, RESIDENT_MAX_FLOATS } from '../../src/vectors/resident.ts'
import { VectorStore } from '../../src/vectors/store.ts'
import { format } from '../lib/load.ts'
import { random } from '../lib/synthetic.ts'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000,5000' },
    dimensions: { type: 'string', default: '384' },
    searches: { type: 'string', default: '400' },
  },
  strict: true,
})
const sizes = args.rows!.split(',').map(Number)
const dimensions = Number(args.dimensions)
const searches = Number(args.searches)
for (const n of [...sizes, dimensions, searches])
  if (!Number.isInteger(n) || n < 1) throw new Error('--rows, --dimensions and --searches take positive integers')
for (const rows of sizes)
  if (rows * dimensions > RESIDENT_MAX_FLOATS)
    throw new Error(
      `--rows ${rows}: a table of ${rows * dimensions} floats is past RESIDENT_MAX_FLOATS (${RESIDENT_MAX_FLOATS}) and is not held in memory`,
    )

const CONCURRENCY = [1, 8]
const K = 10
const next = random(1)
const vector = () => Float32Array.from({ length: dimensions }, () => next() - 0.5)

/** Wall and CPU milliseconds per search, `concurrency` searches in flight. */
async function measure(
  store: VectorStore,
  repositoryId: string,
  concurrency: number,
): Promise<{ wall: number; cpu: number }> {
  const queries = Array.from({ length: searches }, vector)
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  let taken = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (taken < queries.length) await store.search(repositoryId, 'facts', queries[taken++]!, K)
    }),
  )
  const cpu = process.cpuUsage(cpuBefore)
  return { wall: (performance.now() - started) / searches, cpu: (cpu.user + cpu.system) / 1000 / searches }
}

const loads: string[] = []
const dir = mkdtempSync(join(tmpdir(), 'kgs-bench-vectors-'))
const inMemory = await VectorStore.open(dir)
const lanceOnly = await VectorStore.open(dir, { residentBytes: 0 })
try {
  console.log(
    `exact cosine search, k=${K}, ${dimensions} dimensions, ${format(searches)} searches per line; ms per search (CPU: all threads of this process)`,
  )
  console.log('rows     in flight   in memory wall / CPU     LanceDB wall / CPU     CPU ratio LanceDB : in memory')
  for (const rows of sizes) {
    const repositoryId = crypto.randomUUID()
    await inMemory.upsert(
      repositoryId,
      'facts',
      Array.from({ length: rows }, () => ({ id: crypto.randomUUID(), vector: vector() })),
    )
    // LanceDB answers the first LOAD_AFTER_MISSES searches; the last of them starts the load.
    await lanceOnly.search(repositoryId, 'facts', vector(), K)
    for (let i = 1; i < LOAD_AFTER_MISSES; i++) await inMemory.search(repositoryId, 'facts', vector(), K)
    const loadStarted = performance.now()
    await inMemory.search(repositoryId, 'facts', vector(), K)
    await inMemory.settled()
    loads.push(`${format(rows)} rows ${(performance.now() - loadStarted).toFixed(0)} ms`)
    for (const concurrency of CONCURRENCY) {
      const held = await measure(inMemory, repositoryId, concurrency)
      const lance = await measure(lanceOnly, repositoryId, concurrency)
      console.log(
        `${format(rows).padEnd(9)}${String(concurrency).padEnd(12)}${`${held.wall.toFixed(3)} / ${held.cpu.toFixed(3)}`.padEnd(25)}${`${lance.wall.toFixed(3)} / ${lance.cpu.toFixed(3)}`.padEnd(23)}${(lance.cpu / held.cpu).toFixed(1)}`,
      )
    }
  }
  console.log(
    `in-memory copy loaded (from the search that starts the load, which LanceDB answers, to the copy held): ${loads.join(', ')}`,
  )
} finally {
  await Promise.all([inMemory.close(), lanceOnly.close()])
  rmSync(dir, { recursive: true, force: true })
}
