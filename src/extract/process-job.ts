// process_source: draws facts and concepts out of parsed sources (docs/extract.md, "The
// pipeline"). For each source: its chunks are read, the extractor extractorFor picks draws from
// them, and what it drew is written through the graph's write service in one transaction
// (writeSourceKnowledge): facts citing the source and chunk (or merged into a fact of the same
// meaning the embedder finds first, services.nearFacts), concepts, their links, the facts the
// source no longer says marked stale, the status `processed`. A kill before that commit leaves the graph as it was, and the retry redoes the
// source; a repository's job commits source by source, so its retry finds the done ones adding
// nothing. One source (`source_id`), or every processable source of the repository (none given).
// Then the concepts the job touched get their summaries and their groups their syntheses
// (summaries-job.ts), each rewritten whole, so a retry writes them again the same way.
import { Type } from '@sinclair/typebox'
import type { GraphWrites } from '../graph/write/service.ts'
import type { FindNearFacts, SourceKnowledgeWritten } from '../graph/write/source-knowledge.ts'
import { sourceChunks } from '../ingest/store.ts'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../jobs/kinds.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { ExtractChunk, Extraction } from './extractor.ts'
import { extractorFor } from './open.ts'
import { processableSources, sourceReadiness } from './store.ts'
import { type SummariesWritten, type TextEmbedder, writeSummaries } from './summaries-job.ts'
import { conceptIdsOf } from './summary-store.ts'

export const PROCESS_SOURCE = 'process_source'

const ProcessParams = Type.Object(
  { source_id: Type.Optional(Type.String({ pattern: UUID_PATTERN })) },
  { additionalProperties: false },
)

/** What the job's result says: the sums over its sources, and the summaries and syntheses written. */
interface Outcome extends SourceKnowledgeWritten, SummariesWritten {
  /** Sources processed; a repository's sources that stopped being processable meanwhile are skipped. */
  sources: number
  skipped: number
  promptset_hash: string
  /** Chunks a model-backed extraction failed on (the rest of their source stands). */
  failed_chunks: { source_id: string; chunk_index: number; error: string }[]
  usage?: NonNullable<Extraction['usage']>
}

/** A source's extraction, with the chunks it failed on. */
interface Drawn {
  extraction: Extraction
  failed: NonNullable<Extraction['failedChunks']>
}

/** More than any document makes (readDocument bounds them): a source's chunks in one read. */
const ALL_CHUNKS = { offset: 0, limit: 1_000_000 }

async function processSources(job: RunningJob<typeof ProcessParams.static>, services: JobServices): Promise<Outcome> {
  const sql = await job.repository()
  const one = job.params.source_id
  const ids = one ? [one] : await processableSources(sql)
  const extractor = extractorFor(services.config)
  const outcome: Outcome = {
    sources: 0,
    skipped: 0,
    promptset_hash: extractor.promptsetHash,
    facts: { added: 0, merged: 0, near_merged: 0, unchanged: 0, refused: 0, stale: 0, restored: 0 },
    concepts: { added: 0, existing: 0, refused: 0 },
    linked: 0,
    failed_chunks: [],
    summaries: 0,
    syntheses: 0,
    failed_summaries: [],
    failed_syntheses: [],
  }
  const touched = new Set<string>()
  // What a source yields is drawn while the one before it is written: the extraction (this
  // thread, or the model's calls) and the write (the database) overlap, and the writes still
  // come one source at a time, in order, each in its own transaction.
  const draw = async (sourceId: string, of: string): Promise<Drawn | undefined> => {
    const readiness = await sourceReadiness(sql, sourceId)
    if (!readiness.ready) {
      if (one) throw new PermanentJobError(readiness.message)
      return undefined
    }
    job.progress({ phase: `reading chunks${of}`, done: 0, total: 1 })
    const chunks = (await sourceChunks(sql, sourceId, ALL_CHUNKS))?.rows ?? []
    const input: ExtractChunk[] = chunks.map((c) => ({
      index: c.chunk_index,
      text: c.text,
      headingPath: c.heading_path,
    }))
    job.progress({ phase: `extracting${of}`, done: 0, total: input.length })
    const extraction = await extractor.extract(input, {
      signal: job.signal,
      onProgress: (done, total) => job.progress({ phase: `extracting${of}`, done, total }),
    })
    // Nothing drawn because every chunk failed (a wrong key, a model that only refuses): the job
    // fails with the reason and the source stays as it was, instead of `processed` with nothing.
    const failed = extraction.failedChunks ?? []
    if (input.length > 0 && failed.length === input.length)
      throw new PermanentJobError(`every chunk of source ${sourceId} failed; the first: ${failed[0]!.error}`)
    return { extraction, failed }
  }
  const ofAll = (n: number) => (ids.length > 1 ? ` (source ${n + 1} of ${ids.length})` : '')
  let next = ids.length > 0 ? draw(ids[0]!, ofAll(0)) : undefined
  for (const [n, sourceId] of ids.entries()) {
    const drawn = await next!
    next = n + 1 < ids.length ? draw(ids[n + 1]!, ofAll(n + 1)) : undefined
    // Awaited in its turn; until then a failure must not count as unhandled.
    next?.catch(() => {})
    job.signal.throwIfAborted()
    if (!drawn) {
      outcome.skipped++
      continue
    }
    const { extraction, failed } = drawn
    job.progress({ phase: `writing${ofAll(n)}`, done: 0, total: 1 })
    // Asked in the source's turn, after the sources before it are written: a fact of the same
    // meaning may be one of theirs.
    const near = await services.nearFacts(
      job.repositoryId!,
      extraction.facts.map((fact) => fact.text),
    )
    job.signal.throwIfAborted()
    const written = await services.writes.writeSourceKnowledge(job.repositoryId!, {
      sourceId,
      facts: extraction.facts,
      concepts: extraction.concepts,
      promptsetHash: extractor.promptsetHash,
      unreadChunks: failed.map((chunk) => chunk.chunk_index),
      near,
    })
    job.progress({ phase: `writing${ofAll(n)}`, done: 1, total: 1 })
    add(outcome, written)
    outcome.sources++
    for (const chunk of failed) outcome.failed_chunks.push({ source_id: sourceId, ...chunk })
    addUsage(outcome, extraction.usage)
    for (const id of await conceptIdsOf(sql, extraction.concepts)) touched.add(id)
  }
  const writer = extractor.summaries()
  Object.assign(outcome, await writeSummaries(job, sql, writer, [...touched], services))
  addUsage(outcome, writer.usage)
  return outcome
}

function addUsage(outcome: Outcome, spent: Extraction['usage']): void {
  if (!spent) return
  const usage = (outcome.usage ??= { calls: 0, inputTokens: 0, outputTokens: 0 })
  usage.calls += spent.calls
  usage.inputTokens += spent.inputTokens
  usage.outputTokens += spent.outputTokens
}

function add(sum: SourceKnowledgeWritten, written: SourceKnowledgeWritten): void {
  for (const key of Object.keys(sum.facts) as (keyof SourceKnowledgeWritten['facts'])[])
    sum.facts[key] += written.facts[key]
  for (const key of ['added', 'existing', 'refused'] as const) sum.concepts[key] += written.concepts[key]
  sum.linked += written.linked
}

export const processSourceJob = defineJobKind({
  kind: PROCESS_SOURCE,
  params: ProcessParams,
  maxAttempts: 3,
  repositoryScoped: true,
  run: (job, services) => processSources(job, services),
})

declare module '../jobs/kinds.ts' {
  interface JobServices {
    /** The graph's write service, as the routes have it (graph/write/service.ts). */
    writes: GraphWrites
    /** The configured embedder (vectors/embedder.ts), whose similarity picks a built-in summary's facts. */
    embedder: TextEmbedder
    /** The facts of the same meaning as the texts a source yields, by the configured embedder (vectors/near-facts.ts). */
    nearFacts: FindNearFacts
  }
}
