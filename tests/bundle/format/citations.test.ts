import { describe, expect, test } from 'bun:test'
import { citedIds, portableConceptId, portableFactId, rewriteCitations } from '../../../src/bundle/format/citations.ts'

describe('portable UUIDs', () => {
  // Reference values from Python's uuid.uuid5 with the same namespace and names.
  test('are RFC 9562 version 5 UUIDs of the dedup key', () => {
    expect(portableFactId('a'.repeat(64))).toBe('1d5528bf-4dd4-52e8-8781-9a088aab75f2')
    expect(portableConceptId('München', 'Geo')).toBe('5267a1be-4907-5f0b-bc4f-73e41e8c4f74')
  })

  test('a name longer than the hashing buffer gives the same UUID as one that fits', () => {
    // 4,200 bytes of UTF-8 past the buffer of 4,096; 3,000 within it.
    expect(portableConceptId('€'.repeat(1400), 'Geo')).toBe('9151c2fe-01c0-5a77-8cc3-ba1d20e68550')
    expect(portableConceptId('€'.repeat(1000), 'Geo')).toBe('aef2a5f7-9832-5984-93d4-24c94444f82c')
  })

  test('concepts that import would merge share one', () => {
    expect(portableConceptId('Graph', 'Math')).toBe(portableConceptId('GRAPH', 'math'))
    expect(portableConceptId('Graph', 'Math')).not.toBe(portableConceptId('Graph', 'Maths'))
  })
})

describe('rewriteCitations', () => {
  const a = '0b8e2f8c-3c1d-4f6e-9a5b-1c2d3e4f5a6b'
  const b = 'A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D'
  const text = `See [the fact](<fact:${a}>), ![a figure](<fact:${b}>) and [Graphs](<concept:${a}>); [plain](https://example.com) and <fact:${a}> alone are no citations.`

  test('finds the cited UUIDs by kind, lowercased', () => {
    expect(citedIds(text)).toEqual({ fact: [a, b.toLowerCase()], concept: [a] })
  })

  test('replaces what resolves and counts what does not', () => {
    const result = rewriteCitations(text, (kind, id) =>
      kind === 'fact' && id === b.toLowerCase() ? 'new-b' : kind === 'concept' ? 'new-c' : undefined,
    )
    expect(result.text).toBe(
      `See [the fact](<fact:${a}>), ![a figure](<fact:new-b>) and [Graphs](<concept:new-c>); [plain](https://example.com) and <fact:${a}> alone are no citations.`,
    )
    expect(result).toMatchObject({ rewritten: 2, unresolved: 1 })
  })

  test('text without citations comes back unchanged', () => {
    expect(rewriteCitations('no links here', () => 'x')).toEqual({ text: 'no links here', rewritten: 0, unresolved: 0 })
  })
})
