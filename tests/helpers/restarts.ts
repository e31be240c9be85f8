// Tests of what a process leaves to the next one on the same data (a crash between a commit and
// what was to follow it): the first process, which sets the state up, and the processes after it.
import { expect } from 'bun:test'
import { api, registerAccount, signIn, type Account } from './api.ts'
import { startTestServer, type Instance, type TestServer } from './server.ts'

/** A server on `instance`'s data with an account registered there and a repository it owns. */
export async function firstProcess(instance: Instance): Promise<{
  server: TestServer
  http: ReturnType<typeof api>
  owner: Account
  repository: { id: string; slug: string }
}> {
  const server = await startTestServer({ instance })
  const http = api(server.url)
  const owner = await registerAccount(http)
  const created = await http.post('/api/v1/repositories', { name: 'Crashed' }, owner.token)
  expect(created.status).toBe(201)
  return { server, http, owner, repository: { id: created.body.id, slug: created.body.slug } }
}

/** A server on `instance`'s data, with `owner` signed in there; stopped after `use`. */
export async function restarted<T>(
  instance: Instance,
  owner: Account,
  env: Record<string, string>,
  use: (server: TestServer, http: ReturnType<typeof api>, token: string) => Promise<T>,
): Promise<T> {
  const server = await startTestServer({ instance, env })
  try {
    const http = api(server.url)
    return await use(server, http, await signIn(http, owner))
  } finally {
    await server.stop()
  }
}
