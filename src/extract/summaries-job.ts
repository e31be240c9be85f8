// The summaries and syntheses stages of process_source (docs/extract.md, "Summaries and
// syntheses"): every concept the job touched gets its summary slices rewritten from its facts,
// then every group of those concepts (the concepts of one name) its synthesis from the facts its
// summaries cite. The writer is the extractor's (built-in or model); each concept and each group
// is written in a transaction of its own through the graph's write service, so a job killed
// midway and retried rewrites the same texts over what it wrote. A concept or group whose text
// cannot be written (a model's answer refused twice) fails on its own and is named in the answer.
// A model writes as many at once as its concurrency allows; the built-in writer one at a time, in
// the concepts' order, so the same sources give the same rows in the same order.
import type { GraphWrites } from '../graph/write/service.ts'
import { citedIds, conceptKey } from '../graph/rules.ts'
import { conceptsByIds } from '../graph/store.ts'
import { HttpError } from '../http/errors.ts'
import type { RunningJob } from '../jobs/kinds.ts'
import type { Sql } from 'postgres'
import type { SummaryFact, SummaryWriter } from './extractor.ts'
import { compare } from './summaries.ts'
import { eachBounded } from './bounded.ts'
import { conceptFacts, conceptGroups, factTexts, summariesOf } from './summary-store.ts'

/** Facts one summary slice is written from; a concept's facts past MAX_SLICES slices are not summarized (its summaries say is_complete false). */
const SLICE_FACTS = 50
const MAX_SLICES = 10
/** Facts a synthesis is written from at most: the first its group's summaries cite; and the summaries it covers at most. */
const MAX_SYNTHESIS_FACTS = 100
const MAX_SYNTHESIS_SUMMARIES = 1000

/** The embedder, as the job's services carry it (vectors/embedder.ts; extract/ comes before vectors/ and names only this shape). */
export interface TextEmbedder {
  readonly model: string
  readonly dimensions: number
  embed(texts: readonly string[]): Promise<Float32Array[]>
}

export interface SummariesWritten {
  /** Summary slices written. */
  summaries: number
  syntheses: number
  failed_summaries: { concept_id: string; error: string }[]
  failed_syntheses: { canonical_name: string; error: string }[]
}

interface StageServices {
  writes: Pick<GraphWrites, 'replaceConceptSummaries' | 'writeGroupSynthesis'>
  embedder: TextEmbedder
}

/** The embedder's vectors of facts, each fact embedded once in the job. */
function cachedEmbedding(embedder: TextEmbedder) {
  const known = new Map<string, Float32Array>()
  return async (facts: readonly SummaryFact[]): Promise<Float32Array[]> => {
    const missing = [...new Map(facts.filter((f) => !known.has(f.id)).map((f) => [f.id, f])).values()]
    if (missing.length > 0) {
      const vectors = await embedder.embed(missing.map((fact) => fact.text))
      missing.forEach((fact, i) => known.set(fact.id, vectors[i]!))
    }
    return facts.map((fact) => known.get(fact.id)!)
  }
}

/** A refusal of the write (the concept deleted meanwhile, a fact gone): that concept's or group's failure, not the job's. */
const refusal = (error: unknown) => {
  if (error instanceof HttpError) return error.message
  throw error
}

export async function writeSummaries(
  job: Pick<RunningJob, 'repositoryId' | 'signal' | 'progress'>,
  sql: Sql,
  writer: SummaryWriter,
  conceptIds: readonly string[],
  services: StageServices,
): Promise<SummariesWritten> {
  const repositoryId = job.repositoryId!
  const embed = cachedEmbedding(services.embedder)
  const written: SummariesWritten = { summaries: 0, syntheses: 0, failed_summaries: [], failed_syntheses: [] }
  const options = { signal: job.signal, embed }
  job.progress({ phase: 'summarizing', done: 0, total: conceptIds.length })
  // A concept deleted since the job touched it is not there to summarize. In the order of their
  // identities, not of their ids: the same sources give their summaries in the same order.
  const concepts = (await conceptsByIds(sql, conceptIds))
    .map((concept) => ({ ...concept, key: conceptKey(concept.canonical_name, concept.context) }))
    .sort((a, b) => compare(a.key, b.key))
  let summarized = 0
  await eachBounded(concepts, writer.concurrency, async ({ id: conceptId, canonical_name, context }) => {
    job.signal.throwIfAborted()
    const facts = await conceptFacts(sql, conceptId, SLICE_FACTS * MAX_SLICES + 1)
    const complete = facts.length <= SLICE_FACTS * MAX_SLICES
    const subject = {
      kind: 'summary' as const,
      name: canonical_name,
      concepts: [{ id: conceptId, canonical_name, context }],
    }
    const slices = []
    let error: string | undefined
    for (let start = 0; start < Math.min(facts.length, SLICE_FACTS * MAX_SLICES); start += SLICE_FACTS) {
      const slice = facts.slice(start, start + SLICE_FACTS)
      const result = await writer.summarize(subject, slice, options)
      if ('error' in result) {
        error = `summary ${slices.length}: ${result.error}`
        break
      }
      slices.push({
        content: result.content,
        covered_fact_ids: slice.map((fact) => fact.id),
        fact_count: slice.length,
        is_complete: complete,
      })
    }
    if (!error)
      try {
        // Awaited before the sum is read: another concept's write may add to it meanwhile.
        const { ids } = await services.writes.replaceConceptSummaries(repositoryId, conceptId, {
          slices,
          model: writer.model,
        })
        written.summaries += ids.length
      } catch (failure) {
        error = refusal(failure)
      }
    if (error) written.failed_summaries.push({ concept_id: conceptId, error })
    job.progress({ phase: 'summarizing', done: ++summarized, total: concepts.length })
  })

  const groups = await conceptGroups(sql, conceptIds)
  job.progress({ phase: 'synthesizing', done: 0, total: groups.length })
  let synthesized = 0
  await eachBounded(groups, writer.concurrency, async (group) => {
    job.signal.throwIfAborted()
    const ids = group.map((concept) => concept.id)
    const summaries = await summariesOf(sql, ids, MAX_SYNTHESIS_SUMMARIES)
    const cited = [...new Set(summaries.flatMap((summary) => citedIds(summary.content).fact))]
    const facts = await factTexts(sql, cited.slice(0, MAX_SYNTHESIS_FACTS))
    const name = group[0]!.canonical_name
    if (facts.length > 0) {
      const result = await writer.summarize({ kind: 'synthesis', name, concepts: group }, facts, options)
      let error = 'error' in result ? result.error : undefined
      if ('content' in result)
        try {
          await services.writes.writeGroupSynthesis(repositoryId, {
            canonical_name: name,
            content: result.content,
            covered_summary_ids: summaries.map((summary) => summary.id),
            covered_concept_ids: ids,
            model: writer.model,
          })
          written.syntheses++
        } catch (failure) {
          error = refusal(failure)
        }
      if (error) written.failed_syntheses.push({ canonical_name: name, error })
    }
    job.progress({ phase: 'synthesizing', done: ++synthesized, total: groups.length })
  })
  return written
}
