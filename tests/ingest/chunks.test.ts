import { describe, expect, test } from 'bun:test'
import { chunkMarkdown } from '../../src/ingest/chunks.ts'

const paragraph = (word: string, count: number) => Array.from({ length: count }, (_, i) => `${word}${i}`).join(' ')

describe('chunks', () => {
  test('a heading starts a chunk and sets the path; blocks gather up to the target', () => {
    const markdown = [
      '# Guide',
      'Intro.',
      '## Install',
      'Step one.',
      'Step two.',
      '### Linux',
      'apt.',
      '## Use',
      'Run it.',
    ].join('\n\n')
    expect(chunkMarkdown(markdown, { target: 30, max: 60 })).toEqual([
      { index: 0, text: '# Guide\n\nIntro.', headingPath: ['Guide'] },
      { index: 1, text: '## Install\n\nStep one.', headingPath: ['Guide', 'Install'] },
      { index: 2, text: 'Step two.', headingPath: ['Guide', 'Install'] },
      { index: 3, text: '### Linux\n\napt.', headingPath: ['Guide', 'Install', 'Linux'] },
      { index: 4, text: '## Use\n\nRun it.', headingPath: ['Guide', 'Use'] },
    ])
  })

  test('a block past the maximum is cut: a paragraph between words, within the maximum', () => {
    const text = paragraph('word', 40)
    const chunks = chunkMarkdown(text, { target: 50, max: 80 })
    expect(chunks.map((chunk) => chunk.text).join(' ')).toBe(text)
    for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(80)
    const longHeading = chunkMarkdown(`# ${text}\n\nBody.`, { target: 50, max: 80 })
    for (const chunk of longHeading) expect(chunk.text.length).toBeLessThanOrEqual(80)
    expect(
      longHeading
        .map((chunk) => chunk.text)
        .join(' ')
        .replace(/\n\n/g, ' '),
    ).toBe(`# ${text} Body.`)
    expect(chunks.every((chunk) => !chunk.text.startsWith(' ') && !/\bwor$|^d\d/.test(chunk.text))).toBe(true)
  })

  test('a long table is cut between rows, each piece with its header; a long code block is re-fenced', () => {
    const rows = Array.from({ length: 8 }, (_, i) => `| row ${i} | value ${i} |`)
    const table = ['| name | value |', '| --- | --- |', ...rows].join('\n')
    const tableChunks = chunkMarkdown(table, { target: 80, max: 120 })
    expect(tableChunks.map((chunk) => chunk.text)).toEqual([
      ['| name | value |', '| --- | --- |', rows[0], rows[1]].join('\n'),
      ['| name | value |', '| --- | --- |', rows[2], rows[3]].join('\n'),
      ['| name | value |', '| --- | --- |', rows[4], rows[5]].join('\n'),
      ['| name | value |', '| --- | --- |', rows[6], rows[7]].join('\n'),
    ])
    const code = ['```ts', ...Array.from({ length: 6 }, (_, i) => `const line${i} = ${i}`), '```'].join('\n')
    expect(chunkMarkdown(code, { target: 50, max: 70 }).map((chunk) => chunk.text)).toEqual([
      '```ts\nconst line0 = 0\nconst line1 = 1\n```',
      '```ts\nconst line2 = 2\nconst line3 = 3\n```',
      '```ts\nconst line4 = 4\nconst line5 = 5\n```',
    ])
  })

  test('a fenced block is one block, blank lines and heading-like lines inside it included', () => {
    const markdown = 'Before.\n\n```\n# not a heading\n\nstill code\n```\n\nAfter.'
    expect(chunkMarkdown(markdown)).toEqual([{ index: 0, text: markdown, headingPath: [] }])
  })

  test('stable: the same Markdown gives the same chunks; an edit in one section leaves the others as they were', () => {
    const sections = ['# A', paragraph('alpha', 150), '# B', paragraph('beta', 150), '# C', paragraph('gamma', 150)]
    const before = chunkMarkdown(sections.join('\n\n'))
    expect(chunkMarkdown(sections.join('\n\n'))).toEqual(before)
    const edited = [...sections]
    edited[3] = `Inserted sentence. ${edited[3]}`
    const after = chunkMarkdown(edited.join('\n\n'))
    const textsOf = (chunks: typeof before, heading: string) =>
      chunks.filter((chunk) => chunk.headingPath[0] === heading).map((chunk) => chunk.text)
    expect(textsOf(after, 'A')).toEqual(textsOf(before, 'A'))
    expect(textsOf(after, 'C')).toEqual(textsOf(before, 'C'))
    expect(textsOf(after, 'B')).not.toEqual(textsOf(before, 'B'))
    for (const chunk of after) expect(chunk.text.length).toBeLessThanOrEqual(3000)
  })

  test('page markers give a PDF chunk its pages, and mean nothing in other Markdown', () => {
    const markdown = '<!-- page 1 -->\n\nOne.\n\n<!-- page 2 -->\n\nTwo.\n\n<!-- page 3 -->\n\n<!-- page 4 -->\n\nFour.'
    expect(chunkMarkdown(markdown, { pages: true, target: 40 })).toEqual([
      { index: 0, text: 'One.\n\n<!-- page 2 -->\n\nTwo.', headingPath: [], pageStart: 1, pageEnd: 2 },
      { index: 1, text: 'Four.', headingPath: [], pageStart: 4, pageEnd: 4 },
    ])
    expect(chunkMarkdown(markdown, { target: 20 }).map((chunk) => chunk.pageStart)).toEqual([
      undefined,
      undefined,
      undefined,
    ])
  })
})
