// The Go-compatible encoder: the byte vectors of docs/spec/bundle.md §3, and property tests against
// references written here independently of src/bundle/format/json.ts (character by character, and a
// brute-force search for the shortest float digits).
import { describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { ROW_CODECS, METADATA_CODEC } from '../../../src/bundle/format/codecs.ts'
import { factContentHash, normalizeFactText, sourceSha256 } from '../../../src/bundle/format/hashes.ts'
import { encodeFloat32, encodeFloat64, encodeString, UnsupportedNumberError } from '../../../src/bundle/format/json.ts'
import { ROW_SCHEMAS, ROW_SECTIONS, type Metadata } from '../../../src/bundle/format/schema.ts'
import {
  canonicalHash,
  encodeBodyHashing,
  encodeBundle,
  encodeFileHead,
  formatExportedAt,
  type BundleContent,
} from '../../../src/bundle/format/writer.ts'
import { random } from '../../../scripts/lib/synthetic.ts'

const sha256 = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex')

async function text(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Buffer[] = []
  for await (const chunk of chunks) parts.push(Buffer.from(chunk))
  return Buffer.concat(parts).toString('utf8')
}

const EMPTY_METADATA: Metadata = {
  name: 'empty',
  embedding_model: 'm',
  embedding_dimensions: 3072,
  source_count: 0,
  fact_count: 0,
  concept_count: 0,
  summary_count: 0,
  synthesis_count: 0,
  report_count: 0,
  investigation_count: 0,
  exported_at: '2026-01-02T03:04:05Z',
}

describe('docs/spec/bundle.md §3 vectors', () => {
  test('the empty-repository bundle is byte for byte what Go writes', async () => {
    const written = await text(encodeBundle({ metadata: EMPTY_METADATA, rows: {} }))
    expect(written).toBe(
      '{"schema_version":2,"metadata":{"name":"empty","embedding_model":"m","embedding_dimensions":3072,"source_count":0,"fact_count":0,"concept_count":0,"summary_count":0,"synthesis_count":0,"report_count":0,"investigation_count":0,"exported_at":"2026-01-02T03:04:05Z"},"sources":null,"source_images":null,"facts":null,"fact_sources":null,"concepts":null,"concept_aliases":null,"fact_concepts":null,"concept_summaries":null,"concept_syntheses":null,"investigations":null,"investigation_sources":null,"reports":null,"report_annotations":null}',
    )
    expect(sha256(written)).toBe('98f14671239c1b0db65690e68eb1bafa577c5d05dc1e81dda86d9331ee4ebec2')
  })

  test('its canonical hash leaves out the embedding fields', async () => {
    expect(await canonicalHash({ metadata: EMPTY_METADATA, rows: {} })).toBe(
      'a8a7a7ddf35d339ac45ed0d93b475a1d8c70ae43e5fce55b2317a023d6c8d406',
    )
    // ... and so does not depend on them, nor on sha256 itself.
    const other = { ...EMPTY_METADATA, embedding_model: 'other', embedding_dimensions: 8, sha256: 'a'.repeat(64) }
    expect(await canonicalHash({ metadata: other, rows: {} })).toBe(
      'a8a7a7ddf35d339ac45ed0d93b475a1d8c70ae43e5fce55b2317a023d6c8d406',
    )
  })

  test('strings, floats and a hash', () => {
    expect(encodeString('<a>&')).toBe('"\\u003ca\\u003e\\u0026"')
    expect(`[${[0.9, 1e21, 1e20, 1e-6, 1e-7].map(encodeFloat64).join(',')}]`).toBe(
      '[0.9,1e+21,100000000000000000000,0.000001,1e-7]',
    )
    expect(sha256('f')).toBe('252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111')
  })

  test('vectors are written in shortest float32 form', () => {
    expect(encodeFloat32(0.1)).toBe('0.1')
    expect(encodeFloat32(1 / 3)).toBe('0.33333334')
    // The float64 digits of the same float32 are twice as long.
    expect(String(Math.fround(1 / 3))).toBe('0.3333333432674408')
  })
})

/** Go's string rules, one code point at a time. */
function referenceString(value: string): string {
  let out = '"'
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      out += value[i]! + value[i + 1]!
      i++
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += '\ufffd'
    } else if (unit === 0x22) out += '\\"'
    else if (unit === 0x5c) out += '\\\\'
    else if (unit === 0x08) out += '\\b'
    else if (unit === 0x0c) out += '\\f'
    else if (unit === 0x0a) out += '\\n'
    else if (unit === 0x0d) out += '\\r'
    else if (unit === 0x09) out += '\\t'
    else if (unit < 0x20 || unit === 0x3c || unit === 0x3e || unit === 0x26 || unit === 0x2028 || unit === 0x2029)
      out += `\\u${unit.toString(16).padStart(4, '0')}`
    else out += value[i]
  }
  return `${out}"`
}

describe('strings', () => {
  test('every special character', () => {
    expect(encodeString('"\\/\b\f\n\r\t\u0000\u001f\u007f')).toBe('"\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\u007f"')
    expect(encodeString('\u2028\u2029é😀')).toBe('"\\u2028\\u2029é😀"')
    expect(encodeString('a\ud800b\udc00')).toBe('"a\ufffdb\ufffd"')
    expect(encodeString('')).toBe('""')
  })

  test('random strings agree with the reference and read back', () => {
    const next = random(7)
    const alphabet = [
      'a',
      'Z',
      '0',
      ' ',
      '/',
      '"',
      '\\',
      '<',
      '>',
      '&',
      '\n',
      '\t',
      '\u0001',
      '\u001f',
      '\u007f',
      'é',
      '中',
      '\u2028',
      '\u2029',
      '😀',
      '\ud83d',
      '\ude00',
      '\ufffd',
      '\u0000',
    ]
    for (let n = 0; n < 5000; n++) {
      let value = ''
      const length = Math.floor(next() * 24)
      for (let i = 0; i < length; i++)
        value +=
          next() < 0.3
            ? String.fromCharCode(Math.floor(next() * 0x10000))
            : alphabet[Math.floor(next() * alphabet.length)]
      const encoded = encodeString(value)
      expect(encoded).toBe(referenceString(value))
      expect(JSON.parse(encoded)).toBe(value.toWellFormed())
    }
  })
})

/** The fewest significant digits that read back as `value` (brute force over every precision). */
function shortestDigits(value: number, roundTrips: (decimal: number) => boolean, maxDigits: number): number {
  for (let digits = 1; digits <= maxDigits; digits++) {
    const nearest = Number(value.toPrecision(digits))
    const unit = 10 ** (Math.floor(Math.log10(Math.abs(nearest))) - digits + 1)
    const fits = [
      nearest,
      Number((nearest - unit).toPrecision(digits)),
      Number((nearest + unit).toPrecision(digits)),
    ].filter(roundTrips)
    if (fits.length) return fits.sort((a, b) => Math.abs(a - value) - Math.abs(b - value))[0]!
  }
  throw new Error(`no decimal for ${value}`)
}

/** Go's formatting of shortest digits: 'f' inside [low, 1e21), else 'e' with e-07 cleaned to e-7. */
function referenceFloat(decimal: number, magnitude: number, low: number, high: number): string {
  if (decimal === 0) return Object.is(decimal, -0) ? '-0' : '0'
  const [mantissa, exponentText] = decimal.toExponential().split('e') as [string, string]
  const exponent = Number(exponentText)
  const digits = mantissa.replace('-', '').replace('.', '')
  const sign = decimal < 0 ? '-' : ''
  if (magnitude < low || magnitude >= high) {
    return `${sign}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ''}e${exponent < 0 ? '-' : '+'}${Math.abs(exponent)}`
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`
  if (digits.length <= exponent + 1) return `${sign}${digits}${'0'.repeat(exponent + 1 - digits.length)}`
  return `${sign}${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`
}

describe('floats', () => {
  const bits = new DataView(new ArrayBuffer(8))

  test('float64: random bit patterns agree with the reference', () => {
    const next = random(11)
    for (let n = 0; n < 20000; n++) {
      bits.setUint32(0, Math.floor(next() * 2 ** 32))
      bits.setUint32(4, Math.floor(next() * 2 ** 32))
      let value = bits.getFloat64(0)
      if (!Number.isFinite(value)) continue
      if (n % 4 === 0) value = (next() - 0.5) * 10 ** Math.floor(next() * 44 - 22) // around the thresholds
      const decimal = shortestDigits(value, (d) => d === value, 17)
      expect(encodeFloat64(value)).toBe(referenceFloat(decimal, Math.abs(value), 1e-6, 1e21))
    }
  })

  test('float64 edges', () => {
    expect(encodeFloat64(-0)).toBe('-0')
    expect(encodeFloat64(0)).toBe('0')
    expect(encodeFloat64(1e-6)).toBe('0.000001')
    expect(encodeFloat64(9.99e-7)).toBe('9.99e-7')
    expect(encodeFloat64(-1.5e300)).toBe('-1.5e+300')
    expect(encodeFloat64(5e-324)).toBe('5e-324')
    expect(encodeFloat64(123456789012345680000)).toBe('123456789012345680000')
    expect(() => encodeFloat64(Number.NaN)).toThrow(UnsupportedNumberError)
    expect(() => encodeFloat64(Number.POSITIVE_INFINITY)).toThrow(UnsupportedNumberError)
  })

  test('float32: random bit patterns and powers of two agree with the reference', () => {
    const next = random(13)
    const values: number[] = []
    for (let e = -149; e <= 127; e++) values.push(2 ** e, -(2 ** e))
    for (let n = 0; n < 30000; n++) {
      bits.setUint32(0, Math.floor(next() * 2 ** 32))
      values.push(bits.getFloat32(0), Math.fround((next() - 0.5) * 2)) // any float32; typical embedding values
    }
    const low = Math.fround(1e-6)
    const high = Math.fround(1e21)
    for (const value of values) {
      if (!Number.isFinite(value)) continue
      const decimal = shortestDigits(value, (d) => Math.fround(d) === value, 9)
      const encoded = encodeFloat32(value)
      expect(encoded).toBe(referenceFloat(decimal, Math.abs(value), low, high))
      expect(Math.fround(Number(encoded))).toBe(value)
    }
  })

  test('float32 edges', () => {
    expect(encodeFloat32(-0)).toBe('-0')
    expect(encodeFloat32(16777216)).toBe('16777216')
    expect(encodeFloat32(3.4028234663852886e38)).toBe('3.4028235e+38')
    expect(encodeFloat32(1.401298464324817e-45)).toBe('1e-45')
    expect(encodeFloat32(Math.fround(1e-6))).toBe('0.000001')
    expect(encodeFloat32(Math.fround(1e21))).toBe('1e+21')
    expect(() => encodeFloat32(Number.NaN)).toThrow(UnsupportedNumberError)
  })
})

describe('rows', () => {
  test('omit rules and key order follow the schema', () => {
    expect(
      ROW_CODECS.facts.encode({
        idx: 0,
        text: 'a & b',
        fact_kind: 'text',
        image_url: '',
        status: 'new',
        source_image_idx: -1,
      }),
    ).toBe('{"idx":0,"text":"a \\u0026 b","fact_kind":"text","status":"new","source_image_idx":-1}')
    // Go's omitempty on the int references: -1 (none) is written, 0 is left out.
    expect(ROW_CODECS.facts.encode({ idx: 1, text: 'b', fact_kind: 'image', status: 'new', source_image_idx: 0 })).toBe(
      '{"idx":1,"text":"b","fact_kind":"image","status":"new"}',
    )
    expect(
      ROW_CODECS.reports.encode({
        idx: 1,
        title: 't',
        body_md: '',
        status: 'pending',
        parent_idx: 0,
        similarity_threshold: 0,
        sentence_count: 0,
      }),
    ).toBe('{"idx":1,"title":"t","body_md":"","status":"pending"}')
    expect(
      ROW_CODECS.reports.encode({
        idx: 0,
        title: 't',
        body_md: '',
        status: 'pending',
        parent_idx: -1,
        similarity_threshold: -0,
      }),
    ).toBe('{"idx":0,"title":"t","body_md":"","status":"pending","parent_idx":-1}')
    expect(ROW_CODECS.concepts.encode({ idx: 2, canonical_name: 'n', context: '' })).toBe(
      '{"idx":2,"canonical_name":"n","context":""}',
    )
    expect(
      ROW_CODECS.concept_summaries.encode({
        concept_idx: 0,
        sequence_num: 0,
        is_complete: false,
        fact_count: 0,
        content: '',
        covered_fact_idxs: [],
      }),
    ).toBe('{"concept_idx":0,"sequence_num":0,"is_complete":false,"fact_count":0,"content":""}')
    expect(
      ROW_CODECS.report_annotations.encode({
        report_idx: 0,
        sentence_index: 1,
        sentence_text: 's',
        fact_idx: 2,
        score: -0,
        posture: 'supports',
      }),
    ).toBe('{"report_idx":0,"sentence_index":1,"sentence_text":"s","fact_idx":2,"score":-0,"posture":"supports"}')
    expect(
      METADATA_CODEC.encode({
        ...EMPTY_METADATA,
        tags: ['a', '<b>'],
        promptset_hashes: [],
        sha256: '',
        exported_at: formatExportedAt(new Date('2026-01-02T03:04:05.120Z')),
      }),
    ).toContain('"tags":["a","\\u003cb\\u003e"],"embedding_model"')
  })

  test('random rows of every section read back as themselves, keys in schema order, empty optional fields left out', () => {
    const next = random(17)
    for (const section of ROW_SECTIONS) {
      const schema = ROW_SCHEMAS[section]
      const encode = ROW_CODECS[section].encode as (row: unknown) => string
      for (let n = 0; n < 200; n++) {
        const row: Record<string, unknown> = {}
        const expected: Record<string, unknown> = {}
        for (const [name, property] of Object.entries(schema.properties)) {
          const optional = !(schema.required as string[] | undefined)?.includes(name)
          const empty = optional && next() < 0.4
          const kind = property.type === 'array' ? `${property.items.type}[]` : (property.type as string)
          const value =
            kind === 'integer'
              ? empty
                ? 0
                : 1 + Math.floor(next() * 999)
              : kind === 'number'
                ? empty
                  ? 0
                  : (next() - 0.5) * 10 ** Math.floor(next() * 30 - 10)
                : kind === 'boolean'
                  ? empty
                    ? false
                    : optional || next() < 0.5
                  : kind === 'integer[]'
                    ? empty
                      ? []
                      : [1, 2, Math.floor(next() * 9)]
                    : property.enum
                      ? empty
                        ? ''
                        : property.enum[Math.floor(next() * property.enum.length)]
                      : empty
                        ? ''
                        : `v<${n}>"\n${String.fromCharCode(Math.floor(next() * 0x3000))}`
          row[name] = value
          if (!optional || !empty) expected[name] = value
        }
        const encoded = encode(row)
        expect(Object.keys(JSON.parse(encoded))).toEqual(Object.keys(expected))
        expect(JSON.parse(encoded)).toEqual(JSON.parse(JSON.stringify(expected)))
      }
    }
  })
})

describe('writer', () => {
  const content = (): BundleContent => ({
    metadata: { ...EMPTY_METADATA, name: 'two', source_count: 1, fact_count: 2 },
    rows: {
      sources: [{ idx: 0, url: 'https://a.example/x', kind: 'html', status: 'ok' }],
      source_images: [{ idx: 0, source_idx: 0, kind: 'inline', position: 0, image_ref: 'img-0' }],
      source_bodies: (async function* () {
        yield [{ source_idx: 0, body_ref: 'body-0', content_type: 'text/html' }]
      })(),
      facts: (async function* () {
        yield { idx: 0, text: 'one', fact_kind: 'text' as const, status: 'new' as const, source_image_idx: -1 }
        yield [{ idx: 1, text: 'two', fact_kind: 'image' as const, status: 'stable' as const, source_image_idx: 0 }] // a batch
      })(),
    },
    images: [{ ref: 'img-0', contentType: 'image/png', data: new Uint8Array([1, 2, 3, 4]) }],
    bodies: [
      {
        ref: 'body-0',
        contentType: 'text/html',
        data: (async function* () {
          yield new TextEncoder().encode('<p>')
          yield new TextEncoder().encode('hi</p>')
        })(),
      },
    ],
    embeddings: {
      model: 'm',
      dimensions: 2,
      facts: [
        { index: 0, vector: new Float32Array([0.1, 1 / 3]) },
        { index: 1, vector: [1, -0] },
      ],
    },
  })

  test('writes every part in key order; media base64 across chunks; vectors as float32', async () => {
    const written = JSON.parse(await text(encodeBundle(content())))
    expect(Object.keys(written)).toEqual([
      'schema_version',
      'metadata',
      'sources',
      'images',
      'bodies',
      'source_images',
      'source_bodies',
      'facts',
      'fact_sources',
      'concepts',
      'concept_aliases',
      'fact_concepts',
      'concept_summaries',
      'concept_syntheses',
      'investigations',
      'investigation_sources',
      'reports',
      'report_annotations',
      'embeddings',
    ])
    expect(written.images).toEqual({ 'img-0': { content_type: 'image/png', data: 'AQIDBA==' } })
    expect(Buffer.from(written.bodies['body-0'].data, 'base64').toString()).toBe('<p>hi</p>')
    expect(written.facts.map((f: { text: string }) => f.text)).toEqual(['one', 'two'])
    const raw = await text(encodeBundle(content()))
    expect(raw).toContain(
      '"embeddings":{"model":"m","dimensions":2,"fact_vectors":{"0":[0.1,0.33333334],"1":[1,-0]},"concept_vectors":{}}',
    )
  })

  test('the canonical form is the file without media, source_bodies, embeddings and the excluded metadata', async () => {
    const canonical = await text(encodeBundle(content(), { canonical: 'v2' }))
    expect(canonical).toContain('"source_images":null,"facts":[')
    for (const absent of [
      '"images"',
      '"bodies"',
      '"source_bodies"',
      '"embeddings"',
      '"embedding_model"',
      '"embedding_dimensions"',
    ])
      expect(canonical).not.toContain(absent)
    expect(await canonicalHash(content())).toBe(sha256(canonical))
    // The same input gives the same bytes.
    expect(await text(encodeBundle(content()))).toBe(await text(encodeBundle(content())))
  })

  test('one pass writes the file after its head and hashes the canonical form: the same bytes and hash as two passes', async () => {
    const body = encodeBodyHashing(content())
    expect(() => body.sha256()).toThrow('the bundle has not been encoded to its end yet')
    const rest = await text(body.chunks)
    expect(encodeFileHead(content()) + rest).toBe(await text(encodeBundle(content())))
    expect(body.sha256()).toBe(await canonicalHash(content()))
  })

  test('optional sections are omitted when empty; vectors of one kind alone still write the other map empty', async () => {
    const raw = await text(
      encodeBundle({
        metadata: EMPTY_METADATA,
        rows: { source_bodies: [] },
        images: [],
        embeddings: { model: 'm', dimensions: 1, facts: [], concepts: [{ index: 0, vector: [0.5] }] },
      }),
    )
    expect(raw).not.toContain('"images"')
    expect(raw).not.toContain('"source_bodies"')
    expect(raw).toEndWith(',"embeddings":{"model":"m","dimensions":1,"fact_vectors":{},"concept_vectors":{"0":[0.5]}}}')
    const none = await text(
      encodeBundle({ metadata: EMPTY_METADATA, rows: {}, embeddings: { model: 'm', dimensions: 1, facts: [] } }),
    )
    expect(none).not.toContain('"embeddings"')
  })

  test('exported_at: fractional seconds only when non-zero, trailing zeros dropped', () => {
    expect(formatExportedAt(new Date('2026-01-02T03:04:05.000Z'))).toBe('2026-01-02T03:04:05Z')
    expect(formatExportedAt(new Date('2026-01-02T03:04:05.120Z'))).toBe('2026-01-02T03:04:05.12Z')
    expect(formatExportedAt(new Date('2026-01-02T03:04:00.100Z'))).toBe('2026-01-02T03:04:00.1Z')
  })
})

describe('content hashes', () => {
  test('a fact hash ignores composition and whitespace the way Go collapses it', () => {
    expect(normalizeFactText('  Cafe\u0301\t\n  au\u00a0lait\u0085 ')).toBe('Café au lait')
    expect(factContentHash('Café au lait')).toBe(factContentHash(' Cafe\u0301  au lait\n'))
    expect(factContentHash('x')).toBe(sha256('x'))
    // U+FEFF is not whitespace to Go.
    expect(normalizeFactText('\ufeffx')).toBe('\ufeffx')
  })

  test('a source hash concatenates url, text, markdown and title', () => {
    expect(sourceSha256({ url: 'u', parsed_text: 't', parsed_markdown: 'm', parsed_title: 'T' })).toBe(sha256('utmT'))
    expect(sourceSha256({ url: 'u' })).toBe(sha256('u'))
  })
})
