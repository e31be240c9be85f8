// Roles, admin routes and permissions over HTTP, on the selected backend.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, untilSysadmin, type TestServer } from '../helpers/server.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { ROLES } from '../../src/permissions.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let member: Account

interface Account {
  id: string
  email: string
  token: string
}

async function register(): Promise<Account> {
  const res = await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: 'correct horse battery' })
  expect(res.status).toBe(201)
  return { id: res.body.user.id, email: res.body.user.email, token: res.body.token }
}

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
  admin = await register()
  member = await register()
  const promoted = await server.promote(admin.email)
  expect(promoted.stdout).toBe(`${admin.email} is now sysadmin\n`)
  await untilSysadmin(server, admin.token)
})
afterAll(() => server.stop())

const role = (user_id: string, role: string, domain = 'system') => ({ user_id, role, domain })

describe(`permissions (${BACKEND})`, () => {
  test('registration grants member: repository:create and registry:pull in the system domain', async () => {
    const res = await http.get('/api/v1/permissions', member.token)
    expect(res.status).toBe(200)
    // The caller named as /users/me names them: an app opens a page with this one answer.
    const me = (await http.get('/api/v1/users/me', member.token)).body
    expect(res.body).toEqual({
      user_id: member.id,
      user: { id: me.id, email: me.email, name: me.name },
      system_admin: false,
      permissions: [
        { domain: 'system', resource: 'repository', action: 'create' },
        { domain: 'system', resource: 'registry', action: 'pull' },
      ],
    })
  })

  test('a sysadmin holds every system permission', async () => {
    const res = await http.get('/api/v1/permissions', admin.token)
    expect(res.body.system_admin).toBe(true)
    expect(
      res.body.permissions.map((p: { resource: string; action: string }) => `${p.resource}:${p.action}`).sort(),
    ).toEqual([...ROLES.sysadmin.permissions].sort())
  })

  test('without a token: 401', async () => {
    expectError(await http.get('/api/v1/permissions'), 401)
  })
})

describe(`admin routes (${BACKEND})`, () => {
  const routes: [string, string, unknown?][] = [
    ['GET', '/api/v1/admin/users'],
    ['GET', '/api/v1/admin/permissions'],
    ['PUT', '/api/v1/admin/users/roles', { user_id: crypto.randomUUID(), role: 'member', domain: 'system' }],
    ['DELETE', '/api/v1/admin/users/roles', { user_id: crypto.randomUUID(), role: 'member', domain: 'system' }],
  ]
  for (const [method, path, body] of routes) {
    test(`${method} ${path}: 401 without a token, 403 for a member`, async () => {
      expectError(await http.call(method, path, { body }), 401, 'authentication required')
      expectError(
        await http.call(method, path, { body, token: member.token }),
        403,
        /^permission denied: (user:read|role:read|role:manage) needs the sysadmin role on this server; a sysadmin can grant it$/,
      )
    })
  }

  test('GET /admin/permissions lists every role with its domain kind and permissions', async () => {
    const res = await http.get('/api/v1/admin/permissions', admin.token)
    expect(res.status).toBe(200)
    expect(res.body).toEqual(
      Object.entries(ROLES).map(([name, d]) => ({
        role: name,
        domain_kind: d.domain_kind,
        permissions: [...d.permissions],
      })),
    )
    // As docs/spec/decisions.md §4 writes them, the …:write permissions included.
    const of = (role: string) => res.body.find((r: { role: string }) => r.role === role).permissions as string[]
    const writes = ['source:write', 'fact:write', 'concept:write', 'investigation:write', 'report:write']
    expect(of('repoadmin')).toEqual(expect.arrayContaining([...writes, 'member:manage', 'repository:delete']))
    expect(of('editor')).toEqual(expect.arrayContaining([...writes, 'member:read', 'graph:import']))
    expect(of('editor')).not.toContain('member:manage')
    expect(of('editor')).not.toContain('repository:delete')
    expect(
      of('curator')
        .filter((p) => !p.endsWith(':read'))
        .sort(),
    ).toEqual(['concept:write', 'graph:export', 'report:write'])
    expect(of('viewer').every((p) => p.endsWith(':read'))).toBe(true)
    expect(of('viewer')).toContain('member:read')
    expect(of('member')).toEqual(['repository:create', 'registry:pull'])
  })

  test('GET /admin/users lists users with their roles, paginated with a Link header', async () => {
    const first = await http.get('/api/v1/admin/users?limit=1', admin.token)
    expect(first.status).toBe(200)
    expect(first.body).toHaveLength(1)
    expect(first.body[0]).toEqual({
      id: admin.id,
      email: admin.email,
      name: '',
      created_at: expect.any(String),
      roles: expect.arrayContaining([
        { role: 'member', domain: 'system' },
        { role: 'sysadmin', domain: 'system' },
      ]),
    })
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1]
    expect(next).toBeDefined()
    const second = await http.get(next!, admin.token)
    expect(second.body[0].id).toBe(member.id)
    const all = await http.get('/api/v1/admin/users?limit=500', admin.token)
    expect(all.headers.get('link')).toBeNull()
    expect(all.body.map((u: { id: string }) => u.id)).toEqual(expect.arrayContaining([admin.id, member.id]))
  })

  test('GET /admin/users: bad limit or cursor: 400', async () => {
    expectError(await http.get('/api/v1/admin/users?limit=0', admin.token), 400, /^invalid query: limit: /)
    expectError(await http.get('/api/v1/admin/users?limit=501', admin.token), 400, /^invalid query: limit: /)
    expectError(await http.get('/api/v1/admin/users?limit=ten', admin.token), 400, /^invalid query: limit: /)
    expectError(
      await http.get('/api/v1/admin/users?cursor=garbage', admin.token),
      400,
      'invalid query: cursor: expected a cursor from a Link header',
    )
  })

  test('assign and remove: idempotent assign, 404 on a second remove, enforced at once', async () => {
    const user = await register()
    expectError(await http.get('/api/v1/admin/users', user.token), 403)
    const assigned = await http.put('/api/v1/admin/users/roles', role(user.id.toUpperCase(), 'sysadmin'), admin.token)
    expect(assigned.status).toBe(200)
    expect(assigned.body).toEqual(role(user.id, 'sysadmin'))
    expect((await http.put('/api/v1/admin/users/roles', role(user.id, 'sysadmin'), admin.token)).body).toEqual(
      role(user.id, 'sysadmin'),
    )
    expect((await http.get('/api/v1/admin/users', user.token)).status).toBe(200)
    const removed = await http.call('DELETE', '/api/v1/admin/users/roles', {
      body: role(user.id, 'sysadmin'),
      token: admin.token,
    })
    expect(removed.status).toBe(200)
    expect(removed.body).toEqual(role(user.id, 'sysadmin'))
    expectError(
      await http.call('DELETE', '/api/v1/admin/users/roles', { body: role(user.id, 'sysadmin'), token: admin.token }),
      404,
      'no such role assignment',
    )
    expectError(
      await http.get('/api/v1/admin/users', user.token),
      403,
      'permission denied: user:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
  })

  const invalid: [string, () => unknown, string | RegExp][] = [
    ['an unknown user', () => role(crypto.randomUUID(), 'member'), /^unknown user /],
    [
      'an unknown role',
      () => role(member.id, 'overlord'),
      /^unknown role "overlord"; expected one of sysadmin, member, repoadmin, editor, curator, viewer$/,
    ],
    ['an unknown repository', () => role(member.id, 'viewer', crypto.randomUUID()), /^unknown repository "/],
    [
      'a repository role in the system domain',
      () => role(member.id, 'viewer', 'system'),
      'role viewer applies to repository domains, not to the system domain',
    ],
    ['a missing field', () => ({ user_id: member.id, role: 'member' }), /^invalid body: domain: /],
    ['a wrong type', () => ({ user_id: member.id, role: 7, domain: 'system' }), /^invalid body: role: /],
    [
      'a user id that is not a UUID',
      () => role('nobody', 'member'),
      /^invalid body: user_id: expected a user id \(UUID\)/,
    ],
    ['an unknown field', () => ({ ...role(member.id, 'member'), expires: 'never' }), /^invalid body: expires: /],
  ]
  for (const [what, body, message] of invalid) {
    test(`PUT and DELETE roles with ${what}: 400`, async () => {
      expectError(await http.put('/api/v1/admin/users/roles', body(), admin.token), 400, message)
      expectError(
        await http.call('DELETE', '/api/v1/admin/users/roles', { body: body(), token: admin.token }),
        400,
        message,
      )
    })
  }
})

describe(`users and roles (${BACKEND})`, () => {
  test('user:read lets a sysadmin read another user; user:manage lets it update one', async () => {
    const user = await register()
    expectError(
      await http.get(`/api/v1/users/${user.id}`, member.token),
      403,
      'permission denied: user:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expect((await http.get(`/api/v1/users/${user.id}`, admin.token)).body.id).toBe(user.id)
    expectError(
      await http.put(`/api/v1/users/${user.id}`, { name: 'x' }, member.token),
      403,
      'permission denied: user:manage needs the sysadmin role on this server; a sysadmin can grant it',
    )
    const updated = await http.put(`/api/v1/users/${user.id}`, { name: 'Renamed' }, admin.token)
    expect(updated.status).toBe(200)
    expect(updated.body.name).toBe('Renamed')
    expectError(await http.get(`/api/v1/users/${crypto.randomUUID()}`, admin.token), 404, 'user not found')
  })
})
