// The repository graph schema: a representative graph fits, and the constraints the bundle's
// enums imply and the natural keys import dedups on are enforced by the database itself.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import type { Pools } from '../../src/db/pools.ts'
import { BACKEND, openTestPools } from '../helpers/backend.ts'

let pools: Pools
let sql: Sql
let opened: Awaited<ReturnType<typeof openTestPools>>

beforeAll(async () => {
  opened = await openTestPools()
  pools = opened.pools
  await pools.migrate()
  sql = await pools.forRepository(crypto.randomUUID())
})
afterAll(() => opened?.close())

const hash = (n: number) => n.toString(16).padStart(64, '0')

/** The SQLSTATE of the statement's failure, or 'ok'. */
async function outcome(statement: Promise<unknown>): Promise<string> {
  try {
    await statement
    return 'ok'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}
const CHECK = '23514'
const UNIQUE = '23505'
const FOREIGN_KEY = '23503'

describe(`graph schema (${BACKEND})`, () => {
  const ids = {
    source: crypto.randomUUID(),
    image: crypto.randomUUID(),
    fact: crypto.randomUUID(),
    concept: crypto.randomUUID(),
    report: crypto.randomUUID(),
    child: crypto.randomUUID(),
    investigation: crypto.randomUUID(),
  }

  test('a representative graph fits', async () => {
    await sql.begin(async (tx) => {
      await tx`INSERT INTO sources (id, url, kind, status, parsed_title, published_at, has_stored_body) VALUES (${ids.source}, 'https://example.org/paper.pdf', 'pdf', 'processed', 'A paper', '2026-01-02', true)`
      await tx`INSERT INTO source_images (id, source_id, kind, page_number, position, width, height, bytes, content_type, storage_key) VALUES (${ids.image}, ${ids.source}, 'page', 1, 0, 800, 600, 1234, 'image/png', 'img/x')`
      await tx`INSERT INTO source_bodies (source_id, content_type, storage_key, bytes) VALUES (${ids.source}, 'application/pdf', 'body/x', 99)`
      await tx`INSERT INTO facts (id, text, fact_kind, content_hash, status, source_image_id) VALUES (${ids.fact}, 'Water boils at 100 °C at sea level.', 'text', ${hash(1)}, 'stable', ${ids.image})`
      await tx`INSERT INTO fact_sources (fact_id, source_id, chunk_index) VALUES (${ids.fact}, ${ids.source}, 3)`
      await tx`INSERT INTO concepts (id, canonical_name, context) VALUES (${ids.concept}, 'Boiling point', 'physics')`
      await tx`INSERT INTO concept_aliases (concept_id, alias_text) VALUES (${ids.concept}, 'boiling temperature')`
      await tx`INSERT INTO fact_concepts (fact_id, concept_id) VALUES (${ids.fact}, ${ids.concept})`
      await tx`INSERT INTO concept_summaries (id, concept_id, sequence_num, is_complete, fact_count, content, covered_fact_ids) VALUES (${crypto.randomUUID()}, ${ids.concept}, 0, true, 1, ${`Water boils [here](<fact:${ids.fact}>).`}, ${[ids.fact]})`
      await tx`INSERT INTO concept_syntheses (id, canonical_name, content, covered_concept_ids) VALUES (${crypto.randomUUID()}, 'Boiling point', 'synthesis', ${[ids.concept]})`
      await tx`INSERT INTO investigations (id, title) VALUES (${ids.investigation}, 'Phase changes')`
      await tx`INSERT INTO investigation_sources (investigation_id, source_id) VALUES (${ids.investigation}, ${ids.source})`
      await tx`INSERT INTO reports (id, title, body_md, status, similarity_threshold) VALUES (${ids.report}, 'Report', 'Water boils.', 'annotated', 0.75)`
      await tx`INSERT INTO reports (id, title, status, parent_id) VALUES (${ids.child}, 'Child', 'pending', ${ids.report})`
      await tx`INSERT INTO report_annotations (report_id, sentence_index, sentence_text, fact_id, score, posture) VALUES (${ids.report}, 0, 'Water boils.', ${ids.fact}, 0.93, 'supports')`
    })
    const [{ n }] = (await sql`SELECT count(*)::int AS n FROM report_annotations`) as unknown as [{ n: number }]
    expect(n).toBe(1)
  })

  test('enum values are enforced', async () => {
    expect(
      await outcome(
        sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${crypto.randomUUID()}, 'x', 'video', ${hash(2)}, 'new')`,
      ),
    ).toBe(CHECK)
    expect(
      await outcome(
        sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${crypto.randomUUID()}, 'x', 'text', ${hash(3)}, 'done')`,
      ),
    ).toBe(CHECK)
    expect(
      await outcome(
        sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${crypto.randomUUID()}, 'x', 'text', 'not-a-hash', 'new')`,
      ),
    ).toBe(CHECK)
    // A content hash is exactly 64 lowercase hexadecimal digits (0010's form of the rule).
    const cases: [contentHash: string, outcome: string][] = [
      [hash(4).toUpperCase().replace('0', 'A'), CHECK],
      [hash(5).slice(1), CHECK],
      [`${hash(6)}0`, CHECK],
      [`${hash(7).slice(1)}g`, CHECK],
      [`${hash(8).slice(1)}é`, CHECK],
      [`${hash(9).slice(1)}\n`, CHECK],
      ['', CHECK],
      [hash(10).replace('0', 'f'), 'ok'],
    ]
    for (const [contentHash, expected] of cases) {
      expect([
        contentHash,
        await outcome(
          sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${crypto.randomUUID()}, ${`x ${contentHash}`}, 'text', ${contentHash}, 'new')`,
        ),
      ]).toEqual([contentHash, expected])
    }
    expect(
      await outcome(
        sql`INSERT INTO source_images (id, source_id, kind, position) VALUES (${crypto.randomUUID()}, ${ids.source}, 'thumbnail', 9)`,
      ),
    ).toBe(CHECK)
    expect(
      await outcome(sql`INSERT INTO reports (id, title, status) VALUES (${crypto.randomUUID()}, 'r', 'archived')`),
    ).toBe(CHECK)
    expect(
      await outcome(
        sql`INSERT INTO report_annotations (report_id, sentence_index, fact_id, score, posture) VALUES (${ids.report}, 5, ${ids.fact}, 0.1, 'refutes')`,
      ),
    ).toBe(CHECK)
    expect(await outcome(sql`UPDATE reports SET parent_id = id WHERE id = ${ids.report}`)).toBe(CHECK)
  })

  test('the natural keys import dedups on are unique', async () => {
    expect(
      await outcome(
        sql`INSERT INTO sources (id, url, kind, status) VALUES (${crypto.randomUUID()}, 'https://example.org/paper.pdf', 'pdf', 'processed')`,
      ),
    ).toBe(UNIQUE)
    expect(
      await outcome(
        sql`INSERT INTO facts (id, text, fact_kind, content_hash, status) VALUES (${crypto.randomUUID()}, 'same text again', 'text', ${hash(1)}, 'new')`,
      ),
    ).toBe(UNIQUE)
    expect(
      await outcome(
        sql`INSERT INTO concepts (id, canonical_name, context) VALUES (${crypto.randomUUID()}, 'BOILING POINT', 'Physics')`,
      ),
    ).toBe(UNIQUE)
    expect(
      await outcome(
        sql`INSERT INTO concepts (id, canonical_name, context) VALUES (${crypto.randomUUID()}, 'Boiling point', 'cooking')`,
      ),
    ).toBe('ok')
    expect(
      await outcome(
        sql`INSERT INTO concept_syntheses (id, canonical_name) VALUES (${crypto.randomUUID()}, 'boiling POINT')`,
      ),
    ).toBe(UNIQUE)
    expect(
      await outcome(
        sql`INSERT INTO concept_aliases (concept_id, alias_text) VALUES (${ids.concept}, 'boiling temperature')`,
      ),
    ).toBe(UNIQUE)
  })

  test('links must point at rows that exist; deleting a source takes its links and media with it', async () => {
    expect(
      await outcome(sql`INSERT INTO fact_sources (fact_id, source_id) VALUES (${ids.fact}, ${crypto.randomUUID()})`),
    ).toBe(FOREIGN_KEY)
    await sql`DELETE FROM sources WHERE id = ${ids.source}`
    const counts = await sql<{ links: number; images: number; bodies: number; fact_image: string | null }[]>`
      SELECT (SELECT count(*)::int FROM fact_sources) AS links, (SELECT count(*)::int FROM source_images) AS images,
        (SELECT count(*)::int FROM source_bodies) AS bodies, (SELECT source_image_id::text FROM facts WHERE id = ${ids.fact}) AS fact_image`
    expect(counts[0]).toEqual({ links: 0, images: 0, bodies: 0, fact_image: null })
  })
})
