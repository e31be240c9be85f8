// Repository members (docs/spec/decisions.md §4) at /{repoID}/members and /api/v1/members with
// X-Repository-ID: the role matrix, the body's refusals (nothing written), the last repoadmin
// (409, also for two demotions at once), a stranger learning nothing, and on PostgreSQL a change
// on one instance applied by another within a second (a member's, and a repository's counts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { api, expectError, registerAccount, uniqueEmail, type Account, type ApiResponse } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'
import { startServerProcess, type ServerProcess, type TestServer } from '../helpers/server.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { push, smallBundle } from '../registry/helpers.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const PASSWORD = 'correct horse battery'
const USERS = {
  owner: 'member',
  editor: 'member',
  curator: 'member',
  viewer: 'member',
  stranger: 'member',
  admin: 'sysadmin',
  newcomer: 'member',
} as const
type User = keyof typeof USERS

let server: TestServer
let http: ReturnType<typeof api>
let users: Record<User, Account>
let repo: { id: string; name: string; slug: string }
/** OAuth access tokens of the owner (a repoadmin), by scope. */
const ownerTokens: Record<'read' | 'write' | 'admin', string> = { read: '', write: '', admin: '' }

/** The two addresses of the members routes. */
const ADDRESSES = {
  path: (slug: string, rest = '') => ({ path: `/${slug}/members${rest}`, headers: {} }),
  header: (slug: string, rest = '') => ({ path: `/api/v1/members${rest}`, headers: { 'x-repository-id': slug } }),
}
type Address = keyof typeof ADDRESSES

function call(
  method: string,
  address: Address,
  slug: string,
  token: string | undefined,
  options: { rest?: string; body?: unknown } = {},
): Promise<ApiResponse> {
  const { path, headers } = ADDRESSES[address](slug, options.rest)
  return http.call(method, path, { token, headers, body: options.body })
}
const list = (token: string, address: Address = 'path', slug = repo.slug) => call('GET', address, slug, token)
const put = (token: string, body: unknown, address: Address = 'path', slug = repo.slug) =>
  call('PUT', address, slug, token, { body })
const remove = (token: string, userId: string, address: Address = 'path', slug = repo.slug) =>
  call('DELETE', address, slug, token, { rest: `/${userId}` })

/** The members as a sysadmin sees them, by user id. */
async function roles(): Promise<Record<string, string>> {
  const res = await list(users.admin.token, 'path')
  expect(res.status).toBe(200)
  return Object.fromEntries(res.body.map((m: { user_id: string; role: string }) => [m.user_id, m.role]))
}

beforeAll(async () => {
  ;({
    server,
    http,
    users,
    repositories: { shared: repo },
  } = await fixture({
    users: USERS,
    repositories: { shared: { by: 'owner', roles: { editor: 'editor', curator: 'curator', viewer: 'viewer' } } },
  }))
  const client = await registerClient(server.url, { scope: 'read write admin' })
  for (const scope of ['read', 'write', 'admin'] as const)
    ownerTokens[scope] = (
      await obtainTokens(server.url, client, { email: users.owner.email, password: PASSWORD }, scope)
    ).access_token
})
afterAll(() => server.stop())

describe(`repository members (${BACKEND})`, () => {
  test('GET: every role holder with e-mail, name and role, at both addresses', async () => {
    for (const address of ['path', 'header'] as const) {
      const res = await list(users.viewer.token, address)
      expect(res.status).toBe(200)
      expect(res.body).toHaveLength(4)
      const byId = Object.fromEntries(res.body.map((m: { user_id: string }) => [m.user_id, m]))
      expect(byId[users.owner.id]).toEqual({
        user_id: users.owner.id,
        email: users.owner.email,
        name: expect.any(String),
        role: 'repoadmin',
      })
      expect(byId[users.editor.id].role).toBe('editor')
      expect(byId[users.curator.id].role).toBe('curator')
      expect(byId[users.viewer.id].role).toBe('viewer')
    }
  })

  test('GET is paginated in the order members joined', async () => {
    const first = await http.get(`/${repo.slug}/members?limit=1`, users.owner.token)
    expect(first.body).toHaveLength(1)
    expect(first.body[0].user_id).toBe(users.owner.id)
    const next = first.headers.get('link')!.match(/<([^>]+)>; rel="next"/)![1]!
    const second = await http.get(next, users.owner.token)
    expect(second.body).toHaveLength(1)
    expect(second.body[0].user_id).not.toBe(users.owner.id)
    expectError(await http.get(`/${repo.slug}/members?limit=0`, users.owner.token), 400, /limit/)
    // A new role keeps the member's place.
    const order = async () => (await list(users.owner.token)).body.map((m: { user_id: string }) => m.user_id)
    const before = await order()
    expect((await put(users.owner.token, { email: users.editor.email, role: 'viewer' })).status).toBe(200)
    expect(await order()).toEqual(before)
    expect((await put(users.owner.token, { email: users.editor.email, role: 'editor' })).status).toBe(200)
    expect(await order()).toEqual(before)
  })

  test('the role matrix: who may list, grant and remove', async () => {
    // [caller, GET, PUT, DELETE]: PUT and DELETE act on the newcomer, then undo.
    const matrix: [string, string, number, number, number][] = [
      ['repoadmin', users.owner.token, 200, 200, 200],
      ['sysadmin', users.admin.token, 200, 200, 200],
      ['editor', users.editor.token, 200, 403, 403],
      ['curator', users.curator.token, 200, 403, 403],
      ['viewer', users.viewer.token, 200, 403, 403],
      ['stranger', users.stranger.token, 404, 404, 404],
      ['OAuth read', ownerTokens.read, 200, 403, 403],
      ['OAuth write', ownerTokens.write, 200, 403, 403],
      ['OAuth admin', ownerTokens.admin, 200, 200, 200],
    ]
    for (const address of ['path', 'header'] as const) {
      for (const [who, token, get, putStatus, deleteStatus] of matrix) {
        const label = `${who} at ${address}`
        expect([label, (await list(token, address)).status]).toEqual([label, get])
        const granted = await put(token, { email: users.newcomer.email, role: 'viewer' }, address)
        expect([label, granted.status]).toEqual([label, putStatus])
        // Removing someone is tried only when they are there, so the status is the rule's.
        if (putStatus !== 200) await put(users.owner.token, { email: users.newcomer.email, role: 'viewer' })
        expect([label, (await remove(token, users.newcomer.id, address)).status]).toEqual([label, deleteStatus])
        if (deleteStatus !== 200) expect((await remove(users.owner.token, users.newcomer.id)).status).toBe(200)
        expect((await roles())[users.newcomer.id]).toBeUndefined()
      }
    }
    // A scope too narrow says so, with the challenge; a role too weak names the permission.
    const narrow = await put(ownerTokens.write, { email: users.newcomer.email, role: 'viewer' })
    expectError(
      narrow,
      403,
      'insufficient scope: member:manage needs a token with the admin scope (this one has write); authorize again with admin',
    )
    expect(narrow.headers.get('www-authenticate')).toContain('error="insufficient_scope"')
    expectError(
      await put(users.editor.token, { email: users.newcomer.email, role: 'viewer' }),
      403,
      'permission denied: member:manage needs the repoadmin role in this repository; a repoadmin of it can grant it',
    )
  })

  test('no token: 401 before anything else, at both addresses', async () => {
    for (const address of ['path', 'header'] as const) {
      expect((await call('GET', address, repo.slug, undefined)).status).toBe(401)
      expect((await call('PUT', address, repo.slug, undefined, { body: { nonsense: true } })).status).toBe(401)
      expect(
        (await call('DELETE', address, 'no-such-repository', undefined, { rest: `/${users.viewer.id}` })).status,
      ).toBe(401)
    }
  })

  test("a stranger's answers are the same for this repository and one that does not exist", async () => {
    for (const address of ['path', 'header'] as const) {
      for (const slug of [repo.slug, repo.id]) {
        const missing = slug === repo.id ? crypto.randomUUID() : 'no-such-repository'
        const pairs = [
          [await list(users.stranger.token, address, slug), await list(users.stranger.token, address, missing)],
          [
            await put(users.stranger.token, { email: users.stranger.email, role: 'repoadmin' }, address, slug),
            await put(users.stranger.token, { email: users.stranger.email, role: 'repoadmin' }, address, missing),
          ],
          [
            await remove(users.stranger.token, users.owner.id, address, slug),
            await remove(users.stranger.token, users.owner.id, address, missing),
          ],
        ]
        for (const [existing, absent] of pairs) {
          expect(existing!.status).toBe(404)
          expect(existing!.body).toEqual(absent!.body)
        }
      }
    }
    expect((await roles())[users.stranger.id]).toBeUndefined()
  })

  test('PUT by e-mail; idempotent; a new role replaces the old; the member sees the repository at once', async () => {
    expect((await http.get(`/${repo.slug}`, users.newcomer.token)).status).toBe(404)
    const byEmail = await put(users.owner.token, { email: `  ${users.newcomer.email.toUpperCase()} `, role: 'editor' })
    expect(byEmail.status).toBe(200)
    expect(byEmail.body).toEqual({
      user_id: users.newcomer.id,
      email: users.newcomer.email,
      name: expect.any(String),
      role: 'editor',
    })
    const record = await http.get(`/${repo.slug}`, users.newcomer.token)
    expect(record.status).toBe(200)
    expect(record.body.role).toBe('editor')
    expect((await put(users.owner.token, { email: users.newcomer.email, role: 'editor' })).body).toEqual(byEmail.body)
    const demoted = await put(
      users.owner.token,
      { email: users.newcomer.email.toUpperCase(), role: 'viewer' },
      'header',
    )
    expect(demoted.body.role).toBe('viewer')
    expect((await roles())[users.newcomer.id]).toBe('viewer')
    const permissions = await http.call('GET', '/api/v1/permissions', {
      token: users.newcomer.token,
      headers: { 'x-repository-id': repo.slug },
    })
    const held = permissions.body.permissions
      .filter((p: { domain: string }) => p.domain === repo.id)
      .map((p: { resource: string; action: string }) => `${p.resource}:${p.action}`)
    expect(held).toContain('fact:read')
    expect(held).not.toContain('fact:write')
    const removed = await remove(users.owner.token, users.newcomer.id)
    expect(removed.body).toEqual({ ...demoted.body })
    expect((await http.get(`/${repo.slug}`, users.newcomer.token)).status).toBe(404)
    expectError(await remove(users.owner.token, users.newcomer.id), 404, 'not a member of this repository')
    expectError(await remove(users.owner.token, crypto.randomUUID()), 404, 'not a member of this repository')
  })

  test('bad bodies: 400 (404 for an unknown account) and nothing written', async () => {
    const before = await roles()
    const cases: [unknown, number, string | RegExp][] = [
      [
        { email: users.newcomer.email, role: 'sysadmin' },
        400,
        "invalid body: role: sysadmin is a system role; a member's role is one of repoadmin, editor, curator, viewer",
      ],
      [{ email: users.newcomer.email, role: 'member' }, 400, /member is a system role/],
      [{ email: users.newcomer.email, role: 'owner' }, 400, /unknown role "owner"/],
      [
        { email: users.newcomer.email, user_id: users.newcomer.id, role: 'viewer' },
        400,
        'invalid body: user_id: members are added by e-mail, not by id',
      ],
      [
        { role: 'viewer' },
        400,
        'invalid body: email: required (members are added by the e-mail address of their account)',
      ],
      [{ email: 'not an address', role: 'viewer' }, 400, 'invalid body: email: expected an e-mail address'],
      [{ email: users.newcomer.email }, 400, /^invalid body: role/],
      [{ email: users.newcomer.email, role: 5 }, 400, /^invalid body: role/],
      [{ user_id: 'nope', role: 'viewer' }, 400, 'invalid body: user_id: members are added by e-mail, not by id'],
      [{ email: users.newcomer.email, role: 'viewer', domain: 'system' }, 400, /^invalid body: domain/],
      ['viewer', 400, /^invalid body/],
      [
        { email: uniqueEmail('nobody'), role: 'viewer' },
        404,
        /^no account with the e-mail address nobody-.*@example\.com: they sign up first, or a sysadmin creates or invites the account \(kgs sends no e-mail\)$/,
      ],
      [
        { user_id: crypto.randomUUID(), role: 'viewer' },
        400,
        'invalid body: user_id: members are added by e-mail, not by id',
      ],
    ]
    for (const [body, status, message] of cases) expectError(await put(users.owner.token, body), status, message)
    expectError(
      await http.call('PUT', `/${repo.slug}/members`, {
        token: users.owner.token,
        raw: '{"email":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
    )
    expectError(
      await http.call('PUT', `/${repo.slug}/members`, {
        token: users.owner.token,
        raw: 'email=x',
        headers: { 'content-type': 'text/plain' },
      }),
      415,
    )
    expectError(await remove(users.owner.token, 'not-a-uuid'), 400, /^invalid path: userID|expected a user id/)
    expect(await roles()).toEqual(before)
  })

  test('an id adds nobody and reveals nothing: an owner_id seen in the registry, a stranger, nobody at all', async () => {
    // The address any account can find a user id at: the registry, which every account reads.
    const pushed = await push(server, users.admin.token, smallBundle(`members ${crypto.randomUUID()}`), {
      'x-graph-name': 'Seen in the registry',
    })
    expect(pushed.status).toBe(201)
    const seen = await http.get(`/api/v1/graphs/${pushed.body.graph_id}`, users.owner.token)
    expect(seen.body.owner_id).toBe(users.admin.id)
    expect(JSON.stringify(seen.body)).not.toContain(users.admin.email)

    const before = await roles()
    const strangerRepositories = (await http.get('/api/v1/repositories', users.stranger.token)).body
    const ids = [
      users.admin.id,
      users.stranger.id,
      users.owner.id,
      crypto.randomUUID(),
      users.stranger.id.toUpperCase(),
      'nope',
      42,
      null,
    ]
    const answers = []
    for (const address of ['path', 'header'] as const) {
      for (const user_id of ids) {
        const res = await put(users.owner.token, { user_id, role: 'viewer' }, address)
        expectError(res, 400, 'invalid body: user_id: members are added by e-mail, not by id')
        answers.push(res.body)
      }
    }
    // The same answer whoever the id is, so it tells whether no account exists; no e-mail anywhere.
    expect(new Set(answers.map((body) => JSON.stringify(body))).size).toBe(1)
    for (const user of [users.admin, users.stranger, users.owner])
      expect(JSON.stringify(answers)).not.toContain(user.email)
    // Nothing written: the members as they were, and the stranger's list without this repository.
    expect(await roles()).toEqual(before)
    expect((await http.get('/api/v1/repositories', users.stranger.token)).body).toEqual(strangerRepositories)
    expect((await http.get(`/${repo.slug}`, users.stranger.token)).status).toBe(404)
  })

  test('the last repoadmin can be neither demoted nor removed (409); with two, one can', async () => {
    expectError(
      await put(users.owner.token, { email: users.owner.email, role: 'editor' }),
      409,
      'a repository keeps at least one repoadmin: make another member repoadmin first',
    )
    expectError(await remove(users.owner.token, users.owner.id), 409)
    // A sysadmin is bound by it too: the repository keeps someone who manages it.
    expectError(await remove(users.admin.token, users.owner.id), 409)
    expect((await put(users.owner.token, { email: users.editor.email, role: 'repoadmin' })).status).toBe(200)
    expect((await put(users.editor.token, { email: users.owner.email, role: 'viewer' })).status).toBe(200)
    expectError(await remove(users.editor.token, users.editor.id), 409)
    expect((await put(users.editor.token, { email: users.owner.email, role: 'repoadmin' })).status).toBe(200)
    expect((await put(users.owner.token, { email: users.editor.email, role: 'editor' })).status).toBe(200)
    expect(await roles()).toMatchObject({ [users.owner.id]: 'repoadmin', [users.editor.id]: 'editor' })
  })

  test('two repoadmins demoting each other at once leave one repoadmin', async () => {
    for (let round = 0; round < 5; round++) {
      expect((await put(users.owner.token, { email: users.curator.email, role: 'repoadmin' })).status).toBe(200)
      const [a, b] = await Promise.all([
        put(users.owner.token, { email: users.curator.email, role: 'curator' }),
        remove(users.curator.token, users.owner.id),
      ])
      // The loser is refused: 409 when it was checked before the winner's change committed (it
      // would remove the last repoadmin), 403 when after (its sender is no longer a repoadmin).
      const statuses = [a.status, b.status].sort()
      expect([
        [200, 403],
        [200, 409],
      ]).toContainEqual(statuses)
      const now = await roles()
      expect(Object.values(now).filter((role) => role === 'repoadmin')).toHaveLength(1)
      // Back to the start: the owner repoadmin, the curator curator.
      if (now[users.curator.id] === 'repoadmin')
        expect((await put(users.curator.token, { email: users.owner.email, role: 'repoadmin' })).status).toBe(200)
      expect((await put(users.owner.token, { email: users.curator.email, role: 'curator' })).status).toBe(200)
    }
  })

  test("a role given by the admin route replaces the member's role: listed once; PUT leaves one", async () => {
    expect(
      (
        await http.put(
          '/api/v1/admin/users/roles',
          { user_id: users.viewer.id, role: 'curator', domain: repo.id },
          users.admin.token,
        )
      ).status,
    ).toBe(200)
    const listed = (await list(users.owner.token)).body.filter(
      (m: { user_id: string }) => m.user_id === users.viewer.id,
    )
    expect(listed).toHaveLength(1)
    expect(listed[0].role).toBe('curator')
    expect((await http.get(`/${repo.slug}`, users.viewer.token)).body.role).toBe('curator')
    expect((await put(users.owner.token, { email: users.viewer.email, role: 'viewer' })).status).toBe(200)
    const admin = await http.get('/api/v1/admin/users?limit=500', users.admin.token)
    const viewer = admin.body.find((u: { id: string }) => u.id === users.viewer.id)
    expect(viewer.roles.filter((r: { domain: string }) => r.domain === repo.id)).toEqual([
      { role: 'viewer', domain: repo.id, repository: { name: repo.name, slug: repo.slug } },
    ])
  })
})

describe.if(BACKEND === 'postgres')('members and counts in a fleet (postgres)', () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let a: ServerProcess
  let b: ServerProcess
  beforeAll(async () => {
    instance = await instanceEnvironment()
    const env = { ...instance.env, JWT_SECRET: randomBytes(32).toString('hex'), BASE_URL: 'https://kgs.fleet.test' }
    // Only A runs jobs: an upload is stored in the data directory of the instance that took it.
    ;[a, b] = await Promise.all([
      startServerProcess(env),
      startServerProcess({ ...env, DATA_DIR: `${instance.dataDir}/b`, WORKERS: '0' }),
    ])
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await instance.cleanup()
  })

  /** Polls B for up to a second (or `withinMs`) until `path` answers `status` to `token`; the status it ended on. */
  async function onB(path: string, token: string, status: number, withinMs = 1000): Promise<number> {
    const started = performance.now()
    let seen = 0
    while (seen !== status && performance.now() - started < withinMs) seen = (await api(b.url).get(path, token)).status
    return seen
  }

  test('a member added on A reads on B within 1 s; removed on A, is refused on B within 1 s', async () => {
    const onA = api(a.url)
    const owner = await registerAccount(onA)
    const member = await registerAccount(onA)
    const repository = (await onA.post('/api/v1/repositories', { name: 'Fleet members' }, owner.token)).body as {
      slug: string
    }
    expect((await api(b.url).get(`/${repository.slug}`, member.token)).status).toBe(404)
    expect(
      (await onA.put(`/${repository.slug}/members`, { email: member.email, role: 'viewer' }, owner.token)).status,
    ).toBe(200)
    expect(await onB(`/${repository.slug}/facts`, member.token, 200)).toBe(200)
    expect((await onA.call('DELETE', `/${repository.slug}/members/${member.id}`, { token: owner.token })).status).toBe(
      200,
    )
    expect(await onB(`/${repository.slug}/facts`, member.token, 404)).toBe(404)
  })

  test("an import on A: B's record of the repository, cached before, has the new counts within 1 s", async () => {
    const onA = api(a.url)
    const owner = await registerAccount(onA)
    const repository = (await onA.post('/api/v1/repositories', { name: 'Fleet counts' }, owner.token)).body as {
      slug: string
    }
    // Set-up: B has learnt of the creator's role (what this test measures comes after).
    expect(await onB(`/${repository.slug}`, owner.token, 200, 10_000)).toBe(200)
    expect((await api(b.url).get(`/${repository.slug}`, owner.token)).body.counts.facts).toBe(0)
    const bundle = await generateBundle(join(instance.dataDir, 'fleet.json.gz'), { facts: 20, dimensions: 0 })
    const started = await uploadBundle(onA, repository.slug, owner.token, readFileSync(bundle.path))
    expect(started.status).toBe(202)
    expect((await waitForJob(onA, `/${repository.slug}/jobs/${started.body.id}`, owner.token)).status).toBe('succeeded')
    const finished = performance.now()
    let facts = 0
    while (facts !== 20 && performance.now() - finished < 1000)
      facts = (await api(b.url).get(`/${repository.slug}`, owner.token)).body.counts.facts
    expect(facts).toBe(20)
  })
})
