// `kgs promote-sysadmin` as an operator runs it: against a running server and a stopped one.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { runKgs, startServerProcess, type ServerProcess } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'

/** Polls until `check` is true or a second has passed; returns whether it became true. */
async function within1s(check: () => Promise<boolean>): Promise<boolean> {
  const started = performance.now()
  while (performance.now() - started < 1000) if (await check()) return true
  return check()
}

describe(`promote-sysadmin (${BACKEND})`, () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let env: Record<string, string>
  let server: ServerProcess
  beforeAll(async () => {
    instance = await instanceEnvironment()
    // Tokens must survive the restart below: same secret, same issuer.
    env = { ...instance.env, JWT_SECRET: randomBytes(32).toString('hex'), BASE_URL: 'https://kgs.test' }
    server = await startServerProcess(env)
  })
  afterAll(async () => {
    await server.stop()
    await instance.cleanup()
  })

  const register = async (url: string) => {
    const res = await api(url).post('/api/v1/auth/register', {
      email: uniqueEmail('op'),
      password: 'correct horse battery',
    })
    return { email: res.body.user.email as string, token: res.body.token as string }
  }

  test('usage errors exit 2', async () => {
    expect((await runKgs(['promote-sysadmin'], env)).code).toBe(2)
    expect((await runKgs(['promote-sysadmin', 'a@example.com', 'b@example.com'], env)).code).toBe(2)
  })

  test('while the server runs: unknown e-mail exits 1; the first run promotes, the second changes nothing; no restart needed', async () => {
    const unknown = await runKgs(['promote-sysadmin', 'nobody@example.com'], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toBe('kgs promote-sysadmin: no account with e-mail nobody@example.com\n')

    const user = await register(server.url)
    expect((await api(server.url).get('/api/v1/admin/permissions', user.token)).status).toBe(403)
    const first = await runKgs(['promote-sysadmin', user.email], env)
    expect(first).toMatchObject({ code: 0, stdout: `${user.email} is now sysadmin\n` })
    const second = await runKgs(['promote-sysadmin', user.email.toUpperCase()], env)
    expect(second).toMatchObject({
      code: 0,
      stdout: `${user.email.toUpperCase()} is already sysadmin; nothing changed\n`,
    })
    // role:manage, enforced by the running server without a restart
    expect(
      await within1s(
        async () =>
          (
            await api(server.url).put(
              '/api/v1/admin/users/roles',
              { user_id: crypto.randomUUID(), role: 'member', domain: 'system' },
              user.token,
            )
          ).status === 400,
      ),
    ).toBe(true)
  })

  test('while the server is stopped: promotes, and the restarted server enforces it', async () => {
    const user = await register(server.url)
    expect(await server.stop()).toBe(0)
    const promoted = await runKgs(['promote-sysadmin', user.email], env)
    expect(promoted).toMatchObject({ code: 0, stdout: `${user.email} is now sysadmin\n` })
    server = await startServerProcess(env)
    expect((await api(server.url).get('/api/v1/admin/permissions', user.token)).status).toBe(200)
  })
})

describe.if(BACKEND === 'postgres')('roles across instances (postgres)', () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let a: ServerProcess
  let b: ServerProcess
  let env: Record<string, string>
  beforeAll(async () => {
    instance = await instanceEnvironment()
    env = { ...instance.env, JWT_SECRET: randomBytes(32).toString('hex'), BASE_URL: 'https://kgs.fleet.test' }
    ;[a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)])
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await instance.cleanup()
  })

  test('a role granted through A is enforced by B within 1 s, and its removal too', async () => {
    const adminEmail = uniqueEmail('admin')
    const adminToken = (
      await api(a.url).post('/api/v1/auth/register', { email: adminEmail, password: 'correct horse battery' })
    ).body.token
    expect((await runKgs(['promote-sysadmin', adminEmail], env)).code).toBe(0)
    const user = (
      await api(a.url).post('/api/v1/auth/register', { email: uniqueEmail(), password: 'correct horse battery' })
    ).body
    const canRead = async () => (await api(b.url).get('/api/v1/admin/users', user.token)).status === 200
    expect(await canRead()).toBe(false)

    // The CLI's promotion reached A without a restart; A grants through its API.
    expect(
      await within1s(
        async () =>
          (
            await api(a.url).put(
              '/api/v1/admin/users/roles',
              { user_id: user.user.id, role: 'sysadmin', domain: 'system' },
              adminToken,
            )
          ).status === 200,
      ),
    ).toBe(true)
    expect(await within1s(canRead)).toBe(true)

    expect(
      (
        await api(b.url).call('DELETE', '/api/v1/admin/users/roles', {
          body: { user_id: user.user.id, role: 'sysadmin', domain: 'system' },
          token: adminToken,
        })
      ).status,
    ).toBe(200)
    expect(await within1s(async () => (await api(a.url).get('/api/v1/admin/users', user.token)).status === 403)).toBe(
      true,
    )
  })
})
