// The Go original's own bundles (tests/fixtures/go-original; its README says what each shows),
// judged by their real bytes: the offline tools give Go's canonical bytes and accept Go's hash
// rules; each file imports with every row, link, image, body and vector equal to the decoded
// file; and import + export + canonical gives Go's canonical rows back.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { gunzipSync, gzipSync } from 'node:zlib'
import { BACKEND } from '../../helpers/backend.ts'
import { api, registerAccount, type Account } from '../../helpers/api.ts'
import { dumpGraph, type GraphDump } from '../../helpers/graph-dump.ts'
import { settleJobs, waitForJob } from '../../helpers/jobs.ts'
import { runKgs, startTestServer, type TestServer } from '../../helpers/server.ts'
import { portableConceptId, portableFactId } from '../../../src/bundle/format/citations.ts'
import { factContentHash } from '../../../src/bundle/format/hashes.ts'
import { writeCanonical } from '../../../src/bundle/format/tools.ts'
import { localImageUrl } from '../../../src/media/urls.ts'

const FIXTURES = join(import.meta.dir, '..', '..', 'fixtures', 'go-original')
const fixture = (name: string) => join(FIXTURES, name)
const sha256 = (bytes: string | Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const text = (name: string) => readFileSync(fixture(name), 'utf8')

type Obj = Record<string, any>
const decoded = (file: string): Obj => JSON.parse(gunzipSync(readFileSync(fixture(`${file}.json.gz`))).toString('utf8'))

describe('kgs bundle canonical and verify on the Go files', () => {
  for (const file of ['B-build-noemb', 'F-build-bigfloats', 'S1-stream-prod']) {
    test(`canonical of ${file} is Go's canonical form byte for byte`, async () => {
      const { code, stdout, stderr } = await runKgs(['bundle', 'canonical', fixture(`${file}.json.gz`)], {})
      expect(stderr).toBe('')
      expect(code).toBe(0)
      expect(stdout).toBe(text(`${file}.go-canonical-specrule.json`))
    })
  }

  test("canonical of a version 1 file is version 1's (Go's) form, byte for byte", async () => {
    const { code, stdout } = await runKgs(['bundle', 'canonical', fixture('V1-build-v1.json.gz')], {})
    expect(code).toBe(0)
    expect(stdout).toBe(text('V1-build-v1.go-canonical.json'))
  })

  const accepted: [string, string][] = [
    ['B-build-noemb', 'the version 2 rule: embedding fields not hashed'],
    ['F-build-bigfloats', 'the version 2 rule: embedding fields not hashed'],
    ['V1-build-v1', 'the version 1 rule: source_images and embedding fields hashed'],
  ]
  for (const [file, rule] of accepted) {
    test(`verify accepts ${file} and names the rule that matched`, async () => {
      const canonical = `${file}.${file.startsWith('V1') ? 'go-canonical' : 'go-canonical-specrule'}.json`
      const hash = sha256(readFileSync(fixture(canonical)))
      expect(decoded(file).metadata.sha256).toBe(hash)
      const { code, stdout, stderr } = await runKgs(['bundle', 'verify', fixture(`${file}.json.gz`)], {})
      expect(stderr).toBe('')
      expect(code).toBe(0)
      expect(stdout).toBe(`ok ${hash} ${fixture(`${file}.json.gz`)} by ${rule}\n`)
    })
  }

  test("verify accepts a version 2 file hashed by the Go in-memory writer's rule (embedding fields kept)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kgs-go-rule-'))
    try {
      // B with embedding fields: hashed with them kept, its canonical form is Go's with them in place.
      const fields = '"embedding_model":"m","embedding_dimensions":3,'
      const canonical = text('B-build-noemb.go-canonical-specrule.json').replace(
        '"source_count":',
        `${fields}"source_count":`,
      )
      const hash = sha256(canonical)
      const json = gunzipSync(readFileSync(fixture('B-build-noemb.json.gz')))
        .toString('utf8')
        .replace('"source_count":', `${fields}"source_count":`)
        .replace(/"sha256":"c6e61afe[0-9a-f]{56}"/, `"sha256":"${hash}"`)
      expect(json).toContain(hash)
      const path = join(dir, 'go-rule.json.gz')
      writeFileSync(path, gzipSync(json))
      const { code, stdout } = await runKgs(['bundle', 'verify', path], {})
      expect(code).toBe(0)
      expect(stdout).toBe(`ok ${hash} ${path} by the Go in-memory writer's version 2 rule: embedding fields hashed\n`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test("S1 (Go's streamed export) carries no hash: verify says so plainly and exits 1", async () => {
    const { code, stdout, stderr } = await runKgs(['bundle', 'verify', fixture('S1-stream-prod.json.gz')], {})
    expect(code).toBe(1)
    expect(stdout).toBe('')
    const canonical = sha256(readFileSync(fixture('S1-stream-prod.go-canonical-specrule.json')))
    expect(stderr).toBe(
      `kgs bundle verify: the file carries no hash (metadata.sha256 is absent, as in the Go original's streamed exports), so its content cannot be verified; its canonical hash is ${canonical}\n`,
    )
  })
})

/**
 * What an import of `doc` into an empty repository must leave, in the form of dumpGraph,
 * derived from the decoded file alone by the rules of docs/spec/bundle.md §2 and §5 (Go's omitted zeros
 * included), not by the importer's code.
 */
function expectedDump(doc: Obj, vectorsKept: boolean): GraphDump {
  const rows = (section: string): Obj[] => doc[section] ?? []
  const sorted = <T>(list: readonly T[]) =>
    list
      .map((row) => JSON.stringify(row))
      .sort()
      .map((t) => JSON.parse(t) as T)
  const facts = rows('facts')
  const concepts = rows('concepts')
  const sources = rows('sources')
  const images = rows('source_images')
  const summaries = rows('concept_summaries')
  const factKey = (i: number) => `fact ${factContentHash(facts[i]!.text)}`
  const conceptKey = (i: number) =>
    `concept ${concepts[i]!.canonical_name.toLowerCase()} / ${concepts[i]!.context.toLowerCase()}`
  const imageKey = (i: number) =>
    `image ${sources[images[i]!.source_idx]!.url} ${images[i]!.kind} ${images[i]!.position}`
  // Go's omitempty ints: an absent key is 0 where row 0 exists (docs/spec/bundle.md §2).
  const imageOf = (fact: Obj) => {
    const idx = 'source_image_idx' in fact ? fact.source_image_idx : images.length > 0 ? 0 : -1
    return idx >= 0 ? imageKey(idx) : null
  }
  const parentOf = (report: Obj, position: number) => {
    const idx = 'parent_idx' in report ? report.parent_idx : position > 0 ? 0 : -1
    return idx >= 0 ? idx : null
  }
  // A citation resolves when it is a link to a portable UUID of a row of the bundle; the dump
  // spells a resolved one with its row's key, any other as dangling.
  const portable = new Map<string, string>()
  facts.forEach((_, i) => portable.set(portableFactId(factContentHash(facts[i]!.text)), factKey(i)))
  concepts.forEach((c, i) => portable.set(portableConceptId(c.canonical_name, c.context), conceptKey(i)))
  const cited = (value: string) =>
    value.replace(
      /(\]\()?<(fact|concept):([0-9A-Fa-f-]{36})>(\))?/g,
      (_whole, open: string | undefined, kind: string, id: string, close: string | undefined) => {
        const key = open && close ? portable.get(id.toLowerCase()) : undefined
        return `${open ?? ''}<${kind}:${key ?? `dangling ${id}`}>${close ?? ''}`
      },
    )
  const mediaHash = (section: 'images' | 'bodies', ref: string | undefined) => {
    const item = ref === undefined ? undefined : doc[section]?.[ref]
    return item?.data ? sha256(Buffer.from(item.data, 'base64')) : null
  }
  // Tolerated: a bare string is a body_ref, body-<source_idx>.
  const bodies = (doc.source_bodies ?? []).map((row: Obj | string) =>
    typeof row === 'string' ? { source_idx: Number(row.slice('body-'.length)), body_ref: row } : row,
  ) as Obj[]
  const vectors = (map: Obj | null | undefined, key: (i: number) => string) =>
    Object.fromEntries(
      Object.entries(map ?? {})
        .map(([i, vector]) => [key(Number(i)), Array.from(Float32Array.from(vector as number[]))] as const)
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    )
  return {
    sources: sorted(
      sources.map((s) => ({
        url: s.url,
        doi: s.doi ?? '',
        kind: s.kind,
        status: s.status,
        parsed_title: s.parsed_title ?? '',
        parsed_text: s.parsed_text ?? '',
        parsed_markdown: s.parsed_markdown ?? '',
        published_at: s.published_at ?? null,
        has_stored_body: s.has_stored_body ?? false,
      })),
    ),
    sourceImages: sorted(
      images.map((i) => ({
        source: sources[i.source_idx]!.url,
        kind: i.kind,
        page_number: i.page_number ?? null,
        position: i.position,
        url: i.url ?? '',
        width: i.width ?? null,
        height: i.height ?? null,
        bytes: i.bytes ?? null,
        alt_text: i.alt_text ?? '',
        content_type: i.content_type ?? '',
        stored: mediaHash('images', i.image_ref),
      })),
    ),
    sourceBodies: sorted(
      bodies.map((b) => ({
        source: sources[b.source_idx]!.url,
        content_type: b.content_type || doc.bodies?.[b.body_ref]?.content_type || '',
        stored: mediaHash('bodies', b.body_ref),
      })),
    ),
    facts: sorted(
      facts.map((f) => ({
        text: f.text,
        fact_kind: f.fact_kind,
        content_hash: factContentHash(f.text),
        promptset_hash: f.promptset_hash ?? '',
        status: f.status,
        image: imageOf(f),
      })),
    ),
    factSources: sorted(
      rows('fact_sources').map((r) => [factKey(r.fact_idx), sources[r.source_idx]!.url, r.chunk_index]),
    ),
    concepts: sorted(
      concepts.map((c) => ({
        canonical_name: c.canonical_name,
        context: c.context,
        description: c.description ?? '',
        promptset_hash: c.promptset_hash ?? '',
      })),
    ),
    conceptAliases: sorted(rows('concept_aliases').map((r) => [conceptKey(r.concept_idx), r.alias_text])),
    factConcepts: sorted(
      rows('fact_concepts').map((r) => [factKey(r.fact_idx), conceptKey(r.concept_idx), r.promptset_hash ?? '']),
    ),
    summaries: summaries.map((s) => ({
      sequence_num: s.sequence_num,
      is_complete: s.is_complete,
      fact_count: s.fact_count,
      model: s.model ?? '',
      concept: conceptKey(s.concept_idx),
      content: cited(s.content),
      covered: (s.covered_fact_idxs ?? []).map(factKey),
    })),
    syntheses: sorted(
      rows('concept_syntheses').map((s) => ({
        name: s.canonical_name,
        content: cited(s.content),
        summaries: (s.covered_summary_idxs ?? []).map(
          (i: number) => `summary ${conceptKey(summaries[i]!.concept_idx)} ${summaries[i]!.sequence_num}`,
        ),
        concepts: (s.covered_concept_idxs ?? []).map(conceptKey),
        images: (s.embedded_image_idxs ?? []).map(factKey),
        model: s.model ?? '',
      })),
    ),
    investigations: rows('investigations').map((inv, i) => ({
      title: inv.title,
      topic: inv.topic ?? '',
      sources: rows('investigation_sources')
        .filter((r) => r.investigation_idx === i)
        .map((r) => sources[r.source_idx]!.url)
        .sort(),
    })),
    reports: rows('reports').map((r, i) => ({
      title: r.title,
      topic: r.topic ?? '',
      body_md: cited(r.body_md),
      status: r.status,
      similarity_threshold: r.similarity_threshold ?? null,
      embedded_model: r.embedded_model ?? '',
      sentence_count: r.sentence_count ?? null,
      parent: parentOf(r, i),
    })),
    annotations: sorted(
      rows('report_annotations').map((a) => [
        a.report_idx,
        a.sentence_index,
        a.sentence_text,
        factKey(a.fact_idx),
        a.score,
        a.posture ?? '',
      ]),
    ),
    vectors: vectorsKept
      ? {
          facts: vectors(doc.embeddings?.fact_vectors, factKey),
          concepts: vectors(doc.embeddings?.concept_vectors, conceptKey),
        }
      : { facts: {}, concepts: {} },
  }
}

/**
 * A canonical form's rows (everything after the metadata), with the one field that names an
 * instance spelled alike: the image_url of an image fact linked to a source image (Go writes its
 * own local URL, kgs the image's original one; an importer links its local copy either way).
 */
function canonicalRows(canonical: string): string {
  const linked =
    /("fact_kind":"image")(?:,"image_url":"(?:[^"\\]|\\.)*")?(,"content_hash":"[0-9a-f]{64}"(?:,"promptset_hash":"(?:[^"\\]|\\.)*")?,"status":"[a-z_]+"(?:,"source_image_idx":\d+)?\})/g
  return canonical.slice(canonical.indexOf(',"sources":')).replace(linked, '$1,"image_url":"(the linked image)"$2')
}

/**
 * Go's canonical rows as kgs must give them back: with the content_hash the importer computes
 * (docs/spec/bundle.md §2: it never trusts the field; the fixture's are SHA-256 of the raw text).
 */
function withRecomputedHashes(canonical: string, doc: Obj): string {
  let out = canonical
  for (const fact of doc.facts as Obj[])
    out = out.replace(`"content_hash":"${fact.content_hash}"`, `"content_hash":"${factContentHash(fact.text)}"`)
  return out
}

describe(`the Go files imported (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account

  beforeAll(async () => {
    server = await startTestServer({ env: { WORKERS: '2', MEDIA_FETCH_TIMEOUT: '2s' } })
    http = api(server.url)
    owner = await registerAccount(http)
  })
  afterAll(() => server.stop())

  /** Go's canonical form of each file by the version 2 rule; kgs exports a version 1 file as version 2, its media block moved. */
  const goCanonical: Record<string, () => string> = {
    'B-build-noemb': () => text('B-build-noemb.go-canonical-specrule.json'),
    'F-build-bigfloats': () => text('F-build-bigfloats.go-canonical-specrule.json'),
    'S1-stream-prod': () => text('S1-stream-prod.go-canonical-specrule.json'),
    'V1-build-v1': () => {
      const v1 = text('V1-build-v1.go-canonical.json')
      return `${v1.slice(0, v1.indexOf(',"source_images":['))}}`.replace(',"facts":', ',"source_images":null,"facts":')
    },
  }
  for (const file of Object.keys(goCanonical)) {
    test(`${file}: every row, link, image, body and vector as in the file; exported again, Go's canonical rows`, async () => {
      const doc = decoded(file)
      const repo = (await http.post('/api/v1/repositories', { name: `go ${file}` }, owner.token)).body as {
        id: string
        slug: string
      }
      const started = await http.call('POST', `/${repo.slug}/import-graph`, {
        token: owner.token,
        raw: readFileSync(fixture(`${file}.json.gz`)),
        headers: { 'content-type': 'application/gzip' },
      })
      expect(started.status).toBe(202)
      const job = await waitForJob(http, `/${repo.slug}/jobs/${started.body.id}`, owner.token)
      expect({ status: job.status, error: job.error }).toEqual({ status: 'succeeded', error: null })
      const vectorsKept =
        doc.embeddings?.model === server.context.embedder.model &&
        doc.embeddings?.dimensions === server.context.embedder.dimensions
      expect((job.result as Obj).embeddings).toBe(vectorsKept ? 'upserted' : 're-embedding')
      if (!vectorsKept) await settleJobs(http, repo.slug, owner.token)

      const sql = await server.context.pools.forRepository(repo.id)
      const dump = await dumpGraph(sql, repo.id, server.context)
      const expected = expectedDump(doc, vectorsKept)
      if (!vectorsKept) expected.vectors = dump.vectors
      expect(dump).toEqual(expected)
      expect(dump.facts.filter((f: any) => f.image !== null).length).toBeGreaterThan(0)
      expect(dump.reports.filter((r: any) => r.parent !== null).length).toBeGreaterThan(0)

      // An image fact linked to a stored image points at the local copy; any other keeps its URL.
      const imageUrls = await sql<{ text: string; image_url: string; image_id: string | null; stored: boolean }[]>`
        SELECT f.text, f.image_url, si.id AS image_id, si.storage_key IS NOT NULL AS stored FROM facts f LEFT JOIN source_images si ON si.id = f.source_image_id`
      for (const fact of imageUrls) {
        const original = (doc.facts as Obj[]).find((f) => f.text === fact.text)!
        expect({ text: fact.text, image_url: fact.image_url }).toEqual({
          text: fact.text,
          image_url: fact.stored
            ? localImageUrl(server.context.baseUrl, repo.id, fact.image_id!)
            : (original.image_url ?? ''),
        })
      }

      // Exported again under the file's own name, description, tags and time: Go's canonical rows.
      const { name, description, tags, exported_at, promptset_hashes } = doc.metadata
      const exported = await http.post(
        `/${repo.slug}/export-graph`,
        { name, description, tags, exported_at, include_bodies: true },
        owner.token,
      )
      expect(exported.status).toBe(202)
      const exportJob = await waitForJob(http, `/${repo.slug}/jobs/${exported.body.id}`, owner.token)
      expect(exportJob.status).toBe('succeeded')
      const bundle = Buffer.from(
        await (
          await fetch(`${server.url}/${repo.slug}/export-graph/download`, {
            headers: { authorization: `Bearer ${owner.token}` },
          })
        ).arrayBuffer(),
      )
      const sink = new PassThrough()
      const parts: Buffer[] = []
      sink.on('data', (chunk: Buffer) => parts.push(chunk))
      await writeCanonical(
        (async function* () {
          yield new Uint8Array(bundle)
        })(),
        sink,
      )
      const canonical = Buffer.concat(parts).toString('utf8')
      const go = goCanonical[file]!()
      expect(canonicalRows(canonical)).toBe(canonicalRows(withRecomputedHashes(go, doc)))
      expect(canonicalRows(canonical).match(/\(the linked image\)/g)).toHaveLength(2)
      const metadata = JSON.parse(`${canonical.slice(0, canonical.indexOf(',"sources":'))}}`).metadata
      expect(metadata).toEqual({
        name,
        description,
        tags,
        promptset_hashes,
        exported_at,
        okt_version: expect.stringMatching(/^kgs\//),
        source_count: doc.sources.length,
        fact_count: doc.facts.length,
        concept_count: doc.concepts.length,
        summary_count: doc.concept_summaries.length,
        synthesis_count: doc.concept_syntheses.length,
        report_count: doc.reports.length,
        investigation_count: doc.investigations.length,
      })
    })
  }
})
