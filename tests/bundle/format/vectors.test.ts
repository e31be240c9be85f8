// The reader's vector stage: the embeddings section's model and dimensions, then its vectors,
// the same items and errors whether the members are parsed in batches or read one by one.
import { describe, expect, test } from 'bun:test'
import { newReaderStats, type ReaderLimits } from '../../../src/bundle/format/read/items.ts'
import { References } from '../../../src/bundle/format/read/references.ts'
import { VectorDecoder } from '../../../src/bundle/format/read/vectors.ts'
import { CHUNK_SIZES, drain, scannerOf } from './stages.ts'

function decoder(text: string, size: number, limits?: Partial<ReaderLimits>) {
  const refs = new References()
  const stats = newReaderStats()
  return { vectors: new VectorDecoder(scannerOf(text, size, limits), refs, stats), refs, stats }
}

const embeddings = (maps: string) => `{"model": "m", "dimensions": 2, ${maps}}`

describe('vector stage', () => {
  const text = embeddings(
    '"fact_vectors": {"0": [1, 2], "1" : [3.5,-4] }, "other": {"x": [1]}, "concept_vectors": {"0": [0, 1e-3]}',
  )
  const expected = [
    { type: 'embeddings', model: 'm', dimensions: 2 },
    { type: 'vector', target: 'facts', index: 0, vector: [1, 2] },
    { type: 'vector', target: 'facts', index: 1, vector: [3.5, -4] },
    { type: 'vector', target: 'concepts', index: 0, vector: [0, 0.001] },
  ]

  test('the same items in batches, member by member (chunks cut inside members, or a depth limit under 5), and in other forms', async () => {
    for (const size of CHUNK_SIZES) {
      const { vectors, stats } = decoder(text, size)
      expect(await drain(vectors.section())).toEqual({ items: expected })
      expect(stats.vectors).toBe(3)
      expect(await drain(decoder(text, size, { maxDepth: 4 }).vectors.section())).toEqual({ items: expected })
    }
    // An escaped key and a nested array are read on their own: the first is a vector, the second is not.
    const other = embeddings(
      '"fact_vectors": {"\\u0030": [1, 2], "1": [3.5, -4]}, "concept_vectors": {"0": [0, 0.001]}',
    )
    expect(await drain(decoder(other, 1 << 16).vectors.section())).toEqual({ items: expected })
    const nested = embeddings('"fact_vectors": {"0": [1, 2], "1": [[3], 4]}')
    expect(await drain(decoder(nested, 1 << 16).vectors.section())).toEqual({
      items: expected.slice(0, 2),
      error: 'embeddings.fact_vectors[1]: vector[0] is not a finite number',
    })
  })

  test('a bad vector fails after the ones before it, with its position', async () => {
    const problem = async (maps: string) => drain(decoder(embeddings(maps), 1 << 16).vectors.section())
    expect(await problem('"fact_vectors": {"0": [1, 2], "1": [1, 2, 3]}')).toEqual({
      items: expected.slice(0, 2),
      error: 'embeddings.fact_vectors[1]: vector has 3 numbers, expected 2',
    })
    expect((await problem('"fact_vectors": {"0": [1, null]}')).error).toBe(
      'embeddings.fact_vectors[0]: vector[1] is not a finite number',
    )
    expect((await problem('"fact_vectors": {"01": [1, 2]}')).error).toBe(
      'embeddings.fact_vectors: key "01" is not a row index',
    )
    expect((await problem('"fact_vectors": {"0": [1, 2]}, "model": "n"')).error).toBe(
      'embeddings: model must come before the vectors',
    )
    expect((await drain(decoder('{"fact_vectors": {"0": [1, 2]}}', 1 << 16).vectors.section())).error).toBe(
      'embeddings.fact_vectors: model and dimensions must come before fact_vectors',
    )
  })

  test('keys are row references: checked against a section read, deferred for one to come', async () => {
    const read = decoder(text, 1 << 16)
    read.refs.sectionEnded('facts', 1)
    expect(await drain(read.vectors.section())).toEqual({
      items: expected.slice(0, 2),
      error: 'embeddings.fact_vectors[1]: key 1 refers to a row that does not exist (facts has 1 row)',
    })
    const toCome = decoder(text, 1 << 16)
    expect((await drain(toCome.vectors.section())).items).toEqual(expected)
    expect(() => toCome.refs.end()).toThrow(
      'embeddings.fact_vectors[1]: key 1 refers to a row that does not exist (facts has 0 rows)',
    )
  })
})
