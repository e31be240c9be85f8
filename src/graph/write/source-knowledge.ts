// Writing what a source yields (the process_source job's facts and concepts) as one batch, in one
// transaction: the facts citing the source at their chunk, the concepts, the links between them,
// the embedding marks of the new rows, and the source's status `processed`. Either all of it is
// there or none of it, so a job killed mid-write and retried gives the same graph as one that ran
// through. The identities are the write API's: a fact whose normalized text exists (content_hash,
// graph/rules.ts) is that fact, which gains this source as a citation; a concept of the same name
// and context, case-folded (the unique index concepts_name_context_key), is that concept, which
// gains the new aliases. Nothing is removed or overwritten: writing the same batch again adds nothing.
import type { Sql, TransactionSql } from 'postgres'
import { oversizedDocument, oversizedIndexed } from '../limits.ts'
import { conceptKey, factContentHash, PROCESSABLE_SOURCE_STATUSES } from '../rules.ts'
import { markForEmbedding, RowNotFound } from './common.ts'

export interface SourceKnowledge {
  sourceId: string
  facts: readonly { text: string; chunk_index: number; fact_kind: 'text'; status: 'stable'; promptset_hash: string }[]
  concepts: readonly {
    canonical_name: string
    context: string
    description: string
    aliases: readonly string[]
    promptset_hash: string
    /** Positions in `facts` of the facts that mention it. */
    facts: readonly number[]
  }[]
}

export interface SourceKnowledgeWritten {
  facts: {
    /** New facts. */
    added: number
    /** Facts that existed (drawn from another source, or written by someone) and now cite this source too. */
    merged: number
    /** Facts that cited this source already. */
    unchanged: number
    /** Left out: too long for PostgreSQL to index or to hold in a full-text document (graph/limits.ts). */
    refused: number
  }
  concepts: { added: number; existing: number; refused: number }
  /** New fact–concept links. */
  linked: number
}

export async function writeSourceKnowledge(sql: Sql, input: SourceKnowledge): Promise<SourceKnowledgeWritten> {
  // Facts by identity: the same normalized text twice is one fact, cited at each chunk it is in.
  const facts = new Map<string, { id: string; text: string; promptset_hash: string; chunks: Set<number> }>()
  const factHashes: (string | undefined)[] = []
  let refusedFacts = 0
  for (const fact of input.facts) {
    if (oversizedIndexed('facts', fact) ?? oversizedDocument('facts', fact)) {
      refusedFacts++
      factHashes.push(undefined)
      continue
    }
    const hash = factContentHash(fact.text)
    factHashes.push(hash)
    const known = facts.get(hash)
    if (known) known.chunks.add(fact.chunk_index)
    else
      facts.set(hash, {
        id: crypto.randomUUID(),
        text: fact.text,
        promptset_hash: fact.promptset_hash,
        chunks: new Set([fact.chunk_index]),
      })
  }
  // Rows in the order of their keys: two batches inserting the same keys wait for each other in
  // the same order, never each for the other (a deadlock).
  const concepts = input.concepts
    .filter((concept) => !(oversizedIndexed('concepts', concept) ?? oversizedDocument('concepts', concept)))
    .sort((a, b) => compare(conceptKey(a.canonical_name, a.context), conceptKey(b.canonical_name, b.context)))
  const hashes = [...facts.keys()].sort(compare)
  const rows = hashes.map((hash) => facts.get(hash)!)
  return await sql.begin(async (tx) => {
    // Serializes two jobs processing the same source: the second sees what the first wrote.
    const [source] = await tx<{ status: string }[]>`SELECT status FROM sources WHERE id = ${input.sourceId} FOR UPDATE`
    if (!source) throw new RowNotFound('source not found')
    const citing = new Set(
      (
        await tx<{ content_hash: string }[]>`
          SELECT DISTINCT f.content_hash FROM facts f JOIN fact_sources fs ON fs.fact_id = f.id
          WHERE fs.source_id = ${input.sourceId} AND f.content_hash = ANY(${hashes}::text[])`
      ).map((row) => row.content_hash),
    )
    const inserted = await tx<{ id: string }[]>`
      INSERT INTO facts (id, text, fact_kind, image_url, content_hash, promptset_hash, status)
      SELECT x.id, x.text, 'text', '', x.hash, x.promptset, 'stable'
      FROM unnest(${rows.map((f) => f.id)}::uuid[], ${rows.map((f) => f.text)}::text[], ${hashes}::text[], ${rows.map((f) => f.promptset_hash)}::text[]) AS x(id, text, hash, promptset)
      ON CONFLICT (content_hash) DO NOTHING
      RETURNING id`
    const factIds = await idsByHash(tx, hashes)
    const links = rows.flatMap((fact, i) => [...fact.chunks].map((chunk) => ({ id: factIds.get(hashes[i]!)!, chunk })))
    await tx`
      INSERT INTO fact_sources (fact_id, source_id, chunk_index)
      SELECT x.f, ${input.sourceId}, x.c FROM unnest(${links.map((l) => l.id)}::uuid[], ${links.map((l) => l.chunk)}::int[]) AS x(f, c)
      ON CONFLICT DO NOTHING`

    const newConcepts = await tx<{ id: string }[]>`
      INSERT INTO concepts (id, canonical_name, context, description, promptset_hash)
      SELECT x.id, x.name, x.context, x.description, x.promptset
      FROM unnest(${concepts.map(() => crypto.randomUUID())}::uuid[], ${concepts.map((c) => c.canonical_name)}::text[], ${concepts.map((c) => c.context)}::text[],
        ${concepts.map((c) => c.description)}::text[], ${concepts.map((c) => c.promptset_hash)}::text[]) AS x(id, name, context, description, promptset)
      ON CONFLICT ((lower(canonical_name)), (lower(context))) DO NOTHING
      RETURNING id`
    // Each given concept's row, found the way the unique index compares (PostgreSQL's lower, not JavaScript's).
    const conceptIds = (
      await tx<{ i: number; id: string }[]>`
        SELECT x.i::int AS i, c.id FROM unnest(${concepts.map((c) => c.canonical_name)}::text[], ${concepts.map((c) => c.context)}::text[])
          WITH ORDINALITY AS x(name, context, i)
        JOIN concepts c ON lower(c.canonical_name) = lower(x.name) AND lower(c.context) = lower(x.context)`
    ).reduce((ids, row) => ids.set(row.i - 1, row.id), new Map<number, string>())
    const aliases = concepts.flatMap((concept, i) =>
      concept.aliases
        .filter((alias) => alias !== '' && !oversizedIndexed('concept_aliases', { alias_text: alias }))
        .map((alias) => ({ id: conceptIds.get(i)!, alias })),
    )
    await tx`
      INSERT INTO concept_aliases (concept_id, alias_text)
      SELECT x.c, x.a FROM unnest(${aliases.map((a) => a.id)}::uuid[], ${aliases.map((a) => a.alias)}::text[]) AS x(c, a)
      ON CONFLICT DO NOTHING`
    const mentions = concepts.flatMap((concept, i) =>
      concept.facts.flatMap((position) => {
        const hash = factHashes[position]
        return hash === undefined
          ? []
          : [{ fact: factIds.get(hash)!, concept: conceptIds.get(i)!, promptset: concept.promptset_hash }]
      }),
    )
    mentions.sort((a, b) => compare(a.fact, b.fact) || compare(a.concept, b.concept))
    const linked = await tx`
      INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
      SELECT x.f, x.c, x.p FROM unnest(${mentions.map((m) => m.fact)}::uuid[], ${mentions.map((m) => m.concept)}::uuid[], ${mentions.map((m) => m.promptset)}::text[]) AS x(f, c, p)
      ON CONFLICT DO NOTHING
      RETURNING 1`

    await markForEmbedding(
      tx,
      'facts',
      inserted.map((row) => row.id),
    )
    await markForEmbedding(
      tx,
      'concepts',
      newConcepts.map((row) => row.id),
    )
    // Another status (a source someone wrote with one of their own) is theirs to keep.
    if (PROCESSABLE_SOURCE_STATUSES.includes(source.status))
      await tx`UPDATE sources SET status = 'processed', status_reason = '' WHERE id = ${input.sourceId}`
    return {
      facts: {
        added: inserted.length,
        merged: hashes.length - inserted.length - citing.size,
        unchanged: citing.size,
        refused: refusedFacts,
      },
      concepts: {
        added: newConcepts.length,
        existing: conceptIds.size - newConcepts.length,
        refused: input.concepts.length - concepts.length,
      },
      linked: linked.length,
    }
  })
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

async function idsByHash(tx: TransactionSql, hashes: readonly string[]): Promise<Map<string, string>> {
  const rows = await tx<
    { id: string; content_hash: string }[]
  >`SELECT id, content_hash FROM facts WHERE content_hash = ANY(${hashes as string[]}::text[])`
  return new Map(rows.map((row) => [row.content_hash, row.id]))
}
