// The reader's scanner: JSON walked by hand over chunks cut anywhere, values read or skipped
// with the nesting, string, value and row limits, and the spans of an array's rows found
// without parsing them.
import { describe, expect, test } from 'bun:test'
import { OPEN_BRACKET } from '../../../src/bundle/format/read/cursor.ts'
import type { Scanner } from '../../../src/bundle/format/read/scanner.ts'
import { CHUNK_SIZES, failure, scannerOf } from './stages.ts'

/** The text of each row span of the array at the cursor, as scanRows hands them over. */
async function rowSpans(s: Scanner, strings: boolean): Promise<string[]> {
  expect(await s.nullOr(OPEN_BRACKET, 'an array')).toBe(false)
  s.pos++
  s.beginRows()
  const spans: string[] = []
  for (;;) {
    const closed = s.scanRows(strings)
    for (let k = 0; k < s.rowStarts.length; k++)
      spans.push(s.decoder.decode(s.buf.subarray(s.rowStarts[k], s.rowEnds[k])))
    s.rowStarts.length = s.rowEnds.length = 0
    if (closed) return spans
    s.holdRow()
    if (!(await s.fill())) s.truncated()
  }
}

describe('scanner stage', () => {
  test('keys, values and punctuation read the same however the text is chunked (escapes across chunks)', async () => {
    for (const size of CHUNK_SIZES) {
      const s = scannerOf('{ "a\\"b" : [1, {"c": "x\\\\"}],\n "d": true , "e": -1.5e3}  ', size)
      expect(await s.objectOpen('the object')).toBe(false)
      expect(await s.readKey(1)).toBe('a"b')
      expect(await s.readValue(1, 1000)).toEqual([1, { c: 'x\\' }])
      expect(await s.objectMore('the object')).toBe(true)
      expect(await s.readKey(1)).toBe('d')
      expect(await s.readValue(1, 1000)).toBe(true)
      expect(await s.objectMore('the object')).toBe(true)
      expect(await s.readKey(1)).toBe('e')
      expect(await s.readValue(1, 1000)).toBe(-1500)
      expect(await s.objectMore('the object')).toBe(false)
      expect(await s.peekByte()).toBe(-1)
    }
  })

  test('a skipped value is checked for nesting, bracket matching and string length, not parsed', async () => {
    for (const size of CHUNK_SIZES) {
      const skip = async (text: string, limits = {}) => {
        const s = scannerOf(text, size, limits)
        s.setContext('section')
        await s.skipValue(1)
        return s.peekByte()
      }
      expect(await skip('[[[{"a": "}]"}]]] ,', { maxDepth: 5 })).toBe(0x2c)
      expect(await failure(skip('[[[{"a": 1}]]]', { maxDepth: 4 }))).toBe(
        'section: nesting deeper than 4 levels (limit)',
      )
      expect(await failure(skip('[1, {"a": 2]]'))).toBe('section: mismatched "]"')
      expect(await failure(skip('["abcdef"]', { maxStringBytes: 5 }))).toBe(
        'section: a string is longer than 5 bytes (limit)',
      )
      expect(await skip('["abcde"] ', { maxStringBytes: 5 })).toBe(-1)
      expect(await failure(skip('[1, 2'))).toBe('bundle: truncated JSON (ended inside the bundle object)')
      expect(await failure(skip('}'))).toBe('section: expected a value, found "}"')
    }
  })

  test('a value read whole is limited in size and must be valid JSON', async () => {
    expect(await failure(scannerOf('[1,2,3]', 2).readValue(1, 4))).toBe('bundle: value is larger than 4 bytes (limit)')
    expect(await failure(scannerOf('[1,,3]', 2).readValue(1, 100))).toMatch(/^bundle: invalid JSON \(/)
    const s = scannerOf('{"a" 1}', 3)
    s.setContext('metadata')
    await s.objectOpen('metadata')
    expect(await failure(s.readKey(2))).toBe('metadata: expected ":" after a key, found "1"')
  })

  test('rows: the span of each row, whatever the chunking; bare strings only where allowed', async () => {
    const text = '[ {"a": 1, "s": "]}"} ,"body-0", {"b": [2, {"c": 3}]} ] '
    for (const size of CHUNK_SIZES) {
      expect(await rowSpans(scannerOf(text, size), true)).toEqual([
        '{"a": 1, "s": "]}"}',
        '"body-0"',
        '{"b": [2, {"c": 3}]}',
      ])
      expect(await rowSpans(scannerOf('[ ]', size), false)).toEqual([])
      const s = scannerOf(text, size)
      s.setContext('facts')
      expect(await failure(rowSpans(s, false))).toBe('facts[1]: expected an object')
    }
  })

  test('rows: separators, row size and the row count are checked where they occur', async () => {
    const rows = async (text: string, limits = {}) => {
      const s = scannerOf(text, 4, limits)
      s.setContext('facts')
      return rowSpans(s, false)
    }
    expect(await failure(rows('[{"a": 1} {"a": 2}]'))).toBe('facts[0]: expected "," or "]" after the row, found "{"')
    expect(await failure(rows('[{"a": 1},]'))).toBe('facts[1]: expected a row after ","')
    expect(await failure(rows('[{"a": 12345}]', { maxRowBytes: 8 }))).toBe(
      'facts[0]: row is larger than 8 bytes (limit)',
    )
    expect(await failure(rows('[{}, {}, {}]', { maxRows: 2 }))).toBe(
      'facts[2]: more than 2 rows and vectors in the bundle (limit)',
    )
    expect(await rows('[{}, {}]', { maxRows: 2 })).toEqual(['{}', '{}'])
  })
})
