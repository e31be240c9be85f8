// The set-up most HTTP tests share: a server, users with their roles, repositories with roles in
// them, all made through the API the way a deployment makes them (a sysadmin is promoted with
// `kgs promote-sysadmin`, as an operator does).
//
//   const { server, http, users, repositories } = await fixture({
//     users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
//     repositories: { docs: { by: 'owner', roles: { viewer: 'viewer' } } },
//   })
import { expect } from 'bun:test'
import type { Role } from '../../src/permissions.ts'
import type { Repository } from '../../src/repositories/schemas.ts'
import { api, registerAccount, type Account } from './api.ts'
import { startTestServer, type TestServer } from './server.ts'

interface RepositorySpec<U extends string> {
  /** The user who creates it (and so holds repoadmin in it). */
  by: U
  /** Its name; the fixture's key when absent. */
  name?: string
  /** Roles other users hold in it, granted by the first sysadmin. */
  roles?: Partial<Record<U, Role>>
}

export interface FixtureOptions<U extends string, R extends string> {
  server?: Parameters<typeof startTestServer>[0]
  /** Every user registers (and so is a member); a sysadmin is then promoted. */
  users: Record<U, 'member' | 'sysadmin'>
  /** Created one after the other, in the order given. */
  repositories?: Record<R, RepositorySpec<NoInfer<U>>>
}

export interface Fixture<U extends string, R extends string> {
  server: TestServer
  http: ReturnType<typeof api>
  users: Record<U, Account>
  repositories: Record<R, Repository>
}

export async function fixture<U extends string, R extends string = never>(
  options: FixtureOptions<U, R>,
): Promise<Fixture<U, R>> {
  const server = await startTestServer(options.server)
  const http = api(server.url)
  const names = Object.keys(options.users) as U[]
  const accounts = await Promise.all(names.map(() => registerAccount(http)))
  const users = Object.fromEntries(names.map((name, i) => [name, accounts[i]])) as Record<U, Account>
  for (const name of names)
    if (options.users[name] === 'sysadmin') expect((await server.promote(users[name].email)).code).toBe(0)
  const admin = names.find((name) => options.users[name] === 'sysadmin')
  const repositories = {} as Record<R, Repository>
  const specs = Object.entries(options.repositories ?? {}) as [R, RepositorySpec<U>][]
  for (const [key, spec] of specs) {
    const res = await http.post('/api/v1/repositories', { name: spec.name ?? key }, users[spec.by].token)
    expect(res.status).toBe(201)
    repositories[key] = res.body
  }
  for (const [key, spec] of specs) {
    for (const [user, role] of Object.entries(spec.roles ?? {}) as [U, Role][]) {
      if (!admin) throw new Error('fixture: granting a role in a repository needs a sysadmin among the users')
      const res = await http.put(
        '/api/v1/admin/users/roles',
        { user_id: users[user].id, role, domain: repositories[key].id },
        users[admin].token,
      )
      expect(res.status).toBe(200)
    }
  }
  return { server, http, users, repositories }
}
