// The streaming bundle writer: rows arrive section by section from iterables (a database
// cursor in the export, a generator in scripts/gen-bundle.ts) and leave as version 2 JSON in
// key order, through gzip, to any writable sink. At most one row or one media chunk is held at
// a time, plus a 64 KiB output buffer. The same input gives the same bytes, and the canonical
// form (docs/spec/bundle.md §3) is this very encoder with the non-canonical parts left out, so a file's
// non-media bytes equal its canonical bytes plus sha256 and the embedding fields.
import { createHash } from 'node:crypto'
import { Readable, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import { GarbageMeter, metered } from '../../memory.ts'
import { METADATA_CODEC, ROW_CODECS } from './codecs.ts'
import { encodeFloat32, encodeString } from './json.ts'
import {
  ROW_SECTIONS,
  SCHEMA_VERSION,
  V1_KEYS,
  V2_KEYS,
  type MediaSection,
  type Metadata,
  type Row,
  type RowSection,
} from './schema.ts'

/**
 * Rows already encoded by their section's codec rules (the export reads them so from the
 * database, export-copy.ts): the UTF-8 of `rows` (at least one) encoded rows joined by commas.
 */
export class EncodedRows {
  constructor(
    readonly json: Uint8Array,
    readonly rows: number,
  ) {}
}

/** Rows of one section in order: single rows, or (from an async source) batches of rows. */
export type RowSource<T> = Iterable<T> | AsyncIterable<T | readonly T[]>

export interface MediaItem {
  /** `img-<source_images position>` or `body-<source position>`. */
  ref: string
  contentType: string
  data: Uint8Array | AsyncIterable<Uint8Array>
}

export interface VectorItem {
  /** Position of the fact or concept. */
  index: number
  vector: ArrayLike<number>
}

export interface BundleContent {
  /** 2 unless re-encoding a version 1 file (its canonical form keeps its version). */
  schemaVersion?: number
  metadata: Metadata
  /** A section's rows, or blocks of them already encoded. */
  rows: { [S in RowSection]?: RowSource<Row<S> | EncodedRows> }
  images?: RowSource<MediaItem>
  bodies?: RowSource<MediaItem>
  /** Vectors in ascending index order. */
  embeddings?: { model: string; dimensions: number; facts?: RowSource<VectorItem>; concepts?: RowSource<VectorItem> }
}

/**
 * The canonical forms a bundle's hash may be computed over (docs/spec/bundle.md §3), all with this encoder:
 * - 'v2': the contract's, and the only one kgs writes: media, embeddings, source_bodies, the
 *   source_images rows (`null`) and the embedding fields of the metadata left out, so the hash
 *   does not depend on media or on the embedding model;
 * - 'v2-embedding': the Go original's in-memory writer's: the same, embedding fields kept;
 * - 'v1': version 1's, which is the Go original's: version 1's key order, the source_images and
 *   source_bodies rows hashed (after report_annotations), the embedding fields kept.
 */
export type CanonicalRule = 'v2' | 'v2-embedding' | 'v1'

/** The rules a file of this version may have been hashed by, the one kgs writes first. */
export const canonicalRulesFor = (schemaVersion: number | undefined): CanonicalRule[] =>
  schemaVersion === 1 ? ['v1'] : ['v2', 'v2-embedding']

/** The row sections a rule hashes, in its order. */
export function hashedSections(rule: CanonicalRule): RowSection[] {
  if (rule === 'v1')
    return V1_KEYS.filter((key): key is RowSection => (ROW_SECTIONS as readonly string[]).includes(key))
  return ROW_SECTIONS.filter((section) => section !== 'source_images' && section !== 'source_bodies')
}

export interface EncodeOptions {
  /** Write the canonical form of this rule: what the hash is computed over. */
  canonical?: CanonicalRule
}

const CHUNK_BYTES = 64 * 1024

/** Flattens batches, so callers can hand over a cursor's pages as they come. */
async function* eachRow<T>(source: RowSource<T>): AsyncGenerator<T> {
  if (Symbol.iterator in source) {
    yield* source as Iterable<T>
    return
  }
  for await (const item of source) {
    if (Array.isArray(item)) yield* item as readonly T[]
    else yield item as T
  }
}

/** Like eachRow, but tells up front whether there is any row (optional sections are omitted when empty). */
async function peeked<T>(source: RowSource<T> | undefined): Promise<AsyncGenerator<T> | undefined> {
  if (!source) return undefined
  const rows = eachRow(source)
  const first = await rows.next()
  if (first.done) return undefined
  return (async function* () {
    yield first.value
    yield* rows
  })()
}

function canonicalMetadata(metadata: Metadata, rule: CanonicalRule): Metadata {
  const { sha256: _sha256, ...rest } = metadata
  if (rule !== 'v2') return rest
  const { embedding_model: _model, embedding_dimensions: _dimensions, ...hashed } = rest
  return hashed
}

/** `{"schema_version":…,"metadata":{…}`: the only part of a canonical form that differs between the rules of one version. */
function encodeHead(content: BundleContent, rule: CanonicalRule | undefined): string {
  const metadata = rule ? canonicalMetadata(content.metadata, rule) : content.metadata
  return `{"schema_version":${content.schemaVersion ?? SCHEMA_VERSION},"metadata":${METADATA_CODEC.encode(metadata)}`
}

function encodeVector(vector: ArrayLike<number>): string {
  let out = '['
  for (let i = 0; i < vector.length; i++) out += (i ? ',' : '') + encodeFloat32(vector[i]!)
  return out + ']'
}

async function* mediaBase64(data: Uint8Array | AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  if (data instanceof Uint8Array) {
    yield Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')
    return
  }
  // Base64 works on 3-byte groups: carry a chunk's remainder over to the next.
  let carry = Buffer.alloc(0)
  for await (const chunk of data) {
    const bytes = carry.length
      ? Buffer.concat([carry, chunk])
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const whole = bytes.length - (bytes.length % 3)
    yield bytes.subarray(0, whole).toString('base64')
    carry = Buffer.from(bytes.subarray(whole))
  }
  if (carry.length) yield carry.toString('base64')
}

/** The file's head, `{"schema_version":…,"metadata":{…}`: what encodeBodyHashing's chunks follow. */
export const encodeFileHead = (content: BundleContent) => encodeHead(content, undefined)

/** The bundle as uncompressed JSON, in chunks of about 64 KiB. */
export async function* encodeBundle(content: BundleContent, options: EncodeOptions = {}): AsyncGenerator<Uint8Array> {
  const rule = options.canonical
  for await (const { file, canonical } of encodeRest(
    content,
    { file: rule === undefined, canonical: rule },
    encodeHead(content, rule),
  )) {
    const chunk = rule === undefined ? file : canonical
    if (chunk) yield chunk
  }
}

/**
 * The file's bytes after its head (`{"schema_version":…,"metadata":{…}`, which holds the
 * sha256 and so comes last), hashing the canonical form (rule 'v2') of the same rows on the way:
 * one read of each row source for both. `sha256()` answers once the chunks are exhausted.
 */
export function encodeBodyHashing(content: BundleContent): { chunks: AsyncGenerator<Uint8Array>; sha256(): string } {
  const hash = createHash('sha256').update(encodeHead(content, 'v2'))
  let digest: string | undefined
  return {
    chunks: (async function* () {
      for await (const { file, canonical } of encodeRest(content, { file: true, canonical: 'v2' })) {
        if (canonical) hash.update(canonical)
        if (file) yield file
      }
      digest = hash.digest('hex')
    })(),
    sha256: () => {
      if (digest === undefined) throw new Error('the bundle has not been encoded to its end yet')
      return digest
    },
  }
}

/** Text, or UTF-8 already encoded. */
type Part = string | Uint8Array

/** A row as its codec writes it, or a block of rows encoded already. */
const encodeRow = <T>(encode: (row: T) => string, row: T | EncodedRows): Part =>
  row instanceof EncodedRows ? row.json : encode(row)

/**
 * Text of the file and of a canonical form, built side by side: most of it is the same in both;
 * media, embeddings and some media rows belong to one only. While both receive the same parts,
 * they are encoded to UTF-8 once and share one buffer.
 */
class Outputs {
  private readonly file = new Parts()
  private readonly canonical = new Parts()
  /** Nothing since the last take went to one output only: the two hold the same parts. */
  private same = true
  constructor(private readonly targets: { file: boolean; canonical?: CanonicalRule }) {}
  both(part: Part): void {
    if (this.targets.file) this.file.add(part)
    if (this.targets.canonical) this.canonical.add(part)
  }
  fileOnly(part: Part): void {
    if (!this.targets.file) return
    this.file.add(part)
    this.same = false
  }
  canonicalOnly(text: string): void {
    if (!this.targets.canonical) return
    this.canonical.add(text)
    this.same = false
  }
  full(): boolean {
    return this.file.size >= CHUNK_BYTES || this.canonical.size >= CHUNK_BYTES
  }
  take(): { file?: Uint8Array; canonical?: Uint8Array } {
    const file = this.file.take()
    const shared = this.same && this.targets.file
    if (shared) this.canonical.clear()
    const canonical = shared ? file : this.canonical.take()
    this.same = true
    return { file, canonical }
  }
}

/** Text and bytes in order; consecutive text is kept as one string and encoded when taken. */
class Parts {
  private chunks: Uint8Array[] = []
  private text = ''
  /** Bytes held plus characters of text (about its bytes: mostly ASCII). */
  size = 0
  add(part: Part): void {
    if (typeof part === 'string') {
      this.text += part
      this.size += part.length
      return
    }
    this.flushText()
    this.chunks.push(part)
    this.size += part.byteLength
  }
  private flushText(): void {
    if (!this.text) return
    this.chunks.push(Buffer.from(this.text))
    this.text = ''
  }
  take(): Uint8Array | undefined {
    this.flushText()
    const { chunks } = this
    this.clear()
    if (chunks.length === 0) return undefined
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
  }
  clear(): void {
    this.chunks = []
    this.text = ''
    this.size = 0
  }
}

/**
 * Everything after the metadata (`head` first, in both outputs), for the file, a canonical form,
 * or both at once from one pass over the sources: the same bytes for every rule of a version.
 */
async function* encodeRest(
  content: BundleContent,
  targets: { file: boolean; canonical?: CanonicalRule },
  head = '',
): AsyncGenerator<{ file?: Uint8Array; canonical?: Uint8Array }> {
  const rule = targets.canonical
  const out = new Outputs(targets)
  out.both(head)

  for (const key of content.schemaVersion === 1 ? V1_KEYS : V2_KEYS) {
    if (key === 'schema_version' || key === 'metadata') continue
    if (key === 'images' || key === 'bodies') {
      if (!targets.file) continue
      const items = await peeked(content[key as MediaSection])
      if (!items) continue
      out.fileOnly(`,"${key}":{`)
      let first = true
      for await (const item of items) {
        out.fileOnly(
          `${first ? '' : ','}${encodeString(item.ref)}:{"content_type":${encodeString(item.contentType)},"data":"`,
        )
        first = false
        for await (const text of mediaBase64(item.data)) {
          out.fileOnly(text)
          if (out.full()) yield out.take()
        }
        out.fileOnly('"}')
      }
      out.fileOnly('}')
    } else if (key === 'embeddings') {
      if (!targets.file || !content.embeddings) continue
      const { model, dimensions } = content.embeddings
      const facts = await peeked(content.embeddings.facts)
      const concepts = await peeked(content.embeddings.concepts)
      if (!facts && !concepts) continue
      out.fileOnly(`,"embeddings":{"model":${encodeString(model)},"dimensions":${dimensions}`)
      for (const [name, vectors] of [
        ['fact_vectors', facts],
        ['concept_vectors', concepts],
      ] as const) {
        out.fileOnly(`,"${name}":{`)
        let first = true
        for await (const { index, vector } of vectors ?? []) {
          out.fileOnly(`${first ? '' : ','}"${index}":${encodeVector(vector)}`)
          first = false
          if (out.full()) yield out.take()
        }
        out.fileOnly('}')
      }
      out.fileOnly('}')
    } else if (key === 'source_bodies') {
      // Optional: omitted when empty; only version 1's canonical form keeps it.
      const hashed = rule === 'v1'
      if (!targets.file && !hashed) continue
      const rows = await peeked(content.rows.source_bodies)
      if (!rows) continue
      const write = hashed ? (part: Part) => out.both(part) : (part: Part) => out.fileOnly(part)
      write(',"source_bodies":[')
      let first = true
      for await (const row of rows) {
        if (!first) write(',')
        write(encodeRow(ROW_CODECS.source_bodies.encode, row))
        first = false
        if (out.full()) yield out.take()
      }
      write(']')
    } else {
      const section = key as RowSection
      // Version 2's canonical forms write the source_images rows as null.
      const nulled = section === 'source_images' && rule !== undefined && rule !== 'v1'
      if (nulled) out.canonicalOnly(',"source_images":null')
      if (nulled && !targets.file) continue
      const write = nulled ? (part: Part) => out.fileOnly(part) : (part: Part) => out.both(part)
      const encode = ROW_CODECS[section].encode as (row: unknown) => string
      write(`,"${section}":`)
      let first = true
      const rows = content.rows[section] as RowSource<unknown> | undefined
      if (rows) {
        for await (const row of eachRow(rows)) {
          write(first ? '[' : ',')
          write(encodeRow(encode, row))
          first = false
          if (out.full()) yield out.take()
        }
      }
      // An empty section is written as null, as the Go producer does.
      write(first ? 'null' : ']')
    }
    if (out.full()) yield out.take()
  }
  out.both('}')
  yield out.take()
}

export interface WriteResult {
  /** Uncompressed JSON bytes. */
  bytes: number
  /** Bytes written to the sink. */
  compressedBytes: number
}

/** Writes the gzipped bundle to `sink` (a file, an HTTP request, ...) and ends it. */
export async function writeBundle(
  content: BundleContent,
  sink: Writable,
  options: { level?: number } = {},
): Promise<WriteResult> {
  const result: WriteResult = { bytes: 0, compressedBytes: 0 }
  await pipeline(
    Readable.from(metered(encodeBundle(content), (bytes) => (result.bytes = bytes))),
    // Level 6 is zlib's default; a fixed level and Node's fixed gzip header (no name, mtime 0)
    // keep the output byte-for-byte the same for the same input.
    createGzip({ level: options.level ?? 6 }),
    (source: AsyncIterable<Uint8Array>) => metered(source, (bytes) => (result.compressedBytes = bytes)),
    sink,
  )
  return result
}

/** The canonical hash of docs/spec/bundle.md §3 (the first rule of the content's version): lowercase hex SHA-256 of the canonical form. */
export async function canonicalHash(content: BundleContent): Promise<string> {
  const [rule] = canonicalRulesFor(content.schemaVersion)
  return (await canonicalHashes(content, [rule!]))[rule!]!
}

/** The canonical hashes of one version's rules in one pass over the rows: they differ in the metadata only. */
export async function canonicalHashes(
  content: BundleContent,
  rules: readonly CanonicalRule[],
): Promise<Partial<Record<CanonicalRule, string>>> {
  const hashes = rules.map((rule) => createHash('sha256').update(encodeHead(content, rule)))
  const garbage = new GarbageMeter()
  for await (const { canonical } of encodeRest(content, { file: false, canonical: rules[0] })) {
    if (!canonical) continue
    for (const hash of hashes) hash.update(canonical)
    garbage.add(canonical.byteLength)
  }
  return Object.fromEntries(rules.map((rule, i) => [rule, hashes[i]!.digest('hex')]))
}

/** RFC 3339 in UTC with fractional seconds only when non-zero, trailing zeros dropped (Go's RFC3339Nano). */
export function formatExportedAt(date: Date): string {
  return date.toISOString().replace(/\.?0*Z$/, 'Z')
}
