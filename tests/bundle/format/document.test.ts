// The reader's document stage over decompressed text: the top-level object walked, each
// section handed to its stage, rows assembled (bare body refs, unknown fields dropped, batches
// before a bad row first), and the document-wide rules.
import { describe, expect, test } from 'bun:test'
import { DocumentReader } from '../../../src/bundle/format/read/document.ts'
import { newReaderStats } from '../../../src/bundle/format/read/items.ts'
import { readBundle } from '../../../src/bundle/format/reader.ts'
import { gzipBundle, validBundle, validBundleJson } from '../../helpers/broken-bundles.ts'
import { CHUNK_SIZES, chunksOf, drain, limitsWith } from './stages.ts'

type Obj = Record<string, unknown>

function documentOf(text: string, size = 1 << 16) {
  const stats = newReaderStats()
  return { batches: new DocumentReader(chunksOf(text, size), limitsWith(), stats).run(), stats }
}

/** readBundle's items in batches of one, for drain. */
async function* oneByOne(items: AsyncIterable<unknown>) {
  for await (const item of items) yield [item] as never
}

const derived = (mutate: (bundle: Obj) => void) => {
  const bundle = validBundle()
  mutate(bundle)
  return JSON.stringify(bundle)
}

describe('document stage', () => {
  test('a whole bundle gives the reader’s items, whatever the chunking', async () => {
    const expected = await drain(oneByOne(readBundle(chunksOf(gzipBundle(validBundleJson()), 1 << 16))))
    expect(expected.error).toBeUndefined()
    for (const size of [7, 1 << 16]) {
      const { batches, stats } = documentOf(validBundleJson(), size)
      expect(await drain(batches)).toEqual(expected)
      expect(stats.rows.facts).toBe(3)
      expect(Object.keys(stats.sectionBytes)).toEqual(Object.keys(validBundle()))
    }
  })

  test('rows: a bare body ref becomes a row, unknown fields are dropped', async () => {
    const text = derived((b) => {
      b.source_bodies = ['body-0']
      ;(b.concepts as Obj[])[0]!.extra = { nested: [1] }
    })
    const { items } = await drain(documentOf(text).batches)
    const rows = (section: string) =>
      items.flatMap((item) => ((item as Obj).section === section ? [(item as Obj).row] : []))
    expect(rows('source_bodies')).toEqual([{ source_idx: 0, body_ref: 'body-0' }])
    expect(rows('concepts')).toEqual([
      { idx: 0, canonical_name: 'Rain', context: 'weather' },
      { idx: 1, canonical_name: 'Snow', context: '', description: 'frozen' },
    ])
  })

  test('rows: the good rows of a batch come before the bad one, which is named by its position', async () => {
    for (const size of CHUNK_SIZES) {
      const text = derived((b) => ((b.facts as Obj[])[2]!.status = 7))
      const { items, error } = await drain(documentOf(text, size).batches)
      expect(error).toMatch(/^facts\[2\]: status /)
      expect(items.filter((item) => (item as Obj).section === 'facts').map((item) => (item as Obj).position)).toEqual([
        0, 1,
      ])
    }
    const unparsable = validBundleJson().replace('{"idx":1,"text":"A picture', '{"idx":1,"text":"A picture",,"x":"')
    expect((await drain(documentOf(unparsable).batches)).error).toMatch(/^facts\[1\]: invalid JSON \(/)
  })

  test('the rules of the whole document', async () => {
    const error = async (text: string) => (await drain(documentOf(text).batches)).error
    expect(await error('')).toBe('bundle: empty document (expected a JSON object)')
    expect(await error('[]')).toBe('bundle: expected a JSON object at the top level, found "["')
    expect(await error('{"facts": []}')).toBe('bundle: schema_version is missing (it must come before facts)')
    expect(await error('{"schema_version": 2, "x": {"y": [1]}}')).toBe('bundle: metadata is missing')
    expect(await error('{"schema_version": 3}')).toBe(
      'bundle: schema_version 3 is not supported (this reader reads versions 1 and 2)',
    )
    expect(await error(`${validBundleJson()} x`)).toBe('bundle: trailing data after the bundle object')
    expect(await error(validBundleJson().replace('"facts":[', '"facts":[],"facts":['))).toBe(
      'facts: the section appears twice',
    )
    expect(await error(derived((b) => delete b.source_images))).toBe(
      'facts[1]: source_image_idx 0 refers to a row that does not exist (source_images has 0 rows)',
    )
  })
})
