// No answer carries the e-mail of a user the caller could not read at GET /users/{id} (self, or
// user:read): the registry, which every account reads, names a graph's pusher by e-mail only to
// the pusher and to sysadmins, in each of its lists, its record and MCP's browse_registry. (The
// members route takes no id, so the owner_id read there adds nobody: tests/repositories/members.test.ts.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import { push, smallBundle } from '../registry/helpers.ts'
import type { TestServer } from '../helpers/server.ts'

let server: TestServer
let http: ReturnType<typeof api>
let users: Record<'admin' | 'member', Account>
let graphId: string
const name = `Pushed ${crypto.randomUUID().slice(0, 8)}`

beforeAll(async () => {
  ;({ server, http, users } = await fixture({ users: { admin: 'sysadmin', member: 'member' } }))
  const pushed = await push(server, users.admin.token, smallBundle(name), { 'x-graph-name': name })
  expect(pushed.status).toBe(201)
  graphId = pushed.body.graph_id
})
afterAll(() => server?.stop())

/** Every way the registry answers a graph record, as `token`'s holder reads it. */
async function recordsSeenBy(token: string) {
  const [one, list, goList] = await Promise.all([
    http.get(`/api/v1/graphs/${graphId}`, token),
    http.get(`/api/v1/graphs?q=${encodeURIComponent(name)}`, token),
    http.get(`/api/v1/graphs?offset=0&limit=200`, token),
  ])
  for (const res of [one, list, goList]) expect(res.status).toBe(200)
  const mcp = await conversation(`${server.url}/api/v1/mcp`, token)
  try {
    const browsed = await call(mcp, 'browse_registry', { q: name })
    expect(browsed.isError).toBeFalsy()
    return {
      record: one.body,
      listed: list.body.find((g: { id: string }) => g.id === graphId),
      go: goList.body.graphs.find((g: { id: string }) => g.id === graphId),
      browsed: browsed.structuredContent!.items.find((g: { id: string }) => g.id === graphId),
      raw: JSON.stringify([one.body, list.body, goList.body, browsed]),
    }
  } finally {
    await mcp.close()
  }
}

describe(`e-mail addresses in answers (${BACKEND})`, () => {
  test('a graph’s pusher reads their own e-mail as its owner; another account reads only their user id, everywhere', async () => {
    // The member may not read the sysadmin's profile: the registry must not tell them more.
    expectError(await http.get(`/api/v1/users/${users.admin.id}`, users.member.token), 403)
    const theirs = await recordsSeenBy(users.member.token)
    for (const seen of [theirs.record, theirs.listed, theirs.go, theirs.browsed])
      expect(seen.owner).toBe(users.admin.id)
    expect(theirs.record.owner_id).toBe(users.admin.id)
    expect(theirs.raw).not.toContain(users.admin.email)

    const own = await recordsSeenBy(users.admin.token)
    for (const seen of [own.record, own.listed, own.go, own.browsed]) expect(seen.owner).toBe(users.admin.email)
  })
})
