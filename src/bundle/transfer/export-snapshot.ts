// Export of a repository as a graph bundle (docs/spec/bundle.md §4).
//
// Everything is read inside one REPEATABLE READ transaction, once: each row's bundle position is
// its rank in its table (docs/bundles.md, "Export"), computed once into temporary position tables;
// every section is then read through an SQL cursor in position order, one batch at a time, and
// references are joined to positions in SQL. Memory holds one batch of rows or one media chunk,
// whatever the size, plus the gzip members in flight.
//
// The file's metadata holds the canonical hash, which is known only after every row: so the file
// starts with a gzip member of the head alone, stored uncompressed and so of a size known in
// advance; the rows follow as gzip members compressed on every core (gzip-members.ts) while the
// same pass hashes them; and the head's member, written last, fills the room left for it.
import { open, type FileHandle } from 'node:fs/promises'
import { gzipSync } from 'node:zlib'
import type { PendingQuery, Row as SqlRow, Sql, TransactionSql } from 'postgres'
import type { BlobStore } from '../../blobs/store.ts'
import type { Embedder } from '../../vectors/embedder.ts'
import type { VectorKind, VectorStore } from '../../vectors/store.ts'
import { VERSION } from '../../version.ts'
import { metered } from '../../memory.ts'
import { citedIds, portableConceptId, portableFactId, rewriteCitations } from '../format/citations.ts'
import type { Metadata, Row, RowSection } from '../format/schema.ts'
import { encodeBodyHashing, encodeFileHead, type BundleContent, type EncodedRows, type MediaItem, type VectorItem } from '../format/writer.ts'
import { copyOut, encodeCopiedRows } from './export-copy.ts'
import { gzipMembers } from './gzip-members.ts'

const BATCH = 2000

export interface ExportOptions {
  repositoryId: string
  name: string
  description?: string
  tags?: readonly string[]
  /** Embed stored source images (default true). */
  includeImages?: boolean
  /** Embed stored source bodies (default false). */
  includeBodies?: boolean
  /** RFC 3339 UTC as written (normalizeExportedAt). */
  exportedAt: string
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

export interface ExportCounts {
  sources: number
  facts: number
  concepts: number
  summaries: number
  syntheses: number
  reports: number
  investigations: number
}

export interface ExportSummary {
  /** As written, with sha256. */
  metadata: Metadata
  counts: ExportCounts
  /** Size of the gzipped file. */
  bytes: number
}

/** Tables whose rows are referenced by position. */
const POSITIONED = ['sources', 'source_images', 'facts', 'concepts', 'concept_summaries', 'investigations', 'reports'] as const
type Positioned = (typeof POSITIONED)[number]
/** The temporary table (id, pos) of a table's positions; the queries below name them literally. */
const positionTable = (table: Positioned) => `export_pos_${table}`
const vectorTable = (kind: VectorKind) => `export_vectors_${kind}`

/**
 * zlib's level for the rows' members. Measured on a 100k-fact bundle's JSON (57 MB) in 1 MiB
 * members: level 6 takes 0.81 s of CPU for 1.003 x what gzip -6 makes of the whole, level 4
 * 0.63 s for 1.015 x, level 3 0.56 s for 1.027 x (level 1: 1.5 x). The size target is 1.15 x.
 */
const GZIP_LEVEL = 3

/** A SHA-256 in hex: what the head's room is measured with before the hash is known. */
const UNKNOWN_SHA256 = '0'.repeat(64)

/** The gzip member of the file's head, stored (level 0): its size depends on the head's length only. */
const headMember = (content: BundleContent) => gzipSync(encodeFileHead(content), { level: 0 })

/**
 * Writes the bundle of the repository behind `sql` into the file at `path` (created, or
 * truncated; the caller removes it if this fails), from one snapshot read once.
 */
export async function exportRepository(sql: Sql, services: ExportServices, options: ExportOptions, path: string): Promise<ExportSummary> {
  const file = await open(path, 'w', 0o600)
  try {
    return await sql.begin('ISOLATION LEVEL REPEATABLE READ', async (tx) => {
      // Every cursor is read to its end: plan for all rows (hash joins), not for the first 10 %.
      await tx`SET LOCAL cursor_tuple_fraction = 1`
      let bytes = 0
      const snapshot = new Snapshot(tx, services, options, () => bytes)
      const { counts, rowTotal, promptsetHashes } = await snapshot.prepare()
      const vectors = await snapshot.loadVectors()
      const metadata: Metadata = {
        name: options.name,
        description: options.description || undefined,
        tags: options.tags?.length ? [...options.tags] : undefined,
        okt_version: `kgs/${VERSION}`,
        promptset_hashes: promptsetHashes.length ? promptsetHashes : undefined,
        source_count: counts.sources,
        fact_count: counts.facts,
        concept_count: counts.concepts,
        summary_count: counts.summaries,
        synthesis_count: counts.syntheses,
        report_count: counts.reports,
        investigation_count: counts.investigations,
        exported_at: options.exportedAt,
        ...(vectors > 0 ? { embedding_model: services.embedder.model, embedding_dimensions: services.embedder.dimensions } : {}),
      }

      snapshot.startPhase('writing', rowTotal + vectors)
      const content = snapshot.content(metadata)
      const room = headMember({ ...content, metadata: { ...metadata, sha256: UNKNOWN_SHA256 } }).byteLength
      bytes = room
      const body = encodeBodyHashing(content)
      for await (const member of gzipMembers(metered(body.chunks), { level: GZIP_LEVEL })) {
        await writeAll(file, member, bytes)
        bytes += member.byteLength
      }
      const written: Metadata = { ...metadata, sha256: body.sha256() }
      const head = headMember({ ...content, metadata: written })
      // A stored member's size follows from its content's length, and a SHA-256 is always 64 characters.
      if (head.byteLength !== room) throw new Error(`the head took ${head.byteLength} bytes where ${room} were left for it`)
      await writeAll(file, head, 0)
      return { metadata: written, counts, bytes }
    })
  } finally {
    await file.close()
  }
}

/** Writes all of `data` at `position` (one write may take only part of it). */
async function writeAll(file: FileHandle, data: Uint8Array, position: number): Promise<void> {
  for (let offset = 0; offset < data.byteLength; ) {
    const { bytesWritten } = await file.write(data, offset, data.byteLength - offset, position + offset)
    offset += bytesWritten
  }
}

type Tx = TransactionSql

/** One export's view of the repository, inside its transaction. */
class Snapshot {
  private cursors = 0
  private progress = { phase: 'ranking' as ExportProgress['phase'], done: 0, total: 0 }
  /** Positions of stored media whose blob was missing in the writing pass: not embedded. */
  private readonly missing = { images: new Set<number>(), bodies: new Set<number>() }

  constructor(
    private readonly tx: Tx,
    private readonly services: ExportServices,
    private readonly options: ExportOptions,
    private readonly bytesWritten: () => number,
  ) {}

  /** The position tables, the counts and the promptset hashes. */
  async prepare() {
    const tx = this.tx
    this.startPhase('ranking', POSITIONED.length)
    for (const table of POSITIONED) {
      const name = positionTable(table)
      // Reports in (created_at, id) order, as every other table, except that a parent must
      // precede its children: each report sorts at the latest created_at on its path from the
      // root, and below its parent on a tie. So a repository imported from a bundle (created_at
      // in file order) exports its reports in the file's order. A report on a parent cycle has
      // no root and cannot be written (its parent could not come first).
      const ranked =
        table === 'reports'
          ? tx`WITH RECURSIVE tree AS (
                 SELECT id, 0 AS depth, created_at AS sort_at FROM reports WHERE parent_id IS NULL
                 UNION ALL
                 SELECT r.id, tree.depth + 1, greatest(tree.sort_at, r.created_at) FROM reports r JOIN tree ON r.parent_id = tree.id
               )
               SELECT tree.id, (row_number() OVER (ORDER BY tree.sort_at, tree.depth, r.created_at, r.id) - 1)::int AS pos FROM tree JOIN reports r ON r.id = tree.id`
          : tx`SELECT id, (row_number() OVER (ORDER BY created_at, id) - 1)::int AS pos FROM ${tx(table)}`
      await tx`CREATE TEMP TABLE ${tx(name)} ON COMMIT DROP AS ${ranked}`
      await tx`CREATE UNIQUE INDEX ON ${tx(name)} (id)`
      await tx`CREATE UNIQUE INDEX ON ${tx(name)} (pos)`
      // Temporary tables get no statistics from autovacuum; the cursors' plans need them.
      await tx`ANALYZE ${tx(name)}`
      this.advance(1)
    }
    const [row] = await tx<(ExportCounts & { source_images: number; source_bodies: number; links: number })[]>`
      SELECT
        (SELECT count(*) FROM export_pos_sources)::int AS sources,
        (SELECT count(*) FROM export_pos_facts)::int AS facts,
        (SELECT count(*) FROM export_pos_concepts)::int AS concepts,
        (SELECT count(*) FROM export_pos_concept_summaries)::int AS summaries,
        (SELECT count(*) FROM concept_syntheses)::int AS syntheses,
        (SELECT count(*) FROM export_pos_reports)::int AS reports,
        (SELECT count(*) FROM export_pos_investigations)::int AS investigations,
        (SELECT count(*) FROM export_pos_source_images)::int AS source_images,
        (SELECT count(*) FROM source_bodies)::int AS source_bodies,
        (SELECT count(*) FROM fact_sources)::int + (SELECT count(*) FROM concept_aliases)::int + (SELECT count(*) FROM fact_concepts)::int
          + (SELECT count(*) FROM investigation_sources)::int + (SELECT count(*) FROM report_annotations)::int AS links`
    const { source_images, source_bodies, links, ...counts } = row!
    const hashed = Object.values(counts).reduce((a, b) => a + b, 0) + links
    const hashes = await tx<{ hash: string }[]>`
      SELECT hash FROM (
        SELECT promptset_hash AS hash FROM facts UNION SELECT promptset_hash FROM concepts UNION SELECT promptset_hash FROM fact_concepts
      ) h WHERE hash <> '' ORDER BY hash COLLATE "C"`
    return { counts, rowTotal: hashed + source_images + source_bodies, promptsetHashes: hashes.map((h) => h.hash) }
  }

  startPhase(phase: ExportProgress['phase'], total: number): void {
    this.progress = { phase, done: 0, total }
    this.advance(0)
  }

  private advance(rows: number): void {
    this.progress.done += rows
    this.options.onProgress?.({ ...this.progress, bytes: this.bytesWritten() })
  }

  /**
   * The stored vectors of each kind, in a temporary table by position (ascending order is what
   * the writer needs, and LanceDB scans in no order). Only vectors of the configured embedder's
   * dimensions: others came from another model, and naming this one for them would be wrong.
   * Returns how many vectors will be written.
   */
  async loadVectors(): Promise<number> {
    const { tx } = this
    const { vectors, embedder } = this.services
    let loaded = 0
    for (const kind of ['facts', 'concepts'] as const) {
      const table = vectorTable(kind)
      await tx`CREATE TEMP TABLE ${tx(table)} (pos int PRIMARY KEY, vector bytea NOT NULL) ON COMMIT DROP`
      if ((await vectors.dimensions(this.options.repositoryId, kind)) !== embedder.dimensions) continue
      const width = embedder.dimensions * Float32Array.BYTES_PER_ELEMENT
      for await (const batch of vectors.scan(this.options.repositoryId, kind, BATCH)) {
        this.options.signal?.throwIfAborted()
        // One parameter for the whole batch: the vectors' bytes end to end, cut apart in SQL.
        const bytes = Buffer.concat(batch.map(({ vector }) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)))
        // Vectors of rows outside the snapshot (deleted, or added since) have no position: skipped.
        const inserted = await tx`
          INSERT INTO ${tx(table)} (pos, vector)
          SELECT p.pos, substring(${bytes}::bytea FROM ((u.n - 1) * ${width}::int + 1)::int FOR ${width}::int)
          FROM unnest(${batch.map((v) => v.id)}::uuid[]) WITH ORDINALITY AS u (id, n)
          JOIN ${tx(positionTable(kind))} p ON p.id = u.id`
        loaded += inserted.count
      }
    }
    return loaded
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
        fact_sources: this.copied(
          'fact_sources',
          this.tx`
          SELECT fp.pos AS fact_idx, sp.pos AS source_idx, fs.chunk_index
          FROM fact_sources fs JOIN export_pos_facts fp ON fp.id = fs.fact_id JOIN export_pos_sources sp ON sp.id = fs.source_id
          ORDER BY fp.pos, sp.pos, fs.chunk_index`,
        ),
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
        fact_concepts: this.copied(
          'fact_concepts',
          this.tx`
          SELECT fp.pos AS fact_idx, cp.pos AS concept_idx, fc.promptset_hash
          FROM fact_concepts fc JOIN export_pos_facts fp ON fp.id = fc.fact_id JOIN export_pos_concepts cp ON cp.id = fc.concept_id
          ORDER BY fp.pos, cp.pos`,
        ),
        concept_summaries: this.summaries(),
        concept_syntheses: this.syntheses(),
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
        report_annotations: this.rows<Row<'report_annotations'>>(this.tx`
          SELECT rp.pos AS report_idx, a.sentence_index, a.sentence_text, fp.pos AS fact_idx, a.score, a.posture
          FROM report_annotations a JOIN export_pos_reports rp ON rp.id = a.report_id JOIN export_pos_facts fp ON fp.id = a.fact_id
          ORDER BY a.created_at, rp.pos, a.sentence_index, fp.pos`),
      },
      images: includeImages ? this.media('images') : undefined,
      bodies: includeBodies ? this.media('bodies') : undefined,
      embeddings: { model: this.services.embedder.model, dimensions: this.services.embedder.dimensions, facts: this.vectors('facts'), concepts: this.vectors('concepts') },
    }
  }

  /**
   * The rows of `query` in batches, through a cursor of the transaction; `convert` maps a
   * batch. Nothing runs until the writer asks for the section. Rows count towards the progress
   * unless they only list media.
   */
  private async *rows<T>(
    query: PendingQuery<SqlRow[]>,
    convert: (batch: SqlRow[]) => T[] | Promise<T[]> = (batch) => batch as T[],
    { counted = true }: { counted?: boolean } = {},
  ): AsyncGenerator<T[]> {
    const { tx } = this
    const cursor = `export_cursor_${++this.cursors}`
    await tx`DECLARE ${tx(cursor)} NO SCROLL CURSOR FOR ${query}`
    // FETCH takes no parameters; the count is this constant.
    const fetch = () => {
      const batch = tx`FETCH ${tx.unsafe(String(BATCH))} FROM ${tx(cursor)}`.execute()
      // Awaited below; if the consumer stops first, the transaction's end settles it.
      batch.catch(() => {})
      return batch
    }
    // One batch ahead: the server produces the next batch while this one is encoded.
    let next = fetch()
    for (;;) {
      this.options.signal?.throwIfAborted()
      const batch = await next
      if (batch.length === 0) break
      next = fetch()
      const converted = await convert(batch)
      if (counted) this.advance(batch.length)
      yield converted
    }
    await tx`CLOSE ${tx(cursor)}`
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
        : this.tx`SELECT sp.pos, b.content_type, b.storage_key FROM source_bodies b JOIN export_pos_sources sp ON sp.id = b.source_id ORDER BY sp.pos`
    for await (const batch of this.rows<SqlRow>(query, undefined, { counted: false })) {
      for (const { pos, content_type, storage_key } of batch) {
        this.options.signal?.throwIfAborted()
        const data = await this.services.blobs.stream(storage_key)
        if (!data) {
          this.missing[section].add(pos)
          continue
        }
        yield { ref: `${section === 'images' ? 'img' : 'body'}-${pos}`, contentType: content_type || 'application/octet-stream', data }
      }
    }
  }

  /**
   * A section's rows through binary COPY, encoded as they arrive (export-copy.ts): `query`'s
   * columns are the section's fields in order.
   */
  private async *copied(section: RowSection, query: PendingQuery<SqlRow[]>): AsyncGenerator<EncodedRows> {
    for await (const block of encodeCopiedRows(section, copyOut(this.tx, query, this.options.signal))) {
      this.advance(block.rows)
      yield block
    }
  }

  /** A fact with a source image carries that image's original URL (docs/bundles.md, "Export"). */
  private facts() {
    return this.copied(
      'facts',
      this.tx`
      SELECT p.pos AS idx, f.text, f.fact_kind, CASE WHEN f.source_image_id IS NULL THEN f.image_url ELSE i.url END AS image_url,
             f.content_hash, f.promptset_hash, f.status, coalesce(ip.pos, -1) AS source_image_idx
      FROM facts f JOIN export_pos_facts p ON p.id = f.id
      LEFT JOIN source_images i ON i.id = f.source_image_id LEFT JOIN export_pos_source_images ip ON ip.id = f.source_image_id
      ORDER BY p.pos`,
    )
  }

  /** The positions of a uuid[] column's ids in `table`, in the array's order; ids without a row are dropped. */
  private positionsOf(column: string, table: Positioned) {
    const { tx } = this
    // A scalar subquery per element: an index lookup each, where a join would hash the whole
    // position table once per row.
    return tx`array_remove(ARRAY(SELECT (SELECT q.pos FROM ${tx(positionTable(table))} q WHERE q.id = u.id) FROM unnest(${tx(column)}) WITH ORDINALITY AS u (id, n) ORDER BY u.n), NULL)`
  }

  private summaries() {
    return this.rows(
      this.tx`
        SELECT cp.pos AS concept_idx, s.sequence_num, s.is_complete, s.fact_count, s.content,
               ${this.positionsOf('s.covered_fact_ids', 'facts')} AS covered_fact_idxs, s.model
        FROM concept_summaries s JOIN export_pos_concept_summaries p ON p.id = s.id JOIN export_pos_concepts cp ON cp.id = s.concept_id
        ORDER BY p.pos`,
      (batch) => this.portableCitations(batch as Row<'concept_summaries'>[], 'content'),
    )
  }

  private syntheses() {
    return this.rows(
      this.tx`
        SELECT s.canonical_name, s.content,
               ${this.positionsOf('s.covered_summary_ids', 'concept_summaries')} AS covered_summary_idxs,
               ${this.positionsOf('s.covered_concept_ids', 'concepts')} AS covered_concept_idxs,
               ${this.positionsOf('s.embedded_image_fact_ids', 'facts')} AS embedded_image_idxs, s.model
        FROM concept_syntheses s ORDER BY s.created_at, s.id`,
      (batch) => this.portableCitations(batch as Row<'concept_syntheses'>[], 'content'),
    )
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
          batch.map((r) => ({ ...r, similarity_threshold: r.similarity_threshold ?? undefined, sentence_count: r.sentence_count ?? undefined }) as Row<'reports'>),
          'body_md',
        ),
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
    const portable = new Map(found.map((r) => [`${r.kind}:${r.id}`, r.kind === 'fact' ? portableFactId(r.a) : portableConceptId(r.a, r.b!)]))
    return batch.map((row) => ({ ...row, [field]: rewriteCitations(row[field], (kind, id) => portable.get(`${kind}:${id}`)).text }))
  }

  /** Vectors of one kind in ascending position, as loaded by loadVectors. */
  private vectors(kind: VectorKind) {
    return this.rows(this.tx`SELECT pos, vector FROM ${this.tx(vectorTable(kind))} ORDER BY pos`, (batch) =>
      batch.map(({ pos, vector }): VectorItem => {
        const bytes = vector as Buffer
        // A copy: the driver's Buffer need not be 4-byte aligned.
        return { index: pos, vector: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) }
      }),
    )
  }
}
