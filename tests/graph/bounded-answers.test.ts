// Every list answer is bounded (SECURITY.md, "Bounded by design", finding 4): a page of large rows
// ends once its rows pass PAGE_BYTES, and its Link goes on from there; a row larger than that alone
// is still shown. Following the Links gives every row once, in order.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import type { Account } from '../helpers/api.ts'
import { PAGE_BYTES } from '../../src/graph/store.ts'

let server: TestServer
let owner: Account
let repo: { id: string; slug: string }
const MIB = 1024 ** 2
/** Sizes of the facts' texts, in list order: three of 3 MiB, one of 10 MiB (alone past the budget), two small. */
const SIZES = [3 * MIB, 3 * MIB, 3 * MIB, 10 * MIB, 10, 10]

beforeAll(async () => {
  ;({
    server,
    users: { owner },
    repositories: { repo },
  } = await fixture({ users: { owner: 'member' }, repositories: { repo: { by: 'owner', name: 'Large rows' } } }))
  const sql = await server.context.pools.forRepository(repo.id)
  for (const [i, size] of SIZES.entries()) {
    const at = `2026-01-02T03:04:0${i}.000000Z`
    await sql`INSERT INTO facts (id, text, fact_kind, content_hash, status, created_at) VALUES (${crypto.randomUUID()}, ${String(i).repeat(size)}, 'text', ${String(i).padStart(64, '0')}, 'new', ${at})`
  }
})
afterAll(() => server.stop())

describe(`bounded list answers (${BACKEND})`, () => {
  test('pages of large rows end near PAGE_BYTES; the Links give every row once, in order', async () => {
    const seen: number[] = []
    const pages: number[] = []
    let next: string | undefined = `/${repo.slug}/facts?limit=500`
    while (next) {
      const res: Response = await fetch(server.url + next, { headers: { authorization: `Bearer ${owner.token}` } })
      expect(res.status).toBe(200)
      const text = await res.text()
      // At most the budget and the row that passed it.
      expect(text.length).toBeLessThan(PAGE_BYTES + 10 * MIB + 4096)
      const facts = JSON.parse(text) as { text: string }[]
      pages.push(facts.length)
      for (const fact of facts) seen.push(Number(fact.text[0]))
      next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
    }
    expect(seen).toEqual(SIZES.map((_, i) => i))
    // 3+3 MiB, then 3 MiB (the 10 MiB row passes the budget), the 10 MiB row alone, the small two.
    expect(pages).toEqual([2, 1, 1, 2])
  })
})
