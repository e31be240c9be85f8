// Several kgs processes on one PostgreSQL: a logout on one instance is enforced by the others
// within a second (LISTEN/NOTIFY), with no database round trip in their bearer check.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { BACKEND, instanceEnvironment } from '../helpers/backend.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'

describe.if(BACKEND === 'postgres')('fleet (postgres)', () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let a: ServerProcess
  let b: ServerProcess
  beforeAll(async () => {
    instance = await instanceEnvironment()
    // A fleet shares its public URL (the token issuer) and its signing secret.
    const env = { ...instance.env, JWT_SECRET: randomBytes(32).toString('hex'), BASE_URL: 'https://kgs.fleet.test' }
    ;[a, b] = await Promise.all([
      startServerProcess(env),
      startServerProcess({ ...env, DATA_DIR: `${instance.dataDir}/b` }),
    ])
  })
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await instance.cleanup()
  })

  test('a session started on A works on B; logout on A is refused on B within 1 s', async () => {
    const registered = await api(a.url).post('/api/v1/auth/register', {
      email: uniqueEmail(),
      password: 'correct horse battery',
    })
    const token = registered.body.token as string
    expect((await api(b.url).get('/api/v1/users/me', token)).status).toBe(200)

    expect((await api(a.url).post('/api/v1/auth/logout', undefined, token)).status).toBe(200)
    const loggedOutAt = performance.now()
    let status = 200
    while (status === 200 && performance.now() - loggedOutAt < 1000)
      status = (await api(b.url).get('/api/v1/users/me', token)).status
    const elapsed = performance.now() - loggedOutAt
    expect(status).toBe(401)
    expect(elapsed).toBeLessThan(1000)
  })

  test('a profile change on A is what B serves within 1 s (its profile cache is evicted)', async () => {
    const registered = await api(a.url).post('/api/v1/auth/register', {
      email: uniqueEmail(),
      password: 'correct horse battery',
      name: 'Before',
    })
    const { token, user } = registered.body as { token: string; user: { id: string } }
    expect((await api(b.url).get('/api/v1/users/me', token)).body.name).toBe('Before')
    expect((await api(a.url).put(`/api/v1/users/${user.id}`, { name: 'After' }, token)).status).toBe(200)
    const started = performance.now()
    let name = 'Before'
    while (name === 'Before' && performance.now() - started < 1000)
      name = (await api(b.url).get('/api/v1/users/me', token)).body.name
    expect(name).toBe('After')
  })

  test('refresh-token reuse detected on B revokes the session on A too', async () => {
    const registered = await api(a.url).post('/api/v1/auth/register', {
      email: uniqueEmail(),
      password: 'correct horse battery',
    })
    const { token, refresh_token } = registered.body as { token: string; refresh_token: string }
    expect((await api(b.url).post('/api/v1/auth/refresh', { refresh_token })).status).toBe(200)
    expect((await api(b.url).post('/api/v1/auth/refresh', { refresh_token })).status).toBe(401)
    const started = performance.now()
    let status = 200
    while (status === 200 && performance.now() - started < 1000)
      status = (await api(a.url).get('/api/v1/users/me', token)).status
    expect(status).toBe(401)
  })
})
