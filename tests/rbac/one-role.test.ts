// One role per user and repository, whichever route gives it: PUT /api/v1/admin/users/roles (a
// sysadmin) and PUT /{repoID}/members (a repoadmin) both replace the role the user held there;
// system roles add up as before. The admin route names the user by id or e-mail, and the user
// list finds users by e-mail or name (?q=) and names each role's repository.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { expectError, uniqueEmail } from '../helpers/api.ts'
import { fixture, type Fixture } from '../helpers/fixture.ts'

let f: Fixture<'admin' | 'owner' | 'ada' | 'bob', 'papers'>
const roles = '/api/v1/admin/users/roles'

beforeAll(async () => {
  f = await fixture({
    users: { admin: 'sysadmin', owner: 'member', ada: 'member', bob: 'member' },
    repositories: { papers: { by: 'owner', name: 'Papers' } },
  })
})
afterAll(() => f.server.stop())

/** The user's roles as GET /admin/users lists them. */
async function rolesOf(email: string) {
  const found = await f.http.get(`/api/v1/admin/users?${new URLSearchParams({ q: email })}`, f.users.admin.token)
  expect(found.status).toBe(200)
  expect(found.body.map((u: { email: string }) => u.email)).toEqual([email])
  return found.body[0].roles as { role: string; domain: string; repository?: { name: string; slug: string } }[]
}
const inPapers = async (email: string) =>
  (await rolesOf(email)).filter((r) => r.domain === f.repositories.papers.id).map((r) => r.role)

describe(`one role per user and repository (${BACKEND})`, () => {
  test('the admin route replaces the role Members gave, and says the repository by name', async () => {
    const { ada, owner, admin } = f.users
    expect(
      (await f.http.put(`/${f.repositories.papers.slug}/members`, { email: ada.email, role: 'viewer' }, owner.token))
        .status,
    ).toBe(200)
    const assigned = await f.http.put(
      roles,
      { email: ada.email.toUpperCase(), role: 'editor', domain: f.repositories.papers.slug },
      admin.token,
    )
    expect(assigned.status).toBe(200)
    expect(assigned.body).toEqual({ user_id: ada.id, role: 'editor', domain: f.repositories.papers.id })
    expect(await inPapers(ada.email)).toEqual(['editor'])
    expect((await rolesOf(ada.email)).find((r) => r.role === 'editor')).toEqual({
      role: 'editor',
      domain: f.repositories.papers.id,
      repository: { name: 'Papers', slug: 'papers' },
    })
    expect((await rolesOf(ada.email)).find((r) => r.domain === 'system')).toEqual({ role: 'member', domain: 'system' })
    // Enforced at once: an editor writes, and no viewer role is left behind.
    expect((await f.http.get(`/${f.repositories.papers.slug}`, ada.token)).body.role).toBe('editor')
  })

  test('Members replaces the role the admin route gave', async () => {
    const { bob, owner, admin } = f.users
    expect(
      (await f.http.put(roles, { user_id: bob.id, role: 'curator', domain: f.repositories.papers.id }, admin.token))
        .status,
    ).toBe(200)
    expect(
      (await f.http.put(roles, { user_id: bob.id, role: 'editor', domain: f.repositories.papers.id }, admin.token))
        .status,
    ).toBe(200)
    expect(await inPapers(bob.email)).toEqual(['editor'])
    expect(
      (await f.http.put(`/${f.repositories.papers.slug}/members`, { email: bob.email, role: 'viewer' }, owner.token))
        .body.role,
    ).toBe('viewer')
    expect(await inPapers(bob.email)).toEqual(['viewer'])
    // Idempotent: the same role again changes nothing.
    expect(
      (await f.http.put(roles, { user_id: bob.id, role: 'viewer', domain: f.repositories.papers.id }, admin.token))
        .status,
    ).toBe(200)
    expect(await inPapers(bob.email)).toEqual(['viewer'])
  })

  test('the repository keeps a repoadmin: the admin route cannot demote the last one (409), as Members cannot', async () => {
    const { owner, admin } = f.users
    expectError(
      await f.http.put(roles, { user_id: owner.id, role: 'viewer', domain: f.repositories.papers.id }, admin.token),
      409,
      /^a repository keeps at least one repoadmin/,
    )
    expect(await inPapers(owner.email)).toEqual(['repoadmin'])
  })

  test('system roles add up: sysadmin given to a member keeps member', async () => {
    const { bob, admin } = f.users
    expect(
      (await f.http.put(roles, { email: bob.email, role: 'sysadmin', domain: 'system' }, admin.token)).status,
    ).toBe(200)
    expect(
      (await rolesOf(bob.email))
        .filter((r) => r.domain === 'system')
        .map((r) => r.role)
        .sort(),
    ).toEqual(['member', 'sysadmin'])
    const removed = await f.http.call('DELETE', roles, {
      token: admin.token,
      body: { email: bob.email, role: 'sysadmin', domain: 'system' },
    })
    expect(removed.body).toEqual({ user_id: bob.id, role: 'sysadmin', domain: 'system' })
  })

  test('the user by exactly one of user_id and email; an unknown e-mail is 400', async () => {
    const { ada, admin } = f.users
    const domain = f.repositories.papers.id
    expectError(
      await f.http.put(roles, { role: 'viewer', domain }, admin.token),
      400,
      'invalid body: name the user by exactly one of user_id and email',
    )
    expectError(
      await f.http.put(roles, { user_id: ada.id, email: ada.email, role: 'viewer', domain }, admin.token),
      400,
      'invalid body: name the user by exactly one of user_id and email',
    )
    const nobody = uniqueEmail('nobody')
    expectError(
      await f.http.put(roles, { email: nobody, role: 'viewer', domain }, admin.token),
      400,
      `unknown user ${nobody}: no account has this e-mail address`,
    )
    expectError(
      await f.http.put(roles, { email: 'not an address', role: 'viewer', domain }, admin.token),
      400,
      'invalid body: email: expected an e-mail address',
    )
    expect(await inPapers(ada.email)).toEqual(['editor'])
  })
})

describe(`GET /admin/users?q= (${BACKEND})`, () => {
  test('finds users by a part of their e-mail or name, in any case; LIKE wildcards are literal', async () => {
    const { admin, ada } = f.users
    const find = async (q: string) =>
      (await f.http.get(`/api/v1/admin/users?${new URLSearchParams({ q })}`, admin.token)).body.map(
        (u: { email: string }) => u.email,
      )
    const local = ada.email.split('@')[0]!
    expect(await find(local.toUpperCase())).toEqual([ada.email])
    expect(await find('@EXAMPLE.com')).toHaveLength(4)
    expect(await find('%')).toEqual([])
    expect(await find('_')).toEqual([])
    expect((await f.http.put(`/api/v1/users/${ada.id}`, { name: 'Ada Lovelace' }, ada.token)).status).toBe(200)
    expect(await find('lovelace')).toEqual([ada.email])
    // Blank: everyone.
    expect(await find('  ')).toHaveLength(4)
    expectError(await f.http.get(`/api/v1/admin/users?q=${'a'.repeat(255)}`, admin.token), 400, /^invalid query: q: /)
  })

  test('a search is paginated, its next page keeping the search', async () => {
    const first = await f.http.get('/api/v1/admin/users?q=example.com&limit=3', f.users.admin.token)
    expect(first.body).toHaveLength(3)
    const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1]
    expect(next).toBeDefined()
    expect(new URL(next!, f.server.url).searchParams.get('q')).toBe('example.com')
    const second = await f.http.get(
      new URL(next!, f.server.url).pathname + new URL(next!, f.server.url).search,
      f.users.admin.token,
    )
    expect(second.body).toHaveLength(1)
    expect(new Set([...first.body, ...second.body].map((u: { id: string }) => u.id)).size).toBe(4)
  })
})
