// The merges of near-duplicate facts: process_source (source-knowledge.ts) records each text it
// merged into a fact of the same meaning, with what the merge gave that fact (a citation, concept
// links), and an unmerge makes the text its own fact again, citing what it came from, and takes
// off the kept fact what only the merge gave it.
import type { Sql, TransactionSql } from 'postgres'
import { getFact } from '../store.ts'
import type { FactDetail } from '../schemas.ts'
import { ExistingRow, lockRow, markForEmbedding, RowNotFound } from './common.ts'

/** A text of a batch merged into `fact_id`, and where the source says it. */
export interface MergedText {
  fact_id: string
  text: string
  content_hash: string
  promptset_hash: string
  chunks: readonly number[]
  similarity: number
  embedder: string
  /** Every concept the text mentions. */
  concept_ids: readonly string[]
}

/**
 * Records the merges of `texts` (one per text and chunk; one already recorded is left as it is)
 * and returns the hashes of the texts that got a new record. `addedCitations` and `addedLinks` are
 * the citations and concept links the merged texts gave their facts in this batch: each is
 * credited to the first text (and chunk) that brought it, so an unmerge takes it off once.
 */
export async function recordMerges(
  tx: TransactionSql,
  input: {
    sourceId: string
    texts: readonly MergedText[]
    addedCitations: readonly { fact_id: string; chunk_index: number }[]
    addedLinks: readonly { fact_id: string; concept_id: string }[]
  },
): Promise<Set<string>> {
  const citations = new Set(input.addedCitations.map((c) => `${c.fact_id}/${c.chunk_index}`))
  const links = new Set(input.addedLinks.map((l) => `${l.fact_id}/${l.concept_id}`))
  const rows = input.texts.flatMap((text) =>
    [...text.chunks]
      .sort((a, b) => a - b)
      .map((chunk, i) => {
        const citation = `${text.fact_id}/${chunk}`
        const added = citations.delete(citation)
        const concepts = i > 0 ? [] : text.concept_ids.filter((id) => links.delete(`${text.fact_id}/${id}`))
        return { id: crypto.randomUUID(), text, chunk, added, concepts }
      }),
  )
  if (rows.length === 0) return new Set()
  // Arrays of arrays do not travel through unnest (the concept lists go as JSON), nor do booleans (as text).
  const recorded = await tx<{ content_hash: string }[]>`
    INSERT INTO fact_merges (id, fact_id, text, content_hash, promptset_hash, source_id, chunk_index, similarity, embedder,
      added_citation, concept_ids, added_concept_ids)
    SELECT x.id, x.fact, x.text, x.hash, x.promptset, ${input.sourceId}, x.chunk, least(1, greatest(-1, x.similarity)), x.embedder,
      x.added, ARRAY(SELECT jsonb_array_elements_text(x.concepts::jsonb)::uuid), ARRAY(SELECT jsonb_array_elements_text(x.added_concepts::jsonb)::uuid)
    FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.text.fact_id)}::uuid[], ${rows.map((r) => r.text.text)}::text[],
      ${rows.map((r) => r.text.content_hash)}::text[], ${rows.map((r) => r.text.promptset_hash)}::text[], ${rows.map((r) => r.chunk)}::int[],
      ${rows.map((r) => r.text.similarity)}::float8[], ${rows.map((r) => r.text.embedder)}::text[], ${rows.map((r) => String(r.added))}::text[]::bool[],
      ${rows.map((r) => JSON.stringify(r.text.concept_ids))}::text[], ${rows.map((r) => JSON.stringify(r.concepts))}::text[])
      AS x(id, fact, text, hash, promptset, chunk, similarity, embedder, added, concepts, added_concepts)
    ORDER BY x.hash, x.chunk
    ON CONFLICT (content_hash, source_id, chunk_index) DO NOTHING
    RETURNING content_hash`
  return new Set(recorded.map((row) => row.content_hash))
}

export interface Unmerged {
  /** The merged text, its own fact again. */
  fact: FactDetail
  /** The fact it had been merged into, without what only the merge gave it. */
  kept: FactDetail
}

interface MergeRow {
  id: string
  text: string
  content_hash: string
  promptset_hash: string
  source_id: string
  chunk_index: number
  added_citation: boolean
  concept_ids: string[]
  added_concept_ids: string[]
}

/**
 * Undoes merge `mergeId` of fact `factId`: its text becomes a fact of its own (`stable`, its
 * extractor's promptset_hash), citing the source and chunk it came from and linked to the
 * concepts it mentions. The merges of the same text from other sources and chunks are undone
 * with it (a text is one fact). The kept fact loses each citation and concept link the merge gave
 * it unless another merge into it gives it too (which is then credited with it).
 */
export async function unmergeFact(
  sql: Sql,
  factId: string,
  mergeId: string,
  options: { ifMatch?: string },
): Promise<Unmerged> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'facts', factId, options.ifMatch, () => getFact(tx, factId))
    const [merge] = await tx<{ content_hash: string }[]>`
      SELECT content_hash FROM fact_merges WHERE id = ${mergeId} AND fact_id = ${factId} FOR UPDATE`
    if (!merge) throw new RowNotFound('merge not found: the fact has no merge of that id')
    const group = await tx<MergeRow[]>`
      DELETE FROM fact_merges WHERE fact_id = ${factId} AND content_hash = ${merge.content_hash}
      RETURNING id, text, content_hash, promptset_hash, source_id, chunk_index, added_citation, concept_ids::text[], added_concept_ids::text[]`
    group.sort((a, b) => a.chunk_index - b.chunk_index || (a.id < b.id ? -1 : 1))
    const first = group[0]!
    const [taken] = await tx<{ id: string }[]>`SELECT id FROM facts WHERE content_hash = ${first.content_hash}`
    if (taken) throw new ExistingRow('a fact with the merged text exists already (same text once normalized)', taken.id)
    const id = crypto.randomUUID()
    await tx`
      INSERT INTO facts (id, text, fact_kind, image_url, content_hash, promptset_hash, status)
      VALUES (${id}, ${first.text}, 'text', '', ${first.content_hash}, ${first.promptset_hash}, 'stable')`
    await tx`
      INSERT INTO fact_sources (fact_id, source_id, chunk_index)
      SELECT ${id}, x.s, x.c FROM unnest(${group.map((m) => m.source_id)}::uuid[], ${group.map((m) => m.chunk_index)}::int[]) AS x(s, c)
      ON CONFLICT DO NOTHING`
    // A concept deleted since the merge is left out.
    await tx`
      INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
      SELECT ${id}, c.id, ${first.promptset_hash} FROM concepts c WHERE c.id = ANY(${[...new Set(group.flatMap((m) => m.concept_ids))]}::uuid[])
      ON CONFLICT DO NOTHING`
    for (const m of group.filter((m) => m.added_citation)) {
      const [other] = await tx<{ id: string }[]>`
        UPDATE fact_merges SET added_citation = true
        WHERE id = (SELECT id FROM fact_merges WHERE fact_id = ${factId} AND source_id = ${m.source_id} AND chunk_index = ${m.chunk_index}
          ORDER BY created_at, id LIMIT 1)
        RETURNING id`
      if (!other)
        await tx`DELETE FROM fact_sources WHERE fact_id = ${factId} AND source_id = ${m.source_id} AND chunk_index = ${m.chunk_index}`
    }
    for (const concept of new Set(group.flatMap((m) => m.added_concept_ids))) {
      const [other] = await tx<{ id: string }[]>`
        UPDATE fact_merges SET added_concept_ids = array_append(added_concept_ids, ${concept}::uuid)
        WHERE id = (SELECT id FROM fact_merges WHERE fact_id = ${factId} AND ${concept}::uuid = ANY(concept_ids)
          ORDER BY created_at, id LIMIT 1)
        RETURNING id`
      if (!other) await tx`DELETE FROM fact_concepts WHERE fact_id = ${factId} AND concept_id = ${concept}`
    }
    await markForEmbedding(tx, 'facts', [id])
    return { fact: (await getFact(tx, id))!, kept: (await getFact(tx, factId))! }
  })
}
