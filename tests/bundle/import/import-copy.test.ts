// The bulk load's binary COPY (PostgreSQL only: import-copy.ts, COPY_SECTIONS in import-rows.ts).
// The round trips of import.test.ts and transfer.test.ts run through it on PostgreSQL; these are
// the ways it can end early.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres, { type Sql } from 'postgres'
import { BACKEND, createTestDatabase } from '../../helpers/backend.ts'
import { rejected } from '../../helpers/promises.ts'
import { migrate } from '../../../src/db/migrate.ts'
import { BundleError, type BundleItem, type BundleReader } from '../../../src/bundle/format/reader.ts'
import type { Row } from '../../../src/bundle/format/schema.ts'
import { deferIndexesIfEmpty } from '../../../src/bundle/import/import-indexes.ts'
import { GraphImport } from '../../../src/bundle/import/import-transaction.ts'

/** Enough facts for several batches of a COPY. */
const FACTS = 2500

const fact = (position: number, overrides: Partial<Row<'facts'>> = {}): BundleItem => ({
  type: 'row',
  section: 'facts',
  position,
  row: { text: `fact number ${position}`, fact_kind: 'text', status: 'new', ...overrides } as Row<'facts'>,
})

/** A reader's statistics, for items that come from no file. */
const noFile = { stats: { decompressedBytes: 0, compressedBytes: 0 } } as unknown as BundleReader

describe.skipIf(BACKEND === 'embedded')('a bulk load by COPY (postgres)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let sql: Sql

  beforeAll(async () => {
    database = await createTestDatabase()
    // One connection: what the COPY leaves behind is what the next statement meets.
    sql = postgres(database.url, { max: 1, onnotice: () => {} })
    await migrate(sql, 'repository')
  })

  afterAll(async () => {
    await sql.end()
    await database.drop()
  })

  const load = (items: AsyncIterable<BundleItem>) =>
    sql.begin(async (tx) => {
      const deferred = await deferIndexesIfEmpty(tx, { bulk: true })
      const graph = new GraphImport({
        tx,
        repositoryId: crypto.randomUUID(),
        jobId: crypto.randomUUID(),
        mediaPrefix: 'imports/',
        localImageUrlPrefix: 'http://kgs.test/images/',
        blobs: undefined as never,
        vectors: undefined as never,
        embedder: { model: 'none', dimensions: 1 },
        signal: new AbortController().signal,
        bulk: true,
        copy: true,
        progress: () => {},
      })
      const counts = await graph.run(noFile, items)
      await deferred!.build()
      return counts
    })

  test('stopped in the middle of the facts, it gives the COPY up: the connection serves the next statement and nothing was written', async () => {
    async function* stopping(): AsyncIterable<BundleItem> {
      for (let position = 0; position < FACTS; position++) yield fact(position)
      throw new Error('stopped mid-section')
    }
    expect(await rejected(load(stopping()))).toThrow('stopped mid-section')
    const [{ count }] = await sql<[{ count: number }]>`SELECT count(*)::int AS count FROM facts`
    expect(count).toBe(0)
  })

  test('a row the server refuses fails the load as bad input naming its section, and nothing was written', async () => {
    async function* refused(): AsyncIterable<BundleItem> {
      for (let position = 0; position < FACTS; position++)
        yield fact(position, position === FACTS - 10 ? { status: 'no such status' as never } : {})
    }
    const error = await rejected(load(refused()))
    expect(error).toThrow(BundleError)
    expect(error).toThrow(/^facts: .*facts_status_check/)
    const [{ count }] = await sql<[{ count: number }]>`SELECT count(*)::int AS count FROM facts`
    expect(count).toBe(0)
  })

  test('run to its end, every row is there with its created_at in bundle order, and the counts are kept', async () => {
    async function* all(): AsyncIterable<BundleItem> {
      for (let position = 0; position < FACTS; position++) yield fact(position)
    }
    const counts = await load(all())
    expect(counts.imported.facts).toBe(FACTS)
    const rows = await sql<{ text: string }[]>`SELECT text FROM facts ORDER BY created_at, id`
    expect(rows.map((row) => row.text)).toEqual(
      Array.from({ length: FACTS }, (_, position) => `fact number ${position}`),
    )
    const [{ documents, counted }] = await sql<[{ documents: number; counted: number }]>`
      SELECT (SELECT count(*)::int FROM fact_documents) AS documents, (SELECT sum(delta)::int FROM graph_count_changes WHERE kind = 'facts') AS counted`
    expect(documents).toBe(FACTS)
    expect(counted).toBe(FACTS)
  })
})
