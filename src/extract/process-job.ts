// process_source: draws facts and concepts out of parsed sources (docs/extract.md, "The
// pipeline"). For each source: its chunks are read, the extractor extractorFor picks draws from
// them, and what it drew is written through the graph's write service in one transaction
// (writeSourceKnowledge): facts citing the source and chunk (or merged into a fact of the same
// meaning the embedder finds first, services.nearFacts), concepts, their links, the facts the
// source no longer says marked stale, the status `processed`. A kill before that commit leaves the graph as it was, and the retry redoes the
// source; a repository's job commits source by source, so its retry finds the done ones adding
// nothing. One source (`source_id`), or every processable source of the repository (none given).
import { Type } from '@sinclair/typebox'
import type { GraphWrites } from '../graph/write/service.ts'
import type { FindNearFacts, SourceKnowledgeWritten } from '../graph/write/source-knowledge.ts'
import { sourceChunks } from '../ingest/store.ts'
import { defineJobKind, PermanentJobError, type JobServices, type RunningJob } from '../jobs/kinds.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { ExtractChunk, Extraction } from './extractor.ts'
import { extractorFor } from './open.ts'
import { processableSources, sourceReadiness } from './store.ts'

export const PROCESS_SOURCE = 'process_source'

const ProcessParams = Type.Object(
  { source_id: Type.Optional(Type.String({ pattern: UUID_PATTERN })) },
  { additionalProperties: false },
)

/** What the job's result says: the sums over its sources. */
interface Outcome extends SourceKnowledgeWritten {
  /** Sources processed; a repository's sources that stopped being processable meanwhile are skipped. */
  sources: number
  skipped: number
  promptset_hash: string
  /** Chunks a model-backed extraction failed on (the rest of their source stands). */
  failed_chunks: { source_id: string; chunk_index: number; error: string }[]
  usage?: NonNullable<Extraction['usage']>
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
  }
  for (const [n, sourceId] of ids.entries()) {
    const of = ids.length > 1 ? ` (source ${n + 1} of ${ids.length})` : ''
    const readiness = await sourceReadiness(sql, sourceId)
    if (!readiness.ready) {
      if (one) throw new PermanentJobError(readiness.message)
      outcome.skipped++
      continue
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
    job.signal.throwIfAborted()
    // Nothing drawn because every chunk failed (a wrong key, a model that only refuses): the job
    // fails with the reason and the source stays as it was, instead of `processed` with nothing.
    const failed = extraction.failedChunks ?? []
    if (input.length > 0 && failed.length === input.length)
      throw new PermanentJobError(`every chunk of source ${sourceId} failed; the first: ${failed[0]!.error}`)
    job.progress({ phase: `writing${of}`, done: 0, total: 1 })
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
    job.progress({ phase: `writing${of}`, done: 1, total: 1 })
    add(outcome, written)
    outcome.sources++
    for (const chunk of failed) outcome.failed_chunks.push({ source_id: sourceId, ...chunk })
    if (extraction.usage) {
      const usage = (outcome.usage ??= { calls: 0, inputTokens: 0, outputTokens: 0 })
      usage.calls += extraction.usage.calls
      usage.inputTokens += extraction.usage.inputTokens
      usage.outputTokens += extraction.usage.outputTokens
    }
  }
  return outcome
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
    writes: Pick<GraphWrites, 'writeSourceKnowledge'>
    /** The facts of the same meaning as the texts a source yields, by the configured embedder (vectors/near-facts.ts). */
    nearFacts: FindNearFacts
  }
}
