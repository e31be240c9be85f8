// References between sections: to an earlier row of the same section, to a row of a section
// read, or remembered (the largest index) until the section it points into ends.
import { describe, expect, test } from 'bun:test'
import { References } from '../../../src/bundle/format/read/references.ts'

describe('references', () => {
  test('within the section being read, a reference must point back', () => {
    const refs = new References()
    refs.current = 'reports'
    refs.currentPosition = 1
    expect(refs.check('reports', 0, 'parent_idx')).toBeUndefined()
    expect(refs.check('reports', 1, 'parent_idx')).toBe(
      'parent_idx 1 does not refer to an earlier row (parent must precede)',
    )
    expect(refs.zeroExists('reports')).toBe(true)
    refs.currentPosition = 0
    expect(refs.zeroExists('reports')).toBe(false)
  })

  test('into a section read, the index must be one of its rows', () => {
    const refs = new References()
    refs.sectionEnded('facts', 2)
    refs.sectionEnded('concepts', 0)
    expect(refs.check('facts', 1, 'fact_idx')).toBeUndefined()
    expect(refs.check('facts', 2, 'fact_idx')).toBe('fact_idx 2 refers to a row that does not exist (facts has 2 rows)')
    expect(refs.zeroExists('facts')).toBe(true)
    expect(refs.zeroExists('concepts')).toBe(false)
    expect(refs.zeroExists('sources')).toBe(true)
  })

  test('into a section to come, the largest index is checked when it ends, or at the end of the document', () => {
    const refs = new References()
    refs.currentLabel = 'facts'
    for (const [position, index] of [
      [1, 4],
      [3, 5],
      [6, 2],
    ] as const) {
      refs.currentPosition = position
      expect(refs.check('source_images', index, 'source_image_idx')).toBeUndefined()
    }
    expect(() => refs.sectionEnded('source_images', 5)).toThrow(
      'facts[3]: source_image_idx 5 refers to a row that does not exist (source_images has 5 rows)',
    )

    const fits = new References()
    fits.currentLabel = 'facts'
    fits.check('source_images', 5, 'source_image_idx')
    fits.sectionEnded('source_images', 6)
    fits.end()

    const never = new References()
    never.currentLabel = 'facts'
    never.check('source_images', 0, 'source_image_idx')
    expect(() => never.end()).toThrow(
      'facts[0]: source_image_idx 0 refers to a row that does not exist (source_images has 0 rows)',
    )
  })
})
