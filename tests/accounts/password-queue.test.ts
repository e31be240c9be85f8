// PASSWORD_QUEUE_MAX over HTTP, on the selected backend: with the hashing queue full, sign-ins
// and registrations are refused at once with 503 and Retry-After (the OAuth sign-in form with
// its page again), nothing is created, and once the queue drains they work. The queue is filled
// from this process: the server runs in it, and hashing threads are per process.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { browserCookie, registerClient, authorizationQuery } from '../helpers/oauth.ts'
import { HASHER_THREADS, limitWaitingHashes, verifyPassword } from '../../src/accounts/passwords.ts'

const PASSWORD = 'correct horse battery'
const BUSY = 'too many sign-ins in progress; try again shortly'
let server: TestServer
let http: ReturnType<typeof api>
/**
 * A hash whose verification takes about five times as long as a default one (4 MiB, t=150), so
 * that the queue stays full while a request makes its way to the hashing.
 */
let slowHash: string

beforeAll(async () => {
  server = await startTestServer({ env: { PASSWORD_QUEUE_MAX: '1' } })
  http = api(server.url)
  slowHash = await Bun.password.hash('held', { algorithm: 'argon2id', memoryCost: 4096, timeCost: 150 })
})
afterAll(async () => {
  await server.stop()
  limitWaitingHashes(undefined)
})

/** Runs `during` while every hashing thread is busy and the one place in the queue is taken. */
async function withFullQueue<T>(during: () => Promise<T>): Promise<T> {
  const held = Array.from({ length: HASHER_THREADS + 1 }, () =>
    verifyPassword('held', slowHash, server.context.config.passwordCost),
  )
  try {
    return await during()
  } finally {
    await Promise.all(held)
  }
}

describe(`a full password-hashing queue (${BACKEND})`, () => {
  test('login and register: 503 with Retry-After, no account made; both work once it drains', async () => {
    const email = uniqueEmail()
    expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
    const newcomer = uniqueEmail()
    const [login, registration] = await withFullQueue(() =>
      Promise.all([
        http.post('/api/v1/auth/login', { email, password: PASSWORD }),
        http.post('/api/v1/auth/register', { email: newcomer, password: PASSWORD }),
      ]),
    )
    for (const res of [login, registration]) {
      expectError(res, 503, BUSY)
      expect(res.headers.get('retry-after')).toBe('5')
    }
    expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(200)
    // The refused registration left nothing behind: the address is still free.
    expectError(await http.post('/api/v1/auth/login', { email: newcomer, password: PASSWORD }), 401)
    expect((await http.post('/api/v1/auth/register', { email: newcomer, password: PASSWORD })).status).toBe(201)
  })

  test('the OAuth sign-in form: its page again, 503 with Retry-After and no cookie', async () => {
    const email = uniqueEmail()
    expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
    const client = await registerClient(server.url)
    const query = authorizationQuery(client, { state: 's' })
    const browser = browserCookie()
    const page = await (
      await server.request(`/api/v1/oauth/authorize?${query}`, { headers: { cookie: browser } })
    ).text()
    const fields = {
      authorization_id: /name="authorization_id" value="([^"]+)"/.exec(page)![1]!,
      csrf_token: /name="csrf_token" value="([^"]+)"/.exec(page)![1]!,
      email,
      password: PASSWORD,
    }
    const signIn = () =>
      server.request('/api/v1/oauth/authorize/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser },
        body: new URLSearchParams(fields),
      })
    const refused = await withFullQueue(signIn)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('5')
    expect(refused.headers.get('content-type')).toStartWith('text/html')
    expect(refused.headers.get('set-cookie')).toBeNull()
    const html = await refused.text()
    expect(html).toContain('Too many sign-ins at the moment. Try again in 5 seconds.')
    expect(html).toContain(`value="${fields.authorization_id}"`)
    // The same form, once the queue has drained, signs in and goes on to the consent page.
    const accepted = await signIn()
    expect(accepted.status).toBe(200)
    expect(accepted.headers.get('set-cookie')).not.toBeNull()
  })
})
