// Near-duplicate facts: for the texts process_source is about to write, the fact of the same
// meaning each has in the repository, or an earlier text of the same batch, by the configured
// embedder's cosine similarity at or above its threshold (docs/extract.md, "Near-duplicate facts").
// The candidates are the nearest stored vectors (their distance is exact: the store ranks small
// tables exactly and re-ranks an index's candidates by exact distance) and the facts marked for
// embedding but not embedded yet (written a moment ago, by this job's earlier sources too), whose
// texts are embedded here (the finder keeps what it embedded for the job's later sources); so the
// similarity does not depend on when the embedding jobs ran. Texts that state other numbers are
// never merged: no embedder tells "turbine 12" from "turbine 13" by much.
import type { Sql } from 'postgres'
import type { Pools } from '../db/pools.ts'
import { factContentHash } from '../graph/rules.ts'
import type { FindNearFacts, NearFact } from '../graph/write/source-knowledge.ts'
import type { Embedder } from './embedder.ts'
import { VectorDimensionError, type VectorStore } from './store.ts'

/**
 * The thresholds of the embedders kgs knows. kgs-hash-v1 is lexical: measured on sentence pairs
 * (docs/extract.md), rewordings that keep the words (an article, a comma, the word order) score
 * 0.93 to 0.98, and short sentences that differ in one word of meaning score up to 0.90; a
 * model's embeddings put paraphrases above 0.9 and related but different claims below.
 */
export const MERGE_SIMILARITY = { 'kgs-hash-v1': 0.93, model: 0.92 } as const

/** The threshold for `embedder`: the setting (FACT_MERGE_SIMILARITY), else the embedder's own. */
const mergeSimilarity = (embedder: Pick<Embedder, 'model'>, setting: number | undefined) =>
  setting ?? (embedder.model === 'kgs-hash-v1' ? MERGE_SIMILARITY['kgs-hash-v1'] : MERGE_SIMILARITY.model)

/** Stored vectors each text is compared with (its nearest). */
const NEAREST = 5
/** Facts marked for embedding that each text is compared with too, the latest marked first. */
const MARKED = 1000
/** Vectors the finder keeps, by text: a job's later sources compare with its earlier ones' facts. */
const CACHED = 20_000

/** The numbers a text states, in order: two texts stating other numbers say other things. */
const numbers = (text: string) => (text.match(/\p{N}+(?:[.,]\p{N}+)*/gu) ?? []).join(' ')

export interface NearFactsOptions {
  pools: Pick<Pools, 'forRepository'>
  vectors: Pick<VectorStore, 'search'>
  embedder: Embedder
  /** FACT_MERGE_SIMILARITY; undefined: the embedder's own. */
  similarity: number | undefined
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0
  let aa = 0
  let bb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    aa += a[i]! * a[i]!
    bb += b[i]! * b[i]!
  }
  return aa === 0 || bb === 0 ? 0 : dot / Math.sqrt(aa * bb)
}

/** Nearest stored facts to `vector` ([] when the stored vectors are another model's, of other dimensions). */
async function nearestStored(vectors: NearFactsOptions['vectors'], repositoryId: string, vector: Float32Array) {
  try {
    return await vectors.search(repositoryId, 'facts', vector, NEAREST)
  } catch (error) {
    if (error instanceof VectorDimensionError) return []
    throw error
  }
}

/** The finder process_source calls (JobServices.nearFacts). */
export function nearFactFinder({ pools, vectors, embedder, similarity }: NearFactsOptions): FindNearFacts {
  const threshold = mergeSimilarity(embedder, similarity)
  const cache = new Map<string, Float32Array>()
  /** The vectors of `texts`, embedding only those not cached; the cache forgets its oldest past CACHED. */
  const embed = async (texts: readonly string[]) => {
    const missing = [...new Set(texts.filter((text) => !cache.has(text)))]
    const embedded = missing.length > 0 ? await embedder.embed(missing) : []
    for (const [i, text] of missing.entries()) cache.set(text, embedded[i]!)
    const answer = texts.map((text) => cache.get(text)!)
    for (const oldest of cache.keys()) {
      if (cache.size <= CACHED) break
      cache.delete(oldest)
    }
    return answer
  }
  return async (repositoryId, texts) => {
    const matches: (NearFact | undefined)[] = texts.map(() => undefined)
    const sql = await pools.forRepository(repositoryId)
    const hashes = texts.map((text) => factContentHash(text))
    // Only a text that is no fact yet, by its text or an earlier merge, can merge by its meaning.
    const known = await knownHashes(sql, hashes)
    const seen = new Set<string>()
    const fresh = texts.flatMap((text, position) => {
      const hash = hashes[position]!
      if (known.has(hash) || seen.has(hash)) return []
      seen.add(hash)
      return [{ text, position }]
    })
    if (fresh.length === 0) return { embedder: embedder.model, matches }
    const freshVectors = await embed(fresh.map((f) => f.text))
    const stored = await Promise.all(freshVectors.map((vector) => nearestStored(vectors, repositoryId, vector)))
    const candidates = await sql<{ id: string; text: string; marked: boolean }[]>`
      WITH marked AS (SELECT id FROM embedding_changes WHERE kind = 'facts' ORDER BY changed_at DESC LIMIT ${MARKED})
      SELECT id, text, id IN (SELECT id FROM marked) AS marked FROM facts
      WHERE fact_kind = 'text' AND (id = ANY(${[...new Set(stored.flat().map((n) => n.id))]}::uuid[]) OR id IN (SELECT id FROM marked))
      ORDER BY id`
    const byId = new Map(candidates.map((c) => [c.id, { ...c, numbers: numbers(c.text) }]))
    // A marked fact's stored vector may be of its text before an edit, or missing: it is embedded here.
    const marked = candidates.filter((c) => c.marked)
    const markedVectors = await embed(marked.map((c) => c.text))
    const freshNumbers = fresh.map((f) => numbers(f.text))
    for (const [i, { position }] of fresh.entries()) {
      const vector = freshVectors[i]!
      const found: NearFact[] = []
      for (const neighbour of stored[i]!) {
        const fact = byId.get(neighbour.id)
        if (fact && !fact.marked && fact.numbers === freshNumbers[i])
          found.push({ fact_id: fact.id, similarity: 1 - neighbour.distance })
      }
      marked.forEach((fact, j) => {
        if (byId.get(fact.id)!.numbers === freshNumbers[i])
          found.push({ fact_id: fact.id, similarity: cosine(vector, markedVectors[j]!) })
      })
      for (let j = 0; j < i; j++)
        if (freshNumbers[j] === freshNumbers[i])
          found.push({ position: fresh[j]!.position, similarity: cosine(vector, freshVectors[j]!) })
      matches[position] = found.filter((match) => match.similarity >= threshold).sort(nearestFirst)[0]
    }
    return { embedder: embedder.model, matches }
  }
}

/** Most similar first; on a tie a fact (by id) before an earlier text of the batch (by position). */
function nearestFirst(a: NearFact, b: NearFact): number {
  if (a.similarity !== b.similarity) return b.similarity - a.similarity
  if ('fact_id' in a) return 'fact_id' in b ? (a.fact_id < b.fact_id ? -1 : a.fact_id > b.fact_id ? 1 : 0) : -1
  return 'fact_id' in b ? 1 : a.position - b.position
}

async function knownHashes(sql: Sql, hashes: readonly string[]): Promise<Set<string>> {
  const rows = await sql<{ content_hash: string }[]>`
    SELECT content_hash FROM facts WHERE content_hash = ANY(${hashes as string[]}::text[])
    UNION SELECT content_hash FROM fact_merges WHERE content_hash = ANY(${hashes as string[]}::text[])`
  return new Set(rows.map((row) => row.content_hash))
}
