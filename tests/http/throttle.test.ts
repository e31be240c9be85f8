// The optional throttles (THROTTLE_*, TRUSTED_PROXIES) against the real server on the selected
// backend: off by default; when on, budgets exact per client address and per account, 429 with
// Retry-After in each endpoint's error format, recovery once the budget refills; bad settings
// stop the start.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { runKgs, startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { browserCookie, pkcePair, authorizationQuery } from '../helpers/oauth.ts'
import { ConfigError, parseEnv } from '../../src/config.ts'
import { addressKey, clientAddress } from '../../src/http/throttle.ts'

const PASSWORD = 'correct horse battery'
const WRONG = 'not the password'

let addressCount = 0
/** A client address no other test uses (sent as X-Forwarded-For where TRUSTED_PROXIES=1). */
const freshAddress = () => `10.${(++addressCount >> 8) & 255}.${addressCount & 255}.1`
const via = (address: string) => ({ 'x-forwarded-for': address })

function client(server: TestServer) {
  const http = api(server.url)
  const form = async (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
    const res = await server.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields),
    })
    return {
      status: res.status,
      headers: res.headers,
      body: (await res.json()) as { error?: string; error_description?: string },
    }
  }
  return {
    login: (email: string, password: string, address?: string) =>
      http.call('POST', '/api/v1/auth/login', { body: { email, password }, headers: address ? via(address) : {} }),
    register: (email: string, address: string) =>
      http.call('POST', '/api/v1/auth/register', { body: { email, password: PASSWORD }, headers: via(address) }),
    refresh: (refreshToken: string, address: string) =>
      http.call('POST', '/api/v1/auth/refresh', { body: { refresh_token: refreshToken }, headers: via(address) }),
    registerClient: (address: string, metadata: Record<string, unknown> = {}) =>
      http.call('POST', '/api/v1/oauth/register', {
        body: { redirect_uris: ['https://agent.example/cb'], ...metadata },
        headers: via(address),
      }),
    /** A token request bound to fail: a code that was never issued. */
    badCode: (clientId: string, address?: string, headers: Record<string, string> = {}) =>
      form(
        '/api/v1/oauth/token',
        {
          grant_type: 'authorization_code',
          code: 'never-issued',
          redirect_uri: 'https://agent.example/cb',
          code_verifier: pkcePair().verifier,
          ...(clientId ? { client_id: clientId } : {}),
        },
        {
          ...(address ? via(address) : {}),
          ...headers,
        },
      ),
    revoke: (fields: Record<string, string>, address: string) => form('/api/v1/oauth/revoke', fields, via(address)),
  }
}

/** A 429 with a Retry-After of whole seconds in (0, max]; returns it. */
function retryAfter(res: { status: number; headers: Headers }, max: number): number {
  expect(res.status).toBe(429)
  const seconds = Number(res.headers.get('retry-after'))
  expect(Number.isInteger(seconds)).toBe(true)
  expect(seconds).toBeGreaterThan(0)
  expect(seconds).toBeLessThanOrEqual(max)
  return seconds
}

describe('settings', () => {
  test('off by default', () => {
    const config = parseEnv({})
    expect(config.throttle).toEqual({
      login: { perIp: undefined, perAccount: undefined },
      token: { perIp: undefined, perAccount: undefined },
      register: { perIp: undefined },
      createRepository: { perIp: undefined },
    })
    expect(config.trustedProxies).toBe(0)
  })

  test('a rate is a count, a slash and a duration', () => {
    const config = parseEnv({
      THROTTLE_LOGIN_PER_IP: '20/1m',
      THROTTLE_LOGIN_PER_ACCOUNT: '5/15m',
      THROTTLE_TOKEN_PER_IP: '100/1h',
      THROTTLE_TOKEN_PER_CLIENT: '30/90',
      THROTTLE_REGISTER_PER_IP: '3/1d',
      THROTTLE_REPOSITORY_CREATE_PER_IP: '10/1h',
      TRUSTED_PROXIES: '2',
    })
    expect(config.throttle).toEqual({
      login: { perIp: { limit: 20, periodMs: 60_000 }, perAccount: { limit: 5, periodMs: 900_000 } },
      token: { perIp: { limit: 100, periodMs: 3_600_000 }, perAccount: { limit: 30, periodMs: 90_000 } },
      register: { perIp: { limit: 3, periodMs: 86_400_000 } },
      createRepository: { perIp: { limit: 10, periodMs: 3_600_000 } },
    })
    expect(config.trustedProxies).toBe(2)
  })

  const bad: [string, string][] = [
    ['THROTTLE_LOGIN_PER_IP', '20'],
    ['THROTTLE_LOGIN_PER_IP', '20/'],
    ['THROTTLE_LOGIN_PER_ACCOUNT', '0/1m'],
    ['THROTTLE_LOGIN_PER_ACCOUNT', '5/0'],
    ['THROTTLE_TOKEN_PER_IP', '5/1w'],
    ['THROTTLE_TOKEN_PER_CLIENT', '5 / 1m'],
    ['THROTTLE_REGISTER_PER_IP', 'lots'],
    ['THROTTLE_REGISTER_PER_IP', '-1/1m'],
  ]
  for (const [name, value] of bad) {
    test(`rejects ${name}=${value} with one line naming it`, () => {
      expect(() => parseEnv({ [name]: value })).toThrow(ConfigError)
      expect(() => parseEnv({ [name]: value })).toThrow(
        `invalid ${name}: expected a rate such as 20/1m or 5/15m (a count, a slash, a duration), got ${JSON.stringify(value)}`,
      )
    })
  }

  test('rejects TRUSTED_PROXIES outside 0 to 8', () => {
    expect(() => parseEnv({ TRUSTED_PROXIES: '9' })).toThrow(
      'invalid TRUSTED_PROXIES: expected an integer from 0 to 8, got "9"',
    )
    expect(() => parseEnv({ TRUSTED_PROXIES: 'yes' })).toThrow(
      'invalid TRUSTED_PROXIES: expected an integer from 0 to 8, got "yes"',
    )
  })

  test('kgs serve refuses to start on a bad rate, saying which and why', async () => {
    const result = await runKgs(['serve'], { THROTTLE_LOGIN_PER_ACCOUNT: '5 per minute' })
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(
      'kgs: invalid THROTTLE_LOGIN_PER_ACCOUNT: expected a rate such as 20/1m or 5/15m (a count, a slash, a duration), got "5 per minute"\n',
    )
  })
})

describe('client address', () => {
  const forwarded = (value?: string) =>
    new Request('http://kgs.test/', { headers: value === undefined ? {} : { 'x-forwarded-for': value } })

  test("the connection's address unless proxies are trusted; then the entry the outermost proxy wrote", () => {
    expect(clientAddress(forwarded('203.0.113.7'), '127.0.0.1', 0)).toBe('127.0.0.1')
    expect(clientAddress(forwarded('198.51.100.1, 203.0.113.7'), '10.0.0.2', 1)).toBe('203.0.113.7')
    expect(clientAddress(forwarded('198.51.100.1, 203.0.113.7, 10.0.0.3'), '10.0.0.2', 2)).toBe('203.0.113.7')
    // Too few entries (a request that did not pass the proxies), or not an address: the connection's.
    expect(clientAddress(forwarded('203.0.113.7'), '10.0.0.2', 2)).toBe('10.0.0.2')
    expect(clientAddress(forwarded(), '10.0.0.2', 1)).toBe('10.0.0.2')
    expect(clientAddress(forwarded('unknown'), '10.0.0.2', 1)).toBe('10.0.0.2')
  })

  test('IPv4 is its own key (also IPv4-mapped); IPv6 is keyed by its /64, however written', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7')
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(addressKey('2001:DB8:0:1::5')).toBe('2001:db8:0:1::/64')
    expect(addressKey('2001:0db8:0000:0001:ffff:0:0:1')).toBe('2001:db8:0:1::/64')
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(addressKey('::1')).toBe('0:0:0:0::/64')
    expect(addressKey('64:ff9b::203.0.113.7')).toBe('64:ff9b:0:0::/64')
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
    expect(addressKey(undefined)).toBe('unknown')
  })
})

describe(`throttling off by default (${BACKEND})`, () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(() => server.stop())

  test('failed sign-ins, failed token requests and registrations are never refused', async () => {
    const kgs = client(server)
    const email = uniqueEmail('target')
    expect((await kgs.register(email, '127.0.0.1')).status).toBe(201)
    for (let i = 0; i < 12; i++) expectError(await kgs.login(email, WRONG), 401)
    expect((await kgs.login(email, PASSWORD)).status).toBe(200)
    for (let i = 0; i < 30; i++) expectOAuthError(await kgs.badCode('no-such-client'), 401, 'invalid_client')
    for (let i = 0; i < 12; i++) expect((await kgs.registerClient('127.0.0.1')).status).toBe(201)
  })
})

describe(`throttling on, behind one trusted proxy (${BACKEND})`, () => {
  let server: TestServer
  let kgs: ReturnType<typeof client>
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        THROTTLE_LOGIN_PER_IP: '3/1h',
        THROTTLE_LOGIN_PER_ACCOUNT: '2/1h',
        THROTTLE_TOKEN_PER_IP: '4/1h',
        THROTTLE_TOKEN_PER_CLIENT: '2/1h',
        THROTTLE_REGISTER_PER_IP: '3/1h',
        TRUSTED_PROXIES: '1',
      },
    })
    kgs = client(server)
  })
  afterAll(() => server.stop())

  /** An account, registered from an address of its own. */
  async function account(): Promise<{ email: string; refreshToken: string }> {
    const email = uniqueEmail('user')
    const res = await kgs.register(email, freshAddress())
    expect(res.status).toBe(201)
    return { email, refreshToken: res.body.refresh_token }
  }

  test('per account: two failed sign-ins, then 429 from any address, even with the right password', async () => {
    const { email } = await account()
    expectError(await kgs.login(email, WRONG, freshAddress()), 401)
    expectError(await kgs.login(` ${email.toUpperCase()}`, WRONG, freshAddress()), 401) // the same account, written otherwise
    const refused = await kgs.login(email, PASSWORD, freshAddress())
    const seconds = retryAfter(refused, 1800)
    // 2 per hour refill one every 30 minutes: the next is due about then.
    expect(seconds).toBeGreaterThan(1700)
    expectError(refused, 429, `too many failed sign-ins; retry after ${seconds} seconds`)
    // Other accounts are not held back.
    const other = await account()
    expect((await kgs.login(other.email, PASSWORD, freshAddress())).status).toBe(200)
  })

  test('per account: refusals spend nothing of the address, successes nothing at all', async () => {
    const { email } = await account()
    const address = freshAddress()
    for (let i = 0; i < 2; i++) expectError(await kgs.login(email, WRONG, freshAddress()), 401)
    for (let i = 0; i < 5; i++) retryAfter(await kgs.login(email, WRONG, address), 1800)
    // The address still has its whole budget of three failures.
    for (let i = 0; i < 3; i++) expectError(await kgs.login(uniqueEmail('nobody'), WRONG, address), 401)
    retryAfter(await kgs.login(uniqueEmail('nobody'), WRONG, address), 1200)
    // Signing in successfully, again and again, from one address, uses no budget.
    const regular = await account()
    const home = freshAddress()
    for (let i = 0; i < 5; i++) expect((await kgs.login(regular.email, PASSWORD, home)).status).toBe(200)
  })

  test('per address: three failed sign-ins on three accounts, then 429; other addresses unaffected', async () => {
    const address = freshAddress()
    for (let i = 0; i < 3; i++) expectError(await kgs.login(uniqueEmail('guess'), WRONG, address), 401)
    const email = uniqueEmail('guess')
    const seconds = retryAfter(await kgs.login(email, WRONG, address), 1200)
    expect(seconds).toBeGreaterThan(1100)
    expectError(await kgs.login(email, WRONG, freshAddress()), 401)
  })

  test('per address: IPv6 clients are counted by their /64 network', async () => {
    for (const address of ['2001:db8:7:1::a', '2001:db8:7:1::b', '2001:db8:7:1:ffff::1'])
      expectError(await kgs.login(uniqueEmail('v6'), WRONG, address), 401)
    retryAfter(await kgs.login(uniqueEmail('v6'), WRONG, '2001:0db8:0007:0001::c'), 1200)
    expectError(await kgs.login(uniqueEmail('v6'), WRONG, '2001:db8:7:2::a'), 401)
  })

  test('the OAuth sign-in form shares the sign-in budgets and answers with the form again, 429', async () => {
    const { email } = await account()
    for (let i = 0; i < 2; i++) expectError(await kgs.login(email, WRONG, freshAddress()), 401)
    const registered = await kgs.registerClient(freshAddress())
    expect(registered.status).toBe(201)
    const { challenge } = pkcePair()
    const query = authorizationQuery(
      { client_id: registered.body.client_id, redirect_uri: 'https://agent.example/cb' },
      { state: 's' },
      challenge,
    )
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
    const res = await server.request('/api/v1/oauth/authorize/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser, ...via(freshAddress()) },
      body: new URLSearchParams(fields),
    })
    retryAfter(res, 1800)
    expect(res.headers.get('content-type')).toStartWith('text/html')
    expect(res.headers.get('set-cookie')).toBeNull()
    const html = await res.text()
    expect(html).toMatch(/Too many failed sign-ins\. Try again in \d+ seconds\./)
    expect(html).toContain(`value="${fields.authorization_id}"`)
  })

  test('per client: two failed token requests, then 429 temporarily_unavailable in the OAuth format; other clients unaffected', async () => {
    const registered = await kgs.registerClient(freshAddress())
    const clientId: string = registered.body.client_id
    for (let i = 0; i < 2; i++) expectOAuthError(await kgs.badCode(clientId, freshAddress()), 400, 'invalid_grant')
    const refused = await kgs.badCode(clientId, freshAddress())
    const seconds = retryAfter(refused, 1800)
    expectOAuthError(
      refused,
      429,
      'temporarily_unavailable',
      new RegExp(`^too many failed token requests; retry after ${seconds} seconds$`),
    )
    expect(Object.keys(refused.body).sort()).toEqual(['error', 'error_description'])
    expect(refused.headers.get('cache-control')).toBe('no-store')
    const other = await kgs.registerClient(freshAddress())
    expectOAuthError(await kgs.badCode(other.body.client_id, freshAddress()), 400, 'invalid_grant')
  })

  test('per client: Basic credentials, client_secret_post and revocation draw on one budget', async () => {
    const registered = await kgs.registerClient(freshAddress(), { token_endpoint_auth_method: 'client_secret_basic' })
    const clientId: string = registered.body.client_id
    // The id percent-encoded where it need not be: still this client.
    const encodedId = [...clientId].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('')
    const basic = { authorization: `Basic ${Buffer.from(`${encodedId}:wrong-secret`).toString('base64')}` }
    expectOAuthError(await kgs.badCode('', freshAddress(), basic), 401, 'invalid_client')
    expectOAuthError(
      await kgs.revoke({ token: 'x', client_id: clientId, client_secret: 'wrong-secret' }, freshAddress()),
      401,
      'invalid_client',
    )
    retryAfter(await kgs.badCode(clientId, freshAddress()), 1800)
    expectOAuthError(
      await kgs.revoke({ token: 'x', client_id: clientId, client_secret: 'wrong-secret' }, freshAddress()),
      429,
      'temporarily_unavailable',
    )
  })

  test('per address: failed refreshes and token requests share four; successful refreshes do not count', async () => {
    const address = freshAddress()
    let { refreshToken } = await account()
    for (let i = 0; i < 6; i++) {
      const res = await kgs.refresh(refreshToken, address)
      expect(res.status).toBe(200)
      refreshToken = res.body.refresh_token
    }
    expectError(await kgs.refresh('not-a-refresh-token', address), 401)
    expectError(await kgs.refresh('not-a-refresh-token', address), 401)
    expectOAuthError(await kgs.badCode('no-such-client', address), 401, 'invalid_client')
    expectOAuthError(await kgs.badCode('no-such-client-either', address), 401, 'invalid_client')
    const refused = await kgs.refresh(refreshToken, address)
    const seconds = retryAfter(refused, 900)
    expectError(refused, 429, `too many failed token requests; retry after ${seconds} seconds`)
    expectOAuthError(await kgs.badCode('yet-another-client', address), 429, 'temporarily_unavailable')
    expect((await kgs.refresh(refreshToken, freshAddress())).status).toBe(200)
  })

  test('per address: three authorization requests (each records a pending authorization), then 429 on kgs’s page', async () => {
    const address = freshAddress()
    const registered = await kgs.registerClient(freshAddress())
    const open = (from: string) =>
      server.request(
        `/api/v1/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: registered.body.client_id, redirect_uri: 'https://agent.example/cb', code_challenge: pkcePair().challenge, code_challenge_method: 'S256' })}`,
        { headers: via(from) },
      )
    for (let i = 0; i < 3; i++) expect((await open(address)).status).toBe(200)
    const refused = await open(address)
    retryAfter(refused, 1200)
    expect(refused.headers.get('content-type')).toStartWith('text/html')
    expect(await refused.text()).toMatch(
      /Too many authorization requests from your address\. Try again in \d+ seconds\./,
    )
    expect((await open(freshAddress())).status).toBe(200)
  })

  test('per address: three registrations of accounts or clients, failed or not, then 429', async () => {
    const address = freshAddress()
    const email = uniqueEmail('new')
    expect((await kgs.register(email, address)).status).toBe(201)
    expectError(await kgs.register(email, address), 409)
    expect((await kgs.registerClient(address)).status).toBe(201)
    const refused = await kgs.register(uniqueEmail('new'), address)
    const seconds = retryAfter(refused, 1200)
    expectError(refused, 429, `too many registrations; retry after ${seconds} seconds`)
    const refusedClient = await kgs.registerClient(address)
    retryAfter(refusedClient, 1200)
    expectOAuthError(refusedClient, 429, 'temporarily_unavailable', /^too many registrations; retry after \d+ seconds$/)
    expect((await kgs.register(uniqueEmail('new'), freshAddress())).status).toBe(201)
  })
})

describe(`throttling on, no proxy trusted (${BACKEND})`, () => {
  let server: TestServer
  let kgs: ReturnType<typeof client>
  beforeAll(async () => {
    server = await startTestServer({ env: { THROTTLE_LOGIN_PER_IP: '2/1h', THROTTLE_TOKEN_PER_CLIENT: '2/1s' } })
    kgs = client(server)
  })
  afterAll(() => server.stop())

  test("the connection's address counts; a forged X-Forwarded-For gains nothing", async () => {
    expectError(await kgs.login(uniqueEmail('guess'), WRONG), 401)
    expectError(await kgs.login(uniqueEmail('guess'), WRONG, '203.0.113.1'), 401)
    retryAfter(await kgs.login(uniqueEmail('guess'), WRONG, '203.0.113.2'), 1800)
  })

  test('a budget refills: refused, then admitted again once Retry-After has passed', async () => {
    const clientId = `no-such-client-${crypto.randomUUID()}`
    // Spend the budget of 2 per second (a slow machine may see a unit refill meanwhile: go on until refused).
    let refused: Awaited<ReturnType<typeof kgs.badCode>> | undefined
    for (let i = 0; i < 10 && !refused; i++) {
      const res = await kgs.badCode(clientId)
      if (res.status === 429) refused = res
      else expectOAuthError(res, 401, 'invalid_client')
    }
    expect(refused).toBeDefined()
    expect(retryAfter(refused!, 1)).toBe(1)
    const deadline = Date.now() + 10_000
    let answer = refused!
    while (answer.status === 429 && Date.now() < deadline) {
      await Bun.sleep(100)
      answer = await kgs.badCode(clientId)
    }
    expectOAuthError(answer, 401, 'invalid_client')
  })
})
