// The streaming bundle reader: every broken bundle of the corpus rejected with its message,
// and the accepting side (v1 order, tolerated forms, chunking, streamed media, big rows,
// bounded memory).
import { describe, expect, test } from 'bun:test'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { BundleError, readBundle, type BundleItem, type ReaderLimits } from '../../../src/bundle/format/reader.ts'
import { ROW_SECTIONS } from '../../../src/bundle/format/schema.ts'
import { COLLECT_EVERY_BYTES } from '../../../src/memory.ts'
import { runtime } from '../../../src/runtime/index.ts'
import {
  BODY_TEXT,
  brokenBundles,
  gzipBundle,
  IMAGE_BYTES,
  referenceFields,
  v1Json,
  validBundle,
  validBundleJson,
} from '../../helpers/broken-bundles.ts'
import { rejected } from '../../helpers/promises.ts'

type Obj = Record<string, unknown>

async function* chunked(bytes: Uint8Array, size: number | (() => number)): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; ) {
    const n = typeof size === 'number' ? size : size()
    yield bytes.subarray(i, i + n)
    i += n
  }
}

/** A materialized item: media data read into one Buffer (null stays null). */
type Collected =
  | Exclude<BundleItem, { type: 'media' }>
  | { type: 'media'; section: string; ref: string; contentType: string; data: Buffer | null; chunks: number }

async function collect(source: AsyncIterable<Uint8Array>, limits?: Partial<ReaderLimits>): Promise<Collected[]> {
  const items: Collected[] = []
  for await (const item of readBundle(source, limits)) {
    if (item.type === 'media') {
      let data: Buffer | null = null
      let chunks = 0
      if (item.data) {
        const parts: Uint8Array[] = []
        for await (const chunk of item.data) parts.push(chunk)
        data = Buffer.concat(parts)
        chunks = parts.length
      }
      items.push({ type: 'media', section: item.section, ref: item.ref, contentType: item.contentType, data, chunks })
    } else items.push(item)
  }
  return items
}

const read = (bytes: Uint8Array, limits?: Partial<ReaderLimits>) => collect(chunked(bytes, 1 << 16), limits)

async function readError(bytes: Uint8Array, limits?: Partial<ReaderLimits>): Promise<BundleError> {
  try {
    await read(bytes, limits)
  } catch (error) {
    if (error instanceof BundleError) return error
    throw error
  }
  throw new Error('the bundle was accepted')
}

const rowsOf = (items: Collected[], section: string): Obj[] =>
  items.flatMap((item) => (item.type === 'row' && item.section === section ? [item.row as Obj] : []))
const withoutMediaChunks = (items: Collected[]) =>
  items.map((item) => (item.type === 'media' ? { ...item, chunks: 0 } : item))

describe('broken bundles', () => {
  const corpus = brokenBundles()

  test('the corpus covers every reference field of every row schema and every row section', () => {
    const names = new Set(corpus.map((c) => c.name))
    for (const { section, field } of referenceFields()) expect(names).toContain(`dangling ${section}.${field}`)
    for (const section of ROW_SECTIONS) expect(names).toContain(`${section}: wrong type`)
    expect(referenceFields().length).toBe(18)
  })

  for (const broken of corpus) {
    test(broken.name, async () => {
      const error = await readError(broken.bytes, broken.limits)
      expect(error.message).toMatch(broken.error)
      if (broken.section !== undefined) expect(error.section).toBe(broken.section)
      if (broken.position !== undefined) expect(error.position).toBe(broken.position)
      expect(error.message.endsWith(error.problem)).toBe(true)
    })
  }

  test('the gzip bomb fails fast, after about 16 MiB', async () => {
    const bomb = corpus.find((c) => c.name.startsWith('gzip bomb'))!
    expect(bomb.bytes.length).toBeLessThan(1_200_000)
    const reader = readBundle(chunked(bomb.bytes, bomb.bytes.length))
    expect(await rejected(collectReader(reader))).toThrow(/compressed size/)
    expect(reader.stats.decompressedBytes).toBeLessThan(20 * 1024 * 1024)
  })

  test('rows before a bad row are yielded first; the bad one is named inside a large batch', async () => {
    const bundle = validBundle()
    bundle.concepts = Array.from({ length: 2000 }, (_, i) => ({
      idx: i,
      canonical_name: `c${i}`,
      context: i === 1234 ? 7 : '',
    }))
    const seen: number[] = []
    let error: unknown
    try {
      for await (const item of readBundle(chunked(gzipBundle(validBundleJson(bundle)), 1 << 20)))
        if (item.type === 'row' && item.section === 'concepts') seen.push(item.position)
    } catch (e) {
      error = e
    }
    expect((error as BundleError).message).toBe('concepts[1234]: context must be a string')
    expect(seen.length).toBe(1234)
    expect(seen.at(-1)).toBe(1233)
  })

  test('a syntax error inside a row of a large batch names that row', async () => {
    const bundle = validBundle()
    bundle.concepts = Array.from({ length: 2000 }, (_, i) => ({ idx: i, canonical_name: `c${i}`, context: '' }))
    const text = validBundleJson(bundle).replace('"canonical_name":"c777",', '"canonical_name":"c777",,')
    const error = await readError(gzipBundle(text))
    expect(error.message).toStartWith('concepts[777]: invalid JSON (')
    expect([error.section, error.position]).toEqual(['concepts', 777])
  })
})

async function collectReader(reader: AsyncIterable<BundleItem>): Promise<number> {
  let n = 0
  for await (const _ of reader) n++
  return n
}

describe('valid bundles', () => {
  test('the valid bundle: every item, in file order, with stats', async () => {
    const bundle = validBundle()
    const text = validBundleJson(bundle)
    const bytes = gzipBundle(text)
    const reader = readBundle(chunked(bytes, 100))
    const items: Collected[] = []
    for await (const item of reader) {
      if (item.type === 'media') {
        const parts: Uint8Array[] = []
        for await (const chunk of item.data!) parts.push(chunk)
        items.push({
          type: 'media',
          section: item.section,
          ref: item.ref,
          contentType: item.contentType,
          data: Buffer.concat(parts),
          chunks: parts.length,
        })
      } else items.push(item)
    }
    expect(items.slice(0, 2)).toEqual([
      { type: 'schema_version', version: 2 },
      { type: 'metadata', metadata: bundle.metadata as never },
    ])
    for (const section of ROW_SECTIONS) expect(rowsOf(items, section)).toEqual(bundle[section] as Obj[])
    const rowItems = items.filter((item) => item.type === 'row')
    for (const section of ROW_SECTIONS) {
      const positions = rowItems.flatMap((item) => (item.section === section ? [item.position] : []))
      expect(positions).toEqual(positions.map((_, i) => i))
    }
    const media = items.filter((item) => item.type === 'media')
    expect(media.map((m) => [m.section, m.ref, m.contentType])).toEqual([
      ['images', 'img-0', 'image/png'],
      ['bodies', 'body-0', 'text/html'],
    ])
    expect(new Uint8Array(media[0]!.data!)).toEqual(IMAGE_BYTES)
    expect(media[1]!.data!.toString()).toBe(BODY_TEXT)
    const embeddingsAt = items.findIndex((item) => item.type === 'embeddings')
    expect(items[embeddingsAt]).toEqual({ type: 'embeddings', model: 'test-embed', dimensions: 4 })
    expect(items.slice(embeddingsAt + 1)).toEqual([
      { type: 'vector', target: 'facts', index: 0, vector: [0.1, 0.2, 0.3, 0.4] },
      { type: 'vector', target: 'facts', index: 1, vector: [1, 0, 0, 0] },
      { type: 'vector', target: 'facts', index: 2, vector: [-0.5, 0.5, -0.25, 0.25] },
      { type: 'vector', target: 'concepts', index: 0, vector: [0, 1, 0, 0] },
      { type: 'vector', target: 'concepts', index: 1, vector: [0, 0, 1, 0] },
    ])
    // File order: the section order of the text.
    const order = items.map((item) => (item.type === 'row' || item.type === 'media' ? item.section : item.type))
    const firstSeen = [...new Set(order)]
    expect(firstSeen).toEqual([
      'schema_version',
      'metadata',
      'sources',
      'images',
      'bodies',
      'source_images',
      'source_bodies',
      'facts',
      'fact_sources',
      'concepts',
      'concept_aliases',
      'fact_concepts',
      'concept_summaries',
      'concept_syntheses',
      'investigations',
      'investigation_sources',
      'reports',
      'report_annotations',
      'embeddings',
      'vector',
    ])

    const { stats } = reader
    expect(stats.compressedBytes).toBe(bytes.length)
    expect(stats.decompressedBytes).toBe(Buffer.byteLength(text))
    expect(stats.rows).toEqual(
      Object.fromEntries(ROW_SECTIONS.map((section) => [section, (bundle[section] as unknown[]).length])),
    )
    expect(stats.vectors).toBe(5)
    expect(stats.mediaBytes).toBe(IMAGE_BYTES.length + BODY_TEXT.length)
    expect(stats.sectionBytes.facts).toBe(JSON.stringify(bundle.facts).length)
    expect(stats.sectionBytes.embeddings).toBe(JSON.stringify(bundle.embeddings).length)
    expect(Object.keys(stats.sectionBytes)).toEqual(Object.keys(bundle))
  })

  test('version 1 order: media after report_annotations, facts referring to source_images that come later', async () => {
    const v1 = await read(gzipBundle(v1Json()))
    const v2 = await read(gzipBundle(validBundleJson()))
    expect(v1[0]).toEqual({ type: 'schema_version', version: 1 })
    for (const section of ROW_SECTIONS) expect(rowsOf(v1, section)).toEqual(rowsOf(v2, section))
    expect(rowsOf(v1, 'facts')[1]).toMatchObject({ source_image_idx: 0 })
    const sections = [
      ...new Set(v1.flatMap((item) => (item.type === 'row' || item.type === 'media' ? [item.section] : []))),
    ]
    expect(sections.slice(-4)).toEqual(['source_images', 'source_bodies', 'images', 'bodies'])
  })

  test('null, [] and absent row sections are empty', async () => {
    const bundle = validBundle()
    for (const section of [
      'fact_sources',
      'concept_aliases',
      'fact_concepts',
      'investigation_sources',
      'report_annotations',
      'concept_syntheses',
    ])
      delete bundle[section]
    bundle.concept_summaries = null
    bundle.investigations = []
    delete bundle.images
    bundle.bodies = null
    bundle.embeddings = null
    const items = await read(gzipBundle(validBundleJson(bundle)))
    expect(items.filter((item) => item.type === 'row').length).toBe(2 + 1 + 1 + 3 + 2 + 2)
    expect(items.some((item) => item.type === 'media' || item.type === 'embeddings' || item.type === 'vector')).toBe(
      false,
    )
    expect(rowsOf(items, 'concept_summaries')).toEqual([])
    expect(rowsOf(items, 'investigations')).toEqual([])
  })

  test('the empty bundle Go writes (docs/spec/bundle.md §3) reads as schema_version and metadata only', async () => {
    const go =
      '{"schema_version":2,"metadata":{"name":"empty","embedding_model":"m","embedding_dimensions":3072,"source_count":0,"fact_count":0,"concept_count":0,"summary_count":0,"synthesis_count":0,"report_count":0,"investigation_count":0,"exported_at":"2026-01-02T03:04:05Z"},"sources":null,"source_images":null,"facts":null,"fact_sources":null,"concepts":null,"concept_aliases":null,"fact_concepts":null,"concept_summaries":null,"concept_syntheses":null,"investigations":null,"investigation_sources":null,"reports":null,"report_annotations":null}'
    const items = await read(gzipBundle(go))
    expect(items.map((item) => item.type)).toEqual(['schema_version', 'metadata'])
  })

  test('media: a null value, null data, no data, and content_type after data', async () => {
    const bundle = validBundle()
    bundle.images = {
      'img-0': null,
      'img-1': { content_type: 'image/gif', data: null },
      'img-2': { content_type: 'image/gif' },
      'img-3': { data: 'AAEC', content_type: 'image/x-late' },
    }
    const media = (await read(gzipBundle(validBundleJson(bundle)))).filter(
      (item) => item.type === 'media' && item.section === 'images',
    )
    expect(media).toEqual([
      { type: 'media', section: 'images', ref: 'img-0', contentType: '', data: null, chunks: 0 },
      { type: 'media', section: 'images', ref: 'img-1', contentType: 'image/gif', data: null, chunks: 0 },
      { type: 'media', section: 'images', ref: 'img-2', contentType: 'image/gif', data: null, chunks: 0 },
      { type: 'media', section: 'images', ref: 'img-3', contentType: '', data: Buffer.from([0, 1, 2]), chunks: 1 },
    ])
  })

  test('media data: JSON escapes (\\/, \\n, \\u0041) are read as Go reads them', async () => {
    const bundle = validBundle()
    const payload = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 131) & 255))
    const base64 = payload.toString('base64')
    bundle.bodies = { 'body-0': { content_type: 'text/plain', data: 'PLACEHOLDER' } }
    const escaped = base64
      .replace(/(.{76})/g, '$1\\n')
      .replace(/\//g, '\\/')
      .replace(/A/g, '\\u0041')
    const text = validBundleJson(bundle).replace('PLACEHOLDER', escaped)
    for (const bytes of [gzipBundle(text), new Uint8Array(gzipSync(text, { level: 0 }))]) {
      const media = (await collect(chunked(bytes, 1))).find(
        (item) => item.type === 'media' && item.section === 'bodies',
      )
      expect(media?.type === 'media' && media.data).toEqual(payload)
    }
  })

  test('bare-string source_bodies are body refs', async () => {
    const bundle = validBundle()
    bundle.source_bodies = ['body-0', { source_idx: 1, body_ref: 'body-1' }, 'body-1']
    expect(rowsOf(await read(gzipBundle(validBundleJson(bundle))), 'source_bodies')).toEqual([
      { source_idx: 0, body_ref: 'body-0' },
      { source_idx: 1, body_ref: 'body-1' },
      { source_idx: 1, body_ref: 'body-1' },
    ])
  })

  test('unknown top-level keys, row fields, media fields and embeddings fields are ignored', async () => {
    const bundle: Obj = { future_first: { a: [1, { b: '}]"\\' }], c: null }, ...validBundle() }
    bundle.future_section = [{ x: 'y' }, 'z', 3.5e-7, true, false, null]
    bundle.future_number = -12.5e3
    ;(bundle.facts as Obj[])[0]!.future_field = { nested: ['a', { b: 2 }] }
    ;((bundle.images as Obj)['img-0'] as Obj).future = ['x']
    ;(bundle.embeddings as Obj).future = { model: 'not this one' }
    // Inherited property names are unknown keys too.
    const text = JSON.stringify(bundle).replace(
      '"metadata":',
      '"toString":[1],"constructor":{"a":"b"},"__proto__":null,"hasOwnProperty":2,"metadata":',
    )
    const items = await read(gzipBundle(text))
    const plain = await read(gzipBundle(validBundleJson()))
    expect(items.length).toBe(plain.length)
    // Dropped, not kept on the row: a large unknown value costs nothing once the row is checked.
    expect(rowsOf(items, 'facts')[0]).toEqual(rowsOf(plain, 'facts')[0]!)
    expect(withoutMediaChunks(items.filter((item) => item.type !== 'row'))).toEqual(
      withoutMediaChunks(plain.filter((item) => item.type !== 'row')),
    )
  })

  test("omitted parent_idx and source_image_idx are Go's omitted zeros: 0 where that row exists, none where it does not", async () => {
    const bundle = validBundle()
    delete (bundle.facts as Obj[])[0]!.source_image_idx
    ;(bundle.facts as Obj[])[2]!.source_image_idx = null
    delete (bundle.reports as Obj[])[0]!.parent_idx
    delete (bundle.reports as Obj[])[1]!.parent_idx
    let items = await read(gzipBundle(validBundleJson(bundle)))
    expect(rowsOf(items, 'facts').map((fact) => fact.source_image_idx)).toEqual([0, 0, 0])
    expect(rowsOf(items, 'reports').map((report) => report.parent_idx)).toEqual([undefined, 0])

    bundle.source_images = null
    delete bundle.images
    ;(bundle.facts as Obj[])[1]!.source_image_idx = -1
    items = await read(gzipBundle(validBundleJson(bundle)))
    expect(rowsOf(items, 'facts').map((fact) => fact.source_image_idx)).toEqual([undefined, -1, undefined])
  })

  test('embeddings: null and empty maps, keys in any order, embeddings before the rows they refer to', async () => {
    const bundle = validBundle()
    bundle.embeddings = { model: 'm', dimensions: 2, fact_vectors: null, concept_vectors: {} }
    let items = await read(gzipBundle(validBundleJson(bundle)))
    expect(items.filter((item) => item.type === 'embeddings' || item.type === 'vector')).toEqual([
      { type: 'embeddings', model: 'm', dimensions: 2 },
    ])

    // (JSON.stringify would sort integer-like keys: the text is edited instead.)
    const { embeddings, ...rest } = validBundle()
    ;(embeddings as Obj).fact_vectors = { '0': [1, 0, 0, 0], '2': [0, 0, 0, 1] }
    const early = JSON.stringify({ schema_version: 2, embeddings, ...rest }).replace(
      '"0":[1,0,0,0],"2":[0,0,0,1]',
      '"2":[0,0,0,1],"0":[1,0,0,0]',
    )
    expect(early).toContain('"2":[0,0,0,1],"0"')
    items = await read(gzipBundle(early))
    expect(
      items
        .filter((item) => item.type === 'vector' && item.target === 'facts')
        .map((item) => item.type === 'vector' && item.index),
    ).toEqual([2, 0])
    ;(embeddings as Obj).fact_vectors = { '3': [0, 0, 0, 1] }
    const error = await readError(gzipBundle(JSON.stringify({ schema_version: 2, embeddings, ...rest })))
    expect(error.message).toBe(
      'embeddings.fact_vectors[3]: key 3 refers to a row that does not exist (facts has 3 rows)',
    )
  })

  test('one byte per chunk gives the same items as one big chunk', async () => {
    const text = validBundleJson()
    for (const bytes of [gzipBundle(text), new Uint8Array(gzipSync(text, { level: 0 }))]) {
      const whole = await collect(chunked(bytes, bytes.length))
      const bytewise = await collect(chunked(bytes, 1))
      expect(withoutMediaChunks(bytewise)).toEqual(withoutMediaChunks(whole))
      expect(whole.length).toBe(31)
    }
  })

  test('random rows with escapes, unicode and long strings, in random chunks, read as JSON.parse reads them', async () => {
    let seed = 12345
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff
    const pieces = [
      'a',
      'é',
      '"',
      '\\',
      '\\"',
      '\\\\',
      '}',
      ']',
      '{',
      '[',
      ',',
      ':',
      '\n',
      '\u2028',
      '😀',
      '\u0000',
      ' ',
      'x'.repeat(300),
    ]
    const randomText = () =>
      Array.from({ length: Math.floor(random() * 24) }, () => pieces[Math.floor(random() * pieces.length)]).join('')
    const document = (facts: number) => {
      const bundle = validBundle()
      bundle.facts = Array.from({ length: facts }, (_, i) => ({
        idx: i,
        text: `t${randomText()}`,
        fact_kind: 'text',
        status: 'new',
        source_image_idx: -1,
        extra: { deep: [[randomText()], { k: randomText() }] },
      }))
      bundle.concepts = Array.from({ length: 40 }, (_, i) => ({
        idx: i,
        canonical_name: `c${i}${randomText()}`,
        context: randomText(),
      }))
      bundle.embeddings = null
      return validBundleJson(bundle)
    }
    const large = document(200)
    const small = document(40)
    for (const [text, bytes, size] of [
      [large, gzipBundle(large), () => 1 + Math.floor(random() * 7)],
      [large, new Uint8Array(gzipSync(large, { level: 0 })), () => 1 + Math.floor(random() * 300)],
      [small, new Uint8Array(gzipSync(small, { level: 0 })), 1],
    ] as const) {
      const expected = JSON.parse(text) as Obj
      const items = await collect(chunked(bytes, size))
      expect(rowsOf(items, 'facts')).toEqual((expected.facts as Obj[]).map(({ extra: _, ...known }) => known))
      expect(rowsOf(items, 'concepts')).toEqual(expected.concepts as Obj[])
      expect(text.length).toBeGreaterThan(20_000)
    }
  })

  test('invalid UTF-8 in a string becomes U+FFFD, as in Go', async () => {
    const text = validBundleJson()
    const raw = Buffer.from(text)
    const at = raw.indexOf('"text":"Rain falls."') + '"text":"'.length
    raw[at + 1] = 0xff
    const items = await read(gzipBundle(raw))
    expect(rowsOf(items, 'facts')[0]!.text).toBe('R\ufffdin falls.')
  })

  test('a multi-megabyte body is streamed in several chunks, its bytes equal to the original', async () => {
    const payload = new Uint8Array(6 * 1024 * 1024 + 2)
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 2654435761) >>> 24
    const bundle = validBundle()
    bundle.bodies = { 'body-0': { content_type: 'application/pdf', data: Buffer.from(payload).toString('base64') } }
    const bytes = gzipBundle(validBundleJson(bundle))
    const reader = readBundle(chunked(bytes, 1 << 16))
    let chunks = 0
    let largest = 0
    const parts: Uint8Array[] = []
    for await (const item of reader) {
      if (item.type !== 'media' || item.section !== 'bodies') continue
      expect(item.contentType).toBe('application/pdf')
      for await (const chunk of item.data!) {
        chunks++
        largest = Math.max(largest, chunk.length)
        parts.push(chunk)
      }
    }
    expect(chunks).toBeGreaterThan(10)
    expect(largest).toBeLessThan(1024 * 1024)
    expect(Buffer.concat(parts).equals(Buffer.from(payload))).toBe(true)
    expect(reader.stats.mediaBytes).toBe(payload.length + IMAGE_BYTES.length)
  })

  test('media data the consumer does not read (or reads in part) is skipped, and still checked', async () => {
    const bundle = validBundle()
    const big = Buffer.alloc(300_000, 7).toString('base64')
    bundle.images = { 'img-0': { content_type: 'a/b', data: big }, 'img-1': { content_type: 'a/b', data: big } }
    const types: string[] = []
    let stale: AsyncIterable<Uint8Array> | null = null
    for await (const item of readBundle(chunked(gzipBundle(validBundleJson(bundle)), 4096))) {
      types.push(item.type === 'row' ? `row ${item.section}` : item.type)
      if (item.type === 'media' && item.ref === 'img-1') {
        for await (const chunk of item.data!) {
          expect(chunk.length).toBeGreaterThan(0)
          break
        }
        stale = item.data
      }
    }
    expect(types.filter((type) => type === 'media').length).toBe(3)
    expect(types.filter((type) => type === 'row facts').length).toBe(3)
    expect(await rejected(collectBytes(stale!))).toThrow(
      'media data can only be read before the next bundle item is requested',
    )

    ;(bundle.images as Obj)['img-1'] = { content_type: 'a/b', data: `${big.slice(0, 200_000)}!${big.slice(200_001)}` }
    const error = await readError(gzipBundle(validBundleJson(bundle)))
    expect(error.message).toBe('images["img-1"]: data is not valid base64 (unexpected character "!" at offset 200000)')
    expect([error.section, error.key]).toEqual(['images', 'img-1'])
  })

  test('a 50 MB string in a row is read correctly under a raised row limit, and refused by the default one', async () => {
    const unit = 'abcdefghij'.repeat(9) + 'x"y\\z/é€' // with escapes once JSON-encoded
    const big = unit.repeat(Math.ceil(50_000_000 / unit.length))
    const bundle = validBundle()
    ;(bundle.sources as Obj[])[1]!.parsed_text = big
    const gz = gzipBundle(validBundleJson(bundle))
    expect(await rejected(read(gz))).toThrow(/^sources\[1\]: row is larger than 16777216 bytes \(limit\)$/)
    const reader = readBundle(chunked(gz, 1 << 16), { maxRowBytes: 128 * 1024 ** 2 })
    let text: unknown
    for await (const item of reader)
      if (item.type === 'row' && item.section === 'sources' && item.position === 1) text = item.row.parsed_text
    expect(text === big).toBe(true)
    expect(reader.stats.sectionBytes.sources).toBeGreaterThan(50_000_000)
  })

  test('a 2,000,000-row bundle is read in bounded memory', async () => {
    const n = 2_000_000
    const pad = 'x'.repeat(60)
    // Many gzip members, which gunzip reads as one stream: built without the whole text.
    const members: Uint8Array[] = [
      gzipSync(
        '{"schema_version":2,"metadata":{"name":"big","source_count":0,"fact_count":2000000,"concept_count":0,"summary_count":0,"synthesis_count":0,"report_count":0,"investigation_count":0,"exported_at":"2026-01-02T03:04:05Z"},"facts":[',
        { level: 1 },
      ),
    ]
    for (let i = 0; i < n; i += 25_000) {
      let text = ''
      for (let j = i; j < i + 25_000; j++)
        text += `${j ? ',' : ''}{"idx":${j},"text":"fact ${j} ${pad}","fact_kind":"text","status":"new","source_image_idx":-1}`
      members.push(gzipSync(text, { level: 1 }))
    }
    members.push(gzipSync(']}'))
    async function* source() {
      yield* members
    }
    // Live heap after a full collection, not RSS: RSS follows the collector's timing (and the
    // rest of the suite in the same process), the live heap only what is still held.
    Bun.gc(true)
    const before = process.memoryUsage().heapUsed
    let peak = before
    let rows = 0
    let last = -1
    const reader = readBundle(source())
    for await (const item of reader) {
      if (item.type !== 'row') continue
      rows++
      last = item.position
      if (rows % 400_000 === 0) {
        Bun.gc(true)
        peak = Math.max(peak, process.memoryUsage().heapUsed)
      }
    }
    expect(rows).toBe(n)
    expect(last).toBe(n - 1)
    const size = reader.stats.decompressedBytes
    expect(size).toBeGreaterThan(280_000_000)
    // Holding the rows would keep several times the text alive; reading holds about one batch.
    expect(peak - before).toBeLessThan(32 * 1024 ** 2)
  })
})

async function collectBytes(data: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0
  for await (const chunk of data) n += chunk.length
  return n
}

describe('sources and the iterator', () => {
  test('a Node Readable and a Bun file stream are sources', async () => {
    const bytes = gzipBundle(validBundleJson())
    expect((await collect(Readable.from([Buffer.from(bytes)]))).length).toBe(31)
    const path = `${process.env.TMPDIR ?? '/tmp'}/kgs-reader-${process.pid}.json.gz`
    await Bun.write(path, bytes)
    try {
      expect((await collect(Bun.file(path).stream())).length).toBe(31)
    } finally {
      await Bun.file(path).delete()
    }
  })

  test('an error of the source comes through unchanged', async () => {
    const bytes = gzipBundle(validBundleJson())
    async function* failing() {
      yield bytes.subarray(0, 100)
      throw new Error('connection reset')
    }
    expect(await rejected(collect(failing()))).toThrow('connection reset')
  })

  test('stopping early stops the source', async () => {
    // An endless bundle: the metadata, then a string value that never ends.
    const head = gzipSync(
      '{"schema_version":2,"metadata":{"name":"n","source_count":0,"fact_count":0,"concept_count":0,"summary_count":0,"synthesis_count":0,"report_count":0,"investigation_count":0,"exported_at":"2026-01-02T03:04:05Z"},"future":"',
    )
    const more = gzipSync('x'.repeat(100_000))
    let pulled = 0
    let returned = false
    const source: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => ({ value: pulled++ === 0 ? head : more, done: false }),
        return: async () => {
          returned = true
          return { value: undefined, done: true }
        },
      }),
    }
    let seen = 0
    for await (const item of readBundle(source)) {
      seen++
      if (item.type === 'metadata') break
    }
    expect(seen).toBe(2)
    expect(returned).toBe(true)
  })

  test('a reader is iterated once; limits must be positive', () => {
    const reader = readBundle(chunked(gzipBundle('{}'), 10))
    reader[Symbol.asyncIterator]()
    expect(() => reader[Symbol.asyncIterator]()).toThrow('only once')
    expect(() => readBundle(chunked(new Uint8Array(0), 1), { maxDepth: 0 })).toThrow('maxDepth must be positive')
    expect(() => readBundle(chunked(new Uint8Array(0), 1), { maxDepth: Infinity })).toThrow(
      'maxDepth must be an integer up to 100000',
    )
  })

  test('BundleError messages', () => {
    expect(new BundleError('x is required', { section: 'facts', position: 3 }).message).toBe('facts[3]: x is required')
    expect(new BundleError('expected an object', { section: 'metadata' }).message).toBe('metadata: expected an object')
    expect(new BundleError('bad', { section: 'images', key: 'img-1' }).message).toBe('images["img-1"]: bad')
    expect(new BundleError('truncated').message).toBe('bundle: truncated')
    expect(new BundleError('not a gzip file', { scope: 'gzip' }).message).toBe('gzip: not a gzip file')
  })
})

/** Items up to the first error, and that error (undefined when the whole bundle was read). */
async function collectAll(
  source: AsyncIterable<Uint8Array>,
  limits?: Partial<ReaderLimits>,
): Promise<{ items: Collected[]; error?: string }> {
  const items: Collected[] = []
  try {
    for await (const item of readBundle(source, limits)) {
      if (item.type === 'media') {
        const parts: Uint8Array[] = []
        if (item.data) for await (const chunk of item.data) parts.push(chunk)
        items.push({
          type: 'media',
          section: item.section,
          ref: item.ref,
          contentType: item.contentType,
          data: item.data && Buffer.concat(parts),
          chunks: 0,
        })
      } else items.push(item)
    }
  } catch (error) {
    if (!(error instanceof BundleError)) throw error
    return { items, error: error.message }
  }
  return { items }
}

/**
 * Reads the text with the decompressed stream cut once, at byte `cut`: each part is a gzip
 * member of its own, and the second is handed over only once the reader has taken all of the
 * first, so the reader's buffer ends exactly at `cut` (whatever gunzip's output chunking).
 */
async function readCut(
  text: Uint8Array,
  cut: number,
  limits?: Partial<ReaderLimits>,
): Promise<{ items: Collected[]; error?: string }> {
  let stop = false
  const parts = [gzipSync(text.subarray(0, cut), { level: 1 }), gzipSync(text.subarray(cut), { level: 1 })]
  let stats: { decompressedBytes: number } = { decompressedBytes: 0 }
  async function* source() {
    yield new Uint8Array(parts[0]!)
    while (stats.decompressedBytes < cut && !stop) await Bun.sleep(0)
    yield new Uint8Array(parts[1]!)
  }
  const reader = readBundle(source(), limits)
  stats = reader.stats
  const items: Collected[] = []
  try {
    for await (const item of reader) {
      if (item.type === 'media') {
        const chunks: Uint8Array[] = []
        if (item.data) for await (const chunk of item.data) chunks.push(chunk)
        items.push({
          type: 'media',
          section: item.section,
          ref: item.ref,
          contentType: item.contentType,
          data: item.data && Buffer.concat(chunks),
          chunks: 0,
        })
      } else items.push(item)
    }
  } catch (error) {
    if (!(error instanceof BundleError)) throw error
    return { items, error: error.message }
  } finally {
    stop = true
  }
  return { items }
}

/** Every cut in [from, to]: the same items and error as the text read in one piece. */
async function expectSameAtEveryCut(
  text: string,
  from: number,
  to: number,
  limits?: Partial<ReaderLimits>,
): Promise<{ items: Collected[]; error?: string }> {
  const bytes = new Uint8Array(Buffer.from(text))
  const whole = await collectAll(chunked(gzipBundle(bytes), 1 << 20), limits)
  for (let cut = from; cut <= to; cut++) {
    const got = await readCut(bytes, cut, limits)
    if (got.error !== whole.error || !Bun.deepEquals(got.items, whole.items)) {
      expect({ cut, ...got }).toEqual({ cut, ...whole })
    }
  }
  return whole
}

describe('values cut by the end of the buffer', () => {
  // findQuote looks for a string's closing quote from the byte after its opening quote. Once
  // it let its word-aligned loop move back before that byte when the buffer ended less than a
  // word away, and returned the opening quote itself (the `if (i < near)` guard).
  test('strings whose opening quote sits at each of the last 300 bytes of the buffer read as JSON.parse reads them', async () => {
    const bundle = validBundle()
    const pieces = [
      '',
      'a',
      'ab',
      'abc',
      'abcd',
      'abcde',
      '"',
      '\\',
      'x"',
      'x\\',
      'é',
      '😀',
      'y'.repeat(260),
      'z'.repeat(300) + '"',
    ]
    bundle.facts = Array.from({ length: 60 }, (_, i) => ({
      idx: i,
      text: `t${pieces[i % pieces.length]!}${'w'.repeat(i % 5)}`,
      fact_kind: 'text',
      status: 'new',
      source_image_idx: -1,
    }))
    const text = validBundleJson(bundle)
    const start = text.indexOf('"facts":')
    const { items, error } = await expectSameAtEveryCut(text, start, start + 1400)
    expect(error).toBeUndefined()
    expect(rowsOf(items, 'facts')).toEqual(JSON.parse(text).facts)
  })

  test('base64 media data (escapes, line breaks, padding) cut at every byte', async () => {
    const bundle = validBundle()
    // Line breaks every 20 characters (JSON \n), and \/ and \u0041 for / and A, which
    // JSON.stringify would not write.
    const escaped = (bytes: Uint8Array) =>
      JSON.stringify(
        Buffer.from(bytes)
          .toString('base64')
          .replace(/(.{20})/g, '$1\n'),
      )
        .replace(/\//g, '\\/')
        .replace(/A/g, '\\u0041')
    const one = Uint8Array.from({ length: 100 }, (_, i) => (i * 97 + 1) & 255) // '==' padding
    const two = Uint8Array.from({ length: 101 }, (_, i) => (i * 89 + 3) & 255) // '='
    bundle.images = {
      'img-0': { content_type: 'image/png', data: 'ONE' },
      'img-1': { content_type: 'image/png', data: 'TWO' },
    }
    const text = validBundleJson(bundle).replace('"ONE"', escaped(one)).replace('"TWO"', escaped(two))
    expect(text).toContain('\\u0041')
    expect(text).toContain('\\/')
    const start = text.indexOf('"images":')
    const { items, error } = await expectSameAtEveryCut(text, start, text.indexOf('"bodies":'))
    expect(error).toBeUndefined()
    const images = items.filter((item) => item.type === 'media' && item.section === 'images')
    expect(images.map((item) => item.type === 'media' && item.data)).toEqual([Buffer.from(one), Buffer.from(two)])
  })

  test('vector maps in every form cut at every byte', async () => {
    const bundle = validBundle()
    bundle.embeddings = { model: 'm', dimensions: 3, fact_vectors: { A: 0 }, concept_vectors: { B: 0 } }
    const text = validBundleJson(bundle)
      .replace('{"A":0}', '{"0":[0.5,-1e-7,3],"2":[1,2,3] , "1" :\n[ 4 ,5,\t6 ],"\\u0031":[7,8,9],"2":[-0,0,1E+2]}')
      .replace('{"B":0}', '{ "1":[0.25,0.5,0.75],"0":[1.5e300,-2,12345678901234567890]}')
    const { items, error } = await expectSameAtEveryCut(text, text.indexOf('"embeddings":'), text.length)
    expect(error).toBeUndefined()
    expect(
      items
        .filter((item) => item.type === 'vector')
        .map((item) => item.type === 'vector' && [item.target, item.index, item.vector]),
    ).toEqual([
      ['facts', 0, [0.5, -1e-7, 3]],
      ['facts', 2, [1, 2, 3]],
      ['facts', 1, [4, 5, 6]],
      ['facts', 1, [7, 8, 9]],
      ['facts', 2, [-0, 0, 100]],
      ['concepts', 1, [0.25, 0.5, 0.75]],
      ['concepts', 0, [1.5e300, -2, 12345678901234567890]],
    ])
  })
})

describe('vectors', () => {
  // Each case replaces the member "1":[1,0,0,0] of the valid bundle's fact_vectors (keys 0, 1,
  // 2, dimensions 4). The messages are the ones the member-by-member reader gave.
  const member = '"1":[1,0,0,0]'
  const cases: {
    name: string
    text: string
    error?: string
    depth?: string
    vectors?: number
    limits?: Partial<ReaderLimits>
  }[] = [
    { name: 'too short', text: '"1":[1,0,0]', error: 'embeddings.fact_vectors[1]: vector has 3 numbers, expected 4' },
    {
      name: 'a string',
      text: '"1":[1,0,"x",0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
    },
    {
      name: 'a string holding "]"',
      text: '"1":[1,0,"]",0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
    },
    {
      name: 'an escaped quote',
      text: '"1":[1,0,0,"a\\"b"]',
      error: 'embeddings.fact_vectors[1]: vector[3] is not a finite number',
    },
    {
      name: 'infinite',
      text: '"1":[1,0,1e999,0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
    },
    {
      name: 'a nested array',
      text: '"1":[1,0,[0],0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
      depth: 'embeddings.fact_vectors[1]: nesting deeper than 4 levels (limit)',
    },
    {
      name: 'a nested array first',
      text: '"1":[[1],0,0,0]',
      error: 'embeddings.fact_vectors[1]: vector[0] is not a finite number',
      depth: 'embeddings.fact_vectors[1]: nesting deeper than 4 levels (limit)',
    },
    {
      name: 'deep nesting',
      text: '"1":[1,0,[[[[[[0]]]]]],0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
      depth: 'embeddings.fact_vectors[1]: nesting deeper than 4 levels (limit)',
    },
    {
      name: 'an empty object',
      text: '"1":[1,0,{},0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
      depth: 'embeddings.fact_vectors[1]: nesting deeper than 4 levels (limit)',
    },
    {
      name: 'an object',
      text: '"1":[1,0,{"a":1},0]',
      error: 'embeddings.fact_vectors[1]: vector[2] is not a finite number',
      depth: 'embeddings.fact_vectors[1]: nesting deeper than 4 levels (limit)',
    },
    {
      name: 'a trailing comma',
      text: '"1":[1,0,0,0,]',
      error:
        'embeddings.fact_vectors[1]: invalid JSON (JSON Parse error: Unexpected comma at the end of array expression)',
    },
    {
      name: 'no commas',
      text: '"1":[1 0 0 0]',
      error: "embeddings.fact_vectors[1]: invalid JSON (JSON Parse error: Expected ']')",
    },
    {
      name: 'NaN',
      text: '"1":[1,0,NaN,0]',
      error: 'embeddings.fact_vectors[1]: invalid JSON (JSON Parse error: Unexpected identifier "NaN")',
    },
    {
      name: 'not ASCII',
      text: '"1":[1,0,0é,0]',
      error: "embeddings.fact_vectors[1]: invalid JSON (JSON Parse error: Unrecognized token 'é')",
    },
    { name: 'mismatched', text: '"1":[1,0,0,0}', error: 'embeddings.fact_vectors[1]: mismatched "}"' },
    { name: 'an object value', text: '"1":{"a":1}', error: 'embeddings.fact_vectors[1]: expected an array of numbers' },
    { name: 'null', text: '"1":null', error: 'embeddings.fact_vectors[1]: expected an array of numbers' },
    { name: 'a number', text: '"1":5', error: 'embeddings.fact_vectors[1]: expected an array of numbers' },
    { name: 'a leading zero', text: '"01":[1,0,0,0]', error: 'embeddings.fact_vectors: key "01" is not a row index' },
    { name: 'a negative key', text: '"-1":[1,0,0,0]', error: 'embeddings.fact_vectors: key "-1" is not a row index' },
    { name: 'an empty key', text: '"":[1,0,0,0]', error: 'embeddings.fact_vectors: key "" is not a row index' },
    {
      name: 'an unsafe key',
      text: '"12345678901234567890":[1,0,0,0]',
      error: 'embeddings.fact_vectors: key "12345678901234567890" is not a row index',
    },
    {
      name: 'a 16-digit key',
      text: '"1234567890123456":[1,0,0,0]',
      error:
        'embeddings.fact_vectors[1234567890123456]: key 1234567890123456 refers to a row that does not exist (facts has 3 rows)',
    },
    {
      name: 'a 15-digit key',
      text: '"123456789012345":[1,0,0,0]',
      error:
        'embeddings.fact_vectors[123456789012345]: key 123456789012345 refers to a row that does not exist (facts has 3 rows)',
    },
    {
      name: 'a missing comma',
      text: '"1":[1,0,0,0] "x":1',
      error: 'embeddings.fact_vectors[1]: expected "," or "}" in embeddings.fact_vectors, found "\\""',
      vectors: 2,
    },
    {
      name: 'a missing colon',
      text: '"1" [1,0,0,0]',
      error: 'embeddings.fact_vectors: expected ":" after a key, found "["',
    },
    {
      name: 'no key after a comma',
      text: '"1":[1,0,0,0],"2":[0,0,0,0],',
      error: 'embeddings.fact_vectors: expected a key, found ","',
      vectors: 3,
    },
    {
      name: 'a dangling key',
      text: '"1":[1,0,0,0],"7":[0,0,0,0]',
      error: 'embeddings.fact_vectors[7]: key 7 refers to a row that does not exist (facts has 3 rows)',
      vectors: 2,
    },
    {
      name: 'too many rows',
      text: member,
      error: 'embeddings.fact_vectors[1]: more than 22 rows and vectors in the bundle (limit)',
      limits: { maxRows: 22 },
    },
    {
      name: 'a vector over the row limit',
      text: `"1":[1,0,0,${' '.repeat(600)}0]`,
      error: 'embeddings.fact_vectors[1]: value is larger than 500 bytes (limit)',
      limits: { maxRowBytes: 500 },
    },
    {
      name: 'a key at the string limit',
      text: `"1":[1,0,0,0],"${'1'.repeat(99)}":0`,
      error: 'embeddings.fact_vectors: value is larger than 100 bytes (limit)',
      limits: { maxStringBytes: 100 },
      vectors: 2,
    },
    { name: 'spaces everywhere', text: ' "1" :\n [ 1 , 0 ,0,\t0 ] ', vectors: 5 },
    { name: 'an escaped key', text: '"\\u0031":[1,0,0,0]', vectors: 5 },
    { name: 'a repeated key', text: '"1":[1,0,0,0],"1":[0,1,0,0]', vectors: 6 },
  ]
  const bytesOf = (text: string) => new Uint8Array(Buffer.from(validBundleJson().replace(member, text)))

  for (const { name, text, error, depth, vectors = error ? 1 : 5, limits } of cases) {
    test(`${name}: the same items and error in one chunk, byte by byte, and member by member`, async () => {
      const bytes = bytesOf(text)
      const whole = await collectAll(chunked(gzipBundle(bytes), 1 << 20), limits)
      expect(whole.error).toBe(error)
      expect(whole.items.filter((item) => item.type === 'vector').length).toBe(vectors)
      // Byte by byte, members are never complete in the buffer: each is read on its own.
      expect(await collectAll(chunked(new Uint8Array(gzipSync(bytes, { level: 0 })), 1), limits)).toEqual(whole)
      // Under a depth limit of 4 every member is read on its own (the batches need 5).
      const alone = await collectAll(chunked(gzipBundle(bytes), 1 << 20), { ...limits, maxDepth: 4 })
      if (depth) expect(alone.error).toBe(depth)
      else expect(alone).toEqual(whole)
    })
  }

  test('errors at every cut of the vector maps', async () => {
    for (const name of [
      'a nested array',
      'a string holding "]"',
      'a trailing comma',
      'a missing comma',
      'a dangling key',
    ]) {
      const { text, error } = cases.find((c) => c.name === name)!
      const json = validBundleJson().replace(member, text)
      const start = json.indexOf('"fact_vectors":')
      expect((await expectSameAtEveryCut(json, start, start + 120)).error).toBe(error)
    }
  })

  test('many vectors in random chunks, and vectors longer than a chunk', async () => {
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff
    for (const [count, dimensions] of [
      [6000, 16],
      [3, 40_000],
    ] as const) {
      const bundle = validBundle()
      bundle.facts = Array.from({ length: count }, (_, i) => ({
        idx: i,
        text: `f${i}`,
        fact_kind: 'text',
        status: 'new',
        source_image_idx: -1,
      }))
      const expected = Array.from({ length: count }, () =>
        Array.from({ length: dimensions }, () => Math.fround(random() * 2 - 1)),
      )
      bundle.embeddings = {
        model: 'm',
        dimensions,
        fact_vectors: Object.fromEntries(expected.map((vector, i) => [String(i), vector])),
        concept_vectors: null,
      }
      const text = validBundleJson(bundle)
      for (const [bytes, size] of [
        [gzipBundle(text), 1 << 16],
        [new Uint8Array(gzipSync(text, { level: 0 })), () => 1 + Math.floor(random() * 5000)],
      ] as const) {
        const vectors = (await collect(chunked(bytes, size))).flatMap((item) =>
          item.type === 'vector' ? [item.vector] : [],
        )
        expect(vectors.length).toBe(count)
        expect(vectors).toEqual(expected)
      }
    }
  })
})

describe('failures that are not the data', () => {
  test("a runtime failure inside the reader surfaces as itself, not as 'gzip: corrupt data'", async () => {
    const gc = runtime.gc
    // The reader asks for a collection after every COLLECT_EVERY_BYTES decompressed: leading
    // whitespace (valid JSON) gets it there with the smallest bundle.
    runtime.gc = () => {
      throw new Error('the collector is unavailable')
    }
    try {
      const bytes = gzipSync(
        Buffer.concat([Buffer.alloc(COLLECT_EVERY_BYTES + 1, ' '), Buffer.from(validBundleJson())]),
      )
      const error = await collect(chunked(bytes, 64 * 1024), { maxCompressionRatio: Number.MAX_SAFE_INTEGER }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).not.toBeInstanceOf(BundleError)
      expect((error as Error).message).toBe('the collector is unavailable')
    } finally {
      runtime.gc = gc
    }
  })
})
