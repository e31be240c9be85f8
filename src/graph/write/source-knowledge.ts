// Writing what a source yields (the process_source job's facts and concepts) as one batch, in one
// transaction: the facts citing the source at their chunk, the concepts, the links between them,
// the embedding marks of the new rows, and the source's status `processed`. Either all of it is
// there or none of it, so a job killed mid-write and retried gives the same graph as one that ran
// through. The identities are the write API's: a fact whose normalized text exists (content_hash,
// graph/rules.ts) is that fact, which gains this source as a citation; a concept of the same name
// and context, case-folded (the unique index concepts_name_context_key), is that concept, which
// gains the new aliases. A text of the same meaning as a fact (`near`, found by the embedder before
// the transaction) is merged into that fact: it cites the source and gains the text's concepts, and
// the merge is recorded (fact_merges) so that the same text resolves to it again and an unmerge
// (fact-merges.ts) can take it out. The facts that only this source cited and that it no longer
// says become `stale`; a stale fact it says again is `stable` again. Nothing is removed or
// overwritten: writing the same batch again adds nothing.
import type { Sql, TransactionSql } from 'postgres'
import { oversizedDocument, oversizedIndexed } from '../limits.ts'
import { conceptKey, factContentHash, PROCESSABLE_SOURCE_STATUSES } from '../rules.ts'
import { markForEmbedding, RowNotFound } from './common.ts'
import { recordMerges, type MergedText } from './fact-merges.ts'

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
  /** The extractor's: the facts it drew before from this source are judged stale when it no longer draws them. */
  promptsetHash: string
  /** Chunks the extractor could not read (a model's failed chunks): their facts are not judged. */
  unreadChunks?: readonly number[]
  /** The facts of the same meaning the embedder found for some of `facts`, by their position. */
  near?: NearFacts
}

/** What a text is near: a fact of the repository, or an earlier text of the same batch (its position). */
export type NearFact = { similarity: number } & ({ fact_id: string } | { position: number })

/** Finds the facts of the same meaning for texts about to be written (vectors/near-facts.ts). */
export type FindNearFacts = (repositoryId: string, texts: readonly string[]) => Promise<NearFacts>

interface NearFacts {
  /** The embedder's model, recorded on each merge. */
  embedder: string
  /** One per position of `facts`; undefined: no fact near enough. */
  matches: readonly (NearFact | undefined)[]
}

export interface SourceKnowledgeWritten {
  facts: {
    /** New facts. */
    added: number
    /** Facts that existed (drawn from another source, or written by someone) and now cite this source too. */
    merged: number
    /** Texts of the same meaning as a fact (the embedder's), merged into it: a merge recorded for each. */
    near_merged: number
    /** Facts that cited this source already. */
    unchanged: number
    /** Left out: too long for PostgreSQL to index or to hold in a full-text document (graph/limits.ts). */
    refused: number
    /** Facts only this source cited that it no longer says: now `stale`. */
    stale: number
    /** Stale facts it says again: `stable` again. */
    restored: number
  }
  concepts: { added: number; existing: number; refused: number }
  /** New fact–concept links. */
  linked: number
}

export async function writeSourceKnowledge(sql: Sql, input: SourceKnowledge): Promise<SourceKnowledgeWritten> {
  // Facts by identity, in the document's order: the same normalized text twice is one fact, cited
  // at each chunk it is in; `near` is what its first occurrence was found near.
  const facts = new Map<
    string,
    { id: string; text: string; promptset_hash: string; chunks: Set<number>; near?: NearFact }
  >()
  const factHashes: (string | undefined)[] = []
  let refusedFacts = 0
  for (const [position, fact] of input.facts.entries()) {
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
        near: input.near?.matches[position],
      })
  }
  // Rows in the order of their keys: two batches inserting the same keys wait for each other in
  // the same order, never each for the other (a deadlock).
  const concepts = input.concepts
    .filter((concept) => !(oversizedIndexed('concepts', concept) ?? oversizedDocument('concepts', concept)))
    .sort((a, b) => compare(conceptKey(a.canonical_name, a.context), conceptKey(b.canonical_name, b.context)))
  const hashes = [...facts.keys()]
  return await sql.begin(async (tx) => {
    // Serializes two jobs processing the same source: the second sees what the first wrote.
    const [source] = await tx<{ status: string }[]>`SELECT status FROM sources WHERE id = ${input.sourceId} FOR UPDATE`
    if (!source) throw new RowNotFound('source not found')
    const existing = await idsByHash(tx, hashes)
    // A text merged before (from any source) is that fact again.
    const merged = new Map(
      (
        await tx<{ content_hash: string; fact_id: string; similarity: number; embedder: string }[]>`
          SELECT DISTINCT ON (content_hash) content_hash, fact_id, similarity, embedder FROM fact_merges
          WHERE content_hash = ANY(${hashes}::text[]) ORDER BY content_hash, created_at, id`
      ).map((row) => [row.content_hash, row]),
    )
    const nearIds = [...facts.values()].flatMap((fact) =>
      fact.near && 'fact_id' in fact.near ? [fact.near.fact_id] : [],
    )
    const present = new Set(
      (await tx<{ id: string }[]>`SELECT id FROM facts WHERE id = ANY(${nearIds}::uuid[])`).map((row) => row.id),
    )
    // What each text is: a fact of its own (existing or new), or merged into another's (`into`: a
    // fact's id, or the hash of an earlier text of this batch).
    const into = new Map<string, { fact?: string; hash?: string; similarity: number; embedder: string }>()
    const embedder = input.near?.embedder ?? ''
    for (const [hash, fact] of facts) {
      if (existing.has(hash)) continue
      const before = merged.get(hash)
      if (before !== undefined)
        into.set(hash, { fact: before.fact_id, similarity: before.similarity, embedder: before.embedder })
      else if (fact.near && 'fact_id' in fact.near && present.has(fact.near.fact_id))
        into.set(hash, { fact: fact.near.fact_id, similarity: fact.near.similarity, embedder })
      else if (fact.near && 'position' in fact.near) {
        const target = factHashes[fact.near.position]
        if (target !== undefined && target !== hash)
          into.set(hash, { hash: target, similarity: fact.near.similarity, embedder })
      }
    }
    const own = hashes.filter((hash) => !into.has(hash)).sort(compare)
    const fresh = own.filter((hash) => !existing.has(hash))
    const inserted = await tx<{ id: string }[]>`
      INSERT INTO facts (id, text, fact_kind, image_url, content_hash, promptset_hash, status)
      SELECT x.id, x.text, 'text', '', x.hash, x.promptset, 'stable'
      FROM unnest(${fresh.map((h) => facts.get(h)!.id)}::uuid[], ${fresh.map((h) => facts.get(h)!.text)}::text[], ${fresh}::text[], ${fresh.map((h) => facts.get(h)!.promptset_hash)}::text[]) AS x(id, text, hash, promptset)
      ON CONFLICT (content_hash) DO NOTHING
      RETURNING id`
    // Another transaction may have written one of them first: its row is the fact.
    for (const [hash, id] of await idsByHash(tx, fresh)) existing.set(hash, id)
    const factOf = (hash: string): string => {
      const merge = into.get(hash)
      if (!merge) return existing.get(hash)!
      return merge.fact ?? factOf(merge.hash!)
    }
    const factIds = new Map(hashes.map((hash) => [hash, factOf(hash)]))
    const citing = new Set(
      (
        await tx<{ fact_id: string }[]>`
          SELECT DISTINCT fact_id FROM fact_sources WHERE source_id = ${input.sourceId} AND fact_id = ANY(${[...new Set(factIds.values())]}::uuid[])`
      ).map((row) => row.fact_id),
    )
    const cite = (list: readonly string[]) => {
      const links = list.flatMap((hash) =>
        [...facts.get(hash)!.chunks].map((chunk) => ({ id: factIds.get(hash)!, chunk })),
      )
      links.sort((a, b) => compare(a.id, b.id) || a.chunk - b.chunk)
      return tx<{ fact_id: string; chunk_index: number }[]>`
        INSERT INTO fact_sources (fact_id, source_id, chunk_index)
        SELECT x.f, ${input.sourceId}, x.c FROM unnest(${links.map((l) => l.id)}::uuid[], ${links.map((l) => l.chunk)}::int[]) AS x(f, c)
        ON CONFLICT DO NOTHING
        RETURNING fact_id, chunk_index`
    }
    // The facts' own texts cite first, so a citation a merged text adds is one only the merge brought.
    await cite(own)
    const mergedHashes = hashes.filter((hash) => into.has(hash))
    const citedByMerges = await cite(mergedHashes)

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
        return hash === undefined ? [] : [{ hash, concept: conceptIds.get(i)!, promptset: concept.promptset_hash }]
      }),
    )
    const link = async (list: typeof mentions) => {
      const rows = list.map((m) => ({ ...m, fact: factIds.get(m.hash)! }))
      rows.sort((a, b) => compare(a.fact, b.fact) || compare(a.concept, b.concept))
      return tx<{ fact_id: string; concept_id: string }[]>`
        INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
        SELECT x.f, x.c, x.p FROM unnest(${rows.map((m) => m.fact)}::uuid[], ${rows.map((m) => m.concept)}::uuid[], ${rows.map((m) => m.promptset)}::text[]) AS x(f, c, p)
        ON CONFLICT DO NOTHING
        RETURNING fact_id, concept_id`
    }
    const linked = await link(mentions.filter((m) => !into.has(m.hash)))
    const linkedByMerges = await link(mentions.filter((m) => into.has(m.hash)))

    const texts: MergedText[] = mergedHashes.map((hash) => {
      const fact = facts.get(hash)!
      return {
        fact_id: factIds.get(hash)!,
        text: fact.text,
        content_hash: hash,
        promptset_hash: fact.promptset_hash,
        chunks: [...fact.chunks],
        similarity: into.get(hash)!.similarity,
        embedder: into.get(hash)!.embedder,
        concept_ids: [...new Set(mentions.filter((m) => m.hash === hash).map((m) => m.concept))],
      }
    })
    const recorded = await recordMerges(tx, {
      sourceId: input.sourceId,
      texts,
      addedCitations: citedByMerges,
      addedLinks: linkedByMerges,
    })

    // What this source says now: the `stable` facts this extractor drew from it before, that it no
    // longer draws (but where it could not read) and that no other source cites, are `stale`; a
    // stale one it says again is `stable`. Their citation of the source stays.
    const said = [...new Set(factIds.values())]
    const unread = [...(input.unreadChunks ?? [])]
    const stale = await tx`
      UPDATE facts f SET status = 'stale'
      WHERE f.id IN (SELECT fact_id FROM fact_sources WHERE source_id = ${input.sourceId}) AND f.id <> ALL(${said}::uuid[])
        AND f.status = 'stable' AND f.promptset_hash = ${input.promptsetHash}
        AND NOT EXISTS (SELECT 1 FROM fact_sources o WHERE o.fact_id = f.id AND (o.source_id <> ${input.sourceId} OR o.chunk_index = ANY(${unread}::int[])))
      RETURNING 1`
    const restored =
      await tx`UPDATE facts SET status = 'stable' WHERE id = ANY(${said}::uuid[]) AND status = 'stale' RETURNING 1`

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
    const ownUnchanged = own.filter((hash) => citing.has(factIds.get(hash)!)).length
    return {
      facts: {
        added: inserted.length,
        merged: own.length - inserted.length - ownUnchanged,
        near_merged: recorded.size,
        unchanged: ownUnchanged + mergedHashes.length - recorded.size,
        refused: refusedFacts,
        stale: stale.length,
        restored: restored.length,
      },
      concepts: {
        added: newConcepts.length,
        existing: conceptIds.size - newConcepts.length,
        refused: input.concepts.length - concepts.length,
      },
      linked: linked.length + linkedByMerges.length,
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
