// The built-in extractor on documents written here, with the facts and concepts each must yield
// written beside them; what it leaves out; that it is deterministic and bounded; and hostile input.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { LABELLED_DOCUMENTS } from '../../scripts/bench/fixtures/extract-documents.ts'
import { BUILTIN_DESCRIPTION, builtinExtractor, DEFAULT_BUILTIN_LIMITS } from '../../src/extract/builtin.ts'
import type { ExtractChunk, Extraction } from '../../src/extract/extractor.ts'
import { chunkMarkdown } from '../../src/ingest/chunks.ts'
import { rejected } from '../helpers/promises.ts'

const extractor = builtinExtractor()

/** What an extraction says, readably: each fact as [chunk, text], each concept with the texts of its facts. */
function readable(extraction: Extraction) {
  return {
    facts: extraction.facts.map((fact) => [fact.chunk_index, fact.text]),
    concepts: extraction.concepts.map((concept) => ({
      name: concept.canonical_name,
      aliases: concept.aliases,
      facts: concept.facts.map((index) => extraction.facts[index]!.text),
    })),
  }
}

const extractMarkdown = (markdown: string) => extractor.extract(chunkMarkdown(markdown))
const factTexts = async (markdown: string) => (await extractMarkdown(markdown)).facts.map((fact) => fact.text)

describe('the built-in extractor', () => {
  test('a short article: its statements are the facts, its recurring phrases and entities the concepts', async () => {
    const markdown = `# The Write-Ahead Log

The Write-Ahead Log (WAL) records every change before it reaches the data files. PostgreSQL writes WAL records to disk before it changes the data files.

After a crash, PostgreSQL replays the WAL from the last checkpoint. A checkpoint flushes dirty pages to the data files. Checkpoints happen every five minutes by default.
`
    const wal = 'The Write-Ahead Log (WAL) records every change before it reaches the data files.'
    const writes = 'PostgreSQL writes WAL records to disk before it changes the data files.'
    const replays = 'After a crash, PostgreSQL replays the WAL from the last checkpoint.'
    const flushes = 'A checkpoint flushes dirty pages to the data files.'
    const often = 'Checkpoints happen every five minutes by default.'
    expect(readable(await extractMarkdown(markdown))).toEqual({
      facts: [wal, writes, replays, flushes, often].map((text) => [0, text]),
      concepts: [
        { name: 'Write-Ahead Log', aliases: ['WAL'], facts: [wal, writes, replays] },
        { name: 'data file', aliases: ['data files'], facts: [wal, writes, flushes] },
        { name: 'PostgreSQL', aliases: [], facts: [writes, replays] },
        { name: 'checkpoint', aliases: ['Checkpoints'], facts: [replays, flushes, often] },
      ],
    })
  })

  test('named entities are concepts at one mention; a common noun must recur in two facts', async () => {
    const markdown = `Diego Ongaro and John Ousterhout designed Raft at Stanford University. A Raft cluster elects one leader from its servers. The leader accepts log entries from clients, and the leader replicates them to the other servers.`
    const designed = 'Diego Ongaro and John Ousterhout designed Raft at Stanford University.'
    const elects = 'A Raft cluster elects one leader from its servers.'
    const accepts = 'The leader accepts log entries from clients, and the leader replicates them to the other servers.'
    expect(readable(await extractMarkdown(markdown))).toEqual({
      facts: [designed, elects, accepts].map((text) => [0, text]),
      concepts: [
        { name: 'Diego Ongaro', aliases: [], facts: [designed] },
        { name: 'John Ousterhout', aliases: [], facts: [designed] },
        { name: 'Raft', aliases: [], facts: [designed, elects] },
        { name: 'Stanford University', aliases: [], facts: [designed] },
        { name: 'leader', aliases: [], facts: [elects, accepts] },
        { name: 'server', aliases: ['servers'], facts: [elects, accepts] },
      ],
    })
  })

  test('an acronym defined once names its concept wherever it is written alone', async () => {
    const defines = 'The Write-Ahead Log (WAL) records every change.'
    const alone = 'PostgreSQL writes the WAL to disk.'
    const elsewhere = 'Large Language Models (LLMs) answer questions, and the WAL keeps its records.'
    expect(readable(await extractMarkdown(`${defines} ${alone}\n\n${elsewhere}`))).toEqual({
      facts: [defines, alone, elsewhere].map((text) => [0, text]),
      concepts: [
        { name: 'Write-Ahead Log', aliases: ['WAL'], facts: [defines, alone, elsewhere] },
        { name: 'PostgreSQL', aliases: [], facts: [alone] },
        { name: 'Large Language Models', aliases: ['LLMs'], facts: [elsewhere] },
      ],
    })
  })

  test('each fact cites the chunk it comes from; chunks are read in index order and a repeated sentence is one fact', async () => {
    const chunks: ExtractChunk[] = [
      { index: 2, text: 'The third chunk says that rivers carve valleys.' },
      { index: 0, text: 'The first chunk says that rivers carve valleys.' },
      { index: 1, text: 'The first chunk says that rivers carve valleys. Glaciers also carve valleys slowly.' },
    ]
    expect(readable(await extractor.extract(chunks)).facts).toEqual([
      [0, 'The first chunk says that rivers carve valleys.'],
      [1, 'Glaciers also carve valleys slowly.'],
      [2, 'The third chunk says that rivers carve valleys.'],
    ])
  })

  test('Markdown syntax is taken off and the words kept', async () => {
    expect(
      await factTexts(
        'The **buffer pool** keeps [recent pages](https://example.org/pages "pages") in `memory` for _later_ reads.[^1] It is sized by the &quot;shared_buffers&quot; setting.\n\n> A quoted paragraph is still the document&#39;s own text.',
      ),
    ).toEqual([
      'The buffer pool keeps recent pages in memory for later reads.',
      'It is sized by the "shared_buffers" setting.',
      "A quoted paragraph is still the document's own text.",
    ])
  })

  test('headings, tables of contents, captions, tables, code, questions, instructions, fragments and boilerplate are left out', async () => {
    const markdown = `Skip to content

[Home](/) | [Blog](/blog)

# Storage engines keep their data in files on disk.

Storage engines
===============

## Contents

- [Introduction](#introduction)
- [The log](#the-log)
1. Introduction ........ 3

![The log in front of the data files.](wal.png)

*Figure 1: the log sits in front of the data files.*

Table 2: Settings of the engine and their defaults.

| setting | meaning |
|---|---|
| Every row of this table is a sentence too. | no |

\`\`\`text
The code block says things as well.
\`\`\`

    An indented line of code that says something too.

Does the engine flush its pages on every commit?

Run the checkpoint command after a bulk load.

the engine flushes its pages at a checkpoint and

Tables, rows and columns in the files.

Cookie policy

This site uses cookies to improve your experience.

© 2026 Example Corp. All rights reserved.

Subscribe to our newsletter for weekly updates.

The engine keeps its tables in data files.`
    expect(await factTexts(markdown)).toEqual(['The engine keeps its tables in data files.'])
  })

  test('a sentence past the length bound is left out, not cut; a short one is a fragment', async () => {
    const long = `The engine ${'writes and rereads and '.repeat(30)}flushes pages.`
    expect(long.length).toBeGreaterThan(DEFAULT_BUILTIN_LIMITS.maxFactChars)
    expect(await factTexts(`${long} It was fast. The engine flushes its pages at a checkpoint.`)).toEqual([
      'The engine flushes its pages at a checkpoint.',
    ])
  })

  test('the same chunks give the same output, byte for byte, from one extractor or another', async () => {
    const markdown = LABELLED_DOCUMENTS.map((document) => document.markdown).join('\n\n')
    const first = JSON.stringify(await extractMarkdown(markdown))
    expect(first).toContain('"facts":[{')
    expect(JSON.stringify(await extractMarkdown(markdown))).toBe(first)
    expect(JSON.stringify(await builtinExtractor().extract(chunkMarkdown(markdown)))).toBe(first)
  })

  test('what was read before changes nothing: the same document gives the same output before and after others', async () => {
    // wink-nlp learns the words it meets, and splits a word it has not met otherwise than one it
    // has; each extraction reads with an instance of its own. The project's own docs have words
    // of its own (kgs's, inline code) in plenty.
    const read = (name: string) => extractMarkdown(readFileSync(join(import.meta.dir, '../../docs', name), 'utf8'))
    const first = JSON.stringify(await read('api.md'))
    expect(first).toContain('"facts":[{')
    await read('operations.md')
    await read('bundles.md')
    expect(JSON.stringify(await read('api.md'))).toBe(first)
  })

  test('facts and concepts are capped per source: the first facts, the most mentioned concepts', async () => {
    const sentences = Array.from(
      { length: 40 },
      (_, i) => `The station number ${i} measures the river level near bridge ${i % 3 === 0 ? 'Alpha' : 'Beta'}.`,
    )
    const capped = builtinExtractor({ maxFacts: 10, maxConcepts: 2 })
    const extraction = await capped.extract([{ index: 0, text: sentences.join(' ') }])
    expect(extraction.facts.map((fact) => fact.text)).toEqual(sentences.slice(0, 10))
    expect(extraction.concepts.map((concept) => concept.canonical_name)).toEqual(['station number', 'river level'])

    // The defaults bound a huge document too, and leave its later chunks unread.
    const many = Array.from({ length: 1200 }, (_, i) => ({ index: i, text: sentences[i % 40]!.replace('.', ` ${i}.`) }))
    const bounded = await extractor.extract(many)
    expect(bounded.facts).toHaveLength(DEFAULT_BUILTIN_LIMITS.maxFacts)
    expect(bounded.facts.at(-1)!.chunk_index).toBe(DEFAULT_BUILTIN_LIMITS.maxFacts - 1)
    expect(bounded.concepts.length).toBeLessThanOrEqual(DEFAULT_BUILTIN_LIMITS.maxConcepts)
  })

  test('its promptset_hash names the extractor, its library and its limits, and is on everything it makes', async () => {
    const version = (name: string) =>
      JSON.parse(readFileSync(join(import.meta.dir, '../../node_modules', name, 'package.json'), 'utf8')).version
    expect(BUILTIN_DESCRIPTION.library).toBe(`wink-nlp@${version('wink-nlp')}`)
    expect(BUILTIN_DESCRIPTION.model).toBe(`wink-eng-lite-web-model@${version('wink-eng-lite-web-model')}`)
    expect(extractor.promptsetHash).toMatch(/^[0-9a-f]{64}$/)
    expect(builtinExtractor().promptsetHash).toBe(extractor.promptsetHash)
    expect(builtinExtractor({ maxFacts: 10 }).promptsetHash).not.toBe(extractor.promptsetHash)
    const extraction = await extractMarkdown('The engine keeps its tables in data files. The data files live on disk.')
    expect(extraction.promptset_hash).toBe(extractor.promptsetHash)
    const hashes = [...extraction.facts, ...extraction.concepts].map((row) => row.promptset_hash)
    expect(hashes.length).toBeGreaterThan(2)
    expect(new Set(hashes)).toEqual(new Set([extractor.promptsetHash]))
    for (const fact of extraction.facts) expect(fact).toMatchObject({ fact_kind: 'text', status: 'stable' })
    for (const concept of extraction.concepts) expect(concept).toMatchObject({ context: '', description: '' })
  })

  test('an aborted signal stops it; progress is reported per chunk', async () => {
    const controller = new AbortController()
    controller.abort(new Error('stopped'))
    expect(
      await rejected(
        extractor.extract([{ index: 0, text: 'The engine keeps its tables.' }], { signal: controller.signal }),
      ),
    ).toThrow('stopped')
    const progress: [number, number][] = []
    await extractor.extract(
      [
        { index: 0, text: 'The engine keeps its tables.' },
        { index: 1, text: 'The tables live on disk.' },
      ],
      { onProgress: (done, total) => progress.push([done, total]) },
    )
    expect(progress).toEqual([
      [1, 2],
      [2, 2],
    ])
  })
})

describe('the built-in extractor on hostile input', () => {
  test('no chunks, empty chunks and text with no sentence give nothing', async () => {
    const nothing = { facts: [], concepts: [] }
    expect(readable(await extractor.extract([]))).toEqual(nothing)
    expect(
      readable(
        await extractor.extract([
          { index: 0, text: '' },
          { index: 1, text: ' \n\n\t ' },
        ]),
      ),
    ).toEqual(nothing)
    expect(readable(await extractMarkdown('# Title\n\n- one\n- two\n\n| a | b |\n|---|---|\n\n---'))).toEqual(nothing)
  })

  test('a huge sentence with no end is left out, quickly', async () => {
    const huge = `The engine ${'keeps writing pages to disk and '.repeat(20_000)}`
    const started = performance.now()
    expect(readable(await extractor.extract([{ index: 0, text: huge }]))).toEqual({ facts: [], concepts: [] })
    // Only the first maxChunkChars of a chunk are read, however long it is.
    expect(performance.now() - started).toBeLessThan(10_000)
  })

  test('binary-ish text yields no fact with control characters in it and breaks nothing', async () => {
    let state = 7
    const bytes = Uint8Array.from({ length: 6000 }, () => {
      state = (state * 1103515245 + 12345) % 2 ** 31
      return state >> 23
    })
    const text = `${new TextDecoder('latin1').decode(bytes)}\n\nThe engine keeps its tables in data files.\u0000\u0007\n\n${new TextDecoder().decode(bytes)}`
    const extraction = await extractor.extract([{ index: 0, text }])
    expect(extraction.facts.map((fact) => fact.text)).toContain('The engine keeps its tables in data files.')
    for (const fact of extraction.facts) expect(fact.text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]/)
    for (const concept of extraction.concepts)
      for (const index of concept.facts) expect(index).toBeLessThan(extraction.facts.length)
  })

  test('sentences in other scripts give no facts; the English beside them does', async () => {
    const markdown = [
      '数据库把每一次修改先写入预写日志。检查点把脏页写回数据文件。',
      'База данных сначала записывает каждое изменение в журнал. Контрольная точка сбрасывает страницы на диск.',
      'قاعدة البيانات تكتب كل تغيير في السجل أولاً.',
      'The database writes every change to the log first.',
    ].join('\n\n')
    expect(await factTexts(markdown)).toEqual(['The database writes every change to the log first.'])
  })
})
