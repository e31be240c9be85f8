// Summaries and syntheses, the pure part (docs/extract.md, "Summaries and syntheses"): the
// built-in writer, which picks the most central facts by the embedder's similarity and lists
// them as Markdown bullets citing each, and the check every written text passes before it is
// kept, that it cites only facts (and concepts) it was given.
import { citedIds } from '../graph/rules.ts'
import type { SummaryFact, SummarySubject, SummaryWriter } from './extractor.ts'

/** Facts a built-in summary lists, and a built-in synthesis. */
export const BUILTIN_SUMMARY_FACTS = 5
const BUILTIN_SYNTHESIS_FACTS = 7

/** Link text as Markdown reads it literally: brackets and backslashes escaped. */
const linkText = (text: string) => text.replace(/[\\[\]]/g, (char) => `\\${char}`)

const factCitation = (fact: SummaryFact) => `[${linkText(fact.text)}](<fact:${fact.id}>)`

/** Code-unit order, the same in every runtime and locale. */
export const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * The `count` facts closest (cosine) to the centroid of all their vectors, closest first; a tie
 * goes to the text first in code-unit order (then to the smaller id), so the same facts give the
 * same choice in any repository.
 */
function centralFacts(facts: readonly SummaryFact[], vectors: readonly Float32Array[], count: number): SummaryFact[] {
  const dimensions = vectors[0]?.length ?? 0
  const centroid = new Float64Array(dimensions)
  const unit = vectors.map((vector) => {
    const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0))
    return Float64Array.from(vector, (x) => (norm === 0 ? 0 : x / norm))
  })
  for (const vector of unit) for (let i = 0; i < dimensions; i++) centroid[i]! += vector[i]!
  const centroidNorm = Math.sqrt(centroid.reduce((sum, x) => sum + x * x, 0))
  const scored = facts.map((fact, n) => {
    let dot = 0
    for (let i = 0; i < dimensions; i++) dot += unit[n]![i]! * centroid[i]!
    return { fact, score: centroidNorm === 0 ? 0 : dot / centroidNorm }
  })
  scored.sort((a, b) => b.score - a.score || compare(a.fact.text, b.fact.text) || compare(a.fact.id, b.fact.id))
  return scored.slice(0, count).map((entry) => entry.fact)
}

/** The built-in writer, extractive like the built-in extractor; `model` is the extractor's name. */
export function builtinSummaries(model: string): SummaryWriter {
  return {
    model,
    concurrency: 1,
    async summarize(subject, facts, options) {
      if (facts.length === 0) return { error: 'there are no facts to summarize' }
      const count = subject.kind === 'summary' ? BUILTIN_SUMMARY_FACTS : BUILTIN_SYNTHESIS_FACTS
      const bullets = centralFacts(facts, await options.embed(facts), count).map((fact) => `- ${factCitation(fact)}`)
      if (subject.kind === 'summary') return { content: bullets.join('\n') }
      // A synthesis names the group's concepts, each in its sense, before the facts.
      const names = subject.concepts.map(
        (concept) =>
          `[${linkText(concept.canonical_name)}](<concept:${concept.id}>)${concept.context ? ` (${linkText(concept.context)})` : ''}`,
      )
      return { content: `${names.join('; ')}\n\n${bullets.join('\n')}` }
    },
  }
}

/**
 * Why a written text cannot be kept, or undefined when it can: it must cite at least one fact,
 * every fact it cites must be one of `facts`, and every concept one of the subject's.
 */
export function citationProblem(
  content: string,
  subject: SummarySubject,
  facts: readonly SummaryFact[],
): string | undefined {
  const cited = citedIds(content)
  if (cited.fact.length === 0) return 'it cites no fact: cite each fact it uses as [text](<fact:UUID>)'
  const given = new Set(facts.map((fact) => fact.id.toLowerCase()))
  const stranger = cited.fact.find((id) => !given.has(id))
  if (stranger) return `it cites fact ${stranger}, which is not one of the facts given: cite only those`
  const concepts = new Set(subject.concepts.map((concept) => concept.id.toLowerCase()))
  const concept = cited.concept.find((id) => !concepts.has(id))
  if (concept) return `it cites concept ${concept}, which is not the concept summarized: cite only the facts given`
  return undefined
}
