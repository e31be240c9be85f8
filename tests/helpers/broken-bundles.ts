// A small valid bundle (every section non-empty, media, embeddings) and a corpus of broken
// bundles derived from it, each with the error a reader must give. Used by the reader tests,
// the import tests and the fuzz test.
import { gzipSync } from 'node:zlib'
import type { ReaderLimits } from '../../src/bundle/format/reader.ts'
import { ROW_SCHEMAS, type RowSection } from '../../src/bundle/format/schema.ts'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Obj = { [key: string]: Json }

export const IMAGE_BYTES = Uint8Array.from({ length: 300 }, (_, i) => (i * 37 + 11) & 255)
export const BODY_TEXT = '<html><body><p>Rain falls.</p></body></html>'

/** A fresh valid v2 bundle as a JSON object (keys in v2 order); mutate it to derive others. */
export function validBundle(): Obj {
  return {
    schema_version: 2,
    metadata: {
      name: 'weather',
      description: 'a small graph',
      tags: ['test'],
      okt_version: 'kgs/0.1.0',
      embedding_model: 'test-embed',
      embedding_dimensions: 4,
      source_count: 2,
      fact_count: 3,
      concept_count: 2,
      summary_count: 1,
      synthesis_count: 1,
      report_count: 2,
      investigation_count: 1,
      exported_at: '2026-01-02T03:04:05Z',
    },
    sources: [
      {
        idx: 0,
        url: 'https://example.org/rain',
        kind: 'web',
        status: 'parsed',
        parsed_title: 'Rain',
        parsed_text: 'Rain falls.',
        has_stored_body: true,
      },
      {
        idx: 1,
        url: 'https://example.org/snow',
        doi: '10.1/x',
        kind: 'web',
        status: 'parsed',
        published_at: '2025-12-01',
      },
    ],
    images: { 'img-0': { content_type: 'image/png', data: Buffer.from(IMAGE_BYTES).toString('base64') } },
    bodies: { 'body-0': { content_type: 'text/html', data: Buffer.from(BODY_TEXT).toString('base64') } },
    source_images: [
      {
        idx: 0,
        source_idx: 0,
        kind: 'inline',
        position: 0,
        url: 'https://example.org/rain.png',
        width: 10,
        height: 10,
        bytes: 300,
        content_type: 'image/png',
        image_ref: 'img-0',
      },
    ],
    source_bodies: [{ source_idx: 0, body_ref: 'body-0', content_type: 'text/html' }],
    facts: [
      { idx: 0, text: 'Rain falls.', fact_kind: 'text', status: 'new', source_image_idx: -1 },
      {
        idx: 1,
        text: 'A picture of rain.',
        fact_kind: 'image',
        image_url: 'https://example.org/rain.png',
        status: 'stable',
        source_image_idx: 0,
      },
      {
        idx: 2,
        text: 'Snow is frozen rain.',
        fact_kind: 'text',
        promptset_hash: 'p1',
        status: 'new',
        source_image_idx: -1,
      },
    ],
    fact_sources: [
      { fact_idx: 0, source_idx: 0, chunk_index: 0 },
      { fact_idx: 2, source_idx: 1, chunk_index: 3 },
    ],
    concepts: [
      { idx: 0, canonical_name: 'Rain', context: 'weather' },
      { idx: 1, canonical_name: 'Snow', context: '', description: 'frozen' },
    ],
    concept_aliases: [{ concept_idx: 0, alias_text: 'rainfall' }],
    fact_concepts: [
      { fact_idx: 0, concept_idx: 0 },
      { fact_idx: 2, concept_idx: 1, promptset_hash: 'p1' },
    ],
    concept_summaries: [
      {
        concept_idx: 0,
        sequence_num: 0,
        is_complete: true,
        fact_count: 2,
        content: 'Rain [falls](<fact:0b0e0000-0000-4000-8000-000000000000>).',
        covered_fact_idxs: [0, 1],
        model: 'm',
      },
    ],
    concept_syntheses: [
      {
        canonical_name: 'Rain',
        content: 'All about rain.',
        covered_summary_idxs: [0],
        covered_concept_idxs: [0, 1],
        embedded_image_idxs: [1],
      },
    ],
    investigations: [{ idx: 0, title: 'Weather', topic: 'rain' }],
    investigation_sources: [{ investigation_idx: 0, source_idx: 1 }],
    reports: [
      {
        idx: 0,
        title: 'Rain report',
        body_md: '# Rain',
        status: 'annotated',
        parent_idx: -1,
        similarity_threshold: 0.75,
        sentence_count: 1,
      },
      { idx: 1, title: 'Drizzle', body_md: 'Light rain.', status: 'pending', parent_idx: 0 },
    ],
    report_annotations: [
      { report_idx: 0, sentence_index: 0, sentence_text: 'Rain falls.', fact_idx: 0, score: 0.9, posture: 'supports' },
    ],
    embeddings: {
      model: 'test-embed',
      dimensions: 4,
      fact_vectors: { '0': [0.1, 0.2, 0.3, 0.4], '1': [1, 0, 0, 0], '2': [-0.5, 0.5, -0.25, 0.25] },
      concept_vectors: { '0': [0, 1, 0, 0], '1': [0, 0, 1, 0] },
    },
  }
}

export function validBundleJson(bundle: Obj = validBundle()): string {
  return JSON.stringify(bundle)
}

export function gzipBundle(text: string | Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(gzipSync(typeof text === 'string' ? Buffer.from(text) : text))
}

export interface BrokenBundle {
  name: string
  bytes: Uint8Array
  limits?: Partial<ReaderLimits>
  /** Matches the whole message. */
  error: RegExp
  /** For row problems: the BundleError's section and position. */
  section?: string
  position?: number
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

function rowsOf(bundle: Obj, section: string): Obj[] {
  return bundle[section] as Obj[]
}

/** A v2 bundle with `mutate` applied. */
function derived(mutate: (bundle: Obj) => void): Uint8Array {
  const bundle = validBundle()
  mutate(bundle)
  return gzipBundle(validBundleJson(bundle))
}

/** One member with `prefix`, then 64 members of 16 MiB of spaces each: 1 GiB from about 1 MB. */
function gzipBomb(prefix: string): Uint8Array {
  const spaces = gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x20), { level: 9 })
  return new Uint8Array(Buffer.concat([gzipSync(Buffer.from(prefix)), ...Array<Buffer>(64).fill(spaces)]))
}

/** Wrong-typed values, one per row section: [section, position, field, value, message]. */
const WRONG_TYPES: [RowSection, number, string, Json, string][] = [
  ['sources', 1, 'url', 5, 'url must be a string'],
  ['source_images', 0, 'position', '0', 'position must be an integer'],
  ['source_bodies', 0, 'source_idx', true, 'source_idx must be an integer'],
  ['facts', 2, 'text', ['x'], 'text must be a string'],
  ['fact_sources', 1, 'chunk_index', 1.5, 'chunk_index must be an integer'],
  ['concepts', 1, 'context', 0, 'context must be a string'],
  ['concept_aliases', 0, 'alias_text', {}, 'alias_text must be a string'],
  ['fact_concepts', 1, 'promptset_hash', 7, 'promptset_hash must be a string'],
  ['concept_summaries', 0, 'is_complete', 'yes', 'is_complete must be a boolean'],
  ['concept_syntheses', 0, 'covered_concept_idxs', [0, 'a'], 'covered_concept_idxs must be an array of integers'],
  ['investigations', 0, 'title', false, 'title must be a string'],
  ['investigation_sources', 0, 'investigation_idx', '0', 'investigation_idx must be an integer'],
  ['reports', 0, 'similarity_threshold', 'high', 'similarity_threshold must be a number'],
  ['report_annotations', 0, 'score', '0.9', 'score must be a number'],
]

/** Every reference field of every row schema (x-ref, also on array items). */
export function referenceFields(): { section: RowSection; field: string; target: RowSection; array: boolean }[] {
  const fields: { section: RowSection; field: string; target: RowSection; array: boolean }[] = []
  for (const [section, schema] of Object.entries(ROW_SCHEMAS) as [RowSection, (typeof ROW_SCHEMAS)[RowSection]][]) {
    for (const [field, property] of Object.entries(schema.properties) as [string, Record<string, unknown>][]) {
      const items = property.items as Record<string, unknown> | undefined
      const target = (property['x-ref'] ?? items?.['x-ref']) as RowSection | undefined
      if (target) fields.push({ section, field, target, array: property.type === 'array' })
    }
  }
  return fields
}

export function brokenBundles(): BrokenBundle[] {
  const valid = validBundleJson()
  const gz = gzipBundle(valid)
  const cases: BrokenBundle[] = []

  // gzip
  cases.push({ name: 'not gzip', bytes: new TextEncoder().encode(valid), error: /^gzip: not a gzip file$/ })
  cases.push({ name: 'empty input', bytes: new Uint8Array(0), error: /^gzip: empty input \(not a gzip file\)$/ })
  cases.push({
    name: 'truncated gzip',
    bytes: gz.subarray(0, gz.length - 12),
    error: /^gzip: truncated \(unexpected end of file\)$/,
  })
  const badCrc = gz.slice()
  badCrc[badCrc.length - 8]! ^= 0x55
  cases.push({ name: 'bad CRC', bytes: badCrc, error: /^gzip: corrupt data \(checksum mismatch\)$/ })
  const badLength = gz.slice()
  badLength[badLength.length - 4]! ^= 0x01
  cases.push({ name: 'bad length', bytes: badLength, error: /^gzip: corrupt data \(length mismatch\)$/ })
  cases.push({
    name: 'gzip bomb (1 GiB of whitespace from about 1 MB)',
    bytes: gzipBomb('{"schema_version":2,"metadata":'),
    error: /^gzip: bundle expands more than 200 times its compressed size \(limit: /,
  })
  cases.push({
    name: 'expands past maxDecompressedBytes',
    bytes: gz,
    limits: { maxDecompressedBytes: 1000 },
    error: /^gzip: bundle expands past 1000 bytes \(limit\)$/,
  })

  // the document
  cases.push({
    name: 'empty document',
    bytes: gzipBundle(' \n'),
    error: /^bundle: empty document \(expected a JSON object\)$/,
  })
  cases.push({
    name: 'top level is not an object',
    bytes: gzipBundle('[{"schema_version":2}]'),
    error: /^bundle: expected a JSON object at the top level, found "\["$/,
  })
  const insideSources = valid.indexOf('"sources":') + 40
  cases.push({
    name: 'truncated JSON',
    bytes: gzipBundle(valid.slice(0, insideSources)),
    error: /^bundle: truncated JSON \(ended inside sources\)$/,
  })
  cases.push({
    name: 'truncated after a key',
    bytes: gzipBundle(valid.slice(0, valid.indexOf('"facts"') + 8)),
    error: /^bundle: truncated JSON \(ended inside facts\)$/,
  })
  cases.push({
    name: 'truncated before the closing brace',
    bytes: gzipBundle(valid.slice(0, -1)),
    error: /^bundle: truncated JSON \(ended inside the bundle object\)$/,
  })
  cases.push({
    name: 'trailing garbage after the object',
    bytes: gzipBundle(`${valid} \n{}`),
    error: /^bundle: trailing data after the bundle object$/,
  })
  cases.push({
    name: 'schema_version 3',
    bytes: derived((b) => (b.schema_version = 3)),
    error: /^bundle: schema_version 3 is not supported \(this reader reads versions 1 and 2\)$/,
  })
  cases.push({
    name: 'schema_version not an integer',
    bytes: derived((b) => (b.schema_version = '2')),
    error: /^bundle: schema_version must be an integer, not "2"$/,
  })
  cases.push({
    name: 'missing schema_version',
    bytes: derived((b) => delete b.schema_version),
    error: /^bundle: schema_version is missing \(it must come before sources\)$/,
  })
  cases.push({
    name: 'missing schema_version (no sections)',
    bytes: gzipBundle(JSON.stringify({ metadata: validBundle().metadata })),
    error: /^bundle: schema_version is missing$/,
  })
  cases.push({
    name: 'missing metadata',
    bytes: derived((b) => delete b.metadata),
    error: /^bundle: metadata is missing$/,
  })
  cases.push({
    name: 'duplicate section',
    bytes: gzipBundle(`${valid.slice(0, -1)},"facts":null}`),
    error: /^facts: the section appears twice$/,
    section: 'facts',
  })
  cases.push({
    name: 'section of the wrong type',
    bytes: derived((b) => (b.concepts = { idx: 0 })),
    error: /^concepts: expected an array or null$/,
    section: 'concepts',
  })
  cases.push({
    name: 'garbage after the gzip stream',
    bytes: new Uint8Array(Buffer.concat([gz, Buffer.from('not gzip')])),
    error: /^gzip: corrupt data after a gzip member \(/,
  })
  cases.push({
    name: 'bad JSON between keys',
    bytes: gzipBundle(valid.replace('"sources":', '"sources";')),
    error: /^bundle: expected ":" after a key, found ";"$/,
  })

  // metadata
  cases.push({
    name: 'metadata: wrong type',
    bytes: derived((b) => ((b.metadata as Obj).source_count = '2')),
    error: /^metadata: source_count must be an integer$/,
    section: 'metadata',
  })
  cases.push({
    name: 'metadata: not an object',
    bytes: derived((b) => (b.metadata = ['weather'])),
    error: /^metadata: expected an object$/,
    section: 'metadata',
  })

  // wrong types, one per row section
  for (const [section, position, field, value, message] of WRONG_TYPES) {
    cases.push({
      name: `${section}: wrong type`,
      bytes: derived((b) => (rowsOf(b, section)[position]![field] = value)),
      error: new RegExp(`^${escapeRegExp(`${section}[${position}]: ${message}`)}$`),
      section,
      position,
    })
  }
  cases.push({
    name: 'facts: element not an object',
    bytes: derived((b) => ((b.facts as Json[])[1] = 42)),
    error: /^facts\[1\]: expected an object$/,
    section: 'facts',
    position: 1,
  })
  cases.push({
    name: 'source_bodies: bad bare string',
    bytes: derived((b) => ((b.source_bodies as Json[])[0] = 'x-1')),
    error: /^source_bodies\[0\]: expected an object or a body ref "body-<source_idx>", found "x-1"$/,
    section: 'source_bodies',
    position: 0,
  })
  cases.push({
    name: 'facts: invalid JSON inside a row',
    bytes: gzipBundle(valid.replace('"text":"Snow is frozen rain."', '"text":"Snow" "is"')),
    error: /^facts\[2\]: invalid JSON \(/,
    section: 'facts',
    position: 2,
  })
  // The reader's message quotes the NUL; PostgreSQL text cannot hold one, so a job records it as \u0000.
  cases.push({
    name: 'facts: a NUL character inside a row',
    bytes: gzipBundle(valid.replace('"text":"Snow is frozen rain."', '"text":"Snow is frozen rain."\u0000')),
    error: /^facts\[2\]: invalid JSON \(.*(\u0000|\\u0000)/,
    section: 'facts',
    position: 2,
  })
  cases.push({
    name: 'facts: trailing comma',
    bytes: gzipBundle(valid.replace(/("source_image_idx":-1\})\],"fact_sources"/, '$1,],"fact_sources"')),
    error: /^facts\[3\]: expected a row after ","$/,
    section: 'facts',
    position: 3,
  })
  cases.push({
    name: 'idx not equal to position',
    bytes: derived((b) => (rowsOf(b, 'facts')[1]!.idx = 5)),
    error: /^facts\[1\]: idx is 5 but the row is at position 1$/,
    section: 'facts',
    position: 1,
  })
  cases.push({
    name: 'missing required field',
    bytes: derived((b) => delete rowsOf(b, 'concepts')[0]!.canonical_name),
    error: /^concepts\[0\]: canonical_name is required$/,
    section: 'concepts',
    position: 0,
  })
  cases.push({
    name: 'bad enum value',
    bytes: derived((b) => (rowsOf(b, 'facts')[0]!.status = 'old')),
    error: /^facts\[0\]: status must be one of new, stable, to_delete, stale, not "old"$/,
    section: 'facts',
    position: 0,
  })

  // dangling references: every x-ref field of every row schema
  for (const { section, field, target, array } of referenceFields()) {
    const bundle = validBundle()
    const position = rowsOf(bundle, section).length - 1
    const count = rowsOf(bundle, target).length
    const bad = section === target ? position : 99
    rowsOf(bundle, section)[position]![field] = array ? [0, bad] : bad
    const problem =
      section === target
        ? `${field} ${bad} does not refer to an earlier row (parent must precede)`
        : `${field} ${bad} refers to a row that does not exist (${target} has ${count} row${count === 1 ? '' : 's'})`
    cases.push({
      name: `dangling ${section}.${field}`,
      bytes: gzipBundle(validBundleJson(bundle)),
      error: new RegExp(`^${escapeRegExp(`${section}[${position}]: ${problem}`)}$`),
      section,
      position,
    })
  }
  cases.push({
    name: 'parent_idx pointing forward',
    bytes: derived((b) => (rowsOf(b, 'reports')[0]!.parent_idx = 1)),
    error: /^reports\[0\]: parent_idx 1 does not refer to an earlier row \(parent must precede\)$/,
    section: 'reports',
    position: 0,
  })
  cases.push({
    name: 'dangling reference to a later section (v1 order, checked when it ends)',
    bytes: gzipBundle(v1Json((b) => (rowsOf(b, 'facts')[1]!.source_image_idx = 7))),
    error: /^facts\[1\]: source_image_idx 7 refers to a row that does not exist \(source_images has 1 row\)$/,
    section: 'facts',
    position: 1,
  })
  cases.push({
    name: 'dangling reference to an absent section (checked at the end)',
    bytes: derived((b) => delete b.source_images),
    error: /^facts\[1\]: source_image_idx 0 refers to a row that does not exist \(source_images has 0 rows\)$/,
    section: 'facts',
    position: 1,
  })
  for (const [map, target, count] of [
    ['fact_vectors', 'facts', 3],
    ['concept_vectors', 'concepts', 2],
  ] as const) {
    cases.push({
      name: `dangling embeddings.${map} key`,
      bytes: derived((b) => (((b.embeddings as Obj)[map] as Obj)['9'] = [0, 0, 0, 0])),
      error: new RegExp(
        `^${escapeRegExp(`embeddings.${map}[9]: key 9 refers to a row that does not exist (${target} has ${count} rows)`)}$`,
      ),
      section: `embeddings.${map}`,
      position: 9,
    })
  }

  // embeddings
  cases.push({
    name: 'vector of the wrong length',
    bytes: derived((b) => (((b.embeddings as Obj).fact_vectors as Obj)['1'] = [1, 2, 3])),
    error: /^embeddings\.fact_vectors\[1\]: vector has 3 numbers, expected 4$/,
    section: 'embeddings.fact_vectors',
    position: 1,
  })
  cases.push({
    name: 'vector key not an index',
    bytes: derived((b) => (((b.embeddings as Obj).concept_vectors as Obj)['01'] = [1, 2, 3, 4])),
    error: /^embeddings\.concept_vectors: key "01" is not a row index$/,
    section: 'embeddings.concept_vectors',
  })
  cases.push({
    name: 'vectors before model and dimensions',
    bytes: derived((b) => {
      const { model, dimensions, ...maps } = b.embeddings as Obj
      b.embeddings = { ...maps, model: model!, dimensions: dimensions! }
    }),
    error: /^embeddings\.fact_vectors: model and dimensions must come before fact_vectors$/,
    section: 'embeddings.fact_vectors',
  })

  // media
  cases.push({
    name: 'bad base64',
    bytes: derived((b) => (((b.images as Obj)['img-0'] as Obj).data = 'AAAA*AAA')),
    error: /^images\["img-0"\]: data is not valid base64 \(unexpected character "\*" at offset 4\)$/,
    section: 'images',
  })
  cases.push({
    name: 'base64 without padding',
    bytes: derived((b) => (((b.bodies as Obj)['body-0'] as Obj).data = 'QUJD' + 'QQ')),
    error: /^bodies\["body-0"\]: data is not valid base64 \(the length is not a multiple of 4 at offset 6\)$/,
    section: 'bodies',
  })

  // limits
  const deep = '['.repeat(40) + ']'.repeat(40)
  cases.push({
    name: 'deep nesting in a row',
    bytes: gzipBundle(valid.replace('"fact_kind":"image"', `"extra":${deep},"fact_kind":"image"`)),
    error: /^facts\[1\]: nesting deeper than 32 levels \(limit\)$/,
    section: 'facts',
    position: 1,
  })
  cases.push({
    name: 'deep nesting in an unknown key',
    bytes: gzipBundle(valid.replace('"sources":', `"future":${'['.repeat(100000)},"sources":`)),
    error: /^bundle: nesting deeper than 32 levels \(limit\)$/,
  })
  cases.push({
    name: 'huge string',
    bytes: derived((b) => (rowsOf(b, 'facts')[2]!.text = 'x'.repeat(5000))),
    limits: { maxStringBytes: 4096 },
    error: /^facts\[2\]: a string is longer than 4096 bytes \(limit\)$/,
    section: 'facts',
    position: 2,
  })
  cases.push({
    name: 'row too large',
    bytes: derived((b) => (rowsOf(b, 'concepts')[1]!.description = 'y'.repeat(3000))),
    limits: { maxRowBytes: 2048 },
    error: /^concepts\[1\]: row is larger than 2048 bytes \(limit\)$/,
    section: 'concepts',
    position: 1,
  })
  cases.push({
    name: 'too many rows',
    bytes: gz,
    limits: { maxRows: 10 },
    error: /^concepts\[1\]: more than 10 rows and vectors in the bundle \(limit\)$/,
    section: 'concepts',
    position: 1,
  })
  return cases
}

/**
 * The valid bundle as version 1 writes it: the media block (source_images, source_bodies,
 * images, bodies) after report_annotations, so facts refer to source_images before they come.
 */
export function v1Json(mutate: (bundle: Obj) => void = () => {}): string {
  const bundle = validBundle()
  bundle.schema_version = 1
  mutate(bundle)
  const order = [
    'schema_version',
    'metadata',
    'sources',
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
    'source_images',
    'source_bodies',
    'images',
    'bodies',
    'embeddings',
  ]
  const v1: Obj = {}
  for (const key of order) if (key in bundle) v1[key] = bundle[key]!
  return JSON.stringify(v1)
}
