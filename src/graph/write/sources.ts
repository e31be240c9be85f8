// Writing sources (their media bytes arrive through media/upload-routes.ts) and investigations with
// their sources. A source's natural key is its URL, on which the import reuses one: a second
// source of a URL is refused with the existing one's id. A source that facts cite is deleted only
// when the caller says so (cascade), taking those links along; the facts stay.
import type { Sql, TransactionSql } from 'postgres'
import type { Static } from '@sinclair/typebox'
import type { InvestigationCreate, InvestigationUpdate, SourceCreate, SourceUpdate } from './schemas.ts'
import { getInvestigation, getSource } from '../store.ts'
import type { InvestigationDetail, SourceDetail } from '../schemas.ts'
import { lockRow, requireRows, requireStorable, RowNotFound, StillReferenced, uniqueWrite } from './common.ts'

export type SourceInput = Static<typeof SourceCreate>
export type SourceChanges = Static<typeof SourceUpdate>

const sourceDetail = async (tx: TransactionSql, id: string) => (await getSource(tx, id))!
const URL_TAKEN = 'a source of this URL exists already'
const urlTaken = (tx: TransactionSql, url: string, except: string | null) => async () =>
  (await tx<{ id: string }[]>`SELECT id FROM sources WHERE url = ${url} AND id IS DISTINCT FROM ${except}::uuid`)[0]?.id

export async function createSource(sql: Sql, input: SourceInput): Promise<SourceDetail> {
  requireStorable('sources', input)
  return await sql.begin(async (tx) => {
    const id = crypto.randomUUID()
    await uniqueWrite(
      tx,
      URL_TAKEN,
      urlTaken(tx, input.url, null),
      () => tx`
        INSERT INTO sources (id, url, doi, kind, status, parsed_title, parsed_text, parsed_markdown, published_at)
        VALUES (${id}, ${input.url}, ${input.doi ?? ''}, ${input.kind}, ${input.status}, ${input.parsed_title ?? ''}, ${input.parsed_text ?? ''},
          ${input.parsed_markdown ?? ''}, ${input.published_at ?? null})`,
    )
    return await sourceDetail(tx, id)
  })
}

export async function updateSource(
  sql: Sql,
  id: string,
  changes: SourceChanges,
  options: { ifMatch?: string },
): Promise<SourceDetail> {
  requireStorable('sources', changes)
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'sources', id, options.ifMatch, () => getSource(tx, id))
    const next = { ...current, ...changes }
    await uniqueWrite(
      tx,
      URL_TAKEN,
      urlTaken(tx, next.url, id),
      () => tx`
        UPDATE sources SET url = ${next.url}, doi = ${next.doi}, kind = ${next.kind}, status = ${next.status}, parsed_title = ${next.parsed_title},
          parsed_text = ${next.parsed_text}, parsed_markdown = ${next.parsed_markdown}, published_at = ${next.published_at}
        WHERE id = ${id}`,
    )
    return await sourceDetail(tx, id)
  })
}

/** The source of `url`, made `pending` when there is none yet (the ingest job fills it): one URL, one source. */
export async function registerSource(
  sql: Sql,
  input: { url: string; kind: string },
): Promise<{ id: string; created: boolean }> {
  const [inserted] = await sql<{ id: string }[]>`
    INSERT INTO sources (id, url, kind, status) VALUES (${crypto.randomUUID()}, ${input.url}, ${input.kind}, 'pending')
    ON CONFLICT (url) DO NOTHING RETURNING id`
  if (inserted) return { id: inserted.id, created: true }
  const [existing] = await sql<{ id: string }[]>`SELECT id FROM sources WHERE url = ${input.url}`
  return { id: existing!.id, created: false }
}

export interface DeletedSource {
  id: string
  /** What went with it: links to facts and investigations, its images and its stored body. */
  removed: { fact_links: number; investigation_links: number; images: number; body: number }
  /** Blob keys of the bytes that went with it (deleted once the row is). */
  storage_keys: string[]
}

/** Deletes a source; StillReferenced while facts cite it, unless `cascade`. */
export async function deleteSource(
  sql: Sql,
  id: string,
  options: { ifMatch?: string; cascade: boolean },
): Promise<DeletedSource> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'sources', id, options.ifMatch, () => getSource(tx, id))
    const [removed] = await tx<DeletedSource['removed'][]>`
      SELECT (SELECT count(*)::int FROM fact_sources WHERE source_id = ${id}) AS fact_links,
        (SELECT count(*)::int FROM investigation_sources WHERE source_id = ${id}) AS investigation_links,
        (SELECT count(*)::int FROM source_images WHERE source_id = ${id}) AS images,
        (SELECT count(*)::int FROM source_bodies WHERE source_id = ${id}) AS body`
    if (removed!.fact_links > 0 && !options.cascade)
      throw new StillReferenced(
        `facts cite this source (${removed!.fact_links} links); cascade=true deletes it with those links (the facts stay)`,
      )
    const keys = await tx<{ key: string }[]>`
      SELECT storage_key AS key FROM source_images WHERE source_id = ${id} AND storage_key IS NOT NULL
      UNION ALL SELECT storage_key FROM source_bodies WHERE source_id = ${id}`
    await tx`DELETE FROM sources WHERE id = ${id}`
    return { id, removed: removed!, storage_keys: keys.map((k) => k.key) }
  })
}

// ---- investigations

export type InvestigationInput = Static<typeof InvestigationCreate>
export type InvestigationChanges = Static<typeof InvestigationUpdate>

const investigationDetail = async (tx: TransactionSql, id: string) => (await getInvestigation(tx, id))!

async function addInvestigationSources(
  tx: TransactionSql,
  id: string,
  sourceIds: readonly string[] | undefined,
): Promise<void> {
  if (!sourceIds?.length) return
  await requireRows(tx, 'sources', sourceIds, 'source_ids')
  await tx`INSERT INTO investigation_sources (investigation_id, source_id) SELECT ${id}, unnest(${sourceIds as string[]}::uuid[]) ON CONFLICT DO NOTHING`
}

export async function createInvestigation(sql: Sql, input: InvestigationInput): Promise<InvestigationDetail> {
  requireStorable('investigations', input)
  return await sql.begin(async (tx) => {
    const id = crypto.randomUUID()
    await tx`INSERT INTO investigations (id, title, topic) VALUES (${id}, ${input.title}, ${input.topic ?? ''})`
    await addInvestigationSources(tx, id, input.source_ids)
    return await investigationDetail(tx, id)
  })
}

/** Edits an investigation; `source_ids`, when given, replace its sources. */
export async function updateInvestigation(
  sql: Sql,
  id: string,
  changes: InvestigationChanges,
  options: { ifMatch?: string },
): Promise<InvestigationDetail> {
  requireStorable('investigations', changes)
  return await sql.begin(async (tx) => {
    const current = await lockRow(tx, 'investigations', id, options.ifMatch, () => getInvestigation(tx, id))
    await tx`UPDATE investigations SET title = ${changes.title ?? current.title}, topic = ${changes.topic ?? current.topic} WHERE id = ${id}`
    if (changes.source_ids) await tx`DELETE FROM investigation_sources WHERE investigation_id = ${id}`
    await addInvestigationSources(tx, id, changes.source_ids)
    return await investigationDetail(tx, id)
  })
}

export async function deleteInvestigation(
  sql: Sql,
  id: string,
  options: { ifMatch?: string },
): Promise<{ id: string }> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'investigations', id, options.ifMatch, () => getInvestigation(tx, id))
    await tx`DELETE FROM investigations WHERE id = ${id}`
    return { id }
  })
}

/** Adds a source to an investigation. */
export async function addInvestigationSource(
  sql: Sql,
  id: string,
  sourceId: string,
  options: { ifMatch?: string },
): Promise<InvestigationDetail> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'investigations', id, options.ifMatch, () => getInvestigation(tx, id))
    await addInvestigationSources(tx, id, [sourceId])
    return await investigationDetail(tx, id)
  })
}

/** Removes a source from an investigation (RowNotFound when it was not one of its sources). */
export async function removeInvestigationSource(
  sql: Sql,
  id: string,
  sourceId: string,
  options: { ifMatch?: string },
): Promise<InvestigationDetail> {
  return await sql.begin(async (tx) => {
    await lockRow(tx, 'investigations', id, options.ifMatch, () => getInvestigation(tx, id))
    const { count } =
      await tx`DELETE FROM investigation_sources WHERE investigation_id = ${id} AND source_id = ${sourceId}`
    if (count === 0) throw new RowNotFound(`source ${sourceId} is not one of the investigation's sources`)
    return await investigationDetail(tx, id)
  })
}
