// What drawing knowledge out of a source takes and gives, whatever does it: the built-in
// extractor (builtin.ts) and a model-backed one both implement `Extractor`, so the job that
// processes a source calls one interface and writes what comes back through the graph's write
// service. Pure shapes and one pure function: nothing here touches a database, HTTP or jobs.
import { sha256Hex } from '../graph/rules.ts'
import type { Chunk } from '../ingest/types.ts'

/** What an extractor reads of a chunk: its position (what a fact cites) and its Markdown. */
export type ExtractChunk = Pick<Chunk, 'index' | 'text'> & Partial<Pick<Chunk, 'headingPath'>>

/** A fact as the write API takes it (`FactCreate`), less the source id the job adds. */
export interface ExtractedFact {
  /** The claim; the write API derives its content_hash from it. */
  text: string
  /** The chunk of the source it comes from. */
  chunk_index: number
  fact_kind: 'text'
  /** The pipeline's facts are `stable` (decisions §6). */
  status: 'stable'
  promptset_hash: string
}

/** A concept as the write API takes it (`ConceptCreate`), with the facts that mention it. */
export interface ExtractedConcept {
  canonical_name: string
  /** With the name, case-folded, the concept's identity (`conceptKey` in graph/rules.ts). */
  context: string
  description: string
  /** Other names it goes by in the source, none equal to the canonical name ignoring case. */
  aliases: string[]
  promptset_hash: string
  /** Positions in `Extraction.facts` of the facts that mention it, ascending. */
  facts: number[]
}

export interface Extraction {
  promptset_hash: string
  facts: ExtractedFact[]
  concepts: ExtractedConcept[]
  /** Chunks that gave nothing because their extraction failed (a model's answer refused twice, …); the others stand. */
  failedChunks?: { chunk_index: number; error: string }[]
  /** What a model-backed extraction spent, for the job's answer; the built-in extractor spends nothing. */
  usage?: { calls: number; inputTokens: number; outputTokens: number }
}

export interface ExtractOptions {
  /** Stops the work between chunks; the promise rejects with the signal's reason. */
  signal?: AbortSignal
  /** Called after each chunk is read, for the job's progress. */
  onProgress?: (chunksDone: number, chunksTotal: number) => void
}

export interface Extractor {
  /** Names the extractor and every parameter that shapes its output; written on all it makes. */
  readonly promptsetHash: string
  extract(chunks: readonly ExtractChunk[], options?: ExtractOptions): Promise<Extraction>
  /** A run of summaries and syntheses (one job's): its calls share one token budget and one usage. */
  summaries(): SummaryWriter
}

/** A fact a summary or synthesis is written from: its id is what a citation of it names. */
export interface SummaryFact {
  id: string
  text: string
}

/**
 * What is summarized: one concept's facts (a summary slice), or a concept group's, those its
 * summaries cite (a synthesis). `concepts` are the concept or the group's concepts, the only
 * concepts the text may cite.
 */
export interface SummarySubject {
  kind: 'summary' | 'synthesis'
  name: string
  concepts: readonly { id: string; canonical_name: string; context: string }[]
}

interface SummarizeOptions {
  signal?: AbortSignal
  /** The embedder's vectors of the facts, in order (the job's embedder: extract/ does not know vectors/). */
  embed(facts: readonly SummaryFact[]): Promise<Float32Array[]>
}

export interface SummaryWriter {
  /** What the `model` field of a summary or synthesis it wrote says. */
  readonly model: string
  /** Summaries it writes at once (a model's LLM_CONCURRENCY). */
  readonly concurrency: number
  /** Its calls and tokens so far, for the job's answer (a model-backed writer's). */
  readonly usage?: NonNullable<Extraction['usage']>
  /** Markdown citing the facts it was given (only those), or why none could be written. */
  summarize(
    subject: SummarySubject,
    facts: readonly SummaryFact[],
    options: SummarizeOptions,
  ): Promise<{ content: string } | { error: string }>
}

/**
 * A `promptset_hash`: the hex SHA-256 of what made the output (its name, version, prompts or
 * parameters, model), written as JSON with its keys sorted at every level, so the same
 * description always gives the same hash and a change to any part of it gives another.
 */
export function promptsetHash(description: Record<string, unknown>): string {
  return sha256Hex(canonicalJson(description))
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`
  return JSON.stringify(value)
}
