// The reader's last stage: the document. It walks the top-level object with the scanner,
// hands each known section to its stage (rows here; media and embeddings to their decoders),
// and assembles rows: the spans the scanner found, parsed in one JSON.parse per batch, then
// checked by the compiled row validators (codecs.ts) and the references, their unknown fields
// dropped (nothing keeps them). Unknown top-level keys are skipped (checked, not parsed).
import { METADATA_CODEC, ROW_CODECS } from '../codecs.ts'
import { ROW_SCHEMAS, SUPPORTED_SCHEMA_VERSIONS, type MediaSection, type Metadata, type RowSection } from '../schema.ts'
import { BundleError, describeByte } from './errors.ts'
import type { BundleItem, ReaderLimits, ReaderStats, RowItem } from './items.ts'
import { MediaDecoder } from './media.ts'
import { References } from './references.ts'
import { isWhitespace, type JsonCursor, OPEN_BRACE, OPEN_BRACKET } from './cursor.ts'
import { Scanner } from './scanner.ts'
import { VectorDecoder } from './vectors.ts'

const BODY_REF = /^body-(0|[1-9][0-9]*)$/
/** The fields a row of each section may keep. */
const ROW_FIELDS = Object.fromEntries(
  Object.entries(ROW_SCHEMAS).map(([section, schema]) => [section, new Set(Object.keys(schema.properties))]),
) as Record<RowSection, Set<string>>

/** Reads the decompressed chunks of a bundle into batches of items (a row batch, or a single item). */
export class DocumentReader {
  private readonly s: JsonCursor
  private readonly refs = new References()
  private readonly media: MediaDecoder
  private readonly vectors: VectorDecoder
  private version: 1 | 2 | undefined
  private hasMetadata = false
  private readonly seen = new Set<string>()

  constructor(
    chunks: AsyncGenerator<Uint8Array, void, undefined>,
    limits: ReaderLimits,
    private readonly stats: ReaderStats,
  ) {
    this.s = new Scanner(chunks, limits)
    this.media = new MediaDecoder(this.s, stats)
    this.vectors = new VectorDecoder(this.s, this.refs, stats)
  }

  async *run(): AsyncGenerator<BundleItem[], void, undefined> {
    try {
      yield* this.document()
    } finally {
      await this.s.close()
    }
  }

  // --- the document

  private async *document(): AsyncGenerator<BundleItem[], void, undefined> {
    const first = await this.s.peekByte()
    if (first < 0) this.s.failBundle('empty document (expected a JSON object)')
    if (first !== OPEN_BRACE) this.s.failBundle(`expected a JSON object at the top level, found ${describeByte(first)}`)
    if (!(await this.s.objectOpen('the bundle'))) {
      do {
        this.s.setContext()
        this.s.setInside('the bundle object')
        const key = await this.s.readKey(1)
        this.s.setInside(key)
        await this.s.next()
        const start = this.s.offset()
        yield* this.section(key)
        this.stats.sectionBytes[key] = (this.stats.sectionBytes[key] ?? 0) + this.s.offset() - start
        this.s.setContext()
        this.s.setInside('the bundle object')
      } while (await this.s.objectMore('the bundle object'))
    }
    // Only whitespace may follow; reading to the end also lets gunzip check its CRC.
    for (;;) {
      const b = this.s.buf
      for (let i = this.s.pos; i < this.s.len; i++)
        if (!isWhitespace(b[i]!)) this.s.failBundle('trailing data after the bundle object')
      this.s.seek(this.s.len)
      if (!(await this.s.fill())) break
    }
    if (this.version === undefined) this.s.failBundle('schema_version is missing')
    if (!this.hasMetadata) this.s.failBundle('metadata is missing')
    this.refs.end()
  }

  private async *section(key: string): AsyncGenerator<BundleItem[], void, undefined> {
    const isRows = Object.hasOwn(ROW_SCHEMAS, key)
    const known =
      isRows ||
      key === 'schema_version' ||
      key === 'metadata' ||
      key === 'images' ||
      key === 'bodies' ||
      key === 'embeddings'
    if (!known) {
      await this.s.skipValue(1)
      return
    }
    if (this.seen.has(key)) {
      this.s.setContext(key)
      this.s.fail('the section appears twice')
    }
    this.seen.add(key)
    if (key === 'schema_version') {
      yield [{ type: 'schema_version', version: await this.schemaVersion() }]
      return
    }
    if (key === 'metadata') {
      yield [{ type: 'metadata', metadata: await this.metadata() }]
      return
    }
    if (this.version === undefined) this.s.failBundle(`schema_version is missing (it must come before ${key})`)
    if (isRows) yield* this.rows(key as RowSection)
    else if (key === 'embeddings') yield* this.vectors.section()
    else yield* this.media.section(key as MediaSection)
  }

  private async schemaVersion(): Promise<1 | 2> {
    this.s.setContext()
    const value = await this.s.readValue(1, this.s.limits.maxRowBytes)
    if (!Number.isSafeInteger(value))
      this.s.failBundle(`schema_version must be an integer, not ${JSON.stringify(value)}`)
    const version = value as number
    if (!(SUPPORTED_SCHEMA_VERSIONS as readonly number[]).includes(version)) {
      this.s.failBundle(
        `schema_version ${version} is not supported (this reader reads versions ${SUPPORTED_SCHEMA_VERSIONS.join(' and ')})`,
      )
    }
    this.version = version as 1 | 2
    return this.version
  }

  private async metadata(): Promise<Metadata> {
    this.s.setContext('metadata')
    const value = await this.s.readValue(1, this.s.limits.maxRowBytes)
    if (value === null || typeof value !== 'object' || Array.isArray(value)) this.s.fail('expected an object')
    const problem = METADATA_CODEC.validate(value as Record<string, unknown>, 0, () => undefined)
    if (problem) this.s.fail(problem)
    this.hasMetadata = true
    return value as Metadata
  }

  // --- row sections

  private async *rows(section: RowSection): AsyncGenerator<BundleItem[], void, undefined> {
    this.s.setContext(section)
    if (await this.s.nullOr(OPEN_BRACKET, 'an array')) {
      this.refs.sectionEnded(section, 0)
      return
    }
    this.s.seek(this.s.pos + 1)
    this.refs.current = section
    this.refs.currentLabel = section
    this.s.beginRows()
    this.stats.rows[section] ??= 0
    for (;;) {
      let closed = false
      let scanError: unknown
      try {
        closed = this.s.scanRows(section === 'source_bodies')
      } catch (error) {
        scanError = error
      }
      // Rows before a scanning problem come first: problems are reported in file order.
      if (this.s.rowStarts.length > 0) {
        const { items, error } = this.decodeBatch(section)
        if (items.length > 0) yield items
        if (error) throw error
      }
      if (scanError !== undefined) throw scanError
      if (closed) break
      this.s.holdRow()
      if (!(await this.s.fill())) this.s.truncated()
    }
    this.refs.current = undefined
    this.s.setContext(section)
    this.refs.sectionEnded(section, this.s.rowIndex)
  }

  /** Parses, validates and wraps the rows of the batch; stops at the first bad row. */
  private decodeBatch(section: RowSection): { items: BundleItem[]; error?: BundleError } {
    const starts = this.s.rowStarts
    const ends = this.s.rowEnds
    const n = starts.length
    const first = this.s.rowIndex - n
    const items: BundleItem[] = []
    let error: BundleError | undefined
    let values: unknown[] | undefined
    try {
      values = JSON.parse(`[${this.s.decode(this.s.buf.subarray(starts[0], ends[n - 1]))}]`) as unknown[]
    } catch {
      // Find the row to name (the ones before it are good).
      values = []
      for (let k = 0; k < n; k++) {
        try {
          values.push(JSON.parse(this.s.decode(this.s.buf.subarray(starts[k], ends[k]))))
        } catch (e) {
          error = new BundleError(`invalid JSON (${(e as Error).message})`, { section, position: first + k })
          break
        }
      }
    }
    this.s.clearRows()
    const codec = ROW_CODECS[section]
    const fields = ROW_FIELDS[section]
    const check = this.refs.check
    const zeroExists = this.refs.zeroExists
    let k = 0
    for (; k < values.length; k++) {
      const position = first + k
      let row = values[k]
      if (typeof row === 'string') {
        const match = BODY_REF.exec(row)
        if (!match) {
          error = new BundleError(
            `expected an object or a body ref "body-<source_idx>", found ${JSON.stringify(row)}`,
            { section, position },
          )
          break
        }
        row = { source_idx: Number(match[1]), body_ref: row }
      }
      this.refs.currentPosition = position
      const problem = codec.validate(row as Record<string, unknown>, position, check, zeroExists)
      if (problem) {
        error = new BundleError(problem, { section, position })
        break
      }
      for (const field in row as Record<string, unknown>)
        if (!fields.has(field)) delete (row as Record<string, unknown>)[field]
      items.push({ type: 'row', section, position, row } as RowItem)
    }
    this.stats.rows[section] = (this.stats.rows[section] ?? 0) + k
    return error ? { items, error } : { items }
  }
}
