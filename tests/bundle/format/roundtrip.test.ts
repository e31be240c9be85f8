// write → read → write gives the same bytes: the reader loses nothing the writer wrote, and the
// writer is deterministic.
import { describe, expect, test } from 'bun:test'
import { PassThrough } from 'node:stream'
import { readBundle } from '../../../src/bundle/format/reader.ts'
import type { Metadata, RowSection } from '../../../src/bundle/format/schema.ts'
import { writeBundle, type BundleContent, type MediaItem, type VectorItem } from '../../../src/bundle/format/writer.ts'
import { bundleContent, type BundleOptions } from '../../../scripts/gen-bundle.ts'

async function gzipped(content: BundleContent): Promise<Buffer> {
  const sink = new PassThrough()
  const chunks: Buffer[] = []
  sink.on('data', (chunk: Buffer) => chunks.push(chunk))
  await writeBundle(content, sink)
  return Buffer.concat(chunks)
}

/** Everything a reader yields, gathered back into writer input. */
async function readBack(bytes: Uint8Array): Promise<BundleContent> {
  let metadata: Metadata | undefined
  let schemaVersion: number | undefined
  const rows: Partial<Record<RowSection, unknown[]>> = {}
  const media: Record<'images' | 'bodies', MediaItem[]> = { images: [], bodies: [] }
  const vectors: Record<'facts' | 'concepts', VectorItem[]> = { facts: [], concepts: [] }
  let embeddings: { model: string; dimensions: number } | undefined
  for await (const item of readBundle(
    (async function* () {
      yield bytes
    })(),
  )) {
    if (item.type === 'schema_version') schemaVersion = item.version
    else if (item.type === 'metadata') metadata = item.metadata
    else if (item.type === 'row') (rows[item.section] ??= []).push(item.row)
    else if (item.type === 'media') {
      const parts: Uint8Array[] = []
      for await (const part of item.data ?? []) parts.push(part)
      media[item.section].push({ ref: item.ref, contentType: item.contentType, data: Buffer.concat(parts) })
    } else if (item.type === 'embeddings') embeddings = { model: item.model, dimensions: item.dimensions }
    else vectors[item.target].push({ index: item.index, vector: item.vector })
  }
  return {
    schemaVersion,
    metadata: metadata!,
    rows: rows as BundleContent['rows'],
    images: media.images,
    bodies: media.bodies,
    ...(embeddings ? { embeddings: { ...embeddings, facts: vectors.facts, concepts: vectors.concepts } } : {}),
  }
}

describe('round trip', () => {
  const cases: [string, BundleOptions][] = [
    ['every section, media and embeddings', { facts: 1500, dimensions: 16, seed: 3 }],
    ['no embeddings, no images', { facts: 400, dimensions: 0, images: false, seed: 4 }],
  ]
  for (const [what, options] of cases) {
    test(what, async () => {
      const first = await gzipped(bundleContent(options))
      const again = await readBack(first)
      const second = await gzipped(again)
      expect(second.length).toBe(first.length)
      expect(second.equals(first)).toBe(true)
      // Not vacuous: the file holds what the options ask for.
      expect((again.rows.facts as unknown[]).length).toBe(options.facts)
      if (options.dimensions) expect(again.embeddings?.dimensions).toBe(options.dimensions)
      if (options.images === false) expect(again.images).toEqual([])
    })
  }

  test('the empty graph', async () => {
    const empty: BundleContent = {
      metadata: {
        name: 'empty',
        source_count: 0,
        fact_count: 0,
        concept_count: 0,
        summary_count: 0,
        synthesis_count: 0,
        report_count: 0,
        investigation_count: 0,
        exported_at: '2026-01-02T03:04:05Z',
      },
      rows: {},
    }
    const first = await gzipped(empty)
    const again = await readBack(first)
    expect(again.rows).toEqual({})
    expect((await gzipped(again)).equals(first)).toBe(true)
  })
})
