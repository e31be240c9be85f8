// Writes a synthetic knowledge graph of a requested size straight into a repository's pool:
// sources, facts (some about images), concepts with aliases, summaries and syntheses citing
// facts as [text](<fact:UUID>), investigations, reports with annotations and children, image
// bytes and some sources' bodies in blob storage, and vectors. Deterministic for a seed. The
// fixture of the tests and benchmarks of export and import.
//
// Usage: bun scripts/gen-graph.ts <repository-uuid> <facts> [seed]
// with the same DATA_DIR / DATABASE_URL (and LANCEDB_URI, S3_*) as the kgs it is for; on the
// embedded database kgs must not be running (the data directory has one owner at a time).
import type { Sql } from 'postgres'
import { repositoryBlobPrefix, type BlobStore } from '../src/blobs/store.ts'
import type { Embedder } from '../src/vectors/embedder.ts'
import type { VectorStore } from '../src/vectors/store.ts'
import { conceptEmbeddingText } from '../src/vectors/embed-jobs.ts'
import { factContentHash } from '../src/bundle/format/hashes.ts'
import { graphSize, QUALIFIERS, random, uuids, VERBS, WORDS, type GraphSize } from './lib/synthetic.ts'

export { graphSize, type GraphSize }

export interface GenerateOptions {
  facts: number
  seed?: number
  /** Store image bytes and, for one source in a hundred, an HTML body (otherwise images are URL-only and no body is stored). */
  blobs?: BlobStore
  /** Embed facts and concepts into the vector store. */
  vectors?: { store: VectorStore; embedder: Embedder }
}

const BATCH = 1000
const BODY_EVERY = 100

async function insert(sql: Sql, table: string, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH)
    await sql`INSERT INTO ${sql(table)} ${sql(rows.slice(i, i + BATCH) as never[])}`
}

/** Fills the repository behind `sql` (expected empty) and returns what it wrote. */
export async function generateGraph(sql: Sql, repositoryId: string, options: GenerateOptions): Promise<GraphSize> {
  const next = random(options.seed ?? 1)
  const uuid = uuids(next)
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!
  const size = graphSize(options.facts)
  const base = Date.parse('2026-01-01T00:00:00Z')
  // Creation times one millisecond apart keep the (created_at, id) order the generation order.
  let tick = 0
  const createdAt = () => new Date(base + tick++)

  const sources = Array.from({ length: size.sources }, (_, i) => ({
    id: uuid(),
    url: `https://papers.example.org/${i}/${pick(WORDS)}-${pick(WORDS)}`,
    doi: i % 3 === 0 ? `10.5555/kgs.${i}` : '',
    kind: pick(['pdf', 'html', 'arxiv']),
    status: 'processed',
    parsed_title: `On the ${pick(WORDS)} of ${pick(WORDS)} ${pick(QUALIFIERS)}`,
    parsed_text: Array.from(
      { length: 5 },
      () => `${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)} ${pick(QUALIFIERS)}.`,
    ).join(' '),
    parsed_markdown: '',
    published_at: new Date(base - Math.floor(next() * 3650) * 86_400_000).toISOString().slice(0, 10),
    // One source in a hundred keeps its original (an HTML page) in blob storage.
    has_stored_body: options.blobs !== undefined && i % BODY_EVERY === 0,
    created_at: createdAt(),
  }))
  await insert(sql, 'sources', sources)
  if (options.blobs) {
    const bodies = []
    for (const [i, source] of sources.entries()) {
      if (!source.has_stored_body) continue
      const html = new TextEncoder().encode(
        `<!doctype html><html><head><title>${source.parsed_title}</title></head><body><p>${source.parsed_text}</p></body></html>`,
      )
      const storage_key = `${repositoryBlobPrefix(repositoryId)}bodies/${i}`
      await options.blobs.put(storage_key, html, { contentType: 'text/html' })
      bodies.push({ source_id: source.id, content_type: 'text/html', storage_key, bytes: html.byteLength })
    }
    await insert(sql, 'source_bodies', bodies)
  }

  const images = Array.from({ length: size.images }, (_, i) => {
    const source = sources[i % sources.length]!
    return {
      id: uuid(),
      source_id: source.id,
      kind: i % 2 ? 'page' : 'inline',
      page_number: i % 2 ? 1 + (i % 9) : null,
      position: Math.floor(i / sources.length),
      url: `${source.url}/figure-${i}.png`,
      width: 640,
      height: 480,
      bytes: 256 + (i % 512),
      alt_text: `Figure: ${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)}`,
      content_type: 'image/png',
      storage_key: options.blobs ? `${repositoryBlobPrefix(repositoryId)}images/${i}` : null,
      created_at: createdAt(),
    }
  })
  if (options.blobs) {
    for (const image of images) {
      const bytes = new Uint8Array(image.bytes)
      for (let b = 0; b < bytes.length; b++) bytes[b] = Math.floor(next() * 256)
      bytes.set([0x89, 0x50, 0x4e, 0x47], 0)
      await options.blobs.put(image.storage_key!, bytes, { contentType: 'image/png' })
    }
  }
  await insert(sql, 'source_images', images)

  const facts: {
    id: string
    text: string
    fact_kind: string
    image_url: string
    content_hash: string
    promptset_hash: string
    status: string
    source_image_id: string | null
    created_at: Date
  }[] = []
  const seen = new Set<string>()
  for (let i = 0; facts.length < size.facts; i++) {
    const image = i % 40 === 7 ? images[((i / 40) % images.length) | 0] : undefined
    const text = image
      ? `The figure shows ${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)} (${i}).`
      : `${pick(WORDS)[0]!.toUpperCase()}${pick(WORDS).slice(1)} ${pick(VERBS)} ${pick(WORDS)} ${pick(QUALIFIERS)} (${i}).`
    const content_hash = factContentHash(text)
    if (seen.has(content_hash)) continue
    seen.add(content_hash)
    facts.push({
      id: uuid(),
      text,
      fact_kind: image ? 'image' : 'text',
      image_url: image?.url ?? '',
      content_hash,
      promptset_hash: 'ps-1',
      status: pick(['new', 'stable', 'stable', 'stable']),
      source_image_id: image?.id ?? null,
      created_at: createdAt(),
    })
  }
  await insert(sql, 'facts', facts)
  await insert(
    sql,
    'fact_sources',
    facts.flatMap((fact, i) => {
      const first = sources[Math.floor(i / 20) % sources.length]!
      const second = sources[(Math.floor(i / 20) + 1) % sources.length]!
      return first.id === second.id || i % 4
        ? [{ fact_id: fact.id, source_id: first.id, chunk_index: i % 20 }]
        : [
            { fact_id: fact.id, source_id: first.id, chunk_index: i % 20 },
            { fact_id: fact.id, source_id: second.id, chunk_index: 0 },
          ]
    }),
  )

  const concepts = Array.from({ length: size.concepts }, (_, i) => ({
    id: uuid(),
    canonical_name: `${pick(WORDS)} ${pick(WORDS)} ${i}`,
    context: pick(['physics', 'biology', 'geology', 'climate']),
    description: `How ${pick(WORDS)} ${pick(VERBS)} ${pick(WORDS)}.`,
    promptset_hash: 'ps-1',
    created_at: createdAt(),
  }))
  await insert(sql, 'concepts', concepts)
  await insert(
    sql,
    'concept_aliases',
    concepts
      .filter((_, i) => i % 3 === 0)
      .map((c) => ({ concept_id: c.id, alias_text: c.canonical_name.split(' ').reverse().join(' ') })),
  )
  // Each fact is about two concepts; concept k gathers facts 10k..10k+9 and their neighbours.
  const factsOf = new Map<string, string[]>()
  await insert(
    sql,
    'fact_concepts',
    facts.flatMap((fact, i) => {
      const ids = [
        ...new Set([
          concepts[Math.floor(i / 10) % concepts.length]!.id,
          concepts[(Math.floor(i / 10) + 1 + (i % 7)) % concepts.length]!.id,
        ]),
      ]
      for (const id of ids) factsOf.set(id, [...(factsOf.get(id) ?? []), fact.id])
      return ids.map((concept_id) => ({ fact_id: fact.id, concept_id, promptset_hash: 'ps-1' }))
    }),
  )
  const factText = new Map(facts.map((f) => [f.id, f.text]))
  const cite = (factId: string) => `[${factText.get(factId)!.slice(0, 40)}](<fact:${factId}>)`

  const summaries = concepts.slice(0, size.summaries).map((concept) => {
    const covered = (factsOf.get(concept.id) ?? []).slice(0, 5)
    return {
      id: uuid(),
      concept_id: concept.id,
      sequence_num: 0,
      is_complete: true,
      fact_count: covered.length,
      content: `${concept.canonical_name}: ${covered.map(cite).join(' ')}`,
      covered_fact_ids: covered,
      model: 'gen-graph',
      created_at: createdAt(),
    }
  })
  await insert(sql, 'concept_summaries', summaries)

  // Once, not per synthesis: per synthesis it made the generator quadratic in the facts.
  const allImageFacts = facts.filter((f) => f.fact_kind === 'image')
  const syntheses = Array.from({ length: size.syntheses }, (_, i) => {
    const group = concepts.slice(i * 10, i * 10 + 10)
    const groupSummaries = summaries.slice(i * 10, i * 10 + 10)
    const imageFacts = allImageFacts.slice(i, i + 1)
    return {
      id: uuid(),
      canonical_name: group[0]?.canonical_name ?? `synthesis ${i}`,
      content: `# ${group[0]?.canonical_name ?? i}\n\n${groupSummaries
        .flatMap((s) => s.covered_fact_ids.slice(0, 2))
        .map(cite)
        .join('\n')}`,
      covered_summary_ids: groupSummaries.map((s) => s.id),
      covered_concept_ids: group.map((c) => c.id),
      embedded_image_fact_ids: imageFacts.map((f) => f.id),
      model: 'gen-graph',
      created_at: createdAt(),
    }
  })
  await insert(sql, 'concept_syntheses', syntheses)

  const investigations = Array.from({ length: size.investigations }, (_, i) => ({
    id: uuid(),
    title: `Investigation ${i}: ${pick(WORDS)} and ${pick(WORDS)}`,
    topic: pick(WORDS),
    created_at: createdAt(),
  }))
  await insert(sql, 'investigations', investigations)
  await insert(
    sql,
    'investigation_sources',
    investigations.flatMap((inv, i) =>
      [...new Set([0, 1, 2].map((k) => sources[(i * 3 + k) % sources.length]!.id))].map((source_id) => ({
        investigation_id: inv.id,
        source_id,
      })),
    ),
  )

  const reports: Record<string, unknown>[] = []
  const annotations: Record<string, unknown>[] = []
  for (let i = 0; i < size.reports; i++) {
    const parent = i % 4 === 3 ? (reports[i - 1]!.id as string) : null
    const cited = facts.slice((i * 5) % facts.length, ((i * 5) % facts.length) + 5)
    const sentences = cited.map((f) => `It is reported that ${f.text.toLowerCase()}`)
    const report = {
      id: uuid(),
      title: `Report ${i} on ${pick(WORDS)}`,
      topic: pick(WORDS),
      body_md: `${sentences.join(' ')}\n\nSee ${cited.map((f) => cite(f.id)).join(', ')}.`,
      status: 'annotated',
      parent_id: parent,
      similarity_threshold: 0.75,
      embedded_model: 'kgs-hash-v1',
      sentence_count: sentences.length,
      created_at: createdAt(),
    }
    reports.push(report)
    cited.forEach((fact, s) =>
      annotations.push({
        report_id: report.id,
        sentence_index: s,
        sentence_text: sentences[s],
        fact_id: fact.id,
        score: Math.round((0.7 + next() * 0.3) * 1000) / 1000,
        posture: pick(['related', 'supports', 'contradicts']),
      }),
    )
  }
  await insert(sql, 'reports', reports)
  await insert(sql, 'report_annotations', annotations)

  if (options.vectors) {
    const { store, embedder } = options.vectors
    for (let i = 0; i < facts.length; i += BATCH) {
      const batch = facts.slice(i, i + BATCH)
      const vectors = await embedder.embed(batch.map((f) => f.text))
      await store.upsert(
        repositoryId,
        'facts',
        batch.map((f, k) => ({ id: f.id, vector: vectors[k]! })),
      )
    }
    const conceptVectors = await embedder.embed(concepts.map(conceptEmbeddingText))
    await store.upsert(
      repositoryId,
      'concepts',
      concepts.map((c, k) => ({ id: c.id, vector: conceptVectors[k]! })),
    )
  }
  return size
}

if (import.meta.main) {
  const [repositoryId, count, seed] = process.argv.slice(2)
  if (!repositoryId || !count || !/^\d+$/.test(count)) {
    console.error('usage: bun scripts/gen-graph.ts <repository-uuid> <facts> [seed]')
    process.exit(2)
  }
  const { loadConfig } = await import('../src/config.ts')
  const { Pools } = await import('../src/db/pools.ts')
  const { openBlobStore } = await import('../src/blobs/open.ts')
  const { VectorStore } = await import('../src/vectors/store.ts')
  const { createEmbedder } = await import('../src/vectors/embedder.ts')
  const config = loadConfig()
  const pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  const store = await VectorStore.open(config.lancedbUri, { storageOptions: config.lancedbStorageOptions })
  try {
    await pools.migrate()
    const started = performance.now()
    const size = await generateGraph(await pools.forRepository(repositoryId), repositoryId, {
      facts: Number(count),
      seed: seed ? Number(seed) : 1,
      blobs: openBlobStore(config),
      vectors: { store, embedder: createEmbedder(config) },
    })
    console.log(
      JSON.stringify({
        repository: repositoryId,
        ...size,
        seconds: Math.round((performance.now() - started) / 100) / 10,
      }),
    )
  } finally {
    await store.close()
    await pools.close()
  }
}
