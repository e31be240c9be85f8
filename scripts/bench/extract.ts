// The built-in extractor (src/extract/builtin.ts): its quality on the documents labelled by hand
// in scripts/bench/fixtures/extract-documents.ts, next to the trivial baseline (every sentence a
// fact, every capitalised word a concept) in the same run; then its speed, sources per second,
// next to wink-nlp's own readDoc of the same text (the parse it cannot do without), on the
// project's own docs/*.md as sources. Each side runs alternately, best of `rounds`; the ratio is
// the extractor's rate over readDoc's (the target is at least 0.5).
// Usage: bun scripts/bench/extract.ts [rounds=5] [seconds=2]
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import winkNLP from 'wink-nlp'
import model from 'wink-eng-lite-web-model'
import { builtinExtractor } from '../../src/extract/builtin.ts'
import type { Extractor } from '../../src/extract/extractor.ts'
import { chunkMarkdown } from '../../src/ingest/chunks.ts'
import { addScores, baselineExtractor, ratio, type Score, scoreExtraction } from '../lib/extract-score.ts'
import { LABELLED_DOCUMENTS } from './fixtures/extract-documents.ts'

const [rounds = 5, seconds = 2] = process.argv.slice(2).map(Number)
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
    return { markdown, chunks: chunkMarkdown(markdown) }
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
