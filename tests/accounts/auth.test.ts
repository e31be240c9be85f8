// Accounts, sessions and profiles over HTTP, on the selected backend.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT, generateKeyPair, jwtVerify } from 'jose'
import type postgres from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { tokenKey, type TokenKind } from '../../src/http/tokens.ts'
import { rejected } from '../helpers/promises.ts'

let server: TestServer
let http: ReturnType<typeof api>
const PASSWORD = 'correct horse battery'

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
})
afterAll(() => server.stop())

async function register(overrides: Record<string, unknown> = {}) {
  const res = await http.post('/api/v1/auth/register', {
    email: uniqueEmail(),
    password: PASSWORD,
    name: 'Ada',
    ...overrides,
  })
  expect(res.status).toBe(201)
  return res.body as { user: { id: string; email: string; name: string }; token: string; refresh_token: string }
}

/** Direct access to the system database, to set up states (an expired session) without waiting. */
async function withSystemDb<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = server.systemSql()
  try {
    return await fn(sql)
  } finally {
    await sql.end()
  }
}

/** The session tokens' key, derived from JWT_SECRET as the server derives it. */
const secret = () => tokenKey(server.env.JWT_SECRET!, 'session')

describe(`register (${BACKEND})`, () => {
  test('201 with the user, an access token and a refresh token; e-mail normalized; no password in sight', async () => {
    const email = uniqueEmail('Mixed.Case')
    const res = await http.post('/api/v1/auth/register', {
      email: `  ${email.toUpperCase()}  `,
      password: PASSWORD,
      name: '  Ada Lovelace ',
    })
    expect(res.status).toBe(201)
    expect(res.body.user).toEqual({
      id: expect.any(String),
      email: email.toLowerCase(),
      name: 'Ada Lovelace',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect(res.body.token.split('.')).toHaveLength(3)
    expect(res.body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD)
    expect(JSON.stringify(res.body)).not.toContain('password')
  })

  test('name is optional', async () => {
    const { user } = await register({ name: undefined })
    expect(user.name).toBe('')
  })

  test('duplicate e-mail, whatever its case: 409', async () => {
    const { user } = await register()
    expectError(
      await http.post('/api/v1/auth/register', { email: user.email.toUpperCase(), password: PASSWORD }),
      409,
      'e-mail address already registered',
    )
  })

  const malformed: [string, unknown, number, string | RegExp][] = [
    ['missing email', { password: PASSWORD }, 400, /^invalid body: email: expected an e-mail address \(missing\)$/],
    [
      'missing password',
      { email: 'a@example.com' },
      400,
      /^invalid body: password: expected a password of 8 to 256 characters \(missing\)$/,
    ],
    [
      'email of the wrong type',
      { email: 42, password: PASSWORD },
      400,
      /^invalid body: email: expected an e-mail address \(got number\)$/,
    ],
    [
      'password of the wrong type',
      { email: 'a@example.com', password: ['x'] },
      400,
      /^invalid body: password: .*\(got array\)$/,
    ],
    [
      'not an e-mail address',
      { email: 'not-an-email', password: PASSWORD },
      400,
      'invalid body: email: expected an e-mail address',
    ],
    [
      'a short password',
      { email: 'a@example.com', password: 'short' },
      400,
      /^invalid body: password: expected a password of 8 to 256 characters/,
    ],
    [
      'a long password',
      { email: 'a@example.com', password: 'x'.repeat(257) },
      400,
      /^invalid body: password: expected a password of 8 to 256 characters/,
    ],
    [
      'a name too long',
      { email: 'a@example.com', password: PASSWORD, name: 'n'.repeat(201) },
      400,
      /^invalid body: name: expected a name of at most 200 characters/,
    ],
    ['an unknown field', { email: 'a@example.com', password: PASSWORD, admin: true }, 400, /^invalid body: admin: /],
    ['a body that is not an object', 'hello', 400, /^invalid body/],
    [
      'an extra huge field',
      { email: 'a@example.com', password: PASSWORD, pad: 'x'.repeat(2 * 1024 * 1024) },
      413,
      'request body exceeds the limit of 1048576 bytes',
    ],
  ]
  for (const [what, body, status, message] of malformed) {
    test(`${what}: ${status}`, async () => {
      expectError(await http.post('/api/v1/auth/register', body), status, message)
    })
  }

  test('a short password is not echoed in the error', async () => {
    const res = await http.post('/api/v1/auth/register', { email: 'a@example.com', password: 'hunter2' })
    expect(res.status).toBe(400)
    expect(JSON.stringify(res.body)).not.toContain('hunter2')
  })

  test('malformed JSON: 400; wrong content type: 415', async () => {
    expectError(
      await http.call('POST', '/api/v1/auth/register', {
        raw: '{"email":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      /^malformed JSON body/,
    )
    expectError(
      await http.call('POST', '/api/v1/auth/register', { raw: 'email=a', headers: { 'content-type': 'text/plain' } }),
      415,
    )
  })
})

describe(`login (${BACKEND})`, () => {
  test('200 with the user and a fresh session; e-mail case does not matter', async () => {
    const { user } = await register()
    const res = await http.post('/api/v1/auth/login', { email: user.email.toUpperCase(), password: PASSWORD })
    expect(res.status).toBe(200)
    expect(res.body.user.id).toBe(user.id)
    expect((await http.get('/api/v1/users/me', res.body.token)).body.id).toBe(user.id)
  })

  test('wrong password and unknown e-mail: the same 401', async () => {
    const { user } = await register()
    expectError(
      await http.post('/api/v1/auth/login', { email: user.email, password: 'wrong password' }),
      401,
      'invalid credentials',
    )
    expectError(
      await http.post('/api/v1/auth/login', { email: uniqueEmail('nobody'), password: PASSWORD }),
      401,
      'invalid credentials',
    )
    expectError(
      await http.post('/api/v1/auth/login', { email: 'not-an-email', password: PASSWORD }),
      401,
      'invalid credentials',
    )
  })

  test('an unknown e-mail costs a password verification too (no account enumeration by timing)', async () => {
    const { user } = await register()
    const time = async (email: string) => {
      const started = performance.now()
      await http.post('/api/v1/auth/login', { email, password: 'wrong password' })
      return performance.now() - started
    }
    await time(uniqueEmail('warm-up'))
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const wrong: number[] = []
    const unknown: number[] = []
    for (let i = 0; i < 5; i++) {
      wrong.push(await time(user.email))
      unknown.push(await time(uniqueEmail('nobody')))
    }
    // Without the dummy verification an unknown e-mail answers ~50x faster (no argon2 at all).
    expect(median(unknown)).toBeGreaterThan(median(wrong) * 0.4)
  })

  test('concurrent logins and refreshes all succeed (the database is shared safely)', async () => {
    const { user } = await register()
    const logins = await Promise.all(
      Array.from({ length: 8 }, () => http.post('/api/v1/auth/login', { email: user.email, password: PASSWORD })),
    )
    expect(logins.map((r) => r.status)).toEqual(Array(8).fill(200))
    const refreshes = await Promise.all(
      logins.map((r) => http.post('/api/v1/auth/refresh', { refresh_token: r.body.refresh_token })),
    )
    expect(refreshes.map((r) => r.status)).toEqual(Array(8).fill(200))
  })

  test('malformed bodies: 400', async () => {
    expectError(await http.post('/api/v1/auth/login', { email: 'a@example.com' }), 400, /^invalid body: password: /)
    expectError(await http.post('/api/v1/auth/login', { email: 1, password: PASSWORD }), 400, /^invalid body: email: /)
    expectError(
      await http.post('/api/v1/auth/login', { email: 'a@example.com', password: PASSWORD, otp: 1 }),
      400,
      /^invalid body: otp: /,
    )
  })
})

describe(`access tokens (${BACKEND})`, () => {
  let grant: Awaited<ReturnType<typeof register>>
  beforeAll(async () => {
    grant = await register()
  })
  const me = (token?: string, scheme = 'Bearer') =>
    http.call('GET', '/api/v1/users/me', {
      headers: token === undefined ? {} : { authorization: `${scheme} ${token}` },
    })

  test('no token: 401 with WWW-Authenticate: Bearer and resource_metadata', async () => {
    const res = await me()
    expectError(res, 401, 'authentication required')
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/api/v1", scope="read"`,
    )
  })

  const claims = () => ({
    sub: grant.user.id,
    sid: JSON.parse(atob(grant.token.split('.')[1]!)).sid,
    jti: crypto.randomUUID(),
    typ: 'session',
  })
  const sign = (payload: Record<string, unknown>, alg = 'HS256', key: Uint8Array | CryptoKey = secret()) =>
    new SignJWT(payload)
      .setProtectedHeader({ alg, typ: 'JWT' })
      .setIssuer(server.url)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key)

  test('a token signed the same way as ours is accepted (the forgeries below differ in one thing)', async () => {
    expect((await me(await sign(claims()))).status).toBe(200)
  })

  const refused: [string, () => Promise<string>][] = [
    ['garbage', async () => 'not-a-jwt'],
    [
      'a wrong signature',
      async () => sign(claims(), 'HS256', new TextEncoder().encode('another secret of at least 32 chars!')),
    ],
    [
      'an expired token',
      async () =>
        new SignJWT(claims())
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer(server.url)
          .setIssuedAt(Math.floor(Date.now() / 1000) - 3600)
          .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
          .sign(secret()),
    ],
    [
      'alg none',
      async () =>
        `${btoa(JSON.stringify({ alg: 'none', typ: 'JWT' })).replace(/=+$/, '')}.${Buffer.from(JSON.stringify({ ...claims(), iss: server.url, exp: Math.floor(Date.now() / 1000) + 300 })).toString('base64url')}.`,
    ],
    ['another HMAC algorithm (HS512) with the right secret', async () => sign(claims(), 'HS512')],
    ['an RS256 token', async () => sign(claims(), 'RS256', (await generateKeyPair('RS256')).privateKey)],
    ['a missing sid', async () => sign({ ...claims(), sid: undefined })],
    [
      'another issuer',
      async () =>
        new SignJWT(claims())
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer('https://evil.example')
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(secret()),
    ],
    ['another token type', async () => sign({ ...claims(), typ: 'refresh' })],
    [
      'signed with JWT_SECRET itself (the key before per-kind keys)',
      async () => sign(claims(), 'HS256', new TextEncoder().encode(server.env.JWT_SECRET)),
    ],
    [
      "signed with the OAuth access tokens' key",
      async () => sign(claims(), 'HS256', tokenKey(server.env.JWT_SECRET!, 'oauth-access')),
    ],
    [
      "signed with the service tokens' key",
      async () => sign(claims(), 'HS256', tokenKey(server.env.JWT_SECRET!, 'service')),
    ],
  ]
  const challenge = () =>
    `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/api/v1", scope="read"`
  for (const [what, make] of refused) {
    test(`${what}: 401 invalid_token`, async () => {
      const res = await me(await make())
      if (what === 'an expired token') {
        expectError(
          res,
          401,
          'access token expired: get a new one with the refresh token of your sign-in (POST /api/v1/auth/refresh {"refresh_token": "..."}) or sign in again (POST /api/v1/auth/login)',
        )
        expect(res.headers.get('www-authenticate')).toBe(
          `${challenge()}, error="invalid_token", error_description="the access token expired; refresh it or sign in again"`,
        )
      } else {
        expectError(
          res,
          401,
          'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
        )
        expect(res.headers.get('www-authenticate')).toBe(
          `${challenge()}, error="invalid_token", error_description="the access token is invalid or revoked; sign in again"`,
        )
      }
    })
  }

  // RFC 6750 §2.1: the credentials are "Bearer <token>"; a bare token or another scheme is named as such.
  for (const [what, header] of [
    ['another scheme than Bearer', () => `Basic ${grant.token}`],
    ['the token without the Bearer prefix', () => grant.token],
    ['Bearer without a token', () => 'Bearer'],
  ] as const) {
    test(`${what}: 401 naming the Bearer <token> form`, async () => {
      const res = await http.call('GET', '/api/v1/users/me', { headers: { authorization: header() } })
      expectError(
        res,
        401,
        'malformed Authorization header: expected Bearer <token> (the word Bearer, a space, then the token)',
      )
      expect(res.headers.get('www-authenticate')).toBe(
        `${challenge()}, error="invalid_request", error_description="expected Authorization: Bearer <token>"`,
      )
    })
  }
})

describe(`refresh (${BACKEND})`, () => {
  test('rotation: a new pair that works; the old refresh token is single use', async () => {
    const grant = await register()
    const first = await http.post('/api/v1/auth/refresh', { refresh_token: grant.refresh_token })
    expect(first.status).toBe(200)
    expect(Object.keys(first.body).sort()).toEqual(['refresh_token', 'token'])
    expect(first.body.refresh_token).not.toBe(grant.refresh_token)
    expect((await http.get('/api/v1/users/me', first.body.token)).status).toBe(200)
    const second = await http.post('/api/v1/auth/refresh', { refresh_token: first.body.refresh_token })
    expect(second.status).toBe(200)
  })

  test('reuse of a used refresh token revokes the whole session', async () => {
    const grant = await register()
    const rotated = await http.post('/api/v1/auth/refresh', { refresh_token: grant.refresh_token })
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: grant.refresh_token }),
      401,
      'invalid refresh token',
    )
    // Everything the session issued is now dead: the newest access token and refresh token too.
    expectError(await http.get('/api/v1/users/me', rotated.body.token), 401)
    expectError(await http.get('/api/v1/users/me', grant.token), 401)
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: rotated.body.refresh_token }),
      401,
      'invalid refresh token',
    )
  })

  test('concurrent use of one refresh token: at most one wins, and the session ends', async () => {
    const grant = await register()
    const results = await Promise.all(
      [1, 2, 3].map(() => http.post('/api/v1/auth/refresh', { refresh_token: grant.refresh_token })),
    )
    expect(results.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1)
    expect(results.filter((r) => r.status === 401).length).toBeGreaterThanOrEqual(2)
    expectError(await http.get('/api/v1/users/me', grant.token), 401)
  })

  test('the absolute session lifetime: refresh never extends it, and refuses once it has passed', async () => {
    const grant = await register()
    const sid = JSON.parse(atob(grant.token.split('.')[1]!)).sid as string
    const expiresAt = () =>
      withSystemDb(async (sql) => (await sql`SELECT expires_at FROM sessions WHERE id = ${sid}`)[0]!.expires_at as Date)
    const before = await expiresAt()
    const rotated = await http.post('/api/v1/auth/refresh', { refresh_token: grant.refresh_token })
    expect(await expiresAt()).toEqual(before)
    // No access token outlives its session.
    expect(JSON.parse(atob(rotated.body.token.split('.')[1]!)).exp).toBeLessThanOrEqual(
      Math.floor(before.getTime() / 1000),
    )
    await withSystemDb((sql) => sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = ${sid}`)
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: rotated.body.refresh_token }),
      401,
      'invalid refresh token',
    )
  })

  test('unknown token: 401; malformed bodies: 400', async () => {
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: 'x'.repeat(43) }),
      401,
      'invalid refresh token',
    )
    expectError(await http.post('/api/v1/auth/refresh', {}), 400, /^invalid body: refresh_token: /)
    expectError(await http.post('/api/v1/auth/refresh', { refresh_token: 7 }), 400, /^invalid body: refresh_token: /)
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: 'x'.repeat(129) }),
      400,
      /^invalid body: refresh_token: /,
    )
  })
})

describe(`logout (${BACKEND})`, () => {
  test('ends the session at once: its access and refresh tokens are refused; other sessions live on', async () => {
    const grant = await register()
    const other = await http.post('/api/v1/auth/login', { email: grant.user.email, password: PASSWORD })
    const res = await http.post('/api/v1/auth/logout', undefined, grant.token)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ message: 'logged out' })
    expectError(
      await http.get('/api/v1/users/me', grant.token),
      401,
      'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
    )
    expectError(
      await http.post('/api/v1/auth/refresh', { refresh_token: grant.refresh_token }),
      401,
      'invalid refresh token',
    )
    expect((await http.get('/api/v1/users/me', other.body.token)).status).toBe(200)
  })

  test('logout twice: the second is 401 (the token is already dead)', async () => {
    const grant = await register()
    expect((await http.post('/api/v1/auth/logout', undefined, grant.token)).status).toBe(200)
    expectError(await http.post('/api/v1/auth/logout', undefined, grant.token), 401)
  })

  test('without a token: 401', async () => {
    expectError(await http.post('/api/v1/auth/logout'), 401, 'authentication required')
  })
})

describe(`users (${BACKEND})`, () => {
  test('GET /users/me and /users/{self}', async () => {
    const grant = await register()
    const me = await http.get('/api/v1/users/me', grant.token)
    expect(me.body).toEqual({ ...grant.user, created_at: expect.any(String), updated_at: expect.any(String) })
    expect((await http.get(`/api/v1/users/${grant.user.id.toUpperCase()}`, grant.token)).body.id).toBe(grant.user.id)
  })

  test('another user: 403; unknown id: 404; not a UUID: 400; no token: 401', async () => {
    const a = await register()
    const b = await register()
    expectError(
      await http.get(`/api/v1/users/${b.user.id}`, a.token),
      403,
      'permission denied: user:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(await http.get(`/api/v1/users/${crypto.randomUUID()}`, a.token), 404, 'user not found')
    expectError(
      await http.get('/api/v1/users/not-a-uuid', a.token),
      400,
      /^invalid path parameter: userID: expected a UUID/,
    )
    expectError(await http.get(`/api/v1/users/${b.user.id}`), 401)
  })

  test('PUT updates name and e-mail of oneself', async () => {
    const grant = await register()
    const email = uniqueEmail('New')
    const res = await http.put(
      `/api/v1/users/${grant.user.id}`,
      { name: ' Grace ', email: email.toUpperCase(), current_password: PASSWORD },
      grant.token,
    )
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: grant.user.id, name: 'Grace', email: email.toLowerCase() })
    expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(200)
    const nameOnly = await http.put(`/api/v1/users/${grant.user.id}`, { name: 'Hopper' }, grant.token)
    expect(nameOnly.body).toMatchObject({ name: 'Hopper', email: email.toLowerCase() })
  })

  test('changing the e-mail needs the current password (ASVS 7.5.1, SECURITY O5); the same e-mail again does not', async () => {
    const grant = await register()
    const email = uniqueEmail('moved')
    expectError(
      await http.put(`/api/v1/users/${grant.user.id}`, { email }, grant.token),
      400,
      'invalid body: current_password: required to change the e-mail',
    )
    expectError(
      await http.put(`/api/v1/users/${grant.user.id}`, { email, current_password: 'not the password' }, grant.token),
      403,
      'current_password is wrong',
    )
    expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(401)
    expect(
      (
        await http.put(
          `/api/v1/users/${grant.user.id}`,
          { email: grant.user.email.toUpperCase(), name: 'Same' },
          grant.token,
        )
      ).status,
    ).toBe(200)
    expect(
      (await http.put(`/api/v1/users/${grant.user.id}`, { email, current_password: PASSWORD }, grant.token)).status,
    ).toBe(200)
    expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(200)
  })

  test('PUT: taken e-mail 409; another user 403; unknown 404; malformed 400; no token 401', async () => {
    const a = await register()
    const b = await register()
    expectError(
      await http.put(
        `/api/v1/users/${a.user.id}`,
        { email: b.user.email.toUpperCase(), current_password: PASSWORD },
        a.token,
      ),
      409,
      'e-mail address already registered',
    )
    expectError(
      await http.put(`/api/v1/users/${b.user.id}`, { name: 'x' }, a.token),
      403,
      'permission denied: user:manage needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(await http.put(`/api/v1/users/${crypto.randomUUID()}`, { name: 'x' }, a.token), 404)
    expectError(
      await http.put(`/api/v1/users/${a.user.id}`, { email: 'nope' }, a.token),
      400,
      'invalid body: email: expected an e-mail address',
    )
    expectError(await http.put(`/api/v1/users/${a.user.id}`, { name: 5 }, a.token), 400, /^invalid body: name: /)
    expectError(
      await http.put(`/api/v1/users/${a.user.id}`, { password: 'new password' }, a.token),
      400,
      /^invalid body: password: /,
    )
    expectError(await http.put(`/api/v1/users/${a.user.id}`, { name: 'x' }), 401)
  })
})

describe('token kinds', () => {
  const KINDS: TokenKind[] = ['session', 'oauth-access', 'service']
  // Signature checks only, no `typ` or claim checks: the keys alone keep the kinds apart.
  for (const signedAs of KINDS) {
    for (const verifiedAs of KINDS) {
      test(`a ${signedAs} token ${signedAs === verifiedAs ? 'verifies' : 'never verifies'} with the ${verifiedAs} key`, async () => {
        const token = await new SignJWT({ sub: 'someone' })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(tokenKey('one secret for every kind', signedAs))
        const verified = jwtVerify(token, tokenKey('one secret for every kind', verifiedAs), { algorithms: ['HS256'] })
        if (signedAs === verifiedAs) expect((await verified).payload.sub).toBe('someone')
        else expect(await rejected(verified)).toThrow('signature verification failed')
      })
    }
  }
})
