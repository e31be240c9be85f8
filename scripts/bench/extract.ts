// The built-in extractor (src/extract/builtin.ts): its quality on the documents labelled by hand
// in scripts/bench/fixtures/extract-documents.ts, next to the trivial baseline (every sentence a
// fact, every capitalised word a concept) in the same run; then its speed, sources per second,
// next to wink-nlp's own readDoc of the same text (the parse it cannot do without), on the
// project's own docs/*.md as sources. Each side runs alternately, best of `rounds`; the ratio is
// the extractor's rate over readDoc's (the target is at least 0.5).
// Then the whole pipeline: a kgs process (one job worker; the embedded database, or with
// --postgres a fresh database on PG_URL's server) is given the same documents as uploads, not
// processed; then one process_source job over the repository is timed from its POST to its
// success, so its rate counts reading the chunks, extracting, and writing facts, concepts and
// links in each source's transaction, next to readDoc's rate. Last, the same with a model: kgs
// pointed (LLM_URL) at the loopback fake of the tests answering every call after a fixed
// latency, next to the ideal given LLM_CONCURRENCY (calls in flight per source, sources one after
// the other: the sum over sources of ceil(chunks / concurrency) latencies; target at least 0.8).
// Usage: bun scripts/bench/extract.ts [rounds=5] [seconds=2] [--postgres] [--latency-ms=50]
import { readdirSync, readFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import winkNLP from 'wink-nlp'
import model from 'wink-eng-lite-web-model'
import { builtinExtractor } from '../../src/extract/builtin.ts'
import type { Extractor } from '../../src/extract/extractor.ts'
import { chunkMarkdown } from '../../src/ingest/chunks.ts'
import { benchKgs, type jsonClient } from '../lib/load.ts'
import { jsonReply, startFakeOpenAI } from '../../tests/helpers/fake-openai.ts'
import { addScores, baselineExtractor, ratio, type Score, scoreExtraction } from '../lib/extract-score.ts'
import { LABELLED_DOCUMENTS } from './fixtures/extract-documents.ts'

const flags = process.argv.slice(2).filter((arg) => arg.startsWith('--'))
const [rounds = 5, seconds = 2] = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith('--'))
  .map(Number)
const postgresBackend = flags.includes('--postgres')
const latencyMs = Number(flags.find((flag) => flag.startsWith('--latency-ms='))?.split('=')[1] ?? 50)
const concurrency = 4
const builtin = builtinExtractor()

async function quality(extractor: Extractor): Promise<Score> {
  const scores: Score[] = []
  for (const document of LABELLED_DOCUMENTS)
    scores.push(scoreExtraction(await extractor.extract(chunkMarkdown(document.markdown)), document))
  return addScores(scores)
}

const cell = (part: number, whole: number) =>
  `${(100 * ratio(part, whole)).toFixed(1).padStart(5)} % (${part}/${whole})`.padEnd(20)
console.log(`quality on ${LABELLED_DOCUMENTS.length} labelled documents`)
console.log(
  `${''.padEnd(10)}${['concept precision', 'concept recall', 'fact recall', 'fact precision'].map((title) => title.padEnd(20)).join('')}`.trimEnd(),
)
for (const [name, extractor] of [
  ['built-in', builtin],
  ['baseline', baselineExtractor],
] as const) {
  const s = await quality(extractor)
  console.log(
    name.padEnd(10) +
      cell(s.conceptsRight, s.conceptsFound) +
      cell(s.conceptsRecalled, s.conceptsLabelled) +
      cell(s.factsRecalled, s.factsLabelled) +
      cell(s.factsRight, s.factsFound).trimEnd(),
  )
}

const docsDir = join(import.meta.dir, '../../docs')
const sources = readdirSync(docsDir)
  .filter((name) => name.endsWith('.md'))
  .sort()
  .map((name) => {
    const markdown = readFileSync(join(docsDir, name), 'utf8')
    return { name, markdown, chunks: chunkMarkdown(markdown) }
  })
const bytes = sources.reduce((total, source) => total + Buffer.byteLength(source.markdown), 0)
const nlp = winkNLP(model)

/** Sources per second of `work` over the corpus, run whole as many times as fit in `seconds`. */
async function rate(work: (source: (typeof sources)[number]) => unknown): Promise<number> {
  const started = performance.now()
  let done = 0
  while (performance.now() - started < seconds * 1000)
    for (const source of sources) {
      await work(source)
      done++
    }
  return done / ((performance.now() - started) / 1000)
}

// Warm both (the model's first use, the JIT) before measuring.
for (const source of sources) {
  nlp.readDoc(source.markdown)
  await builtin.extract(source.chunks)
}
let bestExtract = 0
let bestRead = 0
for (let round = 1; round <= rounds; round++) {
  const extractRate = await rate((source) => builtin.extract(source.chunks))
  const readRate = await rate((source) => nlp.readDoc(source.markdown).tokens().length())
  console.log(`round ${round} built-in ${extractRate.toFixed(1)} sources/s, readDoc ${readRate.toFixed(1)} sources/s`)
  bestExtract = Math.max(bestExtract, extractRate)
  bestRead = Math.max(bestRead, readRate)
}
console.log(
  `\nspeed on ${sources.length} sources (docs/*.md, ${(bytes / 1024).toFixed(0)} KiB), best of ${rounds} x ${seconds} s`,
)
console.log(`built-in extractor ${bestExtract.toFixed(1).padStart(8)} sources/s`)
console.log(`wink-nlp readDoc   ${bestRead.toFixed(1).padStart(8)} sources/s`)
console.log(`ratio ${(bestExtract / bestRead).toFixed(2)} (target >= 0.50)`)

/** Polls the job until it ends; its answer, or an error if it did not succeed. */
async function finished(call: ReturnType<typeof jsonClient>, slug: string, id: string, token: string): Promise<any> {
  for (;;) {
    const job = await call('GET', `/${slug}/jobs/${id}`, token)
    if (job.status === 'succeeded') return job
    if (job.status === 'failed' || job.status === 'cancelled') throw new Error(`job ${id} ${job.status}: ${job.error}`)
    await Bun.sleep(20)
  }
}

/** Uploads `files` to the repository `slug` (processed or not) and waits for their ingest jobs: the jobs' answers. */
async function upload(
  kgs: { url: string },
  call: ReturnType<typeof jsonClient>,
  token: string,
  slug: string,
  files: File[],
  process: boolean,
) {
  const form = new FormData()
  for (const file of files) form.append('file', file)
  form.append('process', String(process))
  const res = await fetch(`${kgs.url}/${slug}/ingest`, {
    method: 'POST',
    body: form,
    headers: { authorization: `Bearer ${token}` },
  })
  if (res.status !== 202) throw new Error(`POST /${slug}/ingest: ${res.status} ${await res.text()}`)
  const jobs = ((await res.json()) as { jobs: { id: string }[] }).jobs
  return Promise.all(jobs.map((job) => finished(call, slug, job.id, token)))
}

/**
 * A kgs process given the documents unprocessed, then one process_source job over them: its
 * seconds and answer. First a small document of its own is processed in another repository, so
 * that the job thread has loaded the NLP model and run the code once, as a running server has.
 */
async function processThroughKgs(env: Record<string, string>): Promise<{ seconds: number; result: any }> {
  const { kgs, call, token, stop } = await benchKgs('extract', postgresBackend, env)
  try {
    const warm = await call('POST', '/api/v1/repositories', token, { name: 'warm-up' })
    const [ingested] = await upload(
      kgs,
      call,
      token,
      warm.slug,
      [new File([sources[0]!.markdown], 'warm-up.md', { type: 'text/markdown' })],
      true,
    )
    await finished(call, warm.slug, ingested.result.process_job_id, token)
    const { slug } = await call('POST', '/api/v1/repositories', token, { name: 'extract' })
    await upload(
      kgs,
      call,
      token,
      slug,
      sources.map((source) => new File([source.markdown], source.name, { type: 'text/markdown' })),
      false,
    )
    const start = performance.now()
    const job = await call('POST', `/${slug}/process`, token, {})
    const done = await finished(call, slug, job.id, token)
    return { seconds: (performance.now() - start) / 1000, result: done.result }
  } finally {
    await stop()
  }
}

const where = postgresBackend ? 'PostgreSQL' : 'embedded database'
const chunkCount = sources.reduce((total, source) => total + source.chunks.length, 0)
const pipeline = await processThroughKgs({})
const pipelineRate = sources.length / pipeline.seconds
console.log(
  `\nthe whole pipeline in kgs (${where}, WORKERS=1, built-in extractor): ${sources.length} sources, ${chunkCount} chunks ` +
    `in ${pipeline.seconds.toFixed(2)} s, ${pipelineRate.toFixed(1)} sources/s (${pipeline.result.facts.added} facts, ` +
    `${pipeline.result.concepts.added} concepts, ${pipeline.result.linked} links)`,
)
console.log(`ratio to readDoc ${(pipelineRate / bestRead).toFixed(2)} (target >= 0.50)`)

// The model: every call answered after `latencyMs` with one fact of its own (the chunk's hash in
// it, so no two chunks' facts merge) and one concept.
const fake = startFakeOpenAI()
fake.script((request) => {
  const tag = createHash('sha256').update(request.body.messages.at(-1)!.content).digest('hex').slice(0, 12)
  return jsonReply(
    { facts: [{ text: `Chunk ${tag} makes one claim.`, concepts: [{ name: 'claims', context: '', aliases: [] }] }] },
    { delayMs: latencyMs },
  )
})
try {
  const modelRun = await processThroughKgs({
    LLM_URL: fake.url,
    LLM_MODEL: 'bench-model',
    LLM_CONCURRENCY: String(concurrency),
  })
  const ideal =
    (sources.reduce((total, source) => total + Math.ceil(source.chunks.length / concurrency), 0) * latencyMs) / 1000
  console.log(
    `with a model (the fake, ${latencyMs} ms a call, LLM_CONCURRENCY=${concurrency}): ${fake.requests.length} calls ` +
      `in ${modelRun.seconds.toFixed(2)} s; ideal ${ideal.toFixed(2)} s; ratio ${(ideal / modelRun.seconds).toFixed(2)} (target >= 0.80)`,
  )
} finally {
  await fake.stop()
}
