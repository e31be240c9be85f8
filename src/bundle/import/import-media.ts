// The media of an import (docs/spec/bundle.md §5: media under a temporary prefix live with the
// commit; an image fact's image_url names the local copy): image and body bytes go from the
// reader straight to blob storage under the job's prefix, which becomes live with the commit.
//
// - In a version 2 bundle media come before their rows: stored at once, keyed by the UUID the
//   row will get if it is new (an image: a fresh one; a body `body-<n>`: source n's), and
//   recorded in import_media; the rows claim them when inserted (import-rows.ts), and what no
//   new row claimed (a reused image, a source that has a body already, a ref no row names) is
//   deleted at the end.
// - In version 1 they come after their rows: only the bytes of a new row that lacks them are
//   stored, and the row then records them.
// - A medium up to SMALL_MEDIA bytes is taken into memory and written in the background (at most
//   PARALLEL_WRITES at a time; a blob store's put waits for its fsync or its upload, so writing
//   one at a time would make the import wait for each); a larger one is streamed and waited for.
//   Memory stays within PARALLEL_WRITES small media, or one large one's stream.
import { randomUUID } from 'node:crypto'
import type { TransactionSql } from 'postgres'
import type { BlobStore } from '../../blobs/store.ts'
import type { MediaSection } from '../format/schema.ts'

const SMALL_MEDIA = 1024 * 1024
const PARALLEL_WRITES = 8
const BODY_REF = /^body-(0|[1-9][0-9]*)$/
const FETCHABLE_URL = '^https?://'

export interface MediaImportOptions {
  tx: TransactionSql
  blobs: BlobStore
  /** The job's media prefix, ending in '/'. */
  prefix: string
}

export class MediaImport {
  /** Media stored after their rows (those stored before are counted by the rows claiming them). */
  stored = 0
  private readonly writes = new Set<Promise<void>>()
  private failure: { error: unknown } | undefined

  constructor(private readonly options: MediaImportOptions) {}

  /** An image's bytes; `rowsSeen`: its section came already (version 1). */
  async image(ref: string, contentType: string, data: AsyncIterable<Uint8Array>, rowsSeen: boolean): Promise<void> {
    const { tx, prefix } = this.options
    if (!rowsSeen) return this.storeEarly('images', ref, randomUUID(), contentType, data)
    // The first new image naming it that has no bytes yet takes them.
    const [target] = await tx<{ storage_key: string }[]>`
      UPDATE source_images si SET storage_key = ${`${prefix}images/`} || si.id::text
      FROM (
        SELECT i.id FROM import_images i JOIN source_images s ON s.id = i.id
        WHERE i.image_ref = ${ref} AND i.is_new AND s.storage_key IS NULL
        ORDER BY i.pos LIMIT 1
      ) t
      WHERE si.id = t.id
      RETURNING si.storage_key`
    if (!target) return
    await this.put(target.storage_key, data, contentType)
    this.stored++
  }

  /** A source body's bytes; `rowsSeen`: its section came already (version 1). */
  async body(ref: string, contentType: string, data: AsyncIterable<Uint8Array>, rowsSeen: boolean): Promise<void> {
    const { tx, prefix } = this.options
    if (!rowsSeen) {
      // `body-<n>` is the body of source n: stored under its UUID, unless that source (reused)
      // has a body already. Another ref gets a UUID of its own.
      const match = BODY_REF.exec(ref)
      const [source] = match
        ? await tx<{ id: string; has_body: boolean }[]>`
            SELECT s.id, EXISTS (SELECT FROM source_bodies b WHERE b.source_id = s.id) AS has_body FROM import_sources s WHERE s.pos = ${Number(match[1])}`
        : []
      if (source?.has_body) return
      return this.storeEarly('bodies', ref, source?.id ?? randomUUID(), contentType, data)
    }
    // The first body row naming it whose source has no body yet takes them.
    const [target] = await tx<{ pos: number; source_id: string; content_type: string }[]>`
      SELECT b.pos, b.source_id, b.content_type FROM import_bodies b
      WHERE b.body_ref = ${ref} AND NOT b.stored AND NOT EXISTS (SELECT FROM source_bodies sb WHERE sb.source_id = b.source_id)
      ORDER BY b.pos LIMIT 1`
    if (!target) return
    const key = `${prefix}bodies/${target.source_id}`
    const bytes = await this.put(key, data, contentType)
    await tx`
      WITH body AS (
        INSERT INTO source_bodies (source_id, content_type, storage_key, bytes, created_at)
        VALUES (${target.source_id}, ${target.content_type || contentType}, ${key}, ${bytes}, now() + ${target.pos} * interval '1 microsecond')
      )
      UPDATE import_bodies SET stored = true WHERE pos = ${target.pos}`
    this.stored++
  }

  /** Media that came before their rows: recorded (the first of a repeated ref wins), then stored. */
  private async storeEarly(
    section: MediaSection,
    ref: string,
    id: string,
    contentType: string,
    data: AsyncIterable<Uint8Array>,
  ): Promise<void> {
    const { tx, prefix } = this.options
    const key = `${prefix}${section}/${id}`
    const [recorded] = await tx`
      INSERT INTO import_media (section, ref, id, storage_key, content_type) VALUES (${section}, ${ref}, ${id}, ${key}, ${contentType})
      ON CONFLICT DO NOTHING RETURNING 1`
    if (!recorded) return
    const bytes = await this.put(key, data, contentType)
    // A body row records the size it stores (an image row has its own `bytes` field).
    if (section === 'bodies')
      await tx`UPDATE import_media SET bytes = ${bytes} WHERE section = ${section} AND ref = ${ref}`
  }

  /** Stores `data` under `key`; resolves with its size once the data is read (a small medium is still being written). */
  private async put(key: string, data: AsyncIterable<Uint8Array>, contentType: string): Promise<number> {
    this.throwIfFailed()
    const source = data[Symbol.asyncIterator]()
    const chunks: Uint8Array[] = []
    let size = 0
    for (let next = await source.next(); !next.done; next = await source.next()) {
      chunks.push(next.value)
      size += next.value.byteLength
      if (size > SMALL_MEDIA) {
        const rest = (async function* () {
          yield* chunks
          for (let more = await source.next(); !more.done; more = await source.next()) yield more.value
        })()
        return (await this.options.blobs.put(key, rest, { contentType })).bytes
      }
    }
    while (this.writes.size >= PARALLEL_WRITES) await Promise.race(this.writes)
    const write: Promise<void> = this.options.blobs.put(key, Buffer.concat(chunks), { contentType }).then(
      () => void this.writes.delete(write),
      (error: unknown) => {
        this.failure ??= { error }
        this.writes.delete(write)
      },
    )
    this.writes.add(write)
    return size
  }

  /** Waits for the writes under way; the first that failed fails the import. */
  async drain(): Promise<void> {
    await Promise.all(this.writes)
    this.throwIfFailed()
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error
  }

  /** After the last row: deletes the media no new row claimed, and counts those still missing. */
  async finish(): Promise<{ to_fetch: number; lost: number }> {
    const { tx, blobs } = this.options
    await this.drain()
    for (const { storage_key } of await tx<
      { storage_key: string }[]
    >`SELECT storage_key FROM import_media WHERE NOT claimed`)
      await blobs.delete(storage_key)
    // New images without bytes, and sources of body rows that still have no body: fetchable
    // from an http(s) URL (by fetch_media, which fetches the bodies of sources flagged
    // has_stored_body only), or lost (an upload:// source, an image without URL, a body row of a
    // source that says it stores none).
    const [missing] = (await tx`
      WITH images AS (
        SELECT si.url, true AS fetched FROM source_images si WHERE si.storage_key IS NULL AND si.id IN (SELECT id FROM import_images WHERE is_new)
      ), bodies AS (
        SELECT DISTINCT s.id, s.url, s.has_stored_body AS fetched FROM import_bodies b JOIN sources s ON s.id = b.source_id
        WHERE NOT EXISTS (SELECT FROM source_bodies sb WHERE sb.source_id = s.id)
      ), media AS (SELECT fetched AND coalesce(url ~* ${FETCHABLE_URL}, false) AS fetchable FROM images UNION ALL SELECT fetched AND coalesce(url ~* ${FETCHABLE_URL}, false) FROM bodies)
      SELECT count(*) FILTER (WHERE fetchable)::int AS to_fetch, count(*) FILTER (WHERE NOT fetchable)::int AS lost FROM media`) as unknown as [
      { to_fetch: number; lost: number },
    ]
    return missing
  }
}
