// The media columns of a repository's graph: which images and bodies still have to be fetched,
// recording one once its bytes are stored, and where a stored one is.
import type { Sql } from 'postgres'
import { repositoryBlobPrefix } from '../blobs/store.ts'

/** Where fetched media are stored (imports keep theirs under their job's prefix). */
export const fetchedImageKey = (repositoryId: string, imageId: string) =>
  `${repositoryBlobPrefix(repositoryId)}media/images/${imageId}`
export const fetchedBodyKey = (repositoryId: string, sourceId: string) =>
  `${repositoryBlobPrefix(repositoryId)}media/bodies/${sourceId}`

export interface MissingMedium {
  /** The image's id, or the source's for a body. */
  id: string
  url: string
}

const FETCHABLE_URL = '^https?://'

export async function countMissingImages(sql: Sql): Promise<number> {
  const [{ count }] =
    (await sql`SELECT count(*)::int AS count FROM source_images WHERE storage_key IS NULL AND url ~* ${FETCHABLE_URL}`) as unknown as [
      { count: number },
    ]
  return count
}

/** The next `limit` images without stored bytes that have an http(s) URL, after `after` by id. */
export function missingImages(sql: Sql, after: string, limit: number): Promise<MissingMedium[]> {
  return sql<MissingMedium[]>`
    SELECT id, url FROM source_images
    WHERE storage_key IS NULL AND url ~* ${FETCHABLE_URL} AND id > ${after}::uuid
    ORDER BY id LIMIT ${limit}`
}

/**
 * The image's bytes are at `storageKey`: the row says so (keeping a content type it already
 * had), and its image facts now point at the local copy.
 */
export async function recordFetchedImage(
  sql: Sql,
  image: { id: string; storageKey: string; bytes: number; contentType: string; localUrl: string },
): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`
      UPDATE source_images SET storage_key = ${image.storageKey}, bytes = ${image.bytes},
        content_type = CASE WHEN content_type = '' THEN ${image.contentType} ELSE content_type END
      WHERE id = ${image.id}`
    await tx`UPDATE facts SET image_url = ${image.localUrl} WHERE source_image_id = ${image.id}`
  })
}

export async function countMissingBodies(sql: Sql): Promise<number> {
  const [{ count }] = (await sql`
    SELECT count(*)::int AS count FROM sources s
    WHERE s.has_stored_body AND s.url ~* ${FETCHABLE_URL} AND NOT EXISTS (SELECT FROM source_bodies b WHERE b.source_id = s.id)`) as unknown as [
    { count: number },
  ]
  return count
}

/** The next `limit` sources that should have a stored body and have none yet, after `after` by id. */
export function missingBodies(sql: Sql, after: string, limit: number): Promise<MissingMedium[]> {
  return sql<MissingMedium[]>`
    SELECT s.id, s.url FROM sources s
    WHERE s.has_stored_body AND s.url ~* ${FETCHABLE_URL} AND NOT EXISTS (SELECT FROM source_bodies b WHERE b.source_id = s.id) AND s.id > ${after}::uuid
    ORDER BY s.id LIMIT ${limit}`
}

export async function recordFetchedBody(
  sql: Sql,
  body: { sourceId: string; storageKey: string; bytes: number; contentType: string },
): Promise<void> {
  // A body stored meanwhile (by an import) stays.
  await sql`
    INSERT INTO source_bodies (source_id, content_type, storage_key, bytes)
    VALUES (${body.sourceId}, ${body.contentType}, ${body.storageKey}, ${body.bytes})
    ON CONFLICT (source_id) DO NOTHING`
}

export interface StoredMedium {
  /** Null when the row exists but its bytes are not stored. */
  storage_key: string | null
  content_type: string
}

/** The image's storage, or undefined when there is no such image. */
export async function storedImage(sql: Sql, imageId: string): Promise<StoredMedium | undefined> {
  const [row] = await sql<StoredMedium[]>`SELECT storage_key, content_type FROM source_images WHERE id = ${imageId}`
  return row
}

/** The source's stored body (storage_key null when it has none), or undefined when there is no such source. */
export async function storedBody(sql: Sql, sourceId: string): Promise<StoredMedium | undefined> {
  const [row] = await sql<StoredMedium[]>`
    SELECT b.storage_key, coalesce(b.content_type, '') AS content_type
    FROM sources s LEFT JOIN source_bodies b ON b.source_id = s.id WHERE s.id = ${sourceId}`
  return row
}

/**
 * An uploaded body replaces the source's stored one: the row says where the new bytes are, and
 * the source that it has them. Answers the storage key of the bytes replaced (to delete), if any
 * other; undefined when there is no such source.
 */
export async function recordUploadedBody(
  sql: Sql,
  body: { sourceId: string; storageKey: string; bytes: number; contentType: string },
): Promise<{ replaced: string | null } | undefined> {
  return await sql.begin(async (tx) => {
    const [source] = await tx`SELECT 1 FROM sources WHERE id = ${body.sourceId} FOR UPDATE`
    if (!source) return undefined
    const [old] = await tx<
      { storage_key: string }[]
    >`SELECT storage_key FROM source_bodies WHERE source_id = ${body.sourceId}`
    await tx`
      INSERT INTO source_bodies (source_id, content_type, storage_key, bytes)
      VALUES (${body.sourceId}, ${body.contentType}, ${body.storageKey}, ${body.bytes})
      ON CONFLICT (source_id) DO UPDATE SET content_type = excluded.content_type, storage_key = excluded.storage_key, bytes = excluded.bytes`
    await tx`UPDATE sources SET has_stored_body = true WHERE id = ${body.sourceId}`
    return { replaced: old && old.storage_key !== body.storageKey ? old.storage_key : null }
  })
}

export interface UploadedImage {
  id: string
  sourceId: string
  kind: 'inline' | 'page'
  position: number
  pageNumber: number | null
  url: string
  width: number | null
  height: number | null
  altText: string
  contentType: string
  storageKey: string
  bytes: number
}

/**
 * Records an uploaded source image. 'missing source' when the source is gone, or the id of the
 * image that holds its (source, kind, position) already.
 */
export async function recordUploadedImage(
  sql: Sql,
  image: UploadedImage,
): Promise<{ created: true } | { missing: 'source' } | { existing: string }> {
  return await sql.begin(async (tx) => {
    const [source] = await tx`SELECT 1 FROM sources WHERE id = ${image.sourceId} FOR SHARE`
    if (!source) return { missing: 'source' as const }
    const [inserted] = await tx`
      INSERT INTO source_images (id, source_id, kind, page_number, position, url, width, height, bytes, alt_text, content_type, storage_key)
      VALUES (${image.id}, ${image.sourceId}, ${image.kind}, ${image.pageNumber}, ${image.position}, ${image.url}, ${image.width}, ${image.height}, ${image.bytes},
        ${image.altText}, ${image.contentType}, ${image.storageKey})
      ON CONFLICT (source_id, kind, position) DO NOTHING
      RETURNING id`
    if (inserted) return { created: true as const }
    const [existing] = await tx<
      { id: string }[]
    >`SELECT id FROM source_images WHERE source_id = ${image.sourceId} AND kind = ${image.kind} AND position = ${image.position}`
    return { existing: existing!.id }
  })
}
