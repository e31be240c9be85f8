// Writing facts: create (with their sources, chunk indexes and concepts), edit, delete, and the
// fact–concept links. A fact's identity is its content hash (graph/rules.ts), recomputed from the
// text here exactly as the import does: a text whose normalized form exists already is refused
// with the existing fact's id, or merged into it when the caller asks.
import type { Sql, TransactionSql } from 'postgres'
import type { Db } from '../../db/sql.ts'
import type { Static } from '@sinclair/typebox'
import type { FactCreate, FactUpdate } from './schemas.ts'
import { factContentHash } from '../rules.ts'
import { factDetailColumns, getFact, jsonRow } from '../store.ts'
import type { FactDetail } from '../schemas.ts'
import {
  citationsOf,
  ExistingRow,
  InvalidWrite,
  lockRow,
  RowNotFound,
  markForEmbedding,
  missingReference,
  missingReferenceError,
  requireRows,
  requireStorable,
  uniqueWrite,
  type BrokenCitation,
} from './common.ts'

export type FactInput = Static<typeof FactCreate>
export type FactChanges = Static<typeof FactUpdate>
type FactConceptInput = NonNullable<FactInput['concepts']>[number]

/** Where this repository serves a stored source image, less the image's id (media/urls.ts): an image fact's image_url. */
export interface FactWriteContext {
  imageUrlPrefix: string
}

const detail = async (tx: TransactionSql, id: string) => (await getFact(tx, id))!

async function requireReferences(tx: TransactionSql, input: FactChanges): Promise<void> {
  await requireRows(
    tx,
    'sources',
    (input.sources ?? []).map((s) => s.source_id),
    'sources',
  )
  await requireRows(
    tx,
    'concepts',
    (input.concepts ?? []).map((c) => c.concept_id),
    'concepts',
  )
  if (input.source_image_id) await requireRows(tx, 'source_images', [input.source_image_id], 'source_image_id')
}

/**
 * An image fact's image_url, as the import gives it (docs/spec/bundle.md §5): the local copy
 * when the source image's bytes are stored here, else the image's own URL; without a source
 * image, what the caller gave.
 */
const imageUrl = (tx: Db, context: FactWriteContext, imageId: string | null, given: string) =>
  imageId === null
    ? tx`${given}::text`
    : tx`coalesce((SELECT CASE WHEN si.storage_key IS NOT NULL THEN ${context.imageUrlPrefix} || si.id::text ELSE si.url END FROM source_images si WHERE si.id = ${imageId}), ${given})`

async function addLinks(tx: Db, factId: string, input: FactChanges): Promise<void> {
  const sources = input.sources ?? []
  const concepts = input.concepts ?? []
  if (sources.length > 0)
    await tx`
      INSERT INTO fact_sources (fact_id, source_id, chunk_index)
      SELECT ${factId}, s, c FROM unnest(${sources.map((s) => s.source_id)}::uuid[], ${sources.map((s) => s.chunk_index ?? 0)}::int[]) AS l(s, c)
      ON CONFLICT DO NOTHING`
  if (concepts.length > 0)
    await tx`
      INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
      SELECT ${factId}, c, p FROM unnest(${concepts.map((c) => c.concept_id)}::uuid[], ${concepts.map((c) => c.promptset_hash ?? '')}::text[]) AS l(c, p)
      ON CONFLICT (fact_id, concept_id) DO UPDATE SET promptset_hash = excluded.promptset_hash`
}

function checkKind(fields: { fact_kind?: string; source_image_id?: string | null }): void {
  if (fields.source_image_id && fields.fact_kind !== 'image')
    throw new InvalidWrite('source_image_id: only an image fact (fact_kind image) is tied to a source image')
}

/**
 * Creates a fact with its links. A fact of the same normalized text exists: ExistingRow, or with
 * `merge` the links are added to that fact (`created` false). A reference to a row that does not
 * exist fails the statement on its foreign key, so nothing is written; the refusal names the
 * first such reference, looked up then.
 *
 * One statement (so one implicit transaction, and one round trip): it inserts the fact unless its
 * hash exists, links whichever fact is the target, marks a new one for embedding, and answers a
 * new one's detail from the row it inserted and the links it is inserting (getFact's columns,
 * factDetailColumns). The links' foreign keys are checked at the end of the statement, when the
 * new fact exists.
 */
export async function createFact(
  sql: Sql,
  input: FactInput,
  options: FactWriteContext & { merge: boolean },
): Promise<{ fact: FactDetail; created: boolean }> {
  checkKind(input)
  requireStorable('facts', input, { row: input })
  const id = crypto.randomUUID()
  const hash = factContentHash(input.text)
  const sources = input.sources ?? []
  // One link per concept (the last one given wins): an upsert may not touch a row twice.
  const concepts = [...new Map((input.concepts ?? []).map((c) => [c.concept_id.toLowerCase(), c])).values()]
  const imageId = input.source_image_id ?? null
  const sourceLinks = sql`SELECT x.s AS source_id, x.c AS chunk_index FROM unnest(${sources.map((s) => s.source_id)}::uuid[], ${sources.map((s) => s.chunk_index ?? 0)}::int[]) AS x(s, c)`
  const conceptLinks = sql`SELECT x.c AS concept_id, x.p AS promptset_hash FROM unnest(${concepts.map((c) => c.concept_id)}::uuid[], ${concepts.map((c) => c.promptset_hash ?? '')}::text[]) AS x(c, p)`
  const written = sql<Written[]>`
    WITH inserted AS (
      INSERT INTO facts (id, text, fact_kind, image_url, content_hash, promptset_hash, status, source_image_id)
      VALUES (${id}, ${input.text}, ${input.fact_kind ?? 'text'}, ${imageUrl(sql, options, imageId, input.image_url ?? '')}, ${hash},
        ${input.promptset_hash ?? ''}, ${input.status ?? 'new'}, ${imageId})
      ON CONFLICT (content_hash) DO NOTHING
      RETURNING *
    ), target AS (
      SELECT id FROM inserted
      UNION ALL SELECT id FROM facts WHERE content_hash = ${hash} AND NOT EXISTS (SELECT 1 FROM inserted)
    ), linked AS (
      SELECT (SELECT id FROM target LIMIT 1) AS fact_id
      WHERE EXISTS (SELECT 1 FROM inserted) OR ${options.merge}
    ), source_links AS (${sourceLinks}), fact_source_links AS (
      INSERT INTO fact_sources (fact_id, source_id, chunk_index)
      SELECT l.fact_id, x.source_id, x.chunk_index FROM linked l, source_links x
      ON CONFLICT DO NOTHING
    ), concept_links AS (${conceptLinks}), fact_concept_links AS (
      INSERT INTO fact_concepts (fact_id, concept_id, promptset_hash)
      SELECT l.fact_id, x.concept_id, x.promptset_hash FROM linked l, concept_links x
      ON CONFLICT (fact_id, concept_id) DO UPDATE SET promptset_hash = excluded.promptset_hash
    ), marked AS (
      INSERT INTO embedding_changes (kind, id) SELECT 'facts', id FROM inserted
      ON CONFLICT (kind, id) DO UPDATE SET changed_at = clock_timestamp()
    )
    SELECT (SELECT id FROM target LIMIT 1) AS id, EXISTS (SELECT 1 FROM inserted) AS created,
      ${jsonRow(sql, sql`SELECT ${factDetailColumns(sql, { sources: sql`SELECT DISTINCT source_id, chunk_index FROM source_links`, concepts: sql`SELECT concept_id FROM concept_links` })} FROM inserted facts`)} AS fact`
  // A foreign key refused a reference: the refusal names the first missing one.
  const refuseMissing = async (error: unknown): Promise<never> => {
    if ((error as { code?: string }).code !== FOREIGN_KEY_VIOLATION) throw error
    const [missing] = await sql<{ field: string; noun: string; id: string }[]>`${missingReference(sql, [
      { table: 'sources', ids: sources.map((s) => s.source_id), field: 'sources' },
      { table: 'concepts', ids: concepts.map((c) => c.concept_id), field: 'concepts' },
      { table: 'source_images', ids: imageId ? [imageId] : [], field: 'source_image_id' },
    ])}`
    throw missing ? missingReferenceError(missing) : error
  }
  const [result] = await written.catch(refuseMissing)
  return await settleCreated(sql, { result: result!, hash, merge: options.merge, sources, concepts }).catch(
    refuseMissing,
  )
}

const FOREIGN_KEY_VIOLATION = '23503'

/** createFact's statement's answer: the fact written (or found), whether it is new, and a new one's detail. */
type Written = { id: string | null; created: boolean; fact: FactDetail | null }

/** What createFact answers once its statement ran: the new fact, or the merged one. */
async function settleCreated(
  sql: Sql,
  {
    result,
    hash,
    merge,
    sources,
    concepts,
  }: { result: Written; hash: string; merge: boolean } & Pick<FactChanges, 'sources' | 'concepts'>,
): Promise<{ fact: FactDetail; created: boolean }> {
  if (result.created && result.fact) return { fact: result.fact, created: true }
  // The twin committed after this statement's snapshot was taken: its id is only visible now.
  const existing = result.id ?? (await sql<{ id: string }[]>`SELECT id FROM facts WHERE content_hash = ${hash}`)[0]?.id
  if (!existing) throw new Error('createFact: the fact was neither inserted nor found')
  if (!result.created && !merge)
    throw new ExistingRow(
      'a fact with this text exists already (same text once normalized); merge=true adds the links to it',
      existing,
    )
  if (!result.created && result.id === null) await addLinks(sql, existing, { sources, concepts })
  return { fact: (await getFact(sql, existing))!, created: result.created }
}

/** Edits a fact; `sources` and `concepts`, when given, replace its links. */
export async function updateFact(
  sql: Sql,
  id: string,
  changes: FactChanges,
  options: FactWriteContext & { ifMatch?: string },
): Promise<FactDetail> {
  requireStorable('facts', changes, { row: changes })
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'facts', id, options.ifMatch, () => getFact(tx, id))
    const kind = changes.fact_kind ?? (current.fact_kind as 'text' | 'image')
    const imageId = changes.source_image_id === undefined ? current.source_image_id : changes.source_image_id
    checkKind({ fact_kind: kind, source_image_id: imageId })
    await requireReferences(tx, changes)
    const text = changes.text ?? current.text
    const hash = factContentHash(text)
    await uniqueWrite(
      tx,
      'another fact has this text (same text once normalized)',
      async () =>
        (await tx<{ id: string }[]>`SELECT id FROM facts WHERE content_hash = ${hash} AND id <> ${id}`)[0]?.id,
      () => tx`
        UPDATE facts SET text = ${text}, content_hash = ${hash}, fact_kind = ${kind}, status = ${changes.status ?? current.status},
          promptset_hash = ${changes.promptset_hash ?? current.promptset_hash}, source_image_id = ${imageId},
          image_url = ${imageUrl(tx, options, imageId, changes.image_url ?? current.image_url)}
        WHERE id = ${id}`,
    )
    if (changes.sources) await tx`DELETE FROM fact_sources WHERE fact_id = ${id}`
    if (changes.concepts) await tx`DELETE FROM fact_concepts WHERE fact_id = ${id}`
    await addLinks(tx, id, changes)
    if (hash !== current.content_hash) await markForEmbedding(tx, 'facts', [id])
    return await detail(tx, id)
  })
}

export interface DeletedFact {
  id: string
  /** Links and annotations that went with it. */
  removed: { sources: number; concepts: number; annotations: number }
  /** Summaries, syntheses and reports that still cite the fact. */
  broken_citations: BrokenCitation[]
}

export async function deleteFact(sql: Sql, id: string, options: { ifMatch?: string }): Promise<DeletedFact> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'facts', id, options.ifMatch, () => getFact(tx, id))
    const [removed] = await tx<DeletedFact['removed'][]>`
      SELECT (SELECT count(*)::int FROM fact_sources WHERE fact_id = ${id}) AS sources,
        (SELECT count(*)::int FROM fact_concepts WHERE fact_id = ${id}) AS concepts,
        (SELECT count(*)::int FROM report_annotations WHERE fact_id = ${id}) AS annotations`
    await tx`DELETE FROM facts WHERE id = ${id}`
    await markForEmbedding(tx, 'facts', [id])
    return { id, removed: removed!, broken_citations: await citationsOf(tx, 'fact', id) }
  })
}

/** Links a fact to a concept (or updates the link's promptset_hash). */
export async function linkConcept(
  sql: Sql,
  factId: string,
  link: FactConceptInput,
  options: { ifMatch?: string },
): Promise<FactDetail> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'facts', factId, options.ifMatch, () => getFact(tx, factId))
    await requireRows(tx, 'concepts', [link.concept_id], 'conceptID')
    await addLinks(tx, factId, { concepts: [link] })
    return await detail(tx, factId)
  })
}

/** Removes a fact–concept link (RowNotFound when there was none). */
export async function unlinkConcept(
  sql: Sql,
  factId: string,
  conceptId: string,
  options: { ifMatch?: string },
): Promise<FactDetail> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'facts', factId, options.ifMatch, () => getFact(tx, factId))
    const { count } = await tx`DELETE FROM fact_concepts WHERE fact_id = ${factId} AND concept_id = ${conceptId}`
    if (count === 0) throw new RowNotFound(`the fact is not linked to concept ${conceptId}`)
    return await detail(tx, factId)
  })
}
