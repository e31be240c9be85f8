// The facts' full-text documents (repository migration 0008_fact_documents): backfilled from the
// facts a repository already holds, and kept current by the database for every writer (the
// import, the write routes and gen-graph all write facts with plain INSERT and UPDATE).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import { migrate } from '../../src/db/migrate.ts'
import { MIGRATIONS } from '../../src/db/migrations/index.ts'
import { factContentHash } from '../../src/bundle/format/hashes.ts'
import { BACKEND, openTestPools } from '../helpers/backend.ts'

let opened: Awaited<ReturnType<typeof openTestPools>>
let sql: Sql

const before = MIGRATIONS.repository.filter((m) => m.name < '0008_fact_documents')
const insertFacts = (texts: readonly string[]) =>
  sql`INSERT INTO facts ${sql(texts.map((text) => ({ id: crypto.randomUUID(), text, fact_kind: 'text', content_hash: factContentHash(text), status: 'new' })))} RETURNING id`
/** The facts whose document matches `query`, as keyword search asks. */
const matching = async (query: string) =>
  (
    await sql<{ text: string }[]>`
      SELECT f.text FROM fact_documents d JOIN facts f ON f.id = d.id
      WHERE d.fulltext @@ websearch_to_tsquery('english', ${query}) ORDER BY f.text`
  ).map((row) => row.text)

beforeAll(async () => {
  opened = await openTestPools()
  // An empty database of its own (the system one, never migrated here), taken to 0007 first.
  sql = opened.pools.system
  await migrate(sql, 'repository', before)
})
afterAll(() => opened?.close())

describe(`fact documents (${BACKEND})`, () => {
  test('the migration stores the documents of the facts already there', async () => {
    await insertFacts(['Glaciers retreat in warm summers.', 'Ozone absorbs ultraviolet light.'])
    expect(await migrate(sql, 'repository')).toEqual(
      MIGRATIONS.repository.filter((m) => !before.includes(m)).map((m) => m.name),
    )
    expect(await matching('glacier')).toEqual(['Glaciers retreat in warm summers.'])
    expect(await matching('absorbing')).toEqual(['Ozone absorbs ultraviolet light.'])
    const [{ facts, documents }] =
      (await sql`SELECT (SELECT count(*)::int FROM facts) AS facts, (SELECT count(*)::int FROM fact_documents) AS documents`) as unknown as [
        { facts: number; documents: number },
      ]
    expect(documents).toBe(facts)
  })

  test('inserted facts (several in one statement) get their documents', async () => {
    await insertFacts(['Penguins huddle against the wind.', 'Krill swarm under the sea ice.'])
    expect(await matching('penguin or krill')).toEqual([
      'Krill swarm under the sea ice.',
      'Penguins huddle against the wind.',
    ])
  })

  test('an edited text replaces the document; other edits leave it', async () => {
    const [row] = await insertFacts(['Lichens grow on bare rock.'])
    await sql`UPDATE facts SET text = 'Mosses grow on bare rock.', content_hash = ${factContentHash('Mosses grow on bare rock.')} WHERE id = ${row!.id}`
    expect(await matching('lichen')).toEqual([])
    expect(await matching('moss')).toEqual(['Mosses grow on bare rock.'])
    await sql`UPDATE facts SET status = 'stable' WHERE id = ${row!.id}`
    expect(await matching('moss')).toEqual(['Mosses grow on bare rock.'])
  })

  test('a deleted fact takes its document along', async () => {
    const [row] = await insertFacts(['Geysers erupt at intervals.'])
    await sql`DELETE FROM facts WHERE id = ${row!.id}`
    expect(await matching('geyser')).toEqual([])
    expect(await sql`SELECT 1 FROM fact_documents WHERE id = ${row!.id}`).toHaveLength(0)
  })
})
