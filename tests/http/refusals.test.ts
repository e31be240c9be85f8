// A refusal says what would let the person through and whom to ask: the roles that carry the
// permission (from the role table the server enforces) and who grants them, in the same words
// over REST and MCP; a token's scope refusal says which scope to ask for.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, registerAccount, type Account } from '../helpers/api.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let repository: { id: string; slug: string }
/** The server's role table, as a sysadmin reads it: role → its domain kind and permissions. */
let table: { role: string; domain_kind: string; permissions: string[] }[]

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
  owner = await registerAccount(http)
  repository = (await http.post('/api/v1/repositories', { name: 'Refusals' }, owner.token)).body
  const admin = await registerAccount(http)
  await server.context.rbac.assign({ user_id: admin.id, role: 'sysadmin', domain: 'system' })
  table = (await http.get('/api/v1/admin/permissions', admin.token)).body
})
afterAll(() => server.stop())

/** "a", "a or b", "a, b or c", from the server's table: the roles of `kind` carrying `permission`, fewest permissions first. */
function rolesCarrying(permission: string, kind: 'repository' | 'system'): string {
  const roles = table
    .filter((r) => r.domain_kind === kind && r.permissions.includes(permission))
    .sort((a, b) => a.permissions.length - b.permissions.length)
  const names = roles.map((r) => r.role)
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`
}

async function member(role: string): Promise<Account> {
  const account = await registerAccount(http)
  expect((await http.put(`/${repository.slug}/members`, { email: account.email, role }, owner.token)).status).toBe(200)
  return account
}

describe(`refusals name the role needed and who grants it (${BACKEND})`, () => {
  test('the table the sentences come from is the one the roles carry', () => {
    expect(rolesCarrying('fact:write', 'repository')).toBe('editor or repoadmin')
    expect(rolesCarrying('concept:write', 'repository')).toBe('curator, editor or repoadmin')
    expect(rolesCarrying('member:manage', 'repository')).toBe('repoadmin')
    expect(rolesCarrying('registry:pull', 'system')).toBe('member or sysadmin')
  })

  test('REST: a repository permission names its roles and a repoadmin of it; the leading words stay', async () => {
    const viewer = await member('viewer')
    const curator = await member('curator')
    const refusals: [string, Promise<{ status: number; body: unknown }>][] = [
      ['fact:write', http.post(`/${repository.slug}/facts`, { text: 'A viewer tries.' }, viewer.token)],
      ['concept:write', http.post(`/${repository.slug}/concepts`, { canonical_name: 'Tried' }, viewer.token)],
      ['graph:export', http.post(`/${repository.slug}/export-graph`, {}, viewer.token)],
      ['fact:write', http.post(`/${repository.slug}/facts`, { text: 'A curator tries.' }, curator.token)],
      ['graph:import', http.post(`/${repository.slug}/import-graph`, { graph_id: crypto.randomUUID() }, curator.token)],
      [
        'member:manage',
        http.put(`/${repository.slug}/members`, { email: viewer.email, role: 'editor' }, curator.token),
      ],
      ['repository:delete', http.call('DELETE', `/api/v1/repositories/${repository.slug}`, { token: curator.token })],
    ]
    for (const [permission, refused] of refusals) {
      const sentence = `permission denied: ${permission} needs the ${rolesCarrying(permission, 'repository')} role in this repository; a repoadmin of it can grant it`
      expectError(await refused, 403, sentence)
    }
    expect(((await http.get(`/${repository.slug}/facts`, owner.token)).body as unknown[]).length).toBe(0)
  })

  test('REST: a system permission names its roles and a sysadmin', async () => {
    const roleless = await registerAccount(http)
    await server.context.rbac.remove({ user_id: roleless.id, role: 'member', domain: 'system' })
    expectError(
      await http.get('/api/v1/admin/users', owner.token),
      403,
      `permission denied: user:read needs the ${rolesCarrying('user:read', 'system')} role on this server; a sysadmin can grant it`,
    )
    expectError(
      await http.get('/api/v1/graphs', roleless.token),
      403,
      'permission denied: registry:pull needs the member or sysadmin role on this server; a sysadmin can grant it',
    )
  })

  test('MCP: the same words, naming the repository; a system tool names a sysadmin', async () => {
    const viewer = await member('viewer')
    const client = await conversation(`${server.url}/api/v1/mcp`, viewer.token)
    try {
      const write = await call(client, 'create_fact', { repository: repository.slug, text: 'A viewer tries.' })
      expect(write).toMatchObject({
        isError: true,
        content: [
          {
            text: `permission denied: fact:write needs the editor or repoadmin role in repository ${repository.slug}; a repoadmin of it can grant it`,
          },
        ],
      })
      const rest = await http.post(`/${repository.slug}/facts`, { text: 'A viewer tries.' }, viewer.token)
      expect(write.content[0]!.text).toBe(
        (rest.body as { error: string }).error.replace('this repository', `repository ${repository.slug}`),
      )
    } finally {
      await client.close()
    }
    const roleless = await registerAccount(http)
    await server.context.rbac.remove({ user_id: roleless.id, role: 'member', domain: 'system' })
    const stranger = await conversation(`${server.url}/api/v1/mcp`, roleless.token)
    try {
      expect(await call(stranger, 'browse_registry', {})).toMatchObject({
        isError: true,
        content: [
          {
            text: 'permission denied: registry:pull needs the member or sysadmin role on this server; a sysadmin can grant it',
          },
        ],
      })
    } finally {
      await stranger.close()
    }
  })

  test('a token whose scope lacks write says which scope to ask for, over REST and MCP', async () => {
    const client = await registerClient(server.url, { scope: 'read write' })
    const { access_token } = await obtainTokens(
      server.url,
      client,
      { email: owner.email, password: 'correct horse battery' },
      'read',
    )
    const refused = await http.post(`/${repository.slug}/facts`, { text: 'A read token tries.' }, access_token)
    expectError(
      refused,
      403,
      'insufficient scope: fact:write needs a token with the write scope (this one has read); authorize again with write',
    )
    expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="write"')
    const mcp = await conversation(`${server.url}/api/v1/mcp`, access_token)
    try {
      expect(
        await call(mcp, 'create_fact', { repository: repository.slug, text: 'A read token tries.' }),
      ).toMatchObject({
        isError: true,
        content: [{ text: (refused.body as { error: string }).error }],
      })
    } finally {
      await mcp.close()
    }
  })
})
