// Migration 0013_graph_owner_email on rows written before it, when owner held the pusher's user
// id: owner becomes the e-mail and owner_id the id; 'kgs' and the id of a deleted account stay.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Pools } from '../../src/db/pools.ts'
import { migrate } from '../../src/db/migrate.ts'
import { MIGRATIONS } from '../../src/db/migrations/index.ts'
import { BACKEND, openTestPools } from '../helpers/backend.ts'

let pools: Pools
let opened: Awaited<ReturnType<typeof openTestPools>>

beforeAll(async () => {
  opened = await openTestPools()
  pools = opened.pools
})
afterAll(() => opened?.close())

describe(`graph owners migrated to e-mail and owner_id (${BACKEND})`, () => {
  test('a user id becomes their e-mail and owner_id; kgs and a deleted account keep their owner', async () => {
    const sql = pools.system
    const before = MIGRATIONS.system.findIndex((m) => m.name === '0013_graph_owner_email')
    expect(before).toBeGreaterThan(0)
    await migrate(sql, 'system', MIGRATIONS.system.slice(0, before))

    const user = crypto.randomUUID()
    const gone = crypto.randomUUID()
    await sql`INSERT INTO users (id, email, password_hash) VALUES (${user}, 'pusher@example.com', 'x')`
    const graph = (owner: string) => ({
      id: crypto.randomUUID(),
      name: `g ${owner}`,
      owner,
      bytes: 1,
      storage_key: `registry/graphs/${owner}`,
    })
    const rows = [graph(user), graph('kgs'), graph(gone)]
    for (const row of rows) await sql`INSERT INTO graphs ${sql(row)}`

    expect(await migrate(sql, 'system')).toEqual(MIGRATIONS.system.slice(before).map((m) => m.name))
    const migrated = await sql<
      { id: string; owner: string; owner_id: string | null }[]
    >`SELECT id, owner, owner_id FROM graphs`
    expect(Object.fromEntries(migrated.map((g) => [g.id, { owner: g.owner, owner_id: g.owner_id }]))).toEqual({
      [rows[0]!.id]: { owner: 'pusher@example.com', owner_id: user },
      [rows[1]!.id]: { owner: 'kgs', owner_id: null },
      [rows[2]!.id]: { owner: gone, owner_id: gone },
    })
  })
})
