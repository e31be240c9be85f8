// scripts/gen-bundle.ts: a small synthetic bundle is deterministic, and reading it back with the
// streaming reader gives what was generated: counts, references (checked by the reader), the
// canonical hash, media bytes, vectors, citations and content hashes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import {
  bundleContent,
  generateBundle,
  parseArgs,
  SyntheticGraph,
  type BundleOptions,
  type GenerateResult,
} from '../../../scripts/gen-bundle.ts'
import { portableFactId } from '../../../src/bundle/format/citations.ts'
import { factContentHash } from '../../../src/bundle/format/hashes.ts'
import { readBundle } from '../../../src/bundle/format/reader.ts'
import {
  COUNTED_SECTIONS,
  ROW_SECTIONS,
  type Metadata,
  type Row,
  type RowSection,
} from '../../../src/bundle/format/schema.ts'
import { canonicalHash, type MediaItem, type VectorItem } from '../../../src/bundle/format/writer.ts'
import { hashEmbedding } from '../../../src/vectors/embedder.ts'

const OPTIONS: BundleOptions = { facts: 2000, dimensions: 8 }

interface ReadBack {
  metadata: Metadata
  rows: { [S in RowSection]: Row<S>[] }
  media: Map<string, { contentType: string; data: Buffer }>
  embeddings?: { model: string; dimensions: number }
  vectors: { facts: Map<number, number[]>; concepts: Map<number, number[]> }
}

async function readBack(path: string): Promise<ReadBack> {
  const rows = Object.fromEntries(ROW_SECTIONS.map((section) => [section, []])) as unknown as ReadBack['rows']
  const media: ReadBack['media'] = new Map()
  const vectors: ReadBack['vectors'] = { facts: new Map(), concepts: new Map() }
  let metadata: Metadata | undefined
  let embeddings: ReadBack['embeddings']
  for await (const item of readBundle(createReadStream(path))) {
    if (item.type === 'metadata') metadata = item.metadata
    else if (item.type === 'row') (rows[item.section] as unknown[]).push(item.row)
    else if (item.type === 'media') {
      const chunks: Uint8Array[] = []
      for await (const chunk of item.data ?? []) chunks.push(chunk)
      media.set(`${item.section}/${item.ref}`, { contentType: item.contentType, data: Buffer.concat(chunks) })
    } else if (item.type === 'embeddings') embeddings = { model: item.model, dimensions: item.dimensions }
    else if (item.type === 'vector') vectors[item.target].set(item.index, item.vector)
  }
  if (!metadata) throw new Error('no metadata')
  return { metadata, rows, media, embeddings, vectors }
}

let dir: string
let first: GenerateResult
let second: GenerateResult
let bundle: ReadBack

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kgs-gen-bundle-'))
  first = await generateBundle(join(dir, 'first.json.gz'), OPTIONS)
  second = await generateBundle(join(dir, 'second.json.gz'), OPTIONS)
  bundle = await readBack(first.path)
})

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('gen-bundle', () => {
  test('two runs write the same bytes', () => {
    expect(second.sha256).toBe(first.sha256)
    expect(second.compressedBytes).toBe(first.compressedBytes)
    expect(readFileSync(second.path).equals(readFileSync(first.path))).toBe(true)
  })

  test('every row count equals the metadata counts and what the generator reported; no section is empty', () => {
    const { metadata, rows } = bundle
    for (const [count, section] of Object.entries(COUNTED_SECTIONS))
      expect({ section, rows: rows[section].length }).toEqual({
        section,
        rows: metadata[count as keyof typeof COUNTED_SECTIONS],
      })
    for (const section of ROW_SECTIONS) {
      expect({ section, rows: rows[section].length }).toEqual({ section, rows: first.counts[section] })
      expect(rows[section].length).toBeGreaterThan(0)
    }
    expect(metadata.fact_count).toBe(OPTIONS.facts)
    expect(metadata).toMatchObject({
      exported_at: '2026-01-01T00:00:00Z',
      embedding_model: 'synthetic-random-v1',
      embedding_dimensions: 8,
      sha256: first.sha256,
    })
    expect(metadata.okt_version).toMatch(/^kgs\/\d+\.\d+\.\d+/)
    // Sorted, distinct, and exactly the hashes found on facts, concepts and fact_concepts.
    const found = new Set(
      [...rows.facts, ...rows.concepts, ...rows.fact_concepts]
        .map((row) => row.promptset_hash)
        .filter((hash) => hash !== undefined),
    )
    expect(metadata.promptset_hashes).toEqual([...found].sort())
  })

  test('the canonical hash of the rows read back equals metadata.sha256', async () => {
    const { metadata, rows } = bundle
    expect(await canonicalHash({ metadata, rows })).toBe(metadata.sha256!)
  })

  test('media read back are the bytes generated; every image_ref and body_ref has its item', async () => {
    const generated = bundleContent(OPTIONS)
    const expected = new Map<string, MediaItem>()
    for (const section of ['images', 'bodies'] as const)
      for (const item of generated[section] as Iterable<MediaItem>) expected.set(`${section}/${item.ref}`, item)
    expect(bundle.media.size).toBe(first.counts.images + first.counts.bodies)
    expect(first.counts.images).toBeGreaterThan(0)
    expect(first.counts.bodies).toBeGreaterThan(0)
    expect([...bundle.media.keys()]).toEqual([...expected.keys()])
    for (const [key, item] of expected) {
      const read = bundle.media.get(key)!
      expect(read.contentType).toBe(item.contentType)
      expect(read.data.equals(item.data as Uint8Array)).toBe(true)
    }
    const images = bundle.rows.source_images.filter((row) => row.image_ref)
    expect(images.length).toBe(first.counts.images)
    for (const row of images) {
      const data = bundle.media.get(`images/${row.image_ref}`)!.data
      expect(data.subarray(0, 8).toString('latin1')).toBe('\x89PNG\r\n\x1a\n')
      expect(data.length).toBe(row.bytes!)
    }
    for (const row of bundle.rows.source_bodies)
      expect(bundle.media.get(`bodies/${row.body_ref}`)!.data.toString()).toStartWith('<!DOCTYPE html>')
  })

  test('vectors: one per fact and per concept, in order, unit length, as many dimensions as declared', () => {
    expect(bundle.embeddings).toEqual({ model: 'synthetic-random-v1', dimensions: 8 })
    expect([...bundle.vectors.facts.keys()]).toEqual(Array.from({ length: OPTIONS.facts }, (_, i) => i))
    expect(bundle.vectors.concepts.size).toBe(bundle.metadata.concept_count)
    for (const vector of [...bundle.vectors.facts.values(), ...bundle.vectors.concepts.values()]) {
      expect(vector.length).toBe(8)
      expect(Math.abs(Math.hypot(...vector) - 1)).toBeLessThan(1e-6)
    }
  })

  test('facts are unique after normalization and carry the content hash the importer computes', () => {
    const { facts } = bundle.rows
    expect(new Set(facts.map((fact) => fact.content_hash)).size).toBe(facts.length)
    for (const fact of facts) expect(fact.content_hash).toBe(factContentHash(fact.text))
    const lengths = facts.map((fact) => fact.text.length).sort((a, b) => a - b)
    expect(lengths[Math.floor(lengths.length / 10)]!).toBeGreaterThanOrEqual(90)
    expect(lengths[Math.floor((lengths.length * 9) / 10)]!).toBeLessThanOrEqual(200)
    // Image facts point at their source image.
    const images = facts.filter((fact) => fact.fact_kind === 'image')
    expect(images.length).toBe(bundle.metadata.fact_count / 40)
    for (const fact of images) expect(fact.image_url).toBe(bundle.rows.source_images[fact.source_image_idx!]!.url!)
  })

  test('citations name the UUIDs of the facts a summary covers and the image facts a synthesis embeds', () => {
    const graph = new SyntheticGraph(OPTIONS)
    const cited = (content: string, prefix: string) =>
      [...content.matchAll(new RegExp(`${prefix}\\[[^\\]]*\\]\\(<fact:([0-9a-f-]{36})>\\)`, 'g'))].map(
        (match) => match[1],
      )
    for (const summary of bundle.rows.concept_summaries)
      expect(cited(summary.content, '(?<!!)')).toEqual(summary.covered_fact_idxs!.map((i) => graph.uuid('fact', i)))
    for (const synthesis of bundle.rows.concept_syntheses)
      expect(cited(synthesis.content, '!')).toEqual(synthesis.embedded_image_idxs!.map((i) => graph.uuid('fact', i)))
    const uuids = Array.from({ length: OPTIONS.facts }, (_, i) => graph.uuid('fact', i))
    expect(new Set(uuids).size).toBe(uuids.length)
    // kgs's portable UUIDs (name-based, version 5), which the import resolves.
    for (const [i, uuid] of uuids.entries())
      expect(uuid).toBe(portableFactId(factContentHash(bundle.rows.facts[i]!.text)))
    // Children come after their parents.
    for (const report of bundle.rows.reports) expect(report.parent_idx!).toBeLessThan(report.idx)
    expect(bundle.rows.reports.some((report) => report.parent_idx! >= 0)).toBe(true)
  })

  test('texts exercise the escaping paths', () => {
    const json = gunzipSync(readFileSync(first.path)).toString()
    for (const piece of ['\\u003c', '\\u003e', '\\u0026', '\\"', '\\n', '\\t', 'Zu\u0308rich', '東京湾', '°C', '🌊'])
      expect({ piece, found: json.includes(piece) }).toEqual({ piece, found: true })
  })

  test('without images and embeddings: no images section, no image_ref, no vectors, no embedding metadata', async () => {
    const path = join(dir, 'plain.json.gz')
    const result = await generateBundle(path, {
      facts: 300,
      dimensions: 0,
      images: false,
      seed: 7,
      exportedAt: '2026-02-03T04:05:06.5Z',
    })
    const plain = await readBack(path)
    expect(result.counts).toMatchObject({ images: 0, fact_vectors: 0, concept_vectors: 0, facts: 300 })
    expect([...plain.media.keys()].every((key) => key.startsWith('bodies/'))).toBe(true)
    expect(plain.rows.source_images.some((row) => row.image_ref)).toBe(false)
    expect(plain.embeddings).toBeUndefined()
    expect(plain.metadata.embedding_model).toBeUndefined()
    expect(plain.metadata.exported_at).toBe('2026-02-03T04:05:06.5Z')
    expect(await canonicalHash({ metadata: plain.metadata, rows: plain.rows })).toBe(result.sha256)
    expect(result.sha256).not.toBe(first.sha256)
  })

  test("--kgs-hash: the vectors are the built-in embedder's", async () => {
    const content = bundleContent({ facts: 30, dimensions: 384, vectors: 'kgs-hash-v1' })
    expect(content.metadata).toMatchObject({ embedding_model: 'kgs-hash-v1', embedding_dimensions: 384 })
    expect(content.embeddings).toMatchObject({ model: 'kgs-hash-v1', dimensions: 384 })
    const facts = [...(content.rows.facts as Iterable<Row<'facts'>>)]
    const vectors = [...(content.embeddings!.facts as Iterable<VectorItem>)]
    expect(vectors.map((v) => v.index)).toEqual(facts.map((f) => f.idx))
    for (const [k, fact] of facts.entries()) expect(vectors[k]!.vector).toEqual(hashEmbedding(fact.text))
    const concept = [...(content.rows.concepts as Iterable<Row<'concepts'>>)][0]!
    const [conceptVector] = content.embeddings!.concepts as Iterable<VectorItem>
    expect(conceptVector!.vector).toEqual(hashEmbedding(`${concept.canonical_name}: ${concept.description}`))
  })

  test('command line', () => {
    expect(
      parseArgs([
        'out.json.gz',
        '1000',
        '--seed',
        '3',
        '--dimensions',
        '0',
        '--no-images',
        '--exported-at',
        '2026-05-01T00:00:00Z',
      ]),
    ).toEqual({
      path: 'out.json.gz',
      options: { facts: 1000, seed: 3, dimensions: 0, images: false, exportedAt: '2026-05-01T00:00:00Z' },
    })
    expect(parseArgs(['out.json.gz', '5', '--kgs-hash'])).toEqual({
      path: 'out.json.gz',
      options: { facts: 5, vectors: 'kgs-hash-v1' },
    })
    expect(parseArgs(['out.json.gz'])).toBeUndefined()
    expect(() => parseArgs(['out.json.gz', '10', '--frobnicate'])).toThrow('unknown option --frobnicate')
  })
})
