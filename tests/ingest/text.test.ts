import { describe, expect, test } from 'bun:test'
import { micromark } from 'micromark'
import { readDocument } from '../../src/ingest/read.ts'
import { plainTextToMarkdown } from '../../src/ingest/text.ts'

const encode = (text: string) => new TextEncoder().encode(text)

describe('plain text', () => {
  test('becomes Markdown paragraphs that render as the same text, never as markup', async () => {
    const text =
      'Notes for Monday\r\n\r\n# not a heading\n* not a list, 2 * 3 = 6\n1. not a list either\n    not code\n\n<script>alert(1)</script> &amp; [a](javascript:x) `tick` a_b_c | pipe ~ tilde\n\n\n\nLast line\n'
    const document = await readDocument({ bytes: encode(text), contentType: 'text/plain' })
    expect(document.kind).toBe('text')
    expect(document.title).toBe('Notes for Monday')
    expect(document.text).toBe(text.replace(/\r\n/g, '\n'))
    expect(document.markdown).toBe(
      'Notes for Monday\n\n\\# not a heading\n\\* not a list, 2 \\* 3 = 6\n1\\. not a list either\nnot code\n\n\\<script\\>alert(1)\\</script\\> \\&amp; \\[a\\](javascript:x) \\`tick\\` a\\_b\\_c \\| pipe \\~ tilde\n\nLast line',
    )
    // Rendered, even by a renderer that lets raw HTML through, it is the text and no element but paragraphs.
    const html = micromark(document.markdown, { allowDangerousHtml: true })
    expect(html).toBe(
      '<p>Notes for Monday</p>\n<p># not a heading\n* not a list, 2 * 3 = 6\n1. not a list either\nnot code</p>\n<p>&lt;script&gt;alert(1)&lt;/script&gt; &amp;amp; [a](javascript:x) `tick` a_b_c | pipe ~ tilde</p>\n<p>Last line</p>',
    )
    expect(document.chunks).toEqual([{ index: 0, text: document.markdown, headingPath: [] }])
  })

  test('a setext underline or a thematic break in text stays text', () => {
    expect(plainTextToMarkdown('Title\n=====\n---\n+ plus')).toBe('Title\n\\=====\n\\---\n\\+ plus')
  })
})

describe('Markdown', () => {
  test('is kept as it is; its title is its first heading; its text is what it renders to', async () => {
    const markdown =
      'Intro line\n\n```\n# not the title\n```\n\n## Setup ##\n\nRun **this** and [read](https://example.org).\n\n<b onclick="x()">raw</b>\n'
    const document = await readDocument({ bytes: encode(markdown), fileName: 'README.md' })
    expect(document.kind).toBe('markdown')
    expect(document.title).toBe('Setup')
    expect(document.markdown).toBe(markdown)
    // micromark escapes raw HTML, so the text holds it as written, as text.
    expect(document.text).toBe(
      'Intro line\n\n# not the title\n\nSetup\n\nRun this and read.\n\n<b onclick="x()">raw</b>',
    )
    expect(document.chunks.map(({ text, headingPath }) => ({ text, headingPath }))).toEqual([
      { text: 'Intro line\n\n```\n# not the title\n```', headingPath: [] },
      {
        text: '## Setup ##\n\nRun **this** and [read](https://example.org).\n\n<b onclick="x()">raw</b>',
        headingPath: ['Setup'],
      },
    ])
  })

  test('a setext heading, else the first line, is the title', async () => {
    const setext = await readDocument({ bytes: encode('Big Title\n=========\n\nBody.'), contentType: 'text/markdown' })
    expect(setext.title).toBe('Big Title')
    const plain = await readDocument({ bytes: encode('> Quoted opening\n\nBody.'), contentType: 'text/markdown' })
    expect(plain.title).toBe('Quoted opening')
  })
})
