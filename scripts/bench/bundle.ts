// The bundle codec's throughput and memory on a synthetic bundle (scripts/gen-bundle.ts):
// 1. Write: writeBundle from in-memory arrays (rows, image bytes, Float32Array vectors) to a
//    discarding sink, next to JSON.stringify of the whole document + zlib.gzipSync (level 6 both),
//    in this process on the same data (the document is the file's JSON.parse, see 2).
// 2. Read: readBundle over the file consuming every item (media drained), next to
//    JSON.parse(gunzipSync(readFileSync(file))).
// 3. Peak RSS, each in a child process of its own: the streaming write (gen-bundle straight from
//    the generator to a file, both passes), the streaming read, and the two baselines (the
//    document built from the generator, stringified and gzipped; the file gunzipped and parsed).
//    Peak = the child's VmHWM (see peakRssMB); the children run first, while this process is small.
// Ratios are baseline time / codec time (targets >= 0.5); peak RSS target for streaming < 200 MB.
// In this process: writeBundle, then readBundle, then the baselines (their multi-GB document
// last, so it does not weigh on the others). 1 M facts take 5–6 minutes on 2 cores.
//
// Usage: bun scripts/bench/bundle.ts [facts=1000000] [--dimensions D=16] [--seed N]
// D = 16 by default: a vector for every fact and concept, about a fifth of the JSON bytes; at
// 384 the vectors would be ~80 % of the file and the bench would measure float formatting only.
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { gunzipSync, gzipSync } from 'node:zlib'
import { bundleContent, generateBundle, type BundleOptions } from '../gen-bundle.ts'
import { encodeFloat32 } from '../../src/bundle/format/json.ts'
import { readBundle } from '../../src/bundle/format/reader.ts'
import { V2_KEYS, type RowSection } from '../../src/bundle/format/schema.ts'
import { writeBundle, type BundleContent, type MediaItem, type VectorItem } from '../../src/bundle/format/writer.ts'
import { runBenchChild } from '../lib/load.ts'

const DEFAULT_FACTS = 1_000_000
const DEFAULT_DIMENSIONS = 16
const LEVEL = 6

/**
 * Peak RSS of this process in MB. On Linux ru_maxrss (process.resourceUsage().maxRSS) survives
 * fork and execve, so a child spawned by a parent holding 800 MB reports at least 800 MB
 * whatever it does itself; VmHWM belongs to the address space the child's exec made, so it is
 * the child's own peak. Elsewhere, maxRSS.
 */
function peakRssMB(): number {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))
    if (hwm) return Number(hwm[1]) / 1024
  } catch {}
  return process.resourceUsage().maxRSS / 1024
}
const seconds = (since: number) => (performance.now() - since) / 1000
const MB = 1e6

/** Every section of a content as arrays: what an exporter holding the graph in memory would hand over. */
function materialize(content: BundleContent): BundleContent & { items: number } {
  let items = 0
  const all = <T>(source: unknown): T[] => {
    const list = [...(source as Iterable<T>)]
    items += list.length
    return list
  }
  const rows = Object.fromEntries(
    Object.entries(content.rows).map(([section, source]) => [section, all(source)]),
  ) as BundleContent['rows']
  const images = all<MediaItem>(content.images)
  const bodies = all<MediaItem>(content.bodies)
  const embeddings = content.embeddings && {
    ...content.embeddings,
    facts: all<VectorItem>(content.embeddings.facts),
    concepts: all<VectorItem>(content.embeddings.concepts),
  }
  return { ...content, rows, images, bodies, embeddings, items }
}

/**
 * The whole document as one object, the baseline writer's input, built from the generator: what
 * JSON.parse gives for the file (media as base64, vectors as the numbers their shortest float32
 * digits denote; as float64 digits of the float32 values they would be ~30 % more JSON, more than
 * Bun's JSON.stringify can build at 1 M facts).
 */
function wholeDocument(content: BundleContent): Record<string, unknown> {
  const data = materialize(content)
  const media = (items: unknown) =>
    Object.fromEntries(
      (items as MediaItem[]).map((item) => [
        item.ref,
        { content_type: item.contentType, data: Buffer.from(item.data as Uint8Array).toString('base64') },
      ]),
    )
  const vectors = (items: unknown) =>
    Object.fromEntries(
      (items as VectorItem[]).map((item) => [
        String(item.index),
        Array.from(item.vector, (x) => Number(encodeFloat32(x))),
      ]),
    )
  const document: Record<string, unknown> = {}
  for (const key of V2_KEYS) {
    if (key === 'schema_version') document[key] = 2
    else if (key === 'metadata') document[key] = data.metadata
    else if (key === 'images' || key === 'bodies') document[key] = media(data[key])
    else if (key === 'embeddings') {
      if (data.embeddings)
        document[key] = {
          model: data.embeddings.model,
          dimensions: data.embeddings.dimensions,
          fact_vectors: vectors(data.embeddings.facts),
          concept_vectors: vectors(data.embeddings.concepts),
        }
    } else document[key] = data.rows[key as RowSection]
  }
  return document
}

const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() })

/** Consumes every item of the file, draining media; returns the items seen and the reader's stats. */
async function streamingRead(path: string) {
  const reader = readBundle(createReadStream(path, { highWaterMark: 256 * 1024 }))
  let items = 0
  for await (const item of reader) {
    if (item.type === 'row' || item.type === 'vector') items++
    else if (item.type === 'media') {
      items++
      if (item.data) for await (const _chunk of item.data);
    }
  }
  return { items, stats: reader.stats }
}

/** Rows, vectors and media items of a parsed document. */
function documentItems(document: Record<string, unknown>): number {
  let items = 0
  for (const [key, value] of Object.entries(document)) {
    if (Array.isArray(value)) items += value.length
    else if ((key === 'images' || key === 'bodies') && value) items += Object.keys(value).length
    else if (key === 'embeddings' && value) {
      const { fact_vectors, concept_vectors } = value as Record<string, object>
      items += Object.keys(fact_vectors ?? {}).length + Object.keys(concept_vectors ?? {}).length
    }
  }
  return items
}

// --- children: one measurement each, reporting peak RSS at exit ---

async function child(mode: string, args: string[]): Promise<Record<string, unknown>> {
  const [path, facts, dimensions, seed] = args
  const options: BundleOptions = { facts: Number(facts), dimensions: Number(dimensions), seed: Number(seed) }
  const started = performance.now()
  switch (mode) {
    case 'write': {
      const result = await generateBundle(path!, options)
      return {
        seconds: seconds(started),
        sha256: result.sha256,
        bytes: result.bytes,
        compressedBytes: result.compressedBytes,
        counts: result.counts,
      }
    }
    case 'read': {
      const { items, stats } = await streamingRead(path!)
      return { seconds: seconds(started), items, decompressedBytes: stats.decompressedBytes }
    }
    case 'baseline-write': {
      const document = wholeDocument(bundleContent(options))
      const built = seconds(started)
      const gzipped = gzipSync(Buffer.from(JSON.stringify(document)), { level: LEVEL })
      writeFileSync(path!, gzipped)
      return { seconds: seconds(started), buildSeconds: built, compressedBytes: gzipped.length }
    }
    case 'baseline-read': {
      const document = JSON.parse(gunzipSync(readFileSync(path!)).toString()) as Record<string, unknown>
      return { seconds: seconds(started), items: documentItems(document) }
    }
  }
  throw new Error(`unknown child mode ${mode}`)
}

/** A child's figures: its peak RSS and seconds, and what its mode measured. */
const runChild = (mode: string, args: string[]) =>
  runBenchChild<Record<string, unknown> & { maxRssMB: number; seconds: number }>(import.meta.path, mode, ...args)

// --- the bench ---

function parse(argv: string[]) {
  let facts = DEFAULT_FACTS
  let dimensions = DEFAULT_DIMENSIONS
  let seed = 1
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--dimensions') dimensions = Number(argv[++i])
    else if (arg === '--seed') seed = Number(argv[++i])
    else if (/^\d+$/.test(arg)) facts = Number(arg)
    else
      throw new Error(
        `usage: bun scripts/bench/bundle.ts [facts=${DEFAULT_FACTS}] [--dimensions D=${DEFAULT_DIMENSIONS}] [--seed N]`,
      )
  }
  if (!Number.isSafeInteger(dimensions) || dimensions < 0) throw new Error('--dimensions: a non-negative integer')
  return { facts, dimensions, seed }
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

async function main(): Promise<void> {
  const { facts, dimensions, seed } = parse(process.argv.slice(2))
  const dir = mkdtempSync(join(tmpdir(), 'kgs-bench-bundle-'))
  const file = join(dir, 'bundle.json.gz')
  const log = (line: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`)
  try {
    const childArgs = (path: string) => [path, String(facts), String(dimensions), String(seed)]
    log(`streaming write (child): ${fmt(facts)} facts, D=${dimensions}`)
    const streamingWrite = await runChild('write', childArgs(file))
    const sha256 = streamingWrite.sha256 as string
    const compressedBytes = statSync(file).size

    // 3. Peak RSS, one child each (the streaming write above was the first).
    log('streaming read (child)')
    const streamingReadChild = await runChild('read', childArgs(file))
    log('baseline write (child)')
    const baselineWriteChild = await runChild('baseline-write', childArgs(join(dir, 'baseline.json.gz')))
    rmSync(join(dir, 'baseline.json.gz'))
    log('baseline read (child)')
    const baselineReadChild = await runChild('baseline-read', childArgs(file))

    // 1. Write, in this process, same data. Blocks let each materialization go before the next.
    const { items, written, writeSeconds } = await (async () => {
      log('materializing the rows in memory (not timed)')
      const data = materialize(bundleContent({ facts, dimensions, seed, sha256 }))
      Bun.gc(true)
      log('writeBundle from arrays')
      const started = performance.now()
      const written = await writeBundle(data, discard(), { level: LEVEL })
      return { items: data.items, written, writeSeconds: seconds(started) }
    })()
    Bun.gc(true)

    // 2. Read, before the baselines' multi-GB document has been through the heap.
    log('readBundle over the file')
    const started = performance.now()
    const read = await streamingRead(file)
    const readSeconds = seconds(started)
    Bun.gc(true)

    // The read baseline's document is the write baseline's input (the same data again).
    const { baselineReadSeconds, baselineItems, baselineWriteSeconds, baselineJsonBytes, baselineCompressed } = (() => {
      log('baseline read: JSON.parse(gunzipSync(file))')
      let started = performance.now()
      const document = JSON.parse(gunzipSync(readFileSync(file)).toString()) as Record<string, unknown>
      const baselineReadSeconds = seconds(started)
      log('baseline write: gzipSync(JSON.stringify(document))')
      started = performance.now()
      const json = Buffer.from(JSON.stringify(document))
      const gzipped = gzipSync(json, { level: LEVEL })
      const baselineWriteSeconds = seconds(started)
      return {
        baselineReadSeconds,
        baselineItems: documentItems(document),
        baselineWriteSeconds,
        baselineJsonBytes: json.length,
        baselineCompressed: gzipped.length,
      }
    })()
    Bun.gc(true)

    if (read.items !== items || baselineItems !== items)
      throw new Error(`item counts differ: generated ${items}, readBundle ${read.items}, JSON.parse ${baselineItems}`)

    const figures = {
      facts,
      dimensions,
      seed,
      vectors: dimensions > 0 ? 'synthetic-random-v1: every fact and concept' : 'none',
      jsonBytes: written.bytes,
      compressedBytes,
      items,
      counts: streamingWrite.counts,
      write: {
        writeBundle: {
          seconds: writeSeconds,
          itemsPerSecond: items / writeSeconds,
          jsonMBPerSecond: written.bytes / MB / writeSeconds,
        },
        baseline: {
          seconds: baselineWriteSeconds,
          itemsPerSecond: items / baselineWriteSeconds,
          jsonMBPerSecond: baselineJsonBytes / MB / baselineWriteSeconds,
          jsonBytes: baselineJsonBytes,
          compressedBytes: baselineCompressed,
        },
        ratio: baselineWriteSeconds / writeSeconds,
      },
      read: {
        readBundle: {
          seconds: readSeconds,
          itemsPerSecond: items / readSeconds,
          jsonMBPerSecond: written.bytes / MB / readSeconds,
        },
        baseline: {
          seconds: baselineReadSeconds,
          itemsPerSecond: items / baselineReadSeconds,
          jsonMBPerSecond: written.bytes / MB / baselineReadSeconds,
        },
        ratio: baselineReadSeconds / readSeconds,
      },
      peakRssMB: {
        streamingWrite: streamingWrite.maxRssMB,
        streamingRead: streamingReadChild.maxRssMB,
        baselineWrite: baselineWriteChild.maxRssMB,
        baselineRead: baselineReadChild.maxRssMB,
      },
      childSeconds: {
        streamingWrite: streamingWrite.seconds,
        streamingRead: streamingReadChild.seconds,
        baselineWrite: baselineWriteChild.seconds,
        baselineRead: baselineReadChild.seconds,
      },
    }

    const row = (name: string, s: number, perSecond: number, mbs: number, extra = '') =>
      `${name.padEnd(34)}${`${fmt(s, 1)} s`.padStart(9)}${fmt(perSecond).padStart(13)}${fmt(mbs, 1).padStart(10)}${extra}`
    console.log(`bundle bench: ${fmt(facts)} facts, seed ${seed}, D=${dimensions} (${figures.vectors})`)
    console.log(
      `file: ${fmt(written.bytes / MB, 1)} MB JSON, ${fmt(compressedBytes / MB, 1)} MB gzip (level ${LEVEL}); ${fmt(items)} items (rows + vectors + media)`,
    )
    console.log(
      `${''.padEnd(34)}${'time'.padStart(9)}${'items/s'.padStart(13)}${'MB/s'.padStart(10)}   (MB/s of uncompressed JSON)`,
    )
    console.log(
      row(
        'write  writeBundle (arrays)',
        writeSeconds,
        figures.write.writeBundle.itemsPerSecond,
        figures.write.writeBundle.jsonMBPerSecond,
      ),
    )
    console.log(
      row(
        'write  JSON.stringify + gzipSync',
        baselineWriteSeconds,
        figures.write.baseline.itemsPerSecond,
        figures.write.baseline.jsonMBPerSecond,
        `   ratio ${fmt(figures.write.ratio, 2)} (target >= 0.5)`,
      ),
    )
    console.log(
      row(
        'read   readBundle',
        readSeconds,
        figures.read.readBundle.itemsPerSecond,
        figures.read.readBundle.jsonMBPerSecond,
      ),
    )
    console.log(
      row(
        'read   gunzipSync + JSON.parse',
        baselineReadSeconds,
        figures.read.baseline.itemsPerSecond,
        figures.read.baseline.jsonMBPerSecond,
        `   ratio ${fmt(figures.read.ratio, 2)} (target >= 0.5)`,
      ),
    )
    console.log('peak RSS, one child process each:')
    const rss = (name: string, mb: number, s: number, target = '') =>
      console.log(`  ${name.padEnd(52)}${`${fmt(mb)} MB`.padStart(10)}${`${fmt(s, 1)} s`.padStart(10)}${target}`)
    rss(
      'streaming write (gen-bundle: hash pass + file pass)',
      streamingWrite.maxRssMB,
      streamingWrite.seconds,
      '   (target < 200 MB)',
    )
    rss(
      'streaming read (readBundle, media drained)',
      streamingReadChild.maxRssMB,
      streamingReadChild.seconds,
      '   (target < 200 MB)',
    )
    rss('baseline write (document + stringify + gzipSync)', baselineWriteChild.maxRssMB, baselineWriteChild.seconds)
    rss('baseline read (gunzipSync + JSON.parse)', baselineReadChild.maxRssMB, baselineReadChild.seconds)
    console.log(JSON.stringify(figures))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const argv = process.argv.slice(2)
  if (argv[0] === '--child') {
    const result = await child(argv[1]!, argv.slice(2))
    console.log(JSON.stringify({ ...result, maxRssMB: peakRssMB(), ruMaxRssMB: process.resourceUsage().maxRSS / 1024 }))
  } else {
    await main()
  }
}
