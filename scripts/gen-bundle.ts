// Writes a synthetic graph bundle (docs/spec/bundle.md) of a requested size straight to a .json.gz file:
// the same kind of graph as scripts/gen-graph.ts, in the same proportions, but never in a
// database and never in memory. Every row is derived from its index (and a seeded hash of it),
// so each section is a generator, any row can be made again on its own (a summary re-derives
// the texts and UUIDs of the facts it cites), and memory stays flat at any size. Deterministic
// for a seed: the same options give the same bytes.
//
// Usage: bun scripts/gen-bundle.ts <out.json.gz> <facts> [--seed N] [--dimensions D (0 = no embeddings)]
//          [--kgs-hash] [--no-images] [--exported-at ISO]
//
// What a bundle of F facts holds (graphSize: per 20 facts a source, per 10 a concept and its
// summary, per 40 a source image, per 100 a synthesis, per 200 an investigation and a report),
// sizes as measured:
// - sources: parsed_text of 16–39 sentences in paragraphs (0.65–2.3 KB, mean 1.4 KB), every 5th
//   also parsed_markdown (~1.5 KB), 1 in 50 failed (nothing parsed); 1 in 100 has a stored HTML
//   body (1.2–2.6 KB, in `bodies` + `source_bodies`). Real parsed papers are longer (tens of
//   KB); these keep a 1 M-fact bundle at about 1 GB of JSON.
// - source_images: every other one embedded in `images` (a 200–800 byte fake PNG: signature,
//   IHDR, random IDAT, IEND, valid CRCs; unless --no-images), the others URL only.
// - facts: 90–260 characters (mean 126; 80 % within 110–154), unique (each names its survey
//   number), 1 in 40 about an image (fact_kind image, source_image_idx); content_hash as the
//   importer computes it.
// - fact_sources: one source per fact, a second for every 4th; fact_concepts: two concepts per
//   fact; every 3rd concept has aliases; summaries (~0.7 KB) cite 5 facts as
//   [text](<fact:UUID>) (kgs's portable UUIDs, so every citation resolves on import); syntheses (~2.9 KB) cite 2 facts per covered summary, name their
//   concepts as [name](<concept:UUID>) and embed the image facts of their range as
//   ![alt](<fact:UUID>); reports (~1.3 KB) cite 5 facts and a concept, 1 in 4 is the child of
//   the one before, 1 in 10 is pending (no annotations); annotations have float scores.
// - Texts include non-ASCII (NFC and NFD, a non-BMP emoji), `<`, `>`, `&`, quotes, tabs and
//   newlines, so every escaping path of the encoder runs.
// - embeddings (D > 0; default 384, the built-in embedder's size): a vector for every fact and
//   every concept. By default dense pseudo-random unit vectors (model `synthetic-random-v1`):
//   cheap to make and, like a neural model's, dense with full float32 digits. With --kgs-hash
//   they are the built-in embedder's (kgs-hash-v1 of the fact text, of `name: description` for
//   concepts; model `kgs-hash-v1`), which an import into a kgs using that embedder keeps as
//   they are when D = 384; they cost 25–55 µs a text to make and are sparse (mostly zeros).
// At 1,000,000 facts (2 cores): D = 8: 942 MB of JSON, 204 MB gzipped, 79 s; D = 16: 1,044 MB,
// 247 MB, 93 s; peak RSS 127 MB either way. Vectors cost ~1 µs per float to write
// (writer.ts encodeFloat32), so D = 384 (422 M floats) adds several minutes and ~5 GB of JSON.
import { createWriteStream } from 'node:fs'
import {
  canonicalHash,
  formatExportedAt,
  writeBundle,
  type BundleContent,
  type MediaItem,
  type VectorItem,
} from '../src/bundle/format/writer.ts'
import { portableConceptId, portableFactId } from '../src/bundle/format/citations.ts'
import { factContentHash, sourceSha256 } from '../src/bundle/format/hashes.ts'
import type { Metadata, Row, RowSection } from '../src/bundle/format/schema.ts'
import { conceptEmbeddingText } from '../src/vectors/embed-jobs.ts'
import { hashEmbedding } from '../src/vectors/embedder.ts'
import { VERSION } from '../src/version.ts'
import { graphSize, kindKey, mix32, QUALIFIERS, rowRandom, VERBS, WORDS, type GraphSize } from './lib/synthetic.ts'

export interface BundleOptions {
  facts: number
  seed?: number
  /** Vector dimensions for facts and concepts; 0 = no embeddings. Default 384. */
  dimensions?: number
  /** `random` (default): dense pseudo-random unit vectors; `kgs-hash-v1`: the built-in embedder's vectors. */
  vectors?: 'random' | 'kgs-hash-v1'
  /** Embed image bytes (`images` and `image_ref`); default true. */
  images?: boolean
  /** RFC 3339; default 2026-01-01T00:00:00Z, so the output is deterministic. */
  exportedAt?: string
  name?: string
  /** metadata.sha256 (generateBundle sets the canonical hash of pass 1). */
  sha256?: string
}

export type CountedPart = RowSection | 'images' | 'bodies' | 'fact_vectors' | 'concept_vectors'
export type BundleCounts = Record<CountedPart, number>

export interface GenerateResult {
  path: string
  facts: number
  sha256: string
  /** Uncompressed JSON bytes. */
  bytes: number
  compressedBytes: number
  counts: BundleCounts
  seconds: number
}

export const DEFAULT_EXPORTED_AT = '2026-01-01T00:00:00Z'
export const DEFAULT_DIMENSIONS = 384

// Row kinds: each has its own random stream per index and its own UUIDs.
const K = {
  source: 1,
  image: 2,
  fact: 3,
  concept: 4,
  summary: 5,
  synthesis: 6,
  investigation: 7,
  report: 8,
  annotation: 9,
  factVector: 10,
  conceptVector: 11,
  body: 12,
  imageBytes: 13,
  factStatus: 14,
} as const

const FACT_STATUSES = ['new', 'stable', 'stable', 'stable'] as const
const SOURCE_KINDS = ['pdf', 'html', 'arxiv'] as const
const CONTEXTS = ['physics', 'biology', 'geology', 'climate'] as const
const POSTURES = ['related', 'supports', 'contradicts', undefined] as const
const CONNECTORS = ['while', 'whereas', 'so that', 'because', 'although', 'and in turn']
const PLACES = [
  'in the Baltic Sea',
  'near Zu\u0308rich',
  'at Lac Léman',
  'in 東京湾 (Tokyo Bay)',
  'on the Île de Ré',
  'in the São Francisco basin',
  'at Ørsted station',
  'in the Río de la Plata',
]
const BASE_DAY = Date.parse('2026-01-01T00:00:00Z')

const cap = (word: string) => word[0]!.toUpperCase() + word.slice(1)
const CAPITALIZED = WORDS.map(cap)
const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** Picks from lists with one row's random stream. */
function picker(next: () => number) {
  return <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!
}

/** A sentence of source text, 50–110 characters; now and then with a number, a `<` or a non-ASCII unit. */
function sentence(next: () => number): string {
  const pick = picker(next)
  let text = `${pick(CAPITALIZED)} ${pick(VERBS)} ${pick(WORDS)} ${pick(QUALIFIERS)}`
  const extra = next()
  if (extra < 0.3) text += `, ${pick(CONNECTORS)} ${pick(WORDS)} ${pick(VERBS)} the ${pick(WORDS)}`
  else if (extra < 0.4) text += ` (n = ${10 + Math.floor(next() * 990)}, p < 0.0${1 + Math.floor(next() * 9)})`
  else if (extra < 0.45) text += ` at ${(next() * 40 - 20).toFixed(1)} °C ± ${(next() * 2).toFixed(2)} µm`
  return `${text}.`
}

/** The synthetic graph of one seed and size: every row as a function of its index. */
export class SyntheticGraph {
  readonly seed: number
  readonly size: GraphSize
  readonly dimensions: number
  readonly vectors: 'random' | 'kgs-hash-v1'
  readonly embedImages: boolean
  /** Promptset hashes: facts use the first two (alternately), concepts the second, fact_concepts the third. */
  readonly promptsets: readonly [string, string, string]

  constructor(options: BundleOptions) {
    if (!Number.isSafeInteger(options.facts) || options.facts < 1) throw new Error('facts must be a positive integer')
    this.seed = (options.seed ?? 1) >>> 0
    this.size = graphSize(options.facts)
    this.dimensions = options.dimensions ?? DEFAULT_DIMENSIONS
    if (!Number.isSafeInteger(this.dimensions) || this.dimensions < 0)
      throw new Error('dimensions must be a non-negative integer')
    this.vectors = options.vectors ?? 'random'
    this.embedImages = options.images ?? true
    const promptset = (k: number) => Bun.CryptoHasher.hash('sha256', `promptset ${this.seed} ${k}`, 'hex').slice(0, 16)
    this.promptsets = [promptset(0), promptset(1), promptset(2)]
  }

  private random(kind: number, index: number) {
    return rowRandom(this.seed, kind, index)
  }

  /**
   * The UUID a citation of fact or concept `index` names: kgs's portable one (citations.ts), so
   * an import resolves every citation of a generated bundle, as it does of an exported one.
   */
  uuid(kind: 'fact' | 'concept', index: number): string {
    if (kind === 'fact') return portableFactId(factContentHash(this.factText(index)))
    const { canonical_name, context } = this.concept(index)
    return portableConceptId(canonical_name, context)
  }

  // --- sources, images, bodies ---

  source(i: number): Row<'sources'> {
    const next = this.random(K.source, i)
    const pick = picker(next)
    const kind = pick(SOURCE_KINDS)
    const url = `https://papers.example.org/${i}/${pick(WORDS)}-${pick(WORDS)}${i % 7 === 3 ? '?lang=en&format=full' : ''}`
    const published_at = new Date(BASE_DAY - Math.floor(next() * 3650) * 86_400_000).toISOString().slice(0, 10)
    const failed = i % 50 === 49
    let title: string | undefined
    let text: string | undefined
    let markdown: string | undefined
    if (!failed) {
      title =
        i % 9 === 4
          ? `Über “${pick(WORDS)}” & ${pick(WORDS)} ${pick(QUALIFIERS)}`
          : `On the ${pick(WORDS)} of ${pick(WORDS)} ${pick(QUALIFIERS)}`
      const paragraphs: string[] = []
      let paragraph: string[] = []
      const sentences = 16 + Math.floor(next() * 24)
      for (let s = 0; s < sentences; s++) {
        paragraph.push(sentence(next))
        if (paragraph.length >= 4 + (s % 3) || s === sentences - 1) {
          paragraphs.push(paragraph.join(' '))
          paragraph = []
        }
      }
      text = paragraphs.join('\n\n')
      if (i % 5 === 0)
        markdown = `# ${title}\n\n${paragraphs.map((p, k) => (k === 1 ? `## Results\n\n- ${p.replace(/\. /g, '.\n- ')}` : p)).join('\n\n')}\n`
    }
    // Literals in the schema's key order, omitted fields undefined: one object shape per section.
    const row: Row<'sources'> = {
      idx: i,
      url,
      doi: i % 3 === 0 ? `10.5555/kgs.${i}` : undefined,
      kind,
      status: failed ? 'failed' : 'processed',
      parsed_title: title,
      parsed_text: text,
      parsed_markdown: markdown,
      published_at: failed ? undefined : published_at,
      sha256: undefined,
      has_stored_body: this.hasBody(i) || undefined,
    }
    row.sha256 = sourceSha256(row)
    return row
  }

  hasBody(sourceIdx: number): boolean {
    return sourceIdx % 100 === 0
  }

  body(sourceIdx: number): MediaItem {
    const source = this.source(sourceIdx)
    const next = this.random(K.body, sourceIdx)
    const paragraphs = source.parsed_text!.split('\n\n').map((p) => `<p>${escapeHtml(p)}</p>`)
    const html =
      `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${escapeHtml(source.parsed_title!)}</title></head>\n<body>\n` +
      `<nav><a href="/">Home</a> &gt; <a href="/papers?page=${1 + Math.floor(next() * 40)}&amp;sort=date">Papers</a></nav>\n<article>\n<h1>${escapeHtml(source.parsed_title!)}</h1>\n` +
      `${paragraphs.join('\n')}\n</article>\n<footer>© 2026 Example Papers · <a href="${escapeHtml(source.url)}">permalink</a></footer>\n</body>\n</html>\n`
    return { ref: `body-${sourceIdx}`, contentType: 'text/html; charset=utf-8', data: new TextEncoder().encode(html) }
  }

  private imageLength(j: number): number {
    return 200 + (mix32((j ^ kindKey(this.seed, K.imageBytes)) >>> 0) % 600)
  }

  hasImageBytes(j: number): boolean {
    return this.embedImages && j % 2 === 0
  }

  imageUrl(j: number): string {
    return `https://papers.example.org/${j % this.size.sources}/figures/${j}.png`
  }

  sourceImage(j: number): Row<'source_images'> {
    const next = this.random(K.image, j)
    const pick = picker(next)
    const sources = this.size.sources
    const row: Row<'source_images'> = {
      idx: j,
      source_idx: j % sources,
      kind: j % 2 ? 'page' : 'inline',
      page_number: j % 2 ? 1 + (j % 9) : undefined,
      position: Math.floor(j / sources),
      url: this.imageUrl(j),
      width: 320 + 16 * Math.floor(next() * 100),
      height: 240 + 16 * Math.floor(next() * 60),
      bytes: this.imageLength(j),
      alt_text:
        j % 5 === 2
          ? `Figure ${j}: ${pick(WORDS)} vs. ${pick(WORDS)} (<5 % error)`
          : `Figure ${j}: ${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)}`,
      content_type: 'image/png',
      image_ref: this.hasImageBytes(j) ? `img-${j}` : undefined,
    }
    return row
  }

  /** A small fake PNG: signature, IHDR, an IDAT of random bytes, IEND, with correct chunk CRCs. */
  imageBytes(j: number): Uint8Array {
    const length = this.imageLength(j)
    const next = this.random(K.imageBytes, j)
    const bytes = new Uint8Array(length)
    const view = new DataView(bytes.buffer)
    bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0)
    const chunk = (offset: number, type: string, dataLength: number, fill: (start: number, end: number) => void) => {
      view.setUint32(offset, dataLength)
      for (let k = 0; k < 4; k++) bytes[offset + 4 + k] = type.charCodeAt(k)
      fill(offset + 8, offset + 8 + dataLength)
      view.setUint32(offset + 8 + dataLength, Bun.hash.crc32(bytes.subarray(offset + 4, offset + 8 + dataLength)))
      return offset + 12 + dataLength
    }
    let at = chunk(8, 'IHDR', 13, (o) => {
      view.setUint32(o, 320 + (j % 100) * 16)
      view.setUint32(o + 4, 240 + (j % 60) * 16)
      bytes.set([8, 6, 0, 0, 0], o + 8)
    })
    at = chunk(at, 'IDAT', length - at - 24, (start, end) => {
      for (let k = start; k < end; k++) bytes[k] = Math.floor(next() * 256)
    })
    chunk(at, 'IEND', 0, () => {})
    return bytes
  }

  // --- facts ---

  isImageFact(i: number): boolean {
    return i % 40 === 7
  }

  factText(i: number): string {
    const next = this.random(K.fact, i)
    const pick = picker(next)
    if (this.isImageFact(i)) {
      return `The figure shows ${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)} ${pick(QUALIFIERS)}; panel ${'abcd'[i % 4]} compares ${pick(WORDS)} with ${pick(WORDS)} in survey ${i + 1}.`
    }
    let text = `${pick(CAPITALIZED)} ${pick(VERBS)} ${pick(WORDS)} ${pick(QUALIFIERS)}, ${pick(CONNECTORS)} ${pick(WORDS)} ${pick(VERBS)} the ${pick(WORDS)} of ${pick(WORDS)}`
    if (i % 11 === 3) text += ` when pH < ${(4 + next() * 3).toFixed(1)}`
    if (i % 13 === 5) text += `; the “${pick(WORDS)}” & “${pick(WORDS)}” effect`
    if (i % 17 === 6) text += ` at −${1 + Math.floor(next() * 40)} °C`
    if (i % 19 === 8) text += `, as the authors put it: "${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)}"`
    if (i % 23 === 9) text += ` ${pick(PLACES)}`
    const detail = next()
    if (detail < 0.3) text += ` ${pick(PLACES)}`
    else if (detail < 0.55) text += `, by ${1 + Math.floor(next() * 60)} % over ${2 + Math.floor(next() * 20)} years`
    else if (detail < 0.8) text += ` in ${5 + Math.floor(next() * 40)} of ${50 + Math.floor(next() * 50)} samples`
    else text += ` (r = 0.${10 + Math.floor(next() * 89)}, ${pick(QUALIFIERS)})`
    text += ` (survey ${i + 1}).`
    if (i % 29 === 10) text += `\nIn contrast, ${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)}.`
    if (i % 31 === 11) text = `  ${text.replace(' ', '\t ')} `
    return text
  }

  /**
   * factContentHash(text), without its normalization (a few µs a fact) where the text is known
   * to be normal already: only the newline and tab variants and the NFD place name are not.
   */
  private contentHash(i: number, text: string): string {
    const normal = i % 29 !== 10 && i % 31 !== 11 && !text.includes('\u0308')
    return normal ? Bun.CryptoHasher.hash('sha256', text, 'hex') : factContentHash(text)
  }

  fact(i: number): Row<'facts'> {
    const text = this.factText(i)
    const next = this.random(K.factStatus, i)
    const image = this.isImageFact(i) ? Math.floor(i / 40) : -1
    const row: Row<'facts'> = {
      idx: i,
      text,
      fact_kind: image >= 0 ? 'image' : 'text',
      image_url: image >= 0 ? this.imageUrl(image) : undefined,
      content_hash: this.contentHash(i, text),
      promptset_hash: this.promptsets[i % 2],
      status: i % 200 === 199 ? 'to_delete' : picker(next)(FACT_STATUSES),
      source_image_idx: image,
    }
    return row
  }

  *factSources(i: number): Generator<Row<'fact_sources'>> {
    const sources = this.size.sources
    const first = Math.floor(i / 20) % sources
    yield { fact_idx: i, source_idx: first, chunk_index: i % 20 }
    const second = (first + 1) % sources
    if (second !== first && i % 4 === 0) yield { fact_idx: i, source_idx: second, chunk_index: 0 }
  }

  /** The concepts of fact i: concept k gathers facts 10k..10k+9 and some neighbours. */
  factConceptIdxs(i: number): number[] {
    const concepts = this.size.concepts
    const first = Math.floor(i / 10) % concepts
    const second = (Math.floor(i / 10) + 1 + (i % 7)) % concepts
    return first === second ? [first] : [first, second]
  }

  /** Link text for a citation: the fact's first words. */
  private citation(i: number, image = false): string {
    const text = this.factText(i).trim().replace(/\s+/g, ' ')
    const label = text.length > 48 ? `${text.slice(0, text.lastIndexOf(' ', 48))}…` : text
    return `${image ? '!' : ''}[${label}](<fact:${this.uuid('fact', i)}>)`
  }

  // --- concepts ---

  concept(i: number): Row<'concepts'> {
    const next = this.random(K.concept, i)
    const pick = picker(next)
    const a = pick(WORDS)
    const b = pick(WORDS)
    const canonical_name = i % 9 === 4 ? `${a}–${b} coupling ${i}` : `${a} ${b} ${i}`
    const context = pick(CONTEXTS)
    let description = `How ${a} ${pick(VERBS)} ${b} ${pick(QUALIFIERS)}`
    if (i % 7 === 2) description += `, covering ${pick(WORDS)} & ${pick(WORDS)} interactions`
    if (i % 23 === 5) description += ' 🌊'
    description += '.'
    return { idx: i, canonical_name, context, description, promptset_hash: this.promptsets[1] }
  }

  aliases(i: number): Row<'concept_aliases'>[] {
    if (i % 3 !== 0) return []
    const words = this.concept(i).canonical_name.split(' ').slice(0, -1)
    const aliases = [{ concept_idx: i, alias_text: `${[...words].reverse().join(' ')} (${i})` }]
    if (i % 6 === 0)
      aliases.push({ concept_idx: i, alias_text: `${words.map((w) => w[0]!.toUpperCase()).join('')}-${i}` })
    return aliases
  }

  summary(k: number): Row<'concept_summaries'> {
    const next = this.random(K.summary, k)
    const pick = picker(next)
    const covered: number[] = []
    for (let f = 10 * k; f < Math.min(10 * k + 5, this.size.facts); f++) covered.push(f)
    const name = this.concept(k).canonical_name
    const body = covered
      .map((f) => `${pick(CAPITALIZED)} ${pick(VERBS)} ${pick(WORDS)} ${pick(QUALIFIERS)} ${this.citation(f)}.`)
      .join(' ')
    return {
      concept_idx: k,
      sequence_num: 0,
      is_complete: k % 20 !== 19,
      fact_count: covered.length,
      content: `## ${name}\n\n${body}\n`,
      covered_fact_idxs: covered,
      model: 'gen-bundle',
    }
  }

  synthesis(s: number): Row<'concept_syntheses'> {
    const { concepts, facts } = this.size
    const group: number[] = []
    for (let c = 10 * s; c < Math.min(10 * s + 10, concepts); c++) group.push(c)
    const images: number[] = []
    for (let f = 100 * s + 7; f < Math.min(100 * s + 100, facts); f += 40) images.push(f)
    const name = this.concept(group[0]!).canonical_name
    const lines = group.map((c) => {
      const cited = [10 * c, 10 * c + 1].filter((f) => f < facts).map((f) => this.citation(f))
      return `- [${this.concept(c).canonical_name}](<concept:${this.uuid('concept', c)}>): ${cited.join('; ')}`
    })
    const figures = images.map((f) => this.citation(f, true))
    return {
      canonical_name: name,
      content: `# ${name}\n\n${lines.join('\n')}${figures.length ? `\n\n${figures.join('\n')}` : ''}\n`,
      covered_summary_idxs: group,
      covered_concept_idxs: group,
      embedded_image_idxs: images,
      model: 'gen-bundle',
    }
  }

  // --- investigations and reports ---

  investigation(i: number): Row<'investigations'> {
    const pick = picker(this.random(K.investigation, i))
    return {
      idx: i,
      title:
        i % 5 === 1
          ? `Investigation ${i}: "${pick(WORDS)}" <vs> ${pick(WORDS)}`
          : `Investigation ${i}: ${pick(WORDS)} and ${pick(WORDS)}`,
      topic: pick(WORDS),
    }
  }

  investigationSources(i: number): Row<'investigation_sources'>[] {
    const sources = [...new Set([0, 1, 2].map((k) => (i * 3 + k) % this.size.sources))]
    return sources.map((source_idx) => ({ investigation_idx: i, source_idx }))
  }

  private reportFacts(i: number): number[] {
    const start = (i * 5) % this.size.facts
    const cited: number[] = []
    for (let f = start; f < Math.min(start + 5, this.size.facts); f++) cited.push(f)
    return cited
  }

  private reportSentence(f: number): string {
    const text = this.factText(f).trim()
    return `It is reported that ${text[0]!.toLowerCase()}${text.slice(1)}`
  }

  report(i: number): Row<'reports'> {
    const pick = picker(this.random(K.report, i))
    const cited = this.reportFacts(i)
    const sentences = cited.map((f) => this.reportSentence(f))
    const concept = (i * 17) % this.size.concepts
    const pending = i % 10 === 9
    return {
      idx: i,
      title: `Report ${i} on ${pick(WORDS)}${i % 6 === 2 ? ' — état des lieux' : ''}`,
      topic: pick(WORDS),
      body_md: `${sentences.join(' ')}\n\nSee ${cited.map((f) => this.citation(f)).join(', ')} and [${this.concept(concept).canonical_name}](<concept:${this.uuid('concept', concept)}>).`,
      status: pending ? 'pending' : 'annotated',
      parent_idx: i % 4 === 3 ? i - 1 : -1,
      similarity_threshold: pending ? undefined : pick([0.7, 0.75, 0.8, 0.825]),
      embedded_model: pending ? undefined : 'kgs-hash-v1',
      sentence_count: pending ? undefined : sentences.length,
    }
  }

  annotations(i: number): Row<'report_annotations'>[] {
    if (i % 10 === 9) return []
    const next = this.random(K.annotation, i)
    const pick = picker(next)
    return this.reportFacts(i).map((f, s) => {
      return {
        report_idx: i,
        sentence_index: s,
        sentence_text: this.reportSentence(f),
        fact_idx: f,
        score: 0.5 + next() / 2,
        posture: pick(POSTURES),
      }
    })
  }

  // --- vectors ---

  get embeddingModel(): string {
    return this.vectors === 'kgs-hash-v1' ? 'kgs-hash-v1' : 'synthetic-random-v1'
  }

  private randomVector(kind: number, index: number): Float32Array {
    const next = this.random(kind, index)
    const vector = new Float32Array(this.dimensions)
    let norm = 0
    for (let d = 0; d < vector.length; d++) {
      // The sum of two uniforms: a tent distribution, closer to a model's coordinates than a flat one.
      const x = next() + next() - 1
      vector[d] = x
      norm += x * x
    }
    norm = Math.sqrt(norm) || 1
    for (let d = 0; d < vector.length; d++) vector[d]! /= norm
    return vector
  }

  factVector(i: number): Float32Array {
    return this.vectors === 'kgs-hash-v1'
      ? hashEmbedding(this.factText(i), this.dimensions)
      : this.randomVector(K.factVector, i)
  }

  conceptVector(i: number): Float32Array {
    if (this.vectors === 'random') return this.randomVector(K.conceptVector, i)
    const concept = this.concept(i)
    return hashEmbedding(
      conceptEmbeddingText({ canonical_name: concept.canonical_name, description: concept.description ?? '' }),
      this.dimensions,
    )
  }

  // --- the bundle ---

  metadata(options: Pick<BundleOptions, 'name' | 'exportedAt' | 'sha256'>): Metadata {
    const { size } = this
    const metadata: Metadata = {
      name: options.name ?? `synthetic-${size.facts}`,
      description: `Synthetic knowledge graph of ${size.facts} facts, seed ${this.seed} (scripts/gen-bundle.ts)`,
      tags: ['synthetic', 'benchmark'],
      okt_version: `kgs/${VERSION}`,
      // Facts use the first two, concepts the second, fact_concepts the third: all three, always.
      promptset_hashes: [...this.promptsets].sort(),
      source_count: size.sources,
      fact_count: size.facts,
      concept_count: size.concepts,
      summary_count: size.summaries,
      synthesis_count: size.syntheses,
      report_count: size.reports,
      investigation_count: size.investigations,
      exported_at: options.exportedAt ? formatExportedAt(new Date(options.exportedAt)) : DEFAULT_EXPORTED_AT,
    }
    if (this.dimensions > 0) {
      metadata.embedding_model = this.embeddingModel
      metadata.embedding_dimensions = this.dimensions
    }
    if (options.sha256) metadata.sha256 = options.sha256
    return metadata
  }
}

export function emptyCounts(): BundleCounts {
  return {
    sources: 0,
    images: 0,
    bodies: 0,
    source_images: 0,
    source_bodies: 0,
    facts: 0,
    fact_sources: 0,
    concepts: 0,
    concept_aliases: 0,
    fact_concepts: 0,
    concept_summaries: 0,
    concept_syntheses: 0,
    investigations: 0,
    investigation_sources: 0,
    reports: 0,
    report_annotations: 0,
    fact_vectors: 0,
    concept_vectors: 0,
  }
}

/** An iterable that can be iterated again (each time a fresh generator), counting what it yields when asked. */
function rows<T>(make: () => Iterable<T>, counts: BundleCounts | undefined, part: CountedPart): Iterable<T> {
  return {
    *[Symbol.iterator]() {
      if (!counts) return yield* make()
      for (const item of make()) {
        counts[part]++
        yield item
      }
    },
  }
}

function* range<T>(n: number, row: (i: number) => T): Generator<T> {
  for (let i = 0; i < n; i++) yield row(i)
}

function* flatRange<T>(n: number, rows: (i: number) => Iterable<T>): Generator<T> {
  for (let i = 0; i < n; i++) yield* rows(i)
}

/**
 * The bundle's content, built lazily as the writer asks for it: each section is a generator
 * over indices. The row sources can be iterated more than once; `counts`, when given, is
 * incremented as rows, media items and vectors are produced.
 */
export function bundleContent(options: BundleOptions, counts?: BundleCounts): BundleContent {
  const graph = new SyntheticGraph(options)
  const { size } = graph
  const content: BundleContent = {
    metadata: graph.metadata(options),
    rows: {
      sources: rows(() => range(size.sources, (i) => graph.source(i)), counts, 'sources'),
      source_images: rows(() => range(size.images, (j) => graph.sourceImage(j)), counts, 'source_images'),
      source_bodies: rows(
        () =>
          flatRange(size.sources, (i) =>
            graph.hasBody(i)
              ? [{ source_idx: i, body_ref: `body-${i}`, content_type: 'text/html; charset=utf-8' }]
              : [],
          ),
        counts,
        'source_bodies',
      ),
      facts: rows(() => range(size.facts, (i) => graph.fact(i)), counts, 'facts'),
      fact_sources: rows(() => flatRange(size.facts, (i) => graph.factSources(i)), counts, 'fact_sources'),
      concepts: rows(() => range(size.concepts, (i) => graph.concept(i)), counts, 'concepts'),
      concept_aliases: rows(() => flatRange(size.concepts, (i) => graph.aliases(i)), counts, 'concept_aliases'),
      fact_concepts: rows(
        () =>
          flatRange(size.facts, (i) =>
            graph
              .factConceptIdxs(i)
              .map((concept_idx) => ({ fact_idx: i, concept_idx, promptset_hash: graph.promptsets[2] })),
          ),
        counts,
        'fact_concepts',
      ),
      concept_summaries: rows(() => range(size.summaries, (k) => graph.summary(k)), counts, 'concept_summaries'),
      concept_syntheses: rows(() => range(size.syntheses, (s) => graph.synthesis(s)), counts, 'concept_syntheses'),
      investigations: rows(() => range(size.investigations, (i) => graph.investigation(i)), counts, 'investigations'),
      investigation_sources: rows(
        () => flatRange(size.investigations, (i) => graph.investigationSources(i)),
        counts,
        'investigation_sources',
      ),
      reports: rows(() => range(size.reports, (i) => graph.report(i)), counts, 'reports'),
      report_annotations: rows(
        () => flatRange(size.reports, (i) => graph.annotations(i)),
        counts,
        'report_annotations',
      ),
    },
    images: rows(
      () =>
        flatRange(size.images, (j): MediaItem[] =>
          graph.hasImageBytes(j) ? [{ ref: `img-${j}`, contentType: 'image/png', data: graph.imageBytes(j) }] : [],
        ),
      counts,
      'images',
    ),
    bodies: rows(() => flatRange(size.sources, (i) => (graph.hasBody(i) ? [graph.body(i)] : [])), counts, 'bodies'),
  }
  if (graph.dimensions > 0) {
    content.embeddings = {
      model: graph.embeddingModel,
      dimensions: graph.dimensions,
      facts: rows(
        () => range(size.facts, (i): VectorItem => ({ index: i, vector: graph.factVector(i) })),
        counts,
        'fact_vectors',
      ),
      concepts: rows(
        () => range(size.concepts, (i): VectorItem => ({ index: i, vector: graph.conceptVector(i) })),
        counts,
        'concept_vectors',
      ),
    }
  }
  return content
}

/** Writes the bundle to `path` in two passes (canonical hash, then the file with it) and says what it wrote. */
export async function generateBundle(path: string, options: BundleOptions): Promise<GenerateResult> {
  const started = performance.now()
  const sha256 = await canonicalHash(bundleContent({ ...options, sha256: undefined }))
  const counts = emptyCounts()
  const { bytes, compressedBytes } = await writeBundle(
    bundleContent({ ...options, sha256 }, counts),
    createWriteStream(path),
    { level: 6 },
  )
  return {
    path,
    facts: options.facts,
    sha256,
    bytes,
    compressedBytes,
    counts,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  }
}

/** Parses the command line of this script (also used by scripts/bench/bundle.ts). */
export function parseArgs(args: string[]): { path: string; options: BundleOptions } | undefined {
  const positional: string[] = []
  const options: Partial<BundleOptions> = {}
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const value = () => {
      const v = args[++i]
      if (v === undefined) throw new Error(`${arg} needs a value`)
      return v
    }
    if (arg === '--seed') options.seed = Number(value())
    else if (arg === '--dimensions') options.dimensions = Number(value())
    else if (arg === '--no-images') options.images = false
    else if (arg === '--kgs-hash') options.vectors = 'kgs-hash-v1'
    else if (arg === '--exported-at') {
      options.exportedAt = value()
      if (Number.isNaN(Date.parse(options.exportedAt)))
        throw new Error(`--exported-at: not a date: ${options.exportedAt}`)
    } else if (arg.startsWith('--')) throw new Error(`unknown option ${arg}`)
    else positional.push(arg)
  }
  const [path, facts] = positional
  if (!path || !facts || !/^\d+$/.test(facts) || positional.length > 2) return undefined
  return { path, options: { ...options, facts: Number(facts) } }
}

if (import.meta.main) {
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs(process.argv.slice(2))
  } catch (error) {
    console.error(String(error instanceof Error ? error.message : error))
    process.exit(2)
  }
  if (!parsed) {
    console.error(
      'usage: bun scripts/gen-bundle.ts <out.json.gz> <facts> [--seed N] [--dimensions D (0 = no embeddings; default 384)] [--kgs-hash] [--no-images] [--exported-at ISO]',
    )
    process.exit(2)
  }
  console.log(JSON.stringify(await generateBundle(parsed.path, parsed.options)))
}
