// Repositories, repository scoping and repository roles over HTTP, on the selected backend.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { type api, expectError, registerAccount, type Account } from '../helpers/api.ts'
import { slugify } from '../../src/repositories/repositories.ts'
import { repositoryDatabaseName } from '../../src/db/pools.ts'
import { repositoryBlobPrefix } from '../../src/blobs/store.ts'

interface Repo {
  id: string
  slug: string
  name: string
  description: string
}

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let owner: Account
let viewer: Account
let stranger: Account
let a: Repo
let b: Repo

const register = () => registerAccount(http)

async function createRepository(account: Account, body: Record<string, unknown>): Promise<Repo> {
  const res = await http.post('/api/v1/repositories', body, account.token)
  expect(res.status).toBe(201)
  return res.body
}

const withHeader = (token: string, repository: string) => ({ token, headers: { 'x-repository-id': repository } })

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, owner, viewer, stranger },
  } = await fixture({ users: { admin: 'sysadmin', owner: 'member', viewer: 'member', stranger: 'member' } }))
  a = await createRepository(owner, {
    name: 'Papers A',
    slug: `papers-a-${crypto.randomUUID().slice(0, 6)}`,
    description: 'first',
  })
  b = await createRepository(owner, { name: 'Papers B' })
  expect(
    (await http.put('/api/v1/admin/users/roles', { user_id: viewer.id, role: 'viewer', domain: a.slug }, admin.token))
      .body,
  ).toEqual({ user_id: viewer.id, role: 'viewer', domain: a.id })
})
afterAll(() => server.stop())

describe(`repositories (${BACKEND})`, () => {
  test('create: 201 with the resource; slug derived from the name when absent; the creator is repoadmin', async () => {
    expect(b as unknown).toEqual({
      id: expect.any(String),
      name: 'Papers B',
      slug: expect.stringMatching(/^papers-b/),
      description: '',
      owner_id: owner.id,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      role: 'repoadmin',
      counts: { sources: 0, facts: 0, concepts: 0, reports: 0, investigations: 0 },
    })
    const permissions = await http.get('/api/v1/permissions', owner.token)
    expect(permissions.body).not.toHaveProperty('repository')
    const inB = permissions.body.permissions
      .filter((p: { domain: string }) => p.domain === b.id)
      .map((p: { resource: string; action: string }) => `${p.resource}:${p.action}`)
    expect(inB).toContain('repository:delete')
    expect(inB).toContain('member:manage')
  })

  test('each repository gets its own migrated database', async () => {
    if (BACKEND === 'embedded') {
      expect(existsSync(join(server.dataDir, 'pg', repositoryDatabaseName('repo', a.id)))).toBe(true)
    } else {
      const sql = server.systemSql()
      const name = repositoryDatabaseName(new URL(server.env.DATABASE_URL!).pathname.slice(1), a.id)
      expect(await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`).toHaveLength(1)
      await sql.end()
    }
  })

  test('slug rules: duplicate 409; reserved, UUID-shaped, malformed 400', async () => {
    expectError(
      await http.post('/api/v1/repositories', { name: 'x', slug: a.slug }, owner.token),
      409,
      'slug already taken',
    )
    for (const [slug, message] of [
      ['api', '"api" is reserved'],
      ['app', '"app" is reserved'],
      ['healthz', '"healthz" is reserved'],
      [crypto.randomUUID(), 'a slug must not look like a UUID'],
      ['Upper', 'expected 2–63 characters of a-z, 0-9 and inner hyphens'],
      ['-lead', 'expected 2–63 characters of a-z, 0-9 and inner hyphens'],
      ['a', 'expected 2–63 characters of a-z, 0-9 and inner hyphens'],
    ]) {
      expectError(
        await http.post('/api/v1/repositories', { name: 'x', slug }, owner.token),
        400,
        `invalid body: slug: ${message}`,
      )
    }
    expect(slugify('My Papers (2026)')).toBe('my-papers-2026')
    expect(slugify('API')).toBe('api-repo')
    expect(slugify('é')).toMatch(/^repo-/)
  })

  test('create: malformed bodies 400; no token 401', async () => {
    expectError(await http.post('/api/v1/repositories', {}, owner.token), 400, /^invalid body: name: /)
    expectError(await http.post('/api/v1/repositories', { name: 5 }, owner.token), 400, /^invalid body: name: /)
    expectError(
      await http.post('/api/v1/repositories', { name: '   ' }, owner.token),
      400,
      'invalid body: name: expected a non-empty name',
    )
    expectError(
      await http.post('/api/v1/repositories', { name: 'x', owner: 'me' }, owner.token),
      400,
      /^invalid body: owner: /,
    )
    expectError(await http.post('/api/v1/repositories', { name: 'x' }), 401)
  })

  test('list: the repositories one holds a role in; all for a sysadmin', async () => {
    const ids = async (account: Account) =>
      (await http.get('/api/v1/repositories?limit=500', account.token)).body.map((r: Repo) => r.id)
    expect(await ids(owner)).toEqual(expect.arrayContaining([a.id, b.id]))
    expect(await ids(viewer)).toEqual([a.id])
    expect(await ids(stranger)).toEqual([])
    expect(await ids(admin)).toEqual(expect.arrayContaining([a.id, b.id]))
  })

  test('addressing by UUID and by slug, in the path and in the header', async () => {
    for (const key of [a.id, a.slug, a.id.toUpperCase()]) {
      expect((await http.get(`/api/v1/repositories/${key}`, viewer.token)).body.id).toBe(a.id)
      expect((await http.get(`/${key}`, viewer.token)).body.id).toBe(a.id)
      expect((await http.call('GET', '/api/v1/repository', withHeader(viewer.token, key))).body.id).toBe(a.id)
    }
    // Path and header may both be given when they agree.
    expect((await http.call('GET', `/${a.slug}`, withHeader(viewer.token, a.id))).status).toBe(200)
  })

  test('path and header naming different repositories: 400; neither: 400', async () => {
    expectError(
      await http.call('GET', `/${a.slug}`, withHeader(owner.token, b.slug)),
      400,
      'the path and X-Repository-ID name different repositories',
    )
    expectError(
      await http.call('GET', '/api/v1/repository', { token: owner.token }),
      400,
      'no repository named: put it in the path or the X-Repository-ID header',
    )
  })

  test('a repository one has no role in is a 404, exactly like one that does not exist', async () => {
    const missing = await http.get(`/${crypto.randomUUID()}`, viewer.token)
    const hidden = await http.get(`/${b.slug}`, viewer.token)
    expectError(missing, 404, 'repository not found')
    expectError(hidden, 404, 'repository not found')
    expectError(
      await http.call('GET', '/api/v1/repository', withHeader(viewer.token, b.id)),
      404,
      'repository not found',
    )
    expectError(await http.get(`/api/v1/repositories/${b.id}`, stranger.token), 404)
    // Naming a hidden repository beside a visible one answers as naming a missing one, either way round.
    for (const other of [b.slug, crypto.randomUUID()]) {
      expectError(await http.call('GET', `/${a.slug}`, withHeader(viewer.token, other)), 404, 'repository not found')
      expectError(await http.call('GET', `/${other}`, withHeader(viewer.token, a.slug)), 404, 'repository not found')
    }
  })

  test('401 before anything else', async () => {
    expectError(await http.get(`/${a.slug}`), 401, 'authentication required')
    expectError(await http.get(`/${crypto.randomUUID()}`), 401)
  })

  test('a viewer reads but may not update or delete (403); a role in A grants nothing in B or the system', async () => {
    expectError(
      await http.put(`/api/v1/repositories/${a.slug}`, { name: 'Renamed' }, viewer.token),
      403,
      'permission denied: repository:update needs the editor or repoadmin role in this repository; a repoadmin of it can grant it',
    )
    expectError(
      await http.call('DELETE', `/api/v1/repositories/${a.slug}`, { token: viewer.token }),
      403,
      'permission denied: repository:delete needs the repoadmin role in this repository; a repoadmin of it can grant it',
    )
    // Sending A in the header does not widen anything on system routes.
    expectError(
      await http.call('GET', '/api/v1/admin/users', withHeader(viewer.token, a.id)),
      403,
      'permission denied: user:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(
      await http.call('PUT', '/api/v1/admin/users/roles', {
        ...withHeader(viewer.token, a.id),
        body: { user_id: viewer.id, role: 'repoadmin', domain: a.id },
      }),
      403,
    )
    const permissions = await http.call('GET', '/api/v1/permissions', withHeader(viewer.token, a.id))
    // Which repository the header named, by slug or id: the app's frame shows its name from this answer.
    expect(permissions.body.repository).toEqual({ id: a.id, name: a.name, slug: a.slug })
    expect((await http.call('GET', '/api/v1/permissions', withHeader(viewer.token, a.slug))).body.repository.id).toBe(
      a.id,
    )
    expect(new Set(permissions.body.permissions.map((p: { domain: string }) => p.domain))).toEqual(
      new Set(['system', a.id]),
    )
    expect(
      permissions.body.permissions
        .filter((p: { domain: string; action: string }) => p.domain === a.id)
        .every((p: { action: string }) => p.action === 'read'),
    ).toBe(true)
    expectError(
      await http.call('GET', '/api/v1/permissions', withHeader(viewer.token, b.id)),
      404,
      'repository not found',
    )
  })

  test('update: name, slug and description; slug rules apply; the old slug stops resolving', async () => {
    const repo = await createRepository(owner, { name: 'To rename' })
    const slug = `renamed-${crypto.randomUUID().slice(0, 6)}`
    const res = await http.put(
      `/api/v1/repositories/${repo.slug}`,
      { name: 'Renamed', slug, description: 'now described' },
      owner.token,
    )
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: repo.id, name: 'Renamed', slug, description: 'now described' })
    expect((await http.get(`/${slug}`, owner.token)).body.id).toBe(repo.id)
    expectError(await http.get(`/${repo.slug}`, owner.token), 404)
    expectError(
      await http.put(`/api/v1/repositories/${slug}`, { slug: a.slug }, owner.token),
      409,
      'slug already taken',
    )
    expectError(
      await http.put(`/api/v1/repositories/${slug}`, { slug: 'swagger' }, owner.token),
      400,
      'invalid body: slug: "swagger" is reserved',
    )
    expectError(await http.put(`/api/v1/repositories/${slug}`, { name: 1 }, owner.token), 400, /^invalid body: name: /)
  })

  test('delete: 200 with the repository; its database, vectors, blobs, roles and addresses are gone', async () => {
    const repo = await createRepository(owner, { name: 'Doomed' })
    const keep = await createRepository(owner, { name: 'Kept' })
    expect(
      (
        await http.put(
          '/api/v1/admin/users/roles',
          { user_id: viewer.id, role: 'viewer', domain: repo.id },
          admin.token,
        )
      ).status,
    ).toBe(200)
    const { vectors, blobs } = server.context
    for (const id of [repo.id, keep.id]) {
      await vectors.upsert(id, 'facts', [{ id: crypto.randomUUID(), vector: new Float32Array([1, 0]) }])
      await blobs.put(`${repositoryBlobPrefix(id)}images/0`, 'png')
    }
    const res = await http.call('DELETE', `/api/v1/repositories/${repo.slug}`, {
      token: owner.token,
      body: { confirm: repo.slug },
    })
    expect(res.status).toBe(200)
    expect(res.body.id).toBe(repo.id)
    expectError(await http.get(`/${repo.id}`, owner.token), 404)
    const domains = (await http.get('/api/v1/permissions', viewer.token)).body.permissions.map(
      (p: { domain: string }) => p.domain,
    )
    expect(domains).not.toContain(repo.id)
    if (BACKEND === 'embedded')
      expect(existsSync(join(server.dataDir, 'pg', repositoryDatabaseName('repo', repo.id)))).toBe(false)
    expect(await vectors.count(repo.id, 'facts')).toBe(0)
    expect(await blobs.stat(`${repositoryBlobPrefix(repo.id)}images/0`)).toBeUndefined()
    expect(await vectors.count(keep.id, 'facts')).toBe(1)
    expect(await blobs.stat(`${repositoryBlobPrefix(keep.id)}images/0`)).toEqual({ bytes: 3 })
  })

  test('repository roles through the admin API: slug or UUID, stored as the UUID; a system role there is 400', async () => {
    const user = await register()
    expect(
      (await http.put('/api/v1/admin/users/roles', { user_id: user.id, role: 'editor', domain: b.slug }, admin.token))
        .body.domain,
    ).toBe(b.id)
    expect((await http.get(`/${b.slug}`, user.token)).status).toBe(200)
    expectError(
      await http.put('/api/v1/admin/users/roles', { user_id: user.id, role: 'sysadmin', domain: b.slug }, admin.token),
      400,
      'role sysadmin applies to system domains, not to a repository',
    )
    expect(
      (
        await http.call('DELETE', '/api/v1/admin/users/roles', {
          body: { user_id: user.id, role: 'editor', domain: b.id },
          token: admin.token,
        })
      ).status,
    ).toBe(200)
    expectError(await http.get(`/${b.slug}`, user.token), 404)
  })
})
