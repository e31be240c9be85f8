// Offline bundle tools behind `kgs bundle inspect|verify|canonical`: each is one streaming
// pass over the file, so they work on bundles of any size in bounded memory.
import { Readable, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BundleError, readBundle, type BundleItem, type ReaderLimits, type ReaderStats } from './reader.ts'
import { COUNTED_SECTIONS, type Metadata, type RowSection } from './schema.ts'
import {
  canonicalHashes,
  canonicalRulesFor,
  encodeBundle,
  hashedSections,
  type BundleContent,
  type CanonicalRule,
  type RowSource,
} from './writer.ts'

/**
 * Turns a reader's items back into writer input for the canonical encoder, in the same pass:
 * each section's rows are pulled from the reader as the encoder asks for them, and everything
 * the canonical form leaves out is passed over. This needs the hashed sections in canonical
 * order, which both versions (and every Go-written file) have; anything else is refused rather
 * than buffered.
 */
class CanonicalSource {
  private readonly items: AsyncIterator<BundleItem>
  private lookahead: BundleItem | undefined
  private ended = false
  /** Positions of the hashed sections in the canonical order of the file's version. */
  private hashedOrder = new Map<RowSection, number>()
  embeddings: { model: string; dimensions: number } | undefined

  constructor(items: AsyncIterable<BundleItem>) {
    this.items = items[Symbol.asyncIterator]()
  }

  private async peek(): Promise<BundleItem | undefined> {
    if (this.lookahead === undefined && !this.ended) {
      const next = await this.items.next()
      if (next.done) this.ended = true
      else {
        this.lookahead = next.value
        if (next.value.type === 'embeddings')
          this.embeddings = { model: next.value.model, dimensions: next.value.dimensions }
      }
    }
    return this.lookahead
  }

  private take(): void {
    this.lookahead = undefined
  }

  /** Reads up to the metadata; the version comes first in every producer's files. */
  async content(): Promise<BundleContent> {
    let schemaVersion: number | undefined
    for (let item = await this.peek(); item; item = await this.peek()) {
      this.take()
      if (item.type === 'schema_version') schemaVersion = item.version
      else if (item.type === 'metadata') {
        const sections = hashedSections(canonicalRulesFor(schemaVersion)[0]!)
        this.hashedOrder = new Map(sections.map((section, i) => [section, i]))
        const rows: BundleContent['rows'] = {}
        for (const section of sections) (rows as Record<string, RowSource<unknown>>)[section] = this.rowsOf(section)
        return { schemaVersion, metadata: item.metadata, rows }
      } else if (item.type === 'row') {
        throw new BundleError(
          `the metadata must come before the rows (${item.section} does not) to be hashed in one pass`,
        )
      }
    }
    throw new BundleError('metadata is missing')
  }

  private async *rowsOf(section: RowSection): AsyncGenerator<unknown> {
    for (let item = await this.peek(); item; item = await this.peek()) {
      const order = this.hashedOrder
      if (item.type === 'row' && order.has(item.section)) {
        if (item.section !== section) {
          if (order.get(item.section)! > order.get(section)!) return
          throw new BundleError(`comes after ${section}; the canonical hash needs the sections in order`, {
            section: item.section,
            position: item.position,
          })
        }
        this.take()
        yield item.row
      } else {
        // Not hashed: media (the reader skips unread data), vectors, and in version 2 source_images and source_bodies.
        this.take()
      }
    }
  }

  /** The canonical hashes by every rule of the file's version, reading the whole file. */
  async hashes(): Promise<{
    content: BundleContent
    rules: CanonicalRule[]
    hashes: Partial<Record<CanonicalRule, string>>
  }> {
    const content = await this.content()
    const rules = canonicalRulesFor(content.schemaVersion)
    const hashes = await canonicalHashes(content, rules)
    await this.finish()
    return { content, rules, hashes }
  }

  /** Reads the rest of the file, so that every check of the reader runs. */
  async finish(): Promise<void> {
    while (await this.peek()) this.take()
  }
}

export interface BundleSummary {
  schemaVersion: number | undefined
  metadata: Metadata
  /** Lowercase hex SHA-256 of the canonical form by the first rule of the file's version (the one kgs writes), as recomputed from the rows. */
  canonicalSha256: string
  /** The hash by each rule the file's version may have been hashed by. */
  canonicalHashes: Partial<Record<CanonicalRule, string>>
  /** The rule whose hash metadata.sha256 is, if any. */
  matchedRule: CanonicalRule | undefined
  embeddings: { model: string; dimensions: number } | undefined
  stats: ReaderStats
}

/** How `verify` names each rule. */
export const RULE_NAMES: Record<CanonicalRule, string> = {
  v2: 'the version 2 rule: embedding fields not hashed',
  'v2-embedding': "the Go in-memory writer's version 2 rule: embedding fields hashed",
  v1: 'the version 1 rule: source_images and embedding fields hashed',
}

/** One pass: every row checked by the reader and the canonical hash recomputed by every rule of the file's version. */
export async function summarizeBundle(
  source: AsyncIterable<Uint8Array>,
  limits?: Partial<ReaderLimits>,
): Promise<BundleSummary> {
  const reader = readBundle(source, limits)
  const canonical = new CanonicalSource(reader)
  const { content, rules, hashes } = await canonical.hashes()
  return {
    schemaVersion: content.schemaVersion,
    metadata: content.metadata,
    canonicalSha256: hashes[rules[0]!]!,
    canonicalHashes: hashes,
    matchedRule: rules.find((rule) => hashes[rule] === content.metadata.sha256),
    embeddings: canonical.embeddings,
    stats: reader.stats,
  }
}

/** What `verify` finds wrong with a bundle that reads cleanly: its hash and its counts. */
export function bundleProblems(summary: BundleSummary): string[] {
  const problems: string[] = []
  const { metadata } = summary
  if (!metadata.sha256) {
    problems.push(
      `the file carries no hash (metadata.sha256 is absent, as in the Go original's streamed exports), so its content cannot be verified; its canonical hash is ${summary.canonicalSha256}`,
    )
  } else if (!summary.matchedRule) {
    problems.push(`metadata.sha256 is ${metadata.sha256} but the canonical hash is ${summary.canonicalSha256}`)
  }
  for (const [field, section] of Object.entries(COUNTED_SECTIONS)) {
    const rows = summary.stats.rows[section] ?? 0
    const claimed = metadata[field as keyof typeof COUNTED_SECTIONS]
    if (claimed !== rows) problems.push(`metadata.${field} is ${claimed} but ${section} has ${rows} rows`)
  }
  return problems
}

/**
 * Hands items to a consumer one at a time: `put` returns once the consumer has asked for the
 * item after it, that is, once it is done with this one. Nothing is buffered.
 */
class Handoff implements AsyncIterable<BundleItem> {
  private deliver: ((result: IteratorResult<BundleItem, undefined>) => void) | undefined
  private asked = Promise.withResolvers<void>()

  async *[Symbol.asyncIterator](): AsyncGenerator<BundleItem> {
    for (;;) {
      const next = new Promise<IteratorResult<BundleItem, undefined>>((resolve) => (this.deliver = resolve))
      this.asked.resolve()
      const result = await next
      if (result.done) return
      yield result.value
    }
  }

  async put(item: BundleItem): Promise<void> {
    await this.asked.promise
    this.asked = Promise.withResolvers<void>()
    this.deliver!({ value: item, done: false })
    await this.asked.promise
  }

  async end(): Promise<void> {
    await this.asked.promise
    this.deliver!({ value: undefined, done: true })
  }
}

/**
 * The reader's items, passed on unchanged, while their canonical hashes are computed in the same
 * pass (an import by (name, sha256) checks that it reads what it asked for), by every rule the
 * file's version may have been hashed by. Each item is hashed before it is passed on, so the
 * consumer may change it. `digest` settles once every item has been passed on: the hashes, or
 * why none can be computed.
 */
export function hashAlongside(items: AsyncIterable<BundleItem>): {
  items: AsyncIterable<BundleItem>
  digest: Promise<string[]>
} {
  const handoff = new Handoff()
  const digest = (async () => {
    return Object.values((await new CanonicalSource(handoff).hashes()).hashes)
  })()
  // A hash that fails stops asking for items: the items go on without it.
  const stopped = digest.then(
    () => {},
    () => {},
  )
  return {
    digest,
    items: (async function* () {
      for await (const item of items) {
        await Promise.race([handoff.put(item), stopped])
        yield item
      }
      await Promise.race([handoff.end(), stopped])
    })(),
  }
}

/** Writes the canonical form (what the hash is computed over) to `sink`, reading the whole file. */
export async function writeCanonical(
  source: AsyncIterable<Uint8Array>,
  sink: Writable,
  limits?: Partial<ReaderLimits>,
): Promise<void> {
  const canonical = new CanonicalSource(readBundle(source, limits))
  const content = await canonical.content()
  await pipeline(
    Readable.from(encodeBundle(content, { canonical: canonicalRulesFor(content.schemaVersion)[0] })),
    sink,
    { end: false },
  )
  await canonical.finish()
}
