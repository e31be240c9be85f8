// A chunk's Markdown reduced to its prose (src/extract/markdown.ts): what is kept, one line per
// block, and what is not prose at all.
import { describe, expect, test } from 'bun:test'
import { proseBlocks } from '../../src/extract/markdown.ts'

describe('proseBlocks', () => {
  test('paragraphs, list items and quotes are kept, each on one line, their syntax taken off', () => {
    const markdown = [
      'A paragraph wrapped\nover two lines, with ~~struck~~ and __strong__ words.',
      '- A list item\n  continued on the next line.\n- Another item.',
      '3) A numbered item.',
      '> > A nested quote\n> that goes on.',
      'Escaped \\*stars\\* and a <span class="x">tag</span>, an <https://example.org> link and a [reference][1].',
      'Code spans keep what is inside them: `repos/<id>/images`.',
    ].join('\n\n')
    expect(proseBlocks(markdown)).toEqual([
      'A paragraph wrapped over two lines, with struck and strong words.',
      'A list item continued on the next line.',
      'Another item.',
      'A numbered item.',
      'A nested quote that goes on.',
      'Escaped *stars* and a tag , an https://example.org link and a reference.',
      'Code spans keep what is inside them: repos/<id>/images.',
    ])
  })

  test('headings, rules, tables, code, comments, images, captions, link definitions and contents lines are not prose', () => {
    const markdown = [
      '# A heading',
      'An underlined heading\n---',
      'Another one\n===',
      '***',
      '| a | b |\n|---|---|\n| 1 | 2 |',
      '```\nfenced code\n```',
      '~~~\nunclosed fence runs to the end of the chunk',
    ]
    const before = [
      '<!-- page 3 -->',
      '<!-- a comment\nover lines -->',
      '    indented code',
      '![an image](a.png)',
      '*A caption in emphasis.*',
      '[1]: https://example.org/ref',
      '- [Introduction](#intro)',
      'Chapter one ........ 12',
    ]
    expect(proseBlocks([...before, 'The one paragraph of prose.', ...markdown].join('\n\n'))).toEqual([
      'The one paragraph of prose.',
    ])
  })

  test('control characters a binary file leaves are removed', () => {
    expect(proseBlocks('Some\u0000 text\u0007 with\ufffd controls\u009b.')).toEqual(['Some text with controls.'])
  })
})
