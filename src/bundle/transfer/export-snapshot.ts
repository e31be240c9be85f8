// One export's view of a repository (docs/spec/bundle.md §4), for export-file.ts.
//
// Everything is read inside one REPEATABLE READ transaction, once: each row's bundle position is
// its rank in its table (docs/bundles.md, "Export"), computed once into temporary position tables;
// every section is then read through an SQL cursor in position order, one batch at a time, and
// references are joined to positions in SQL. Most sections come as the JSON of their rows, built by
// PostgreSQL (export-json-sql.ts) and read as bytes; those whose rows need JavaScript (citations
// made portable, floating-point numbers) come as values for the bundle encoder. Memory holds one
// batch of rows or one media chunk, whatever the size, plus the gzip members in flight.
import type { PendingQuery, Row as SqlRow, TransactionSql } from 'postgres'
import type { BlobStore } from '../../blobs/store.ts'
import type { Embedder } from '../../vectors/embedder.ts'
import type { VectorKind, VectorStore } from '../../vectors/store.ts'
import { citedIds, portableConceptId, portableFactId, rewriteCitations } from '../format/citations.ts'
import type { Metadata, Row, RowSection } from '../format/schema.ts'
import type { BundleContent, EncodedRows, MediaItem, VectorItem } from '../format/writer.ts'
import { rowJsonSql } from './export-json-sql.ts'

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

type Tx = TransactionSql

/** One export's view of the repository, inside its transaction. */
export class Snapshot {
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
    const { tx } = this
    const includeImages = this.options.includeImages ?? true
    const includeBodies = this.options.includeBodies ?? false
    return {
      metadata,
      rows: {
        sources: this.encoded(
          'sources',
          () => tx`
            SELECT ${this.batchOf('p.pos')}, p.pos AS idx, s.url, s.doi, s.kind, s.status, s.parsed_title, s.parsed_text, s.parsed_markdown,
                   to_char(s.published_at, 'YYYY-MM-DD') AS published_at,
                   encode(sha256(convert_to(s.url || coalesce(s.parsed_text, '') || coalesce(s.parsed_markdown, '') || coalesce(s.parsed_title, ''), 'UTF8')), 'hex') AS sha256,
                   s.has_stored_body
            FROM sources s JOIN export_pos_sources p ON p.id = s.id ORDER BY batch, p.pos`,
        ),
        // `image_ref` only for images the file embeds: the media come before source_images in the
        // file, so the query is made once they are written, with the positions of missing blobs.
        source_images: this.encoded(
          'source_images',
          () => tx`
            SELECT ${this.batchOf('p.pos')}, p.pos AS idx, sp.pos AS source_idx, i.kind, i.page_number, i.position, i.url, i.width, i.height, i.bytes, i.alt_text, i.content_type,
                   CASE WHEN ${includeImages} AND i.storage_key IS NOT NULL AND p.pos <> ALL(${[...this.missing.images]}::int[]) THEN 'img-' || p.pos END AS image_ref
            FROM source_images i JOIN export_pos_source_images p ON p.id = i.id JOIN export_pos_sources sp ON sp.id = i.source_id
            ORDER BY batch, p.pos`,
        ),
        // Every stored body, so an importer knows to fetch those the file does not embed.
        source_bodies: this.encoded(
          'source_bodies',
          () => tx`
            SELECT ${this.batchOf('sp.pos')}, sp.pos AS source_idx,
                   CASE WHEN ${includeBodies} AND sp.pos <> ALL(${[...this.missing.bodies]}::int[]) THEN 'body-' || sp.pos END AS body_ref, b.content_type
            FROM source_bodies b JOIN export_pos_sources sp ON sp.id = b.source_id ORDER BY batch, sp.pos`,
        ),
        // A fact with a source image carries that image's original URL (docs/bundles.md, "Export").
        facts: this.encoded(
          'facts',
          () => tx`
            SELECT ${this.batchOf('p.pos')}, p.pos AS idx, f.text, f.fact_kind, CASE WHEN f.source_image_id IS NULL THEN f.image_url ELSE i.url END AS image_url,
                   f.content_hash, f.promptset_hash, f.status, coalesce(ip.pos, -1) AS source_image_idx
            FROM facts f JOIN export_pos_facts p ON p.id = f.id
            LEFT JOIN source_images i ON i.id = f.source_image_id LEFT JOIN export_pos_source_images ip ON ip.id = f.source_image_id
            ORDER BY batch, p.pos`,
        ),
        fact_sources: this.encoded(
          'fact_sources',
          () => tx`
            SELECT ${this.batchOf('fp.pos')}, fp.pos AS fact_idx, sp.pos AS source_idx, fs.chunk_index
            FROM fact_sources fs JOIN export_pos_facts fp ON fp.id = fs.fact_id JOIN export_pos_sources sp ON sp.id = fs.source_id
            ORDER BY batch, fp.pos, sp.pos, fs.chunk_index`,
        ),
        concepts: this.encoded(
          'concepts',
          () => tx`
            SELECT ${this.batchOf('p.pos')}, p.pos AS idx, c.canonical_name, c.context, c.description, c.promptset_hash
            FROM concepts c JOIN export_pos_concepts p ON p.id = c.id ORDER BY batch, p.pos`,
        ),
        concept_aliases: this.encoded(
          'concept_aliases',
          () => tx`
            SELECT ${this.batchOf('cp.pos')}, cp.pos AS concept_idx, a.alias_text
            FROM concept_aliases a JOIN export_pos_concepts cp ON cp.id = a.concept_id ORDER BY batch, cp.pos, a.alias_text COLLATE "C"`,
        ),
        fact_concepts: this.encoded(
          'fact_concepts',
          () => tx`
            SELECT ${this.batchOf('fp.pos')}, fp.pos AS fact_idx, cp.pos AS concept_idx, fc.promptset_hash
            FROM fact_concepts fc JOIN export_pos_facts fp ON fp.id = fc.fact_id JOIN export_pos_concepts cp ON cp.id = fc.concept_id
            ORDER BY batch, fp.pos, cp.pos`,
        ),
        concept_summaries: this.summaries(),
        concept_syntheses: this.syntheses(),
        investigations: this.encoded(
          'investigations',
          () => tx`SELECT ${this.batchOf('p.pos')}, p.pos AS idx, i.title, i.topic FROM investigations i JOIN export_pos_investigations p ON p.id = i.id ORDER BY batch, p.pos`,
        ),
        investigation_sources: this.encoded(
          'investigation_sources',
          () => tx`
            SELECT ${this.batchOf('ip.pos')}, ip.pos AS investigation_idx, sp.pos AS source_idx
            FROM investigation_sources x JOIN export_pos_investigations ip ON ip.id = x.investigation_id JOIN export_pos_sources sp ON sp.id = x.source_id
            ORDER BY batch, ip.pos, sp.pos`,
        ),
        reports: this.reports(),
        report_annotations: this.rows<Row<'report_annotations'>>(tx`
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
   * unless they only list media (`count` says how many rows a batch stands for).
   */
  private async *rows<T>(
    query: PendingQuery<SqlRow[]>,
    convert: (batch: SqlRow[]) => T[] | Promise<T[]> = (batch) => batch as T[],
    { count = (batch) => batch.length, perFetch = BATCH, raw = false }: { count?: (batch: SqlRow[]) => number; perFetch?: number; raw?: boolean } = {},
  ): AsyncGenerator<T[]> {
    const { tx } = this
    const cursor = `export_cursor_${++this.cursors}`
    await tx`DECLARE ${tx(cursor)} NO SCROLL CURSOR FOR ${query}`
    // FETCH takes no parameters; the count is a constant.
    const fetch = () => {
      const statement = tx`FETCH ${tx.unsafe(String(perFetch))} FROM ${tx(cursor)}`
      const batch = (raw ? statement.raw() : statement).execute() as Promise<SqlRow[]>
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
      const rows = count(batch)
      if (rows > 0) this.advance(rows)
      yield converted
    }
    await tx`CLOSE ${tx(cursor)}`
  }

  /** The `batch` column of an encoded section's query, from its leading position: BATCH positions to a batch. */
  private batchOf(position: 'p.pos' | 'sp.pos' | 'fp.pos' | 'cp.pos' | 'ip.pos') {
    return this.tx.unsafe(`${position} / ${BATCH} AS batch`)
  }

  /**
   * A section whose rows' JSON PostgreSQL builds: `query` (made when the writer reaches the
   * section) names its columns as the row's fields, plus `batch` (batchOf), and orders by it
   * first. PostgreSQL joins each batch's rows with commas (string_agg keeps the order of its sorted
   * input), so a batch crosses the connection as one value, read as bytes: per-row costs of the
   * driver are most of what reading many small rows costs.
   */
  private encoded(section: RowSection, query: () => PendingQuery<SqlRow[]>): EncodedRows {
    const { tx } = this
    const batches = async function* (this: Snapshot) {
      const joined = tx`SELECT count(*), string_agg(${tx.unsafe(rowJsonSql(section))}, ',') FROM (${query()}) r GROUP BY r.batch ORDER BY r.batch`
      const rows = this.rows(joined, (batch) => batch.map((row) => (row as unknown as Buffer[])[1]!), {
        raw: true,
        perFetch: 1,
        count: (batch) => batch.reduce((sum, row) => sum + Number((row as unknown as Buffer[])[0]!.toString()), 0),
      })
      for await (const values of rows) yield* values
    }
    return { encoded: batches.call(this) }
  }

  /** Stored images or bodies, streamed from blob storage one at a time; a missing blob is skipped. */
  private async *media(section: 'images' | 'bodies'): AsyncGenerator<MediaItem> {
    const query =
      section === 'images'
        ? this.tx`
            SELECT p.pos, i.content_type, i.storage_key FROM source_images i JOIN export_pos_source_images p ON p.id = i.id
            WHERE i.storage_key IS NOT NULL ORDER BY p.pos`
        : this.tx`SELECT sp.pos, b.content_type, b.storage_key FROM source_bodies b JOIN export_pos_sources sp ON sp.id = b.source_id ORDER BY sp.pos`
    for await (const batch of this.rows<SqlRow>(query, undefined, { count: () => 0 })) {
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
