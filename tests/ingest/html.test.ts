import { describe, expect, test } from 'bun:test'
import { micromark } from 'micromark'
import { readDocument } from '../../src/ingest/read.ts'

const encode = (text: string) => new TextEncoder().encode(text)
const readHtml = (html: string, url?: string, maxImages?: number) =>
  readDocument(
    { bytes: encode(html), contentType: 'text/html; charset=utf-8', url },
    maxImages === undefined ? {} : { maxImages },
  )

const LOREM = 'Readers of this article learn how rivers carve valleys over long spans of time. '.repeat(4)

describe('a web page', () => {
  test('its article in Markdown: headings, lists, code, tables, links kept; images resolved; the JSON-LD date', async () => {
    const html = `<html><head><title>Guide | Site</title><meta property="og:image" content="/cover.jpg">
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"WebPage"},{"@type":"Article","datePublished":"2023-11-02T08:00:00+01:00"}]}</script></head>
<body><nav><a href="/">Home</a></nav><article><h2>Install</h2><p>Run the <code>install</code> command, then see <a href="https://example.org/docs" title="Docs">the docs</a>. It takes a minute or two on most machines and needs no configuration at all.</p>
<ol><li>Download</li><li>Unpack <em>it</em></li></ol><pre><code>kgs serve\nkgs ingest</code></pre><h3>Table</h3>
<table><thead><tr><th>Name</th><th>Size</th></tr></thead><tbody><tr><td><strong>a</strong></td><td>1<br>2</td></tr><tr><td>b|c</td></tr></tbody></table>
<p><img src="one.png" width="640" height="480" alt="One"><img src="two.png"><img src="three.png"></p></article></body></html>`
    const document = await readHtml(html, 'https://site.example/guide/')
    expect(document.kind).toBe('web')
    expect(document.title).toBe('Guide | Site')
    expect(document.publishedAt).toBe('2023-11-02')
    expect(document.markdown).toBe(
      [
        '## Install',
        'Run the `install` command, then see [the docs](https://example.org/docs "Docs"). It takes a minute or two on most machines and needs no configuration at all.',
        '1.  Download\n2.  Unpack _it_',
        '```\nkgs serve\nkgs ingest\n```',
        '### Table',
        '| Name | Size |\n| --- | --- |\n| **a** | 1 2 |\n| b\\|c |  |',
        '![One](https://site.example/guide/one.png)![](https://site.example/guide/two.png)![](https://site.example/guide/three.png)',
      ].join('\n\n'),
    )
    expect(document.text).toBe(
      'Install\n\nRun the install command, then see the docs. It takes a minute or two on most machines and needs no configuration at all.\n\nDownload\n\nUnpack it\n\nkgs serve\nkgs ingest\n\nTable\n\nName\tSize\n\na\t1\n2\n\nb|c',
    )
    expect(document.images).toEqual([
      { position: 0, url: 'https://site.example/cover.jpg' },
      { position: 1, url: 'https://site.example/guide/one.png', altText: 'One', width: 640, height: 480 },
      { position: 2, url: 'https://site.example/guide/two.png' },
      { position: 3, url: 'https://site.example/guide/three.png' },
    ])
    expect(document.chunks.map(({ index, headingPath }) => ({ index, headingPath }))).toEqual([
      { index: 0, headingPath: ['Install'] },
      { index: 1, headingPath: ['Install', 'Table'] },
    ])
    expect(document.warnings).toEqual([])

    const bounded = await readHtml(html, 'https://site.example/guide/', 2)
    expect(bounded.images.map((image) => image.url)).toEqual([
      'https://site.example/cover.jpg',
      'https://site.example/guide/one.png',
    ])
    expect(bounded.warnings.map((warning) => warning.code)).toEqual(['images_dropped'])
  })

  test('published_at: article:published_time first, then <time datetime> in the article; none when the page says none', async () => {
    const body = `<article><h2>News</h2><p>${LOREM}</p><p><time datetime="2021-07-09T12:00:00Z">9 July</time></p></article>`
    const meta = await readHtml(
      `<html><head><meta property="article:published_time" content="2022-02-03"></head><body>${body}</body></html>`,
    )
    expect(meta.publishedAt).toBe('2022-02-03')
    const time = await readHtml(`<html><body>${body}</body></html>`)
    expect(time.publishedAt).toBe('2021-07-09')
    const nested = await readHtml(
      `<html><head><script type="application/ld+json">{"@type":"WebPage","mainEntity":{"@type":"NewsArticle","datePublished":"2019-04-05"}}</script></head><body>${body}</body></html>`,
    )
    expect(nested.publishedAt).toBe('2019-04-05')
    const none = await readHtml(`<html><body><article><p>${LOREM}</p></article></body></html>`)
    expect(none.publishedAt).toBeNull()
    const invalid = await readHtml(
      `<html><head><meta property="article:published_time" content="2022-02-30"></head><body><p>${LOREM}</p></body></html>`,
    )
    expect(invalid.publishedAt).toBeNull()
  })

  test('hostile HTML: no script, handler, frame, style or javascript: URL reaches the Markdown or the text', async () => {
    const hostile = `<!doctype html><html><head><title>Rivers</title><base href="javascript:alert(1)//"><meta http-equiv="refresh" content="0;url=javascript:alert(1)">
<style>body{background:url(javascript:alert(1))}</style><script>document.write('<p>injected</p>')</script></head>
<body onload="alert(1)"><article><h1 onmouseover="alert(1)">Rivers</h1>
<p>${LOREM}<a href="javascript:alert(1)">one</a> <a href=" JaVa&#x0A;ScRiPt:alert(1)">two</a> <a href="vbscript:msgbox(1)">three</a> <a href="data:text/html,<script>alert(1)</script>">four</a> <a href="/safe">five</a></p>
<img src="x" onerror="alert(1)" alt="broken"><img src="data:image/png;base64,AAAA" alt="inline"><svg onload="alert(1)"><script>alert(1)</script></svg>
<iframe src="https://evil.example/"></iframe><object data="x.swf"></object><embed src="x.swf"><form action="javascript:alert(1)"><input value="x"><button formaction="javascript:alert(1)">go</button></form>
<p style="color:red" onclick="alert(1)">Text that says &lt;script&gt;alert(1)&lt;/script&gt; and &amp;lt;b&amp;gt; stays text. ${LOREM}</p>
<noscript><img src="tracker.gif"></noscript><template><script>alert(1)</script></template></article></body></html>`
    const document = await readHtml(hostile, 'https://news.example/2024/rivers.html')
    const paragraph = LOREM.trim()
    // The escaped text stays text: `\<` is a literal `<` in Markdown, never a tag.
    expect(document.markdown).toBe(
      `${paragraph} one two three four [five](https://news.example/safe)\n\n![broken](https://news.example/2024/x)\n\nText that says \\<script\\>alert(1)\\</script\\> and \\&lt;b\\&gt; stays text. ${paragraph}`,
    )
    // The plain text holds what a reader saw, the words "<script>" included, and nothing the page ran.
    expect(document.text).toBe(
      `${paragraph} one two three four five\n\nText that says <script>alert(1)</script> and &lt;b&gt; stays text. ${paragraph}`,
    )
    for (const output of [document.markdown, ...document.chunks.map((chunk) => chunk.text)]) {
      expect(output).not.toMatch(
        /(?<!\\)<(script|iframe|style|svg|object|embed|form|img|a)\b|on\w+=|javascript:|vbscript:|data:|injected|tracker|evil/i,
      )
    }
    // Even a renderer that lets raw HTML through makes nothing active of it.
    const rendered = micromark(document.markdown, { allowDangerousHtml: true })
    expect(rendered).not.toMatch(/<(script|iframe|style|svg|object|embed|form)\b|\son\w+=|javascript:/i)
    expect(rendered).toContain('Text that says &lt;script&gt;alert(1)&lt;/script&gt;')
    expect(document.images).toEqual([{ position: 0, url: 'https://news.example/2024/x', altText: 'broken' }])
  })

  test('a page built by scripts reads empty, and says why', async () => {
    const document = await readHtml(
      '<!doctype html><html><head><title>App</title></head><body><div id="root"></div><script src="/app.js"></script></body></html>',
    )
    expect([document.title, document.text, document.markdown, document.chunks]).toEqual(['App', '', '', []])
    expect(document.warnings.map((warning) => warning.code)).toEqual(['no_article', 'empty_page'])
  })

  test('a short page without an article is read whole', async () => {
    const document = await readHtml('<html><head><title>Short</title></head><body><p>Just one line.</p></body></html>')
    expect([document.title, document.text, document.markdown]).toEqual(['Short', 'Just one line.', 'Just one line.'])
    expect(document.chunks).toEqual([{ index: 0, text: 'Just one line.', headingPath: [] }])
  })
})
