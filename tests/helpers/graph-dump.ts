// A repository's whole graph in a form that does not depend on its UUIDs or its instance, so two
// repositories can be compared with toEqual: every row by its natural key (a source by its url, a
// fact by its content hash, a concept by name and context; investigations and reports, which have
// none, in their (created_at, id) order), references and citations spelled with those keys, media
// as SHA-256 of the stored bytes, vectors by the key of their fact or concept. Written straight in
// SQL against the tables, independently of the exporter, so it can judge the export and import.
import { createHash } from 'node:crypto'
import type { Sql } from 'postgres'
import type { BlobStore } from '../../src/blobs/store.ts'
import { ROW_SECTIONS } from '../../src/bundle/format/schema.ts'
import type { VectorStore } from '../../src/vectors/store.ts'

const CITATION = /<(fact|concept):([0-9A-Fa-f-]{36})>/g
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

export interface GraphDump {
  sources: unknown[]
  sourceImages: unknown[]
  sourceBodies: unknown[]
  facts: unknown[]
  factSources: unknown[]
  concepts: unknown[]
  conceptAliases: unknown[]
  factConcepts: unknown[]
  summaries: unknown[]
  syntheses: unknown[]
  investigations: unknown[]
  reports: unknown[]
  annotations: unknown[]
  vectors: { facts: Record<string, number[]>; concepts: Record<string, number[]> }
}

export async function dumpGraph(
  sql: Sql,
  repositoryId: string,
  stores: { blobs: BlobStore; vectors: VectorStore },
): Promise<GraphDump> {
  const factKey = new Map<string, string>()
  for (const row of await sql<{ id: string; content_hash: string }[]>`SELECT id, content_hash FROM facts`)
    factKey.set(row.id, `fact ${row.content_hash}`)
  const conceptKey = new Map<string, string>()
  for (const row of await sql<
    { id: string; canonical_name: string; context: string }[]
  >`SELECT id, canonical_name, context FROM concepts`) {
    conceptKey.set(row.id, `concept ${row.canonical_name.toLowerCase()} / ${row.context.toLowerCase()}`)
  }
  const keyOf = (id: string | null) => (id === null ? null : (factKey.get(id) ?? conceptKey.get(id) ?? `unknown ${id}`))
  const cited = (text: string) =>
    text.replace(
      CITATION,
      (_, kind: string, id: string) =>
        `<${kind}:${(kind === 'fact' ? factKey : conceptKey).get(id.toLowerCase()) ?? `dangling ${id}`}>`,
    )
  const media = async (key: string | null) => {
    if (key === null) return null
    const bytes = await stores.blobs.get(key)
    return bytes ? sha256(bytes) : 'missing blob'
  }
  const sorted = <T>(rows: readonly T[]) =>
    rows
      .map((row) => JSON.stringify(row))
      .sort()
      .map((text) => JSON.parse(text) as T)

  const images = await sql`
    SELECT si.id, s.url AS source, si.kind, si.page_number, si.position, si.url, si.width, si.height, si.bytes::float8 AS bytes, si.alt_text, si.content_type, si.storage_key
    FROM source_images si JOIN sources s ON s.id = si.source_id`
  const imageKey = new Map(images.map((i) => [i.id as string, `image ${i.source} ${i.kind} ${i.position}`]))
  const summaries =
    await sql`SELECT cs.id, cs.concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids, model FROM concept_summaries cs ORDER BY created_at, id`
  const summaryKey = new Map(summaries.map((s) => [s.id as string, `summary ${keyOf(s.concept_id)} ${s.sequence_num}`]))
  const reports =
    await sql`SELECT id, title, topic, body_md, status, parent_id, similarity_threshold, embedded_model, sentence_count FROM reports ORDER BY created_at, id`
  const reportIndex = new Map(reports.map((r, i) => [r.id as string, i]))
  const investigations = await sql`SELECT id, title, topic FROM investigations ORDER BY created_at, id`

  const vectors = async (kind: 'facts' | 'concepts') => {
    const out: Record<string, number[]> = {}
    for await (const batch of stores.vectors.scan(repositoryId, kind, 1000))
      for (const row of batch) out[keyOf(row.id)!] = [...row.vector]
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
  }

  return {
    sources: sorted(
      await sql`SELECT url, doi, kind, status, parsed_title, parsed_text, parsed_markdown, to_char(published_at, 'YYYY-MM-DD') AS published_at, has_stored_body FROM sources`,
    ),
    sourceImages: sorted(
      await Promise.all(
        images.map(async ({ id: _id, storage_key, ...image }) => ({ ...image, stored: await media(storage_key) })),
      ),
    ),
    sourceBodies: sorted(
      await Promise.all(
        (
          await sql`SELECT s.url AS source, b.content_type, b.storage_key FROM source_bodies b JOIN sources s ON s.id = b.source_id`
        ).map(async ({ storage_key, ...body }) => ({
          ...body,
          stored: await media(storage_key),
        })),
      ),
    ),
    facts: sorted(
      (await sql`SELECT id, text, fact_kind, content_hash, promptset_hash, status, source_image_id FROM facts`).map(
        ({ id: _id, source_image_id, ...fact }) => ({
          ...fact,
          image: source_image_id === null ? null : (imageKey.get(source_image_id) ?? 'dangling'),
        }),
      ),
    ),
    factSources: sorted(
      (await sql`SELECT fact_id, s.url, chunk_index FROM fact_sources JOIN sources s ON s.id = source_id`).map((r) => [
        keyOf(r.fact_id),
        r.url,
        r.chunk_index,
      ]),
    ),
    concepts: sorted(await sql`SELECT canonical_name, context, description, promptset_hash FROM concepts`),
    conceptAliases: sorted(
      (await sql`SELECT concept_id, alias_text FROM concept_aliases`).map((r) => [keyOf(r.concept_id), r.alias_text]),
    ),
    factConcepts: sorted(
      (await sql`SELECT fact_id, concept_id, promptset_hash FROM fact_concepts`).map((r) => [
        keyOf(r.fact_id),
        keyOf(r.concept_id),
        r.promptset_hash,
      ]),
    ),
    summaries: summaries.map(({ id: _id, concept_id, content, covered_fact_ids, ...s }) => ({
      ...s,
      concept: keyOf(concept_id),
      content: cited(content),
      covered: (covered_fact_ids as string[]).map(keyOf),
    })),
    syntheses: sorted(
      (
        await sql`SELECT canonical_name, content, covered_summary_ids, covered_concept_ids, embedded_image_fact_ids, model FROM concept_syntheses`
      ).map((s) => ({
        name: s.canonical_name,
        content: cited(s.content),
        summaries: (s.covered_summary_ids as string[]).map((id) => summaryKey.get(id) ?? 'dangling'),
        concepts: (s.covered_concept_ids as string[]).map(keyOf),
        images: (s.embedded_image_fact_ids as string[]).map(keyOf),
        model: s.model,
      })),
    ),
    investigations: await Promise.all(
      investigations.map(async (inv) => ({
        title: inv.title,
        topic: inv.topic,
        sources: (
          await sql`SELECT s.url FROM investigation_sources JOIN sources s ON s.id = source_id WHERE investigation_id = ${inv.id}`
        )
          .map((r) => r.url as string)
          .sort(),
      })),
    ),
    reports: reports.map(({ id: _id, parent_id, body_md, ...r }) => ({
      ...r,
      body_md: cited(body_md),
      parent: parent_id === null ? null : reportIndex.get(parent_id),
    })),
    annotations: sorted(
      (await sql`SELECT report_id, sentence_index, sentence_text, fact_id, score, posture FROM report_annotations`).map(
        (a) => [reportIndex.get(a.report_id), a.sentence_index, a.sentence_text, keyOf(a.fact_id), a.score, a.posture],
      ),
    ),
    vectors: { facts: await vectors('facts'), concepts: await vectors('concepts') },
  }
}

/** Rows per graph table (for "nothing changed" checks): every bundle row section is a table of that name. */
export async function tableCounts(sql: Sql): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const table of ROW_SECTIONS) counts[table] = (await sql`SELECT count(*)::int AS n FROM ${sql(table)}`)[0]!.n
  return counts
}
