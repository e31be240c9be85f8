// The built-in extractor against documents labelled by hand (scripts/bench/fixtures/), scored as
// the benchmark scores it: most of what it draws is in the labels, most labelled facts are drawn,
// and it beats the trivial extractor (every sentence a fact, every capitalised word a concept).
import { describe, expect, test } from 'bun:test'
import { LABELLED_DOCUMENTS } from '../../scripts/bench/fixtures/extract-documents.ts'
import { addScores, baselineExtractor, ratio, type Score, scoreExtraction } from '../../scripts/lib/extract-score.ts'
import { builtinExtractor } from '../../src/extract/builtin.ts'
import type { Extractor } from '../../src/extract/extractor.ts'
import { chunkMarkdown } from '../../src/ingest/chunks.ts'

async function scoreOf(extractor: Extractor): Promise<Score> {
  const scores: Score[] = []
  for (const document of LABELLED_DOCUMENTS)
    scores.push(scoreExtraction(await extractor.extract(chunkMarkdown(document.markdown)), document))
  return addScores(scores)
}

describe('the built-in extractor on labelled documents', () => {
  test('its facts and concepts are mostly right, and it finds most labelled facts', async () => {
    const score = await scoreOf(builtinExtractor())
    expect(ratio(score.factsRight, score.factsFound)).toBeGreaterThanOrEqual(0.9)
    expect(ratio(score.factsRecalled, score.factsLabelled)).toBeGreaterThanOrEqual(0.9)
    expect(ratio(score.conceptsRight, score.conceptsFound)).toBeGreaterThanOrEqual(0.8)
    expect(ratio(score.conceptsRecalled, score.conceptsLabelled)).toBeGreaterThanOrEqual(0.5)
  })

  test('it beats the trivial baseline on concept precision and recall and on fact precision', async () => {
    const builtin = await scoreOf(builtinExtractor())
    const baseline = await scoreOf(baselineExtractor)
    expect(ratio(builtin.conceptsRight, builtin.conceptsFound)).toBeGreaterThan(
      ratio(baseline.conceptsRight, baseline.conceptsFound),
    )
    expect(ratio(builtin.conceptsRecalled, builtin.conceptsLabelled)).toBeGreaterThan(
      ratio(baseline.conceptsRecalled, baseline.conceptsLabelled),
    )
    expect(ratio(builtin.factsRight, builtin.factsFound)).toBeGreaterThan(
      ratio(baseline.factsRight, baseline.factsFound),
    )
    expect(builtin.factsRecalled).toBeGreaterThanOrEqual(baseline.factsRecalled)
  })
})
