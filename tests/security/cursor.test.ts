// A forged ?cursor= (SECURITY.md, "Bounded by design", finding 7): base64url JSON of the wrong
// shape, or of the right shape with values PostgreSQL would refuse, is a 400 on every paginated
// route, never a 500.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { type api, expectError, type Account } from '../helpers/api.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let slug: string

beforeAll(async () => {
  const cursors = await fixture({
    users: { admin: 'sysadmin' },
    repositories: { cursors: { by: 'admin', name: 'Cursors' } },
  })
  ;({
    server,
    http,
    users: { admin },
  } = cursors)
  slug = cursors.repositories.cursors.slug
})
afterAll(() => server.stop())

const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const ID = '00000000-0000-4000-8000-000000000000'
const FORGED = [
  forge(['1', ID]), // Date.parse takes it; PostgreSQL does not
  forge(['2026-02-30T00:00:00.000000Z', ID]),
  forge(['0000-01-01T00:00:00.000000Z', ID]),
  forge(['2026-01-01T00:00:00.000000Z', '-'.repeat(36)]),
  forge(['2026-01-01T00:00:00.000000Z', ID, 'extra']),
  forge({ at: '2026-01-01T00:00:00.000000Z', id: ID }),
  forge(null),
  forge(5),
  forge([]),
]

describe(`forged cursors (${BACKEND})`, () => {
  test('every paginated route answers 400 to every forged cursor', async () => {
    const routes = [
      '/api/v1/repositories',
      ...['sources', 'facts', 'concepts', 'investigations', 'reports', 'jobs'].map((list) => `/${slug}/${list}`),
      '/api/v1/jobs',
      '/api/v1/graphs',
      '/api/v1/admin/users',
      '/api/v1/auth/sessions',
      '/api/v1/oauth/grants',
    ]
    for (const route of routes) {
      for (const cursor of FORGED) {
        const res = await http.get(`${route}?cursor=${cursor}`, admin.token)
        if (res.status !== 400)
          throw new Error(
            `${route} with cursor ${Buffer.from(cursor, 'base64url')}: ${res.status} ${JSON.stringify(res.body)}`,
          )
        expectError(res, 400, 'invalid query: cursor: expected a cursor from a Link header')
      }
      // The cursor of a real page still works.
      expect(
        (await http.get(`${route}?cursor=${forge(['2026-01-01T00:00:00.000000Z', ID])}`, admin.token)).status,
      ).toBe(200)
    }
  })
})
