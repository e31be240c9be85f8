// How close an extraction comes to a document's hand-made labels, and the trivial extractor any
// real one must beat; shared by scripts/bench/extract.ts and tests/extract/quality.test.ts.
import type { ExtractChunk, Extraction, Extractor } from '../../src/extract/extractor.ts'
import { builtinSummaries } from '../../src/extract/summaries.ts'
import { normalizeFactText } from '../../src/graph/rules.ts'
import type { LabelledDocument } from '../bench/fixtures/extract-documents.ts'

export interface Score {
  conceptsFound: number
  conceptsRight: number
  conceptsLabelled: number
  conceptsRecalled: number
  factsFound: number
  factsRight: number
  factsLabelled: number
  factsRecalled: number
}

const folded = (text: string) => normalizeFactText(text).toLowerCase()

/**
 * A fact is right when its text is a labelled fact's, whitespace and case aside. A concept is
 * right when one of its names (canonical or alias) is one of a labelled concept's names.
 */
export function scoreExtraction(extraction: Extraction, labels: LabelledDocument): Score {
  const labelledFacts = new Set(labels.facts.map(folded))
  const foundFacts = new Set(extraction.facts.map((fact) => folded(fact.text)))
  const labelNames = labels.concepts.map(
    (concept) => new Set([concept.name, ...(concept.aliases ?? [])].map((name) => name.toLowerCase())),
  )
  const names = extraction.concepts.map((concept) =>
    [concept.canonical_name, ...concept.aliases].map((name) => name.toLowerCase()),
  )
  const matches = (found: string[], label: Set<string>) => found.some((name) => label.has(name))
  return {
    conceptsFound: names.length,
    conceptsRight: names.filter((found) => labelNames.some((label) => matches(found, label))).length,
    conceptsLabelled: labelNames.length,
    conceptsRecalled: labelNames.filter((label) => names.some((found) => matches(found, label))).length,
    factsFound: foundFacts.size,
    factsRight: [...foundFacts].filter((fact) => labelledFacts.has(fact)).length,
    factsLabelled: labelledFacts.size,
    factsRecalled: [...labelledFacts].filter((fact) => foundFacts.has(fact)).length,
  }
}

export function addScores(scores: Score[]): Score {
  const total: Score = {
    conceptsFound: 0,
    conceptsRight: 0,
    conceptsLabelled: 0,
    conceptsRecalled: 0,
    factsFound: 0,
    factsRight: 0,
    factsLabelled: 0,
    factsRecalled: 0,
  }
  for (const score of scores) for (const key of Object.keys(total) as (keyof Score)[]) total[key] += score[key]
  return total
}

export const ratio = (part: number, whole: number) => (whole === 0 ? 0 : part / whole)

/**
 * The trivial extractor: every sentence of a chunk's text, split at `.`, `!` or `?` before a
 * space and at blank lines, is a fact; every capitalised word is a concept, linked to the
 * sentences it is in.
 */
export const baselineExtractor: Extractor = {
  promptsetHash: 'baseline',
  summaries: () => builtinSummaries('baseline'),
  async extract(chunks: readonly ExtractChunk[]): Promise<Extraction> {
    const facts: Extraction['facts'] = []
    for (const chunk of chunks)
      for (const sentence of chunk.text.split(/(?<=[.!?])\s+|\n\s*\n/)) {
        const text = normalizeFactText(sentence)
        if (text !== '')
          facts.push({
            text,
            chunk_index: chunk.index,
            fact_kind: 'text',
            status: 'stable',
            promptset_hash: 'baseline',
          })
      }
    const concepts = new Map<string, number[]>()
    facts.forEach((fact, index) => {
      for (const [word] of fact.text.matchAll(/\b\p{Lu}[\p{L}\p{N}'-]*/gu)) {
        const linked = concepts.get(word) ?? []
        if (linked[linked.length - 1] !== index) linked.push(index)
        concepts.set(word, linked)
      }
    })
    return {
      promptset_hash: 'baseline',
      facts,
      concepts: [...concepts].map(([name, linked]) => ({
        canonical_name: name,
        context: '',
        description: '',
        aliases: [],
        promptset_hash: 'baseline',
        facts: linked,
      })),
    }
  },
}
