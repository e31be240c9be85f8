// The registry as docs/spec/decisions.md §4 decides it, across the role matrix (repoadmin, editor,
// curator, viewer, a stranger to the repository, a sysadmin, OAuth tokens of each scope): every
// member browses, reads and downloads; a direct push is a sysadmin's; an import from the registry
// needs graph:import in the repository and registry:pull; an export pushes for the user who asked,
// who then owns the graph and may delete it, as a sysadmin may any.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'
import type { TestServer } from '../helpers/server.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { headersOf, push } from './helpers.ts'

const USERS = {
  owner: 'member',
  editor: 'member',
  curator: 'member',
  viewer: 'member',
  stranger: 'member',
  admin: 'sysadmin',
} as const

let server: TestServer
let http: ReturnType<typeof api>
let users: Record<keyof typeof USERS, Account>
let repo: { id: string; slug: string }
let graphId: string
const dir = mkdtempSync(join(tmpdir(), 'kgs-registry-roles-'))
/** Every caller of the matrix: a session token of each user, and OAuth tokens of the repoadmin. */
const callers: Record<string, string> = {}

beforeAll(async () => {
  ;({
    server,
    http,
    users,
    repositories: { shared: repo },
  } = await fixture({
    server: { env: { WORKERS: '1' } },
    users: USERS,
    repositories: { shared: { by: 'owner', roles: { editor: 'editor', curator: 'curator', viewer: 'viewer' } } },
  }))
  for (const [name, role] of [
    ['owner', 'repoadmin'],
    ['editor', 'editor'],
    ['curator', 'curator'],
    ['viewer', 'viewer'],
    ['stranger', 'stranger'],
    ['admin', 'sysadmin'],
  ] as const)
    callers[role] = users[name].token
  const client = await registerClient(server.url, { scope: 'read write admin' })
  for (const scope of ['read', 'write', 'admin']) {
    callers[`OAuth ${scope}`] = (
      await obtainTokens(server.url, client, { email: users.owner.email, password: 'correct horse battery' }, scope)
    ).access_token
  }
  const bundle = await generateBundle(join(dir, 'bundle.json.gz'), { facts: 20, dimensions: 0 })
  const pushed = await push(
    server,
    users.admin.token,
    readFileSync(bundle.path),
    headersOf(bundle, `Roles ${crypto.randomUUID()}`),
  )
  expect(pushed.status).toBe(201)
  graphId = pushed.body.graph_id
})
afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** The status each caller gets from `request`, in the matrix's order. */
async function statuses(request: (token: string) => Promise<{ status: number }>): Promise<Record<string, number>> {
  const seen: Record<string, number> = {}
  for (const [caller, token] of Object.entries(callers)) seen[caller] = (await request(token)).status
  return seen
}

describe(`registry across the role matrix (${BACKEND})`, () => {
  test('every member browses, reads and downloads, whatever their repository roles, a read-scoped token too', async () => {
    // registry:pull changes nothing, so the read scope reaches it (docs/api.md, "Roles and permissions").
    const expected = Object.fromEntries(Object.keys(callers).map((caller) => [caller, 200]))
    expect(await statuses((token) => http.get('/api/v1/graphs', token))).toEqual(expected)
    expect(await statuses((token) => http.get(`/api/v1/graphs/${graphId}`, token))).toEqual(expected)
    expect(
      await statuses((token) =>
        fetch(`${server.url}/api/v1/graphs/${graphId}/bundle`, { headers: { authorization: `Bearer ${token}` } }),
      ),
    ).toEqual(expected)
  })

  test("a direct push is a sysadmin's alone", async () => {
    const seen = await statuses((token) =>
      push(server, token, readFileSync(join(dir, 'bundle.json.gz')), { 'x-graph-name': `Push ${crypto.randomUUID()}` }),
    )
    expect(seen).toEqual({
      repoadmin: 403,
      editor: 403,
      curator: 403,
      viewer: 403,
      stranger: 403,
      sysadmin: 201,
      'OAuth read': 403,
      'OAuth write': 403,
      'OAuth admin': 403,
    })
  })

  test('importing a registry graph needs graph:import there (and registry:pull); a stranger learns nothing', async () => {
    const seen = await statuses(async (token) => {
      const res = await http.post(`/${repo.slug}/import-graph`, { graph_id: graphId }, token)
      if (res.status === 202)
        expect((await waitForJob(http, `/${repo.slug}/jobs/${res.body.id}`, users.owner.token)).status).toBe(
          'succeeded',
        )
      return res
    })
    expect(seen).toEqual({
      repoadmin: 202,
      editor: 202,
      curator: 403,
      viewer: 403,
      stranger: 404,
      sysadmin: 202,
      'OAuth read': 403,
      'OAuth write': 202,
      'OAuth admin': 202,
    })
    expectError(
      await http.post(`/${repo.slug}/import-graph`, { graph_id: graphId }, users.viewer.token),
      403,
      'permission denied: graph:import needs the editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
  })

  test('an export pushes for the user who asked, who owns the graph and deletes it; others may not, a sysadmin may', async () => {
    const exported: Record<string, string> = {}
    const seen = await statuses(async (token) => {
      const res = await http.post(`/${repo.slug}/export-graph`, { name: `Export ${crypto.randomUUID()}` }, token)
      if (res.status === 202) {
        const job = await waitForJob(http, `/${repo.slug}/jobs/${res.body.id}`, users.owner.token)
        expect(job.status).toBe('succeeded')
        exported[token] = (job.result as { graph_id: string }).graph_id
      }
      return res
    })
    expect(seen).toEqual({
      repoadmin: 202,
      editor: 202,
      curator: 202,
      viewer: 403,
      stranger: 404,
      sysadmin: 202,
      'OAuth read': 403,
      'OAuth write': 202,
      'OAuth admin': 202,
    })

    const curatorGraph = exported[users.curator.token]!
    // The e-mail is the owner's own to read (and a sysadmin's); any other account reads the id.
    expect((await http.get(`/api/v1/graphs/${curatorGraph}`, users.curator.token)).body).toMatchObject({
      owner: users.curator.email,
      owner_id: users.curator.id,
    })
    expect((await http.get(`/api/v1/graphs/${curatorGraph}`, users.viewer.token)).body).toMatchObject({
      owner: users.curator.id,
      owner_id: users.curator.id,
    })
    // Owning a graph is a user's, not a role's: the repository's repoadmin may not delete it.
    for (const who of ['viewer', 'owner', 'editor'] as const) {
      expectError(
        await http.call('DELETE', `/api/v1/graphs/${curatorGraph}`, { token: users[who].token }),
        403,
        'permission denied: only the owner of a graph or a sysadmin may delete it',
      )
    }
    expect((await http.call('DELETE', `/api/v1/graphs/${curatorGraph}`, { token: users.curator.token })).status).toBe(
      200,
    )
    expect(
      (await http.call('DELETE', `/api/v1/graphs/${exported[users.editor.token]!}`, { token: users.admin.token }))
        .status,
    ).toBe(200)
    // The owner's OAuth token deletes the owner's graph with the write scope, not with read.
    const ownerGraph = exported[users.owner.token]!
    expect((await http.call('DELETE', `/api/v1/graphs/${ownerGraph}`, { token: callers['OAuth read'] })).status).toBe(
      403,
    )
    expect((await http.call('DELETE', `/api/v1/graphs/${ownerGraph}`, { token: callers['OAuth write'] })).status).toBe(
      200,
    )
  })
})
