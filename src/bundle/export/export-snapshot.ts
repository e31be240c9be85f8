// One export's view of a repository (docs/bundles.md, "Export"): everything the bundle holds, read
// once inside the REPEATABLE READ transaction the file's writer opens (export-file.ts).
//
// Each row's bundle position is its rank in its table, computed once into temporary position
// tables (export-positions.ts); every section is then read through an SQL cursor in position
// order, one batch at a time, and references are joined to positions in SQL (the queries of the
// sections read ahead: export-sections.ts). Memory holds one batch of rows or one media chunk,
// whatever the size.
import type { PendingQuery, Row as SqlRow, TransactionSql } from 'postgres'
import type { BlobStore } from '../../blobs/store.ts'
import type { Embedder } from '../../vectors/embedder.ts'
import type { VectorKind, VectorStore } from '../../vectors/store.ts'
import { citedIds, portableConceptId, portableFactId, rewriteCitations } from '../format/citations.ts'
import type { Metadata, Row, RowSection } from '../format/schema.ts'
import type { BundleContent, EncodedRows, MediaItem, VectorItem } from '../format/writer.ts'
import { copyOut, encodeCopiedRows } from './export-copy.ts'
import type { Prefetch, PrefetchedSection } from './export-prefetch.ts'
import { ANNOTATION_SECTION, CITING_SECTIONS, LINK_SECTIONS, type CitingSection } from './export-sections.ts'
import {
  exportedVectorKinds,
  loadVectorTables,
  POSITIONED,
  preparePositions,
  vectorTable,
  type Positioned,
} from './export-positions.ts'

type Tx = TransactionSql

const BATCH = 2000
/**
 * Rows per FETCH of the sections with long texts (summaries, syntheses, reports): fewer rows in
 * flight keep a large export's peak memory down, and the export's time does not depend on it.
 */
const TEXT_BATCH = 250

/**
 * The position tables the export's own transaction needs when the sections above are read ahead:
 * those of its own sections (facts rank themselves as they stream, see facts()), and the facts'
 * when their vectors are loaded by position.
 */
const OWN_POSITIONS: readonly Positioned[] = ['sources', 'source_images', 'concepts', 'investigations', 'reports']

/** What the snapshot reads, and whom it tells of its progress. */
export interface SnapshotOptions {
  repositoryId: string
  /** Embed stored source images (default true). */
  includeImages?: boolean
  /** Embed stored source bodies (default false). */
  includeBodies?: boolean
  signal?: AbortSignal
  onProgress?(progress: ExportProgress): void
}

export interface ExportServices {
  blobs: BlobStore
  vectors: VectorStore
  /** Names the model of the stored vectors. */
  embedder: Pick<Embedder, 'model' | 'dimensions'>
}

export interface ExportProgress {
  /** Ranking the rows, then writing them: hashing and writing are one pass over them. */
  phase: 'ranking' | 'writing'
  /** Tables ranked (ranking), rows and vectors written (writing) so far in this phase, of `total`. */
  done: number
  total: number
  /** Bytes of the file written so far. */
  bytes: number
}

/** One export's view of the repository, inside its transaction. */
export class Snapshot {
  private cursors = 0
  private progress = { phase: 'ranking' as ExportProgress['phase'], done: 0, total: 0 }
  /** Positions of stored media whose blob was missing in the writing pass: not embedded. */
  private readonly missing = { images: new Set<number>(), bodies: new Set<number>() }

  constructor(
    private readonly tx: Tx,
    private readonly services: ExportServices,
    private readonly options: SnapshotOptions,
    private readonly bytesWritten: () => number,
    /** The citing sections read ahead on a second connection (PostgreSQL). */
    private readonly prefetch?: Prefetch,
  ) {}

  /**
   * The position tables, the counts, the promptset hashes and the kinds of vectors to write
   * (export-positions.ts): every table ranked here, or only those the sections read here need
   * when the others are prefetched.
   */
  async prepare() {
    const { repositoryId } = this.options
    const vectorKinds = await exportedVectorKinds({ ...this.services, repositoryId })
    const tables = !this.prefetch
      ? POSITIONED
      : vectorKinds.includes('facts')
        ? [...OWN_POSITIONS, 'facts' as const]
        : OWN_POSITIONS
    this.startPhase('ranking', tables.length)
    return {
      ...(await preparePositions(this.tx, tables, () => this.advance(1), this.prefetch?.promptsetHashes)),
      vectorKinds,
    }
  }

  startPhase(phase: ExportProgress['phase'], total: number): void {
    this.progress = { phase, done: 0, total }
    this.advance(0)
  }

  private advance(rows: number): void {
    this.progress.done += rows
    this.options.onProgress?.({ ...this.progress, bytes: this.bytesWritten() })
  }

  /** The stored vectors of `kinds` in their temporary tables (export-positions.ts); returns how many will be written. */
  loadVectors(kinds: readonly VectorKind[]): Promise<number> {
    const { repositoryId, signal } = this.options
    return loadVectorTables(this.tx, { ...this.services, repositoryId, batchSize: BATCH, signal }, kinds)
  }

  /** Writer input: every section as a cursor over the snapshot. */
  content(metadata: Metadata): BundleContent {
    const includeImages = this.options.includeImages ?? true
    const includeBodies = this.options.includeBodies ?? false
    return {
      metadata,
      rows: {
        sources: this.sources(),
        source_images: this.sourceImages(includeImages),
        source_bodies: this.sourceBodies(includeBodies),
        facts: this.facts(),
        fact_sources: this.linked('fact_sources'),
        concepts: this.copied(
          'concepts',
          this.tx`
          SELECT p.pos AS idx, c.canonical_name, c.context, c.description, c.promptset_hash
          FROM concepts c JOIN export_pos_concepts p ON p.id = c.id ORDER BY p.pos`,
        ),
        concept_aliases: this.copied(
          'concept_aliases',
          this.tx`
          SELECT cp.pos AS concept_idx, a.alias_text
          FROM concept_aliases a JOIN export_pos_concepts cp ON cp.id = a.concept_id ORDER BY cp.pos, a.alias_text COLLATE "C"`,
        ),
        fact_concepts: this.linked('fact_concepts'),
        concept_summaries: this.citing('concept_summaries'),
        concept_syntheses: this.citing('concept_syntheses'),
        investigations: this.copied(
          'investigations',
          this.tx`
          SELECT p.pos AS idx, i.title, i.topic FROM investigations i JOIN export_pos_investigations p ON p.id = i.id ORDER BY p.pos`,
        ),
        investigation_sources: this.copied(
          'investigation_sources',
          this.tx`
          SELECT ip.pos AS investigation_idx, sp.pos AS source_idx
          FROM investigation_sources x JOIN export_pos_investigations ip ON ip.id = x.investigation_id JOIN export_pos_sources sp ON sp.id = x.source_id
          ORDER BY ip.pos, sp.pos`,
        ),
        reports: this.reports(),
        report_annotations: this.readAhead(ANNOTATION_SECTION, BATCH, (batch) => batch as Row<'report_annotations'>[]),
      },
      images: includeImages ? this.media('images') : undefined,
      bodies: includeBodies ? this.media('bodies') : undefined,
      embeddings: {
        model: this.services.embedder.model,
        dimensions: this.services.embedder.dimensions,
        facts: this.vectors('facts'),
        concepts: this.vectors('concepts'),
      },
    }
  }

  /**
   * The rows of `query` in batches, through a cursor of the transaction; `convert` maps a
   * batch. Nothing runs until the writer asks for the section. Rows count towards the progress
   * unless they only list media.
   */
  private rows<T>(
    query: PendingQuery<SqlRow[]>,
    convert: (batch: SqlRow[]) => T[] | Promise<T[]> = (batch) => batch as T[],
    { counted = true, batchRows = BATCH }: { counted?: boolean; batchRows?: number } = {},
  ): AsyncGenerator<T[]> {
    return this.convertedAhead(this.fetched(query, batchRows), convert, counted)
  }

  /** The rows of `query` through a cursor of the transaction, `batchRows` at a time. */
  private async *fetched(query: PendingQuery<SqlRow[]>, batchRows: number): AsyncGenerator<SqlRow[]> {
    const { tx } = this
    const cursor = `export_cursor_${++this.cursors}`
    await tx`DECLARE ${tx(cursor)} NO SCROLL CURSOR FOR ${query}`
    for (;;) {
      // FETCH takes no parameters; the count is a constant (BATCH or TEXT_BATCH). Not a prepared
      // statement: postgres.js keeps a prepared statement's columns per connection by its text,
      // and the same cursor name fetches other columns in another export (other options, or
      // sections read ahead) on that connection.
      const batch = await tx.unsafe(`FETCH ${batchRows} FROM ${cursor}`)
      if (batch.length === 0) break
      yield batch
    }
    await tx`CLOSE ${tx(cursor)}`
  }

  /**
   * The batches of `batches` converted, two ahead, each as it arrives: the server produces the
   * next batches and answers their conversion's queries while this one is encoded.
   */
  private async *convertedAhead<T>(
    batches: AsyncGenerator<SqlRow[]>,
    convert: (batch: SqlRow[]) => T[] | Promise<T[]>,
    counted: boolean,
  ): AsyncGenerator<T[]> {
    const next = () => {
      const converted = batches
        .next()
        .then(async ({ done, value }) => (done ? undefined : { rows: value.length, converted: await convert(value) }))
      // Awaited below; if the consumer stops first, batches.return settles it.
      converted.catch(() => {})
      return converted
    }
    const ahead = [next(), next()]
    try {
      for (;;) {
        this.options.signal?.throwIfAborted()
        const batch = await ahead.shift()!
        if (!batch) break
        ahead.push(next())
        if (counted) this.advance(batch.rows)
        yield batch.converted
      }
    } finally {
      await batches.return(undefined)
    }
  }

  /** A source's `sha256` computed by the server (hashes.ts's sourceSha256), over the text it sends. */
  private sources() {
    return this.copied(
      'sources',
      this.tx`
        SELECT p.pos AS idx, s.url, s.doi, s.kind, s.status, s.parsed_title, s.parsed_text, s.parsed_markdown,
               to_char(s.published_at, 'YYYY-MM-DD') AS published_at,
               encode(sha256(convert_to(s.url || s.parsed_text || s.parsed_markdown || s.parsed_title, 'UTF8')), 'hex') AS sha256, s.has_stored_body
        FROM sources s JOIN export_pos_sources p ON p.id = s.id ORDER BY p.pos`,
    )
  }

  /** `image_ref` only for images the file embeds (media come before source_images in the file). */
  private sourceImages(includeImages: boolean) {
    return this.rows(
      this.tx`
        SELECT p.pos AS idx, sp.pos AS source_idx, i.kind, i.page_number, i.position, i.url, i.width, i.height,
               i.bytes::float8 AS bytes, i.alt_text, i.content_type, i.storage_key IS NOT NULL AS stored
        FROM source_images i JOIN export_pos_source_images p ON p.id = i.id JOIN export_pos_sources sp ON sp.id = i.source_id
        ORDER BY p.pos`,
      (batch) =>
        batch.map(
          ({ stored, page_number, width, height, bytes, ...image }): Row<'source_images'> => ({
            ...(image as Row<'source_images'>),
            page_number: page_number ?? undefined,
            width: width ?? undefined,
            height: height ?? undefined,
            bytes: bytes ?? undefined,
            image_ref: includeImages && stored && !this.missing.images.has(image.idx) ? `img-${image.idx}` : undefined,
          }),
        ),
    )
  }

  /** Every stored body, so an importer knows to fetch those the file does not embed. */
  private sourceBodies(includeBodies: boolean) {
    return this.rows(
      this.tx`
        SELECT sp.pos AS source_idx, b.content_type
        FROM source_bodies b JOIN export_pos_sources sp ON sp.id = b.source_id ORDER BY sp.pos`,
      (batch) =>
        batch.map(
          (b): Row<'source_bodies'> => ({
            source_idx: b.source_idx,
            body_ref: includeBodies && !this.missing.bodies.has(b.source_idx) ? `body-${b.source_idx}` : undefined,
            content_type: b.content_type,
          }),
        ),
    )
  }

  /** Stored images or bodies, streamed from blob storage one at a time; a missing blob is skipped. */
  private async *media(section: 'images' | 'bodies'): AsyncGenerator<MediaItem> {
    const query =
      section === 'images'
        ? this.tx`
            SELECT p.pos, i.content_type, i.storage_key FROM source_images i JOIN export_pos_source_images p ON p.id = i.id
            WHERE i.storage_key IS NOT NULL ORDER BY p.pos`
        : this
            .tx`SELECT sp.pos, b.content_type, b.storage_key FROM source_bodies b JOIN export_pos_sources sp ON sp.id = b.source_id ORDER BY sp.pos`
    for await (const batch of this.rows<SqlRow>(query, undefined, { counted: false })) {
      for (const { pos, content_type, storage_key } of batch) {
        this.options.signal?.throwIfAborted()
        const data = await this.services.blobs.stream(storage_key)
        if (!data) {
          this.missing[section].add(pos)
          continue
        }
        yield {
          ref: `${section === 'images' ? 'img' : 'body'}-${pos}`,
          contentType: content_type || 'application/octet-stream',
          data,
        }
      }
    }
  }

  /**
   * A section's rows through binary COPY, encoded as they arrive (export-copy.ts): `query`'s
   * columns are the section's fields in order.
   */
  private copied(section: RowSection, query: PendingQuery<SqlRow[]>): AsyncGenerator<EncodedRows> {
    return this.encoded(section, copyOut(this.tx, query, this.options.signal))
  }

  /** The links of facts to sources and to concepts: prefetched when there is a second connection, else by COPY. */
  private linked(section: (typeof LINK_SECTIONS)[number]['section']): AsyncGenerator<EncodedRows> {
    if (this.prefetch) return this.encoded(section, this.prefetch.copied(section))
    return this.copied(section, LINK_SECTIONS.find((link) => link.section === section)!.query(this.tx))
  }

  private async *encoded(
    section: RowSection,
    copied: AsyncIterable<readonly Uint8Array[]>,
  ): AsyncGenerator<EncodedRows> {
    for await (const block of encodeCopiedRows(section, copied)) {
      this.advance(block.rows)
      yield block
    }
  }

  /**
   * A fact with a source image carries that image's original URL (docs/bundles.md, "Export").
   * Its position is ranked here as in the position table (same order, same snapshot): the rows
   * stream from the (created_at, id) index as they are encoded, where a join to the position
   * table would sort every fact before the first is sent.
   */
  private facts() {
    return this.copied(
      'facts',
      this.tx`
      SELECT (row_number() OVER (ORDER BY f.created_at, f.id) - 1)::int AS idx, f.text, f.fact_kind,
             CASE WHEN f.source_image_id IS NULL THEN f.image_url ELSE (SELECT i.url FROM source_images i WHERE i.id = f.source_image_id) END AS image_url,
             f.content_hash, f.promptset_hash, f.status,
             CASE WHEN f.source_image_id IS NULL THEN -1
                  ELSE coalesce((SELECT ip.pos FROM export_pos_source_images ip WHERE ip.id = f.source_image_id), -1) END AS source_image_idx
      FROM facts f ORDER BY f.created_at, f.id`,
    )
  }

  /**
   * A section read ahead on the second connection when there is one (export-prefetch.ts), else
   * through a cursor of this transaction; `batchRows` at a time, each batch converted.
   */
  private readAhead<T>(
    read: PrefetchedSection,
    batchRows: number,
    convert: (batch: SqlRow[]) => T[] | Promise<T[]>,
  ): AsyncGenerator<T[]> {
    if (!this.prefetch) return this.rows(read.query(this.tx), convert, { batchRows })
    return this.convertedAhead(this.prefetch.rows(read.section, batchRows), convert, true)
  }

  /** Summaries and syntheses, their citations made portable. */
  private citing<S extends CitingSection>(section: S): AsyncGenerator<Row<S>[]> {
    const convert = (batch: SqlRow[]) =>
      this.portableCitations(batch as unknown as Row<'concept_summaries'>[], 'content') as unknown as Promise<Row<S>[]>
    return this.readAhead(CITING_SECTIONS.find((citing) => citing.section === section)!, TEXT_BATCH, convert)
  }

  private reports() {
    return this.rows(
      this.tx`
        SELECT p.pos AS idx, r.title, r.topic, r.body_md, r.status, coalesce(pp.pos, -1) AS parent_idx,
               r.similarity_threshold, r.embedded_model, r.sentence_count
        FROM reports r JOIN export_pos_reports p ON p.id = r.id LEFT JOIN export_pos_reports pp ON pp.id = r.parent_id
        ORDER BY p.pos`,
      (batch) =>
        this.portableCitations(
          batch.map(
            (r) =>
              ({
                ...r,
                similarity_threshold: r.similarity_threshold ?? undefined,
                sentence_count: r.sentence_count ?? undefined,
              }) as Row<'reports'>,
          ),
          'body_md',
        ),
      { batchRows: TEXT_BATCH },
    )
  }

  /**
   * Rewrites the citations of a batch to portable UUIDs (docs/bundles.md, "Export"), looking every cited
   * local UUID up in one query. A UUID of no local row is left as it is.
   */
  private async portableCitations<T extends Record<K, string>, K extends string>(batch: T[], field: K): Promise<T[]> {
    const facts = new Set<string>()
    const concepts = new Set<string>()
    for (const row of batch) {
      const cited = citedIds(row[field])
      for (const id of cited.fact) facts.add(id)
      for (const id of cited.concept) concepts.add(id)
    }
    if (facts.size === 0 && concepts.size === 0) return batch
    const { tx } = this
    const found = await tx<{ kind: 'fact' | 'concept'; id: string; a: string; b: string | null }[]>`
      SELECT 'fact' AS kind, id::text AS id, content_hash AS a, NULL AS b FROM facts WHERE id = ANY(${[...facts]}::uuid[])
      UNION ALL
      SELECT 'concept', id::text, canonical_name, context FROM concepts WHERE id = ANY(${[...concepts]}::uuid[])`
    const portable = new Map(
      found.map((r) => [`${r.kind}:${r.id}`, r.kind === 'fact' ? portableFactId(r.a) : portableConceptId(r.a, r.b!)]),
    )
    return batch.map((row) => ({
      ...row,
      [field]: rewriteCitations(row[field], (kind, id) => portable.get(`${kind}:${id}`)).text,
    }))
  }

  /** Vectors of one kind in ascending position, as loaded by loadVectors. */
  private vectors(kind: VectorKind) {
    return this.rows(this.tx`SELECT pos, vector FROM ${this.tx(vectorTable(kind))} ORDER BY pos`, (batch) =>
      batch.map(({ pos, vector }): VectorItem => {
        const bytes = vector as Buffer
        // A copy: the driver's Buffer need not be 4-byte aligned.
        return {
          index: pos,
          vector: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
        }
      }),
    )
  }
}
