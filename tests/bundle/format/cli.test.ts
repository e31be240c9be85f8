// `kgs bundle inspect|verify|canonical` as a user runs them, on files written by the generator.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { encodeBundle } from '../../../src/bundle/format/writer.ts'
import { bundleContent, generateBundle, type GenerateResult } from '../../../scripts/gen-bundle.ts'
import { runKgs } from '../../helpers/server.ts'

const sha256 = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const OPTIONS = { facts: 300, dimensions: 4, seed: 5 }

let directory: string
let file: string
let generated: GenerateResult

/** The file with its JSON edited (re-gzipped). */
function edited(name: string, edit: (json: string) => string): string {
  const path = join(directory, name)
  writeFileSync(path, gzipSync(edit(gunzipSync(readFileSync(file)).toString('utf8'))))
  return path
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'kgs-bundle-cli-'))
  file = join(directory, 'graph.json.gz')
  generated = await generateBundle(file, OPTIONS)
})
afterAll(() => rmSync(directory, { recursive: true, force: true }))

describe('kgs bundle verify', () => {
  test('a sound bundle: exit 0 and its hash', async () => {
    const { code, stdout, stderr } = await runKgs(['bundle', 'verify', file], {})
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toBe(`ok ${generated.sha256} ${file} by the version 2 rule: embedding fields not hashed\n`)
  })

  test('reads stdin for "-"', async () => {
    const { code, stdout } = await runKgs(['bundle', 'verify', '-'], {}, undefined, readFileSync(file))
    expect(code).toBe(0)
    expect(stdout).toBe(`ok ${generated.sha256} - by the version 2 rule: embedding fields not hashed\n`)
  })

  const broken: [string, (json: string) => string, RegExp][] = [
    [
      'a changed row',
      (json) =>
        json
          .replace('"fact_kind":"text"', '"fact_kind":"text","x":1')
          .replace(/"text":"([^"]*)"/, '"text":"$1 (edited)"'),
      /^kgs bundle verify: metadata\.sha256 is [0-9a-f]{64} but the canonical hash is [0-9a-f]{64}\n$/,
    ],
    [
      'a wrong count',
      (json) => json.replace(/"fact_count":\d+/, '"fact_count":7'),
      /metadata\.sha256 is .* but the canonical hash|metadata\.fact_count is 7 but facts has 300 rows/,
    ],
    [
      'no hash',
      (json) => json.replace(/,"sha256":"[0-9a-f]{64}"/, ''),
      /^kgs bundle verify: the file carries no hash .*; its canonical hash is [0-9a-f]{64}\n$/,
    ],
    [
      'a dangling reference',
      (json) => json.replace(/"fact_sources":\[\{"fact_idx":0/, '"fact_sources":[{"fact_idx":300'),
      /^kgs bundle: fact_sources\[0\]: fact_idx 300 /,
    ],
  ]
  for (const [what, edit, message] of broken) {
    test(`${what}: exit 1 with the first problem`, async () => {
      const { code, stdout, stderr } = await runKgs(['bundle', 'verify', edited(`${what}.json.gz`, edit)], {})
      expect(code).toBe(1)
      expect(stdout).toBe('')
      expect(stderr).toMatch(message)
    })
  }

  test('a truncated file: exit 1 naming gzip', async () => {
    const path = join(directory, 'truncated.json.gz')
    const bytes = readFileSync(file)
    writeFileSync(path, bytes.subarray(0, bytes.length >> 1))
    const { code, stderr } = await runKgs(['bundle', 'verify', path], {})
    expect(code).toBe(1)
    expect(stderr).toStartWith('kgs bundle: gzip: ')
  })

  test('a missing file: exit 1', async () => {
    const { code, stderr } = await runKgs(['bundle', 'verify', join(directory, 'absent.json.gz')], {})
    expect(code).toBe(1)
    expect(stderr).toContain('ENOENT')
  })
})

describe('kgs bundle canonical', () => {
  test('writes exactly the canonical bytes, whose hash is metadata.sha256', async () => {
    const { code, stdout } = await runKgs(['bundle', 'canonical', file], {})
    expect(code).toBe(0)
    const expected: Buffer[] = []
    for await (const chunk of encodeBundle(bundleContent(OPTIONS), { canonical: 'v2' }))
      expected.push(Buffer.from(chunk))
    expect(stdout).toBe(Buffer.concat(expected).toString('utf8'))
    expect(sha256(stdout)).toBe(generated.sha256)
    expect(stdout).toContain('"source_images":null')
    expect(stdout).not.toContain('"embeddings"')
  })
})

describe('kgs bundle inspect', () => {
  test('human-readable: metadata, counts, sizes and the embedding model', async () => {
    const { code, stdout } = await runKgs(['bundle', 'inspect', file], {})
    expect(code).toBe(0)
    expect(stdout).toContain(`sha256         ${generated.sha256}\n`)
    expect(stdout).toMatch(/embeddings {5}\S+, 4 dimensions, \d+ vectors/)
    expect(stdout).toMatch(/\nfacts {19} {9}300 +\d+\n/)
  })

  test('--json: the summary as data', async () => {
    const { code, stdout } = await runKgs(['bundle', 'inspect', '--json', file], {})
    expect(code).toBe(0)
    const summary = JSON.parse(stdout)
    expect(summary.metadata.sha256).toBe(generated.sha256)
    expect(summary.canonicalSha256).toBe(generated.sha256)
    expect(summary.embeddings.dimensions).toBe(4)
    expect(summary.stats.rows.facts).toBe(300)
    expect(summary.stats.compressedBytes).toBe(readFileSync(file).length)
    expect(summary.stats.decompressedBytes).toBe(generated.bytes)
    expect(summary.stats.vectors).toBe(generated.counts.fact_vectors + generated.counts.concept_vectors)
  })
})

describe('usage', () => {
  const cases: [string[], string][] = [
    [['bundle'], 'kgs bundle: missing command'],
    [['bundle', 'frob', 'x'], 'kgs bundle: unknown command "frob"'],
    [['bundle', 'verify'], 'kgs bundle: expected exactly one file'],
    [['bundle', 'verify', 'a', 'b'], 'kgs bundle: expected exactly one file'],
    [['bundle', 'verify', '--json', 'a'], "kgs bundle: Unknown option '--json'"],
  ]
  for (const [args, message] of cases) {
    test(`${args.join(' ')}: exit 2 with the bundle usage`, async () => {
      const { code, stderr } = await runKgs(args, {})
      expect(code).toBe(2)
      expect(stderr).toStartWith(message)
      expect(stderr).toContain('Usage: kgs bundle <command> <file>')
    })
  }

  test('kgs bundle help', async () => {
    const { code, stdout } = await runKgs(['bundle', 'help'], {})
    expect(code).toBe(0)
    expect(stdout).toContain('canonical <file>')
  })
})
