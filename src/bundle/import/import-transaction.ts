// One import inside its database transaction (docs/spec/bundle.md §5): the reader's items in file order,
// rows gathered per section into batches written by one statement each (import-rows.ts) or, in a
// bulk load on PostgreSQL, streamed into one COPY per section (import-copy.ts), media
// to blob storage (import-media.ts), vectors of new rows staged. Memory holds the batches in
// flight (PIPELINE), one vector batch and a few small media, whatever the bundle's size: positions
// live in the transaction's mapping tables and in LocalIds (16 bytes a row), never as objects. While
// a batch is written, the reader parses the next.
import type { TransactionSql } from 'postgres'
import type { BlobStore } from '../../blobs/store.ts'
import type { JobProgress } from '../../jobs/queue.ts'
import type { Embedder } from '../../vectors/embedder.ts'
import type { VectorKind, VectorStore } from '../../vectors/store.ts'
import { isUniqueViolation } from '../../db/conflict.ts'
import { MediaImport } from './import-media.ts'
import { cites, withLocalCitations } from './import-citations.ts'
import { LocalIds } from './import-ids.ts'
import { createMappingTables, imageUrl, ROW_WRITERS, type Batch, type RowContext } from './import-rows.ts'
import { COPY_SECTIONS, CopyData, CopyStream, type CopiedSection } from './import-copy.ts'
import {
  BundleError,
  type BundleErrorWhere,
  type BundleItem,
  type BundleReader,
  type RowItem,
} from '../format/reader.ts'
import { ROW_SCHEMAS, ROW_SECTIONS, type Row, type RowSection } from '../format/schema.ts'
import { isMediaType } from '../../media/types.ts'
import { oversizedText } from '../../graph/limits.ts'

/** Rows per statement, at most; and at most about this many bytes of the bundle (wide rows: sources, syntheses). */
const BATCH_ROWS = 1000
const BATCH_BYTES = 1024 * 1024
/**
 * The sections that cite (long texts, each held again as rewritten and as sent) keep PIPELINE
 * batches in memory while a lookup overlaps the statement before: a smaller batch each keeps
 * their peak where one batch of BATCH_BYTES put it.
 */
const CITING_BATCH_BYTES = BATCH_BYTES / 2
/** Statements in flight on the connection at once: a third keeps the server busy through the reader's bursts of parsing. */
const PIPELINE = 3
/** Vectors per staging write. */
const VECTOR_BATCH = 2000
const INT32_MAX = 2 ** 31 - 1
/** The integer fields of each section: the int columns' limit applies to them, never to a float (a score of 1e21 is valid). */
const INTEGER_FIELDS = new Map<RowSection, ReadonlySet<string>>(
  ROW_SECTIONS.map((section) => [
    section,
    new Set(
      Object.entries(ROW_SCHEMAS[section].properties)
        .filter(([, p]) => p.type === 'integer')
        .map(([name]) => name),
    ),
  ]),
)
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** The job result's `imported` counts (docs/spec/bundle.md §5) and the sections they count. */
const COUNTED_AS = {
  sources: 'sources',
  source_images: 'source_images',
  facts: 'facts',
  fact_sources: 'fact_sources',
  concepts: 'concepts',
  concept_aliases: 'concept_aliases',
  fact_concepts: 'fact_concepts',
  concept_summaries: 'summaries',
  concept_syntheses: 'syntheses',
  investigations: 'investigations',
  investigation_sources: 'investigation_sources',
  reports: 'reports',
  report_annotations: 'report_annotations',
} as const satisfies Partial<Record<RowSection, string>>
export type ImportedCounts = Record<(typeof COUNTED_AS)[keyof typeof COUNTED_AS], number>

/** What the import did: the job result (docs/spec/bundle.md §5) less the embeddings verdict, and the vectors it staged. */
export interface ImportCounts {
  imported: ImportedCounts
  reused: { sources: number; facts: number; concepts: number }
  citations: { rewritten: number; unresolved: number }
  media: { stored: number; to_fetch: number; lost: number }
  staged: number
}

export interface GraphImportOptions {
  tx: TransactionSql
  repositoryId: string
  jobId: string
  /** Blob prefix of this import's media (docs/spec/bundle.md §5), ending in '/'. */
  mediaPrefix: string
  /** localImageUrl() of this repository less the image's UUID. */
  localImageUrlPrefix: string
  blobs: BlobStore
  vectors: VectorStore
  embedder: Pick<Embedder, 'model' | 'dimensions'>
  signal: AbortSignal
  /** A bulk load (import-indexes.ts): a unique violation is left as it is, for the import to run again without one. */
  bulk: boolean
  /** With bulk, on PostgreSQL: the sections of COPY_SECTIONS stream in by binary COPY (import-rows.ts). */
  copy: boolean
  /** The phase at each section; rows so far (done) and compressed bytes read (bytes) at each batch. */
  progress(update: Partial<JobProgress>): void
}

/** The position range of a batch, for messages: `facts[1000..1999]`. */
const where = (batch: Batch) =>
  `${batch.section}[${batch.positions[0]}${batch.positions.length > 1 ? `..${batch.positions.at(-1)}` : ''}]`
/** PostgreSQL's data exceptions (22) and integrity violations (23): the bundle's values, not the service. */
export const isDataError = (error: unknown) =>
  /^(2[23]|54)/.test(String((error as { code?: unknown } | null)?.code ?? ''))

/**
 * What PostgreSQL would refuse in a row, named like the reader's problems: NUL characters in
 * text, values too long for their index or full-text document (graph/limits.ts), integers past the int columns, dates that are none,
 * media types that are none (they become response headers).
 */
function checkRow(section: RowSection, position: number, row: Record<string, unknown>): void {
  const oversized = oversizedText(section, row)
  if (oversized) throw new BundleError(oversized, { section, position })
  if ((section === 'source_images' || section === 'source_bodies') && typeof row.content_type === 'string')
    checkMediaType(row.content_type, { section, position })
  const integers = INTEGER_FIELDS.get(section)!
  for (const field in row) {
    const value = row[field]
    if (typeof value === 'string') {
      if (value.includes('\u0000'))
        throw new BundleError(`${field} contains a NUL character (not storable)`, { section, position })
    } else if (typeof value === 'number' && integers.has(field)) {
      const limit = field === 'bytes' ? Number.MAX_SAFE_INTEGER : INT32_MAX
      if (value > limit)
        throw new BundleError(`${field} ${value} is too large (at most ${limit})`, { section, position })
    }
  }
  if (section === 'sources' && row.published_at !== undefined && !validDate(row.published_at as string)) {
    throw new BundleError(`published_at must be a date YYYY-MM-DD, not ${JSON.stringify(row.published_at)}`, {
      section,
      position,
    })
  }
}

function checkMediaType(contentType: string, where: BundleErrorWhere): void {
  if (contentType !== '' && !isMediaType(contentType))
    throw new BundleError(`content_type ${JSON.stringify(contentType.slice(0, 80))} is not a media type`, where)
}

function validDate(text: string): boolean {
  const match = DATE.exec(text)
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return year >= 1 && date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

export class GraphImport {
  private readonly imported = Object.fromEntries(Object.values(COUNTED_AS).map((key) => [key, 0])) as ImportedCounts
  private readonly reused = { sources: 0, facts: 0, concepts: 0 }
  private readonly context: RowContext
  private readonly media: MediaImport
  /** Row sections met so far (media come before their rows in version 2, after in version 1). */
  private readonly started = new Set<RowSection>()
  private pending: Batch | undefined
  /** Decompressed bytes read when the pending batch began. */
  private pendingFrom = 0
  /** The statements being written while the reader goes on, oldest first; a failure surfaces when its turn to be awaited comes. */
  private inflight: Promise<void>[] = []
  /** The section of the last batch handed over. */
  private inflightSection: RowSection | undefined
  /** The COPY a section's batches are streaming into, open until the section ends (or settle()). */
  private copying: { section: RowSection; copied: CopiedSection; stream: CopyStream } | undefined
  /** Settles once the last batch handed over has sent its statement (write()). */
  private sent: Promise<void> = Promise.resolve()
  private rowsDone = 0
  private reader: BundleReader | undefined
  /** Facts came before source_images (version 1): their image links are set at the end. */
  private factImagesDeferred = false
  private vectorsUsable = false
  private staged = 0
  private readonly vectorBatches: Record<VectorKind, { index: number; vector: Float32Array }[]> = {
    facts: [],
    concepts: [],
  }

  constructor(private readonly options: GraphImportOptions) {
    this.context = {
      tx: options.tx,
      localImageUrlPrefix: options.localImageUrlPrefix,
      citations: { rewritten: 0, unresolved: 0 },
      media: { stored: 0 },
      ids: { sources: new LocalIds(), facts: new LocalIds(), concepts: new LocalIds() },
      bulk: options.bulk,
      copy: options.copy,
    }
    this.media = new MediaImport({ tx: options.tx, blobs: options.blobs, prefix: options.mediaPrefix })
  }

  /** Reads the whole bundle into the transaction; the counts once everything is written. */
  /** `items`: the reader's items, or what passes them on (hashAlongside). */
  async run(reader: BundleReader, items: AsyncIterable<BundleItem> = reader): Promise<ImportCounts> {
    this.reader = reader
    await createMappingTables(this.options.tx)
    let missing: { to_fetch: number; lost: number }
    try {
      for await (const item of items) {
        this.options.signal.throwIfAborted()
        await this.consume(item)
      }
      await this.flush()
      await this.flushVectors('facts')
      await this.flushVectors('concepts')
      await this.settle()
      missing = await this.finish()
    } catch (error) {
      // The transaction rolls back: let the statement and the media writes in flight end first.
      for (const written of this.inflight) await written.catch(() => {})
      this.copying?.stream.abort()
      await this.media.drain().catch(() => {})
      throw error
    }
    return {
      imported: this.imported,
      reused: this.reused,
      citations: this.context.citations,
      media: { stored: this.context.media.stored + this.media.stored, ...missing },
      staged: this.staged,
    }
  }

  private async consume(item: BundleItem): Promise<void> {
    switch (item.type) {
      case 'row':
        return this.row(item)
      case 'media': {
        await this.flush()
        await this.settle()
        checkMediaType(item.contentType, { section: item.section, key: item.ref })
        if (item.data === null) return
        const rows = item.section === 'images' ? 'source_images' : 'source_bodies'
        return this.media[item.section === 'images' ? 'image' : 'body'](
          item.ref,
          item.contentType,
          item.data,
          this.started.has(rows),
        )
      }
      case 'embeddings':
        await this.flush()
        await this.settle()
        this.vectorsUsable = await this.vectorsFit(item.model, item.dimensions)
        return
      case 'vector': {
        if (!this.vectorsUsable) return
        const kind: VectorKind = item.target
        this.vectorBatches[kind].push({ index: item.index, vector: Float32Array.from(item.vector) })
        if (this.vectorBatches[kind].length >= VECTOR_BATCH) await this.flushVectors(kind)
        return
      }
      default:
        return
    }
  }

  private async row(item: RowItem): Promise<void> {
    const { section, position, row } = item
    checkRow(section, position, row as Record<string, unknown>)
    const gathering = this.pending
    // A report's parent must be written before it: one in the batch being gathered ends that batch.
    const parentInBatch =
      section === 'reports' &&
      gathering?.section === 'reports' &&
      ((row as Row<'reports'>).parent_idx ?? -1) >= gathering.positions[0]!
    if (gathering && (gathering.section !== section || parentInBatch)) await this.flush()
    if (!this.started.has(section)) {
      this.started.add(section)
      if (section === 'facts' && !this.started.has('source_images')) this.factImagesDeferred = true
      this.options.progress({ phase: section })
    }
    const read = this.reader!.stats.decompressedBytes
    if (!this.pending) {
      this.pending = { section, positions: [], rows: [] }
      this.pendingFrom = read
    }
    const batch = this.pending
    batch.positions.push(position)
    ;(batch.rows as unknown[]).push(row)
    if (
      batch.rows.length >= BATCH_ROWS ||
      read - this.pendingFrom >= (cites(section) ? CITING_BATCH_BYTES : BATCH_BYTES)
    )
      await this.flush()
  }

  /**
   * Hands the gathered batch to its writer while at most PIPELINE - 1 statements are still
   * running (none between sections): the connection runs them in order, and this batch's
   * parameters are encoded and sent while PostgreSQL is still busy with the one before (waiting
   * for it first would leave the server idle for as long as the encoding takes).
   */
  private async flush(): Promise<void> {
    const batch = this.pending
    if (!batch) return
    this.pending = undefined
    // A new section's rows may point at the last batches of the one before (LocalIds): those first.
    const alone = batch.section !== this.inflightSection
    while (this.inflight.length >= (alone ? 1 : PIPELINE)) await this.inflight.shift()
    if (alone) await this.endCopy()
    this.inflightSection = batch.section
    this.options.signal.throwIfAborted()
    const written = this.write(batch)
    written.catch(() => {})
    this.inflight.push(written)
    // done in the unit of total, the bundle's compressed size: rows have no known total up front.
    this.options.progress({ done: this.reader!.stats.compressedBytes, bytes: this.reader!.stats.compressedBytes })
  }

  /**
   * Writes one batch: its citations made local first (one lookup), then its statement, sent only
   * once the batch before has sent its own. Batches go to the server in the bundle's order
   * whatever their lookups take (a report's insert needs its parent's before it, and of two rows
   * with one key the first is kept), while a lookup overlaps the statement before it.
   */
  private async write(batch: Batch): Promise<void> {
    const previous = this.sent
    let sent!: () => void
    this.sent = new Promise((resolve) => {
      sent = resolve
    })
    let inserted: number
    try {
      const copied = this.context.copy ? (COPY_SECTIONS[batch.section] as CopiedSection | undefined) : undefined
      if (copied) {
        const data = new CopyData()
        copied.encode(this.context, batch, data)
        await previous
        await this.copy(batch.section, copied, data.bytes())
        sent()
        this.counted(batch, batch.rows.length)
        return
      }
      batch = await withLocalCitations(this.context, batch)
      await previous
      // A writer sends its statement as it is called (postgres.js queues it in call order).
      const writing = (ROW_WRITERS[batch.section] as (context: RowContext, batch: Batch) => Promise<number>)(
        this.context,
        batch,
      )
      sent()
      inserted = await writing
    } catch (error) {
      if (isDataError(error) && !(this.options.bulk && isUniqueViolation(error)))
        throw new BundleError((error as Error).message, { section: where(batch) })
      throw error
    } finally {
      sent()
    }
    this.counted(batch, inserted)
  }

  private counted(batch: Batch, inserted: number): void {
    const section = batch.section
    if (section in COUNTED_AS) this.imported[COUNTED_AS[section as keyof typeof COUNTED_AS]] += inserted
    if (section === 'sources' || section === 'facts' || section === 'concepts')
      this.reused[section] += batch.rows.length - inserted
    this.rowsDone += batch.rows.length
  }

  /** Streams a batch's tuples into its section's COPY, opening it at the section's first batch. */
  private async copy(section: RowSection, copied: CopiedSection, tuples: Buffer): Promise<void> {
    if (!this.copying) {
      await copied.prepare?.(this.context)
      this.copying = { section, copied, stream: await CopyStream.open(this.options.tx, copied.table, copied.columns) }
    }
    await this.copying.stream.write(tuples)
  }

  /** Ends the open COPY, if any: the server has then taken its rows (or refused one, a BundleError). */
  private async endCopy(): Promise<void> {
    const copying = this.copying
    if (!copying) return
    this.copying = undefined
    try {
      await copying.stream.end()
      await copying.copied.finish?.(this.context)
    } catch (error) {
      if (isDataError(error) && !(this.options.bulk && isUniqueViolation(error)))
        throw new BundleError((error as Error).message, { section: copying.section })
      throw error
    }
  }

  private async settle(): Promise<void> {
    while (this.inflight.length > 0) await this.inflight.shift()
    await this.endCopy()
  }

  /** Whether the bundle's vectors can be kept: this instance's model, and the dimensions of the repository's tables. */
  private async vectorsFit(model: string, dimensions: number): Promise<boolean> {
    const { embedder, vectors, repositoryId } = this.options
    if (model !== embedder.model || dimensions !== embedder.dimensions) return false
    for (const kind of ['facts', 'concepts'] as const) {
      const stored = await vectors.dimensions(repositoryId, kind)
      if (stored !== undefined && stored !== dimensions) return false
    }
    return true
  }

  /** Stages the gathered vectors of new rows under their local UUIDs (reused rows keep their own). */
  private async flushVectors(kind: VectorKind): Promise<void> {
    const batch = this.vectorBatches[kind]
    if (batch.length === 0) return
    this.vectorBatches[kind] = []
    await this.settle()
    const { tx } = this.options
    const table = kind === 'facts' ? 'import_facts' : 'import_concepts'
    const found = await tx<
      { pos: number; id: string }[]
    >`SELECT pos, id::text FROM ${tx(table)} WHERE is_new AND pos = ANY(${batch.map((v) => v.index)}::int[])`
    const ids = new Map(found.map((row) => [row.pos, row.id]))
    const rows = batch.flatMap((v) => {
      const id = ids.get(v.index)
      return id === undefined ? [] : [{ id, vector: v.vector }]
    })
    if (rows.length === 0) return
    await this.options.vectors.stage(this.options.jobId, kind, rows)
    this.staged += rows.length
  }

  /** After the last item: late image links, media left over and missing. */
  private async finish(): Promise<{ to_fetch: number; lost: number }> {
    const { tx } = this.options
    this.options.progress({
      phase: 'media',
      done: this.reader!.stats.compressedBytes,
      bytes: this.reader!.stats.compressedBytes,
    })
    const missing = await this.media.finish()
    if (this.factImagesDeferred) {
      await tx`
        UPDATE facts f SET source_image_id = si.id, image_url = ${imageUrl(this.context, tx`f.image_url`)}
        FROM import_facts x JOIN import_images ii ON ii.pos = x.image_pos JOIN source_images si ON si.id = ii.id
        WHERE f.id = x.id AND x.is_new AND f.source_image_id IS NULL`
    }
    return missing
  }
}
