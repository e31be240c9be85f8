// REGISTRATION=open|closed|invite: who may create an account through POST /api/v1/auth/register
// and the sign-up form of the authorization pages; what a sysadmin and `kgs user create` make
// whatever it says; the invitations of invite mode (single use, expiring, bounded, stored as
// digests); and OAuth client registration, which no mode touches.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { OPEN_INVITATIONS_MAX } from '../../src/accounts/invitations.ts'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { browserCookie, registerClient, type TestClient, authorizationQuery } from '../helpers/oauth.ts'
import { runKgs, startTestServer, type TestServer } from '../helpers/server.ts'

const password = 'correct horse battery'

/** The authorization pages as one browser walks them: GET /authorize, then its forms. */
async function authorizationPages(server: TestServer, client: TestClient, prompt?: string) {
  const browser = browserCookie()
  const query = authorizationQuery(client, { state: 'st', scope: 'read', ...(prompt ? { prompt } : {}) })
  const first = await server.request(`/api/v1/oauth/authorize?${query}`, { headers: { cookie: browser } })
  const html = await first.text()
  const ids = {
    authorization_id: /name="authorization_id" value="([^"]+)"/.exec(html)![1]!,
    csrf_token: /name="csrf_token" value="([^"]+)"/.exec(html)![1]!,
  }
  const post = async (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
    const res = await server.request(path, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser, ...headers },
      body: new URLSearchParams({ ...ids, ...fields }),
    })
    return { status: res.status, headers: res.headers, html: await res.text() }
  }
  return { first: { status: first.status, html }, ids, post }
}

/** The user who holds the session the pages set, by signing in on the API with the same credentials. */
async function signsIn(http: ReturnType<typeof api>, email: string) {
  return (await http.post('/api/v1/auth/login', { email, password })).status
}

describe(`REGISTRATION=open, the default (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let client: TestClient
  beforeAll(async () => {
    server = await startTestServer()
    http = api(server.url)
    client = await registerClient(server.url, { client_name: 'Agent' })
  })
  afterAll(() => server.stop())

  test('the web app page says which mode, for its sign-in card', async () => {
    expect(await (await server.request('/app')).text()).toContain('<meta name="kgs-registration" content="open">')
  })

  test('the sign-in page offers to create an account; prompt=create opens the sign-up form with the password rules', async () => {
    const signIn = await authorizationPages(server, client)
    expect(signIn.first.html).toContain('Sign in to continue')
    expect(signIn.first.html).toContain('action="/api/v1/oauth/authorize/register"')
    expect(signIn.first.html).toContain('Create an account</button>')
    // The button posts the authorization's ids only: the sign-up form, empty, for the same request.
    const form = await signIn.post('/api/v1/oauth/authorize/register', {})
    expect(form.status).toBe(200)
    expect(form.html).toContain('<h1>Create an account</h1>')
    expect(form.html).toContain(`value="${signIn.ids.authorization_id}"`)
    expect(form.html).toMatch(/minlength="8" maxlength="256" aria-describedby="password-rules"/)
    expect(form.html).toContain(
      '<p id="password-rules" class="hint">8 to 256 characters; any characters, spaces included.</p>',
    )
    expect(form.html).not.toContain('Invitation code')
    // And back: "Sign in instead" posts the ids to the sign-in form, which shows itself.
    const back = await signIn.post('/api/v1/oauth/authorize/login', {})
    expect(back.status).toBe(200)
    expect(back.html).toContain('Sign in to continue')
    const created = await authorizationPages(server, client, 'create')
    expect(created.first.status).toBe(200)
    expect(created.first.html).toContain('<h1>Create an account</h1>')
  })

  test('signing up on the pages makes the account (a member) and goes on to the consent page, signed in', async () => {
    const pages = await authorizationPages(server, client, 'create')
    const email = uniqueEmail('pages')
    const made = await pages.post('/api/v1/oauth/authorize/register', {
      email: email.toUpperCase(),
      name: 'Ada',
      password,
    })
    expect(made.status).toBe(200)
    expect(made.html).toContain('Allow access?')
    expect(made.html).toContain(`Signed in as ${email}`)
    expect(made.headers.get('set-cookie')).toMatch(/^kgs_oauth_session=/)
    // The account signs in on the API too, and is a member (it may create a repository).
    const session = await http.post('/api/v1/auth/login', { email, password })
    expect(session.body.user).toMatchObject({ email, name: 'Ada' })
    expect((await http.post('/api/v1/repositories', { name: 'mine' }, session.body.token)).status).toBe(201)
    // The same address again: the form, saying so, with what was typed but the password.
    const again = await (await authorizationPages(server, client, 'create')).post('/api/v1/oauth/authorize/register', {
      email,
      name: 'Ada',
      password,
    })
    expect(again.status).toBe(409)
    expect(again.html).toContain('An account with this e-mail address exists already: sign in instead.')
    expect(again.html).toContain(`value="${email}"`)
    expect(again.html).not.toContain(password)
  })

  test('the sign-up form refuses, with the form again and nothing made: a short password, a bad address, a forged or cross-site post', async () => {
    const pages = await authorizationPages(server, client, 'create')
    const email = uniqueEmail('refused')
    const short = await pages.post('/api/v1/oauth/authorize/register', { email, password: 'short' })
    expect(short.status).toBe(400)
    expect(short.html).toContain('The password must be 8 to 256 characters.')
    const bad = await pages.post('/api/v1/oauth/authorize/register', { email: 'not an address', password })
    expect(bad.status).toBe(400)
    expect(bad.html).toContain('That is not an e-mail address.')
    const forged = await pages.post('/api/v1/oauth/authorize/register', { email, password, csrf_token: 'x'.repeat(43) })
    expect(forged.status).toBe(403)
    expect(forged.html).toContain('CSRF check failed')
    const crossSite = await pages.post(
      '/api/v1/oauth/authorize/register',
      { email, password },
      { 'sec-fetch-site': 'cross-site' },
    )
    expect(crossSite.status).toBe(403)
    expect(crossSite.html).toContain('posted from another site')
    expect(await signsIn(http, email)).toBe(401)
  })
})

describe(`the sign-up form's throttle (${BACKEND})`, () => {
  let server: TestServer
  beforeAll(async () => {
    // GET /authorize has a budget of the same size: this test asks for four pages.
    server = await startTestServer({ env: { THROTTLE_REGISTER_PER_IP: '4/1h' } })
  })
  afterAll(() => server.stop())

  test("the form's registrations and the API's share one budget (THROTTLE_REGISTER_PER_IP); past it, 429 with Retry-After", async () => {
    const http = api(server.url)
    // The client's registration is the first of the four.
    const client = await registerClient(server.url)
    expect((await http.post('/api/v1/auth/register', { email: uniqueEmail('budget'), password })).status).toBe(201)
    for (let i = 0; i < 2; i++)
      expect(
        (
          await (
            await authorizationPages(server, client, 'create')
          ).post('/api/v1/oauth/authorize/register', { email: uniqueEmail('budget'), password })
        ).status,
      ).toBe(200)
    const email = uniqueEmail('refused')
    const refused = await (await authorizationPages(server, client, 'create')).post(
      '/api/v1/oauth/authorize/register',
      { email, password },
    )
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(refused.html).toContain('Too many registrations from your address.')
    expect(await signsIn(http, email)).toBe(401)
    expectError(
      await http.post('/api/v1/auth/register', { email, password }),
      429,
      /^too many registrations; retry after/,
    )
  })
})

describe(`REGISTRATION=closed (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let admin: { email: string; token: string }
  beforeAll(async () => {
    server = await startTestServer({ env: { REGISTRATION: 'closed' } })
    http = api(server.url)
    // The first account, as an operator makes it.
    const email = uniqueEmail('operator')
    const created = await runKgs(
      ['user', 'create', email],
      server.env,
      undefined,
      new TextEncoder().encode(`${password}\n`),
    )
    expect(created.code).toBe(0)
    expect((await server.promote(email)).code).toBe(0)
    admin = { email, token: (await http.post('/api/v1/auth/login', { email, password })).body.token }
  })
  afterAll(() => server.stop())

  test('POST /auth/register is 403, saying how accounts are made; nothing is made', async () => {
    const email = uniqueEmail('closed')
    expectError(
      await http.post('/api/v1/auth/register', { email, password }),
      403,
      'registration is closed: an administrator creates accounts (`kgs user create`, or POST /api/v1/admin/users)',
    )
    expect(await signsIn(http, email)).toBe(401)
  })

  test('OAuth client registration is not affected', async () => {
    const registered = await http.post('/api/v1/oauth/register', {
      redirect_uris: ['http://127.0.0.1:41000/cb'],
      client_name: 'Agent',
    })
    expect(registered.status).toBe(201)
  })

  test('the pages offer no sign-up and say how to get an account; a sign-up posted anyway is refused', async () => {
    expect(await (await server.request('/app')).text()).toContain('<meta name="kgs-registration" content="closed">')
    const client = await registerClient(server.url)
    const pages = await authorizationPages(server, client)
    expect(pages.first.html).toContain(
      'No account yet? Accounts here are made by an administrator: ask yours for one (they create it with kgs user create).',
    )
    expect(pages.first.html).not.toContain('/api/v1/oauth/authorize/register')
    // prompt=create: the sign-in page, which says the same.
    const create = await authorizationPages(server, client, 'create')
    expect(create.first.html).toContain('Sign in to continue')
    expect(create.first.html).toContain('ask yours for one')
    const email = uniqueEmail('forced')
    const forced = await pages.post('/api/v1/oauth/authorize/register', { email, password })
    expect(forced.status).toBe(403)
    expect(forced.html).toContain('Registration is closed.')
    expect(await signsIn(http, email)).toBe(401)
  })

  test('a sysadmin creates an account (POST /admin/users), which signs in as a member; others may not', async () => {
    const email = uniqueEmail('made')
    const made = await http.post('/api/v1/admin/users', { email, password, name: 'Made' }, admin.token)
    expect(made.status).toBe(201)
    expect(made.body).toMatchObject({ email, name: 'Made' })
    const session = await http.post('/api/v1/auth/login', { email, password })
    expect(session.status).toBe(200)
    expect((await http.post('/api/v1/repositories', { name: 'made' }, session.body.token)).status).toBe(201)
    expectError(
      await http.post('/api/v1/admin/users', { email: uniqueEmail('nope'), password }, session.body.token),
      403,
      'permission denied: user:manage needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(
      await http.post('/api/v1/admin/users', { email, password }, admin.token),
      409,
      'e-mail address already registered',
    )
    expectError(
      await http.post('/api/v1/admin/users', { email: uniqueEmail('short'), password: 'short' }, admin.token),
      400,
      /^invalid body: password: /,
    )
  })
})

describe(`REGISTRATION=invite (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let admin: { token: string }
  const invite = (email: string, extra: Record<string, unknown> = {}) =>
    http.post('/api/v1/admin/invitations', { email, ...extra }, admin.token)
  beforeAll(async () => {
    server = await startTestServer({ env: { REGISTRATION: 'invite' } })
    http = api(server.url)
    const email = uniqueEmail('admin')
    expect(
      (await runKgs(['user', 'create', email], server.env, undefined, new TextEncoder().encode(`${password}\n`))).code,
    ).toBe(0)
    expect((await server.promote(email)).code).toBe(0)
    admin = { token: (await http.post('/api/v1/auth/login', { email, password })).body.token }
  })
  afterAll(() => server.stop())

  test('without an invitation: 403, saying it takes one', async () => {
    expectError(
      await http.post('/api/v1/auth/register', { email: uniqueEmail('uninvited'), password }),
      403,
      /^registration is by invitation: ask an administrator for an invitation code/,
    )
  })

  test('an invitation: its code shown once and stored only as a digest; single use, for its address only', async () => {
    const email = uniqueEmail('invited')
    const invited = await invite(email.toUpperCase(), { expires_in_days: 2 })
    expect(invited.status).toBe(201)
    expect(invited.headers.get('cache-control')).toBe('no-store')
    const { code } = invited.body
    expect(invited.body.email).toBe(email)
    expect(code).toMatch(/^[A-Za-z0-9_-]{32}$/)
    const days = (Date.parse(invited.body.expires_at) - Date.parse(invited.body.created_at)) / 86_400_000
    expect(days).toBeCloseTo(2, 3)
    const sql = server.systemSql()
    try {
      const [row] = await sql<{ code_hash: Buffer }[]>`SELECT code_hash FROM invitations WHERE email = ${email}`
      expect(Buffer.from(row!.code_hash).equals(createHash('sha256').update(code).digest())).toBe(true)
    } finally {
      await sql.end()
    }
    // Listed without its code.
    const listed = await http.get('/api/v1/admin/invitations', admin.token)
    expect(listed.body.find((i: { email: string }) => i.email === email)).toEqual({
      id: invited.body.id,
      email,
      created_at: invited.body.created_at,
      expires_at: invited.body.expires_at,
    })
    // Another address cannot use it; a wrong code is no better.
    const refusal = /^registration is by invitation: this invitation code is not open for this e-mail address/
    expectError(
      await http.post('/api/v1/auth/register', { email: uniqueEmail('other'), password, invitation: code }),
      403,
      refusal,
    )
    expectError(await http.post('/api/v1/auth/register', { email, password, invitation: 'x'.repeat(32) }), 403, refusal)
    const registered = await http.post('/api/v1/auth/register', { email, password, invitation: code })
    expect(registered.status).toBe(201)
    expect(registered.body.user.email).toBe(email)
    // Used up: gone from the list, and no second account (nor a second use) with it.
    expect(
      (await http.get('/api/v1/admin/invitations', admin.token)).body.map((i: { email: string }) => i.email),
    ).not.toContain(email)
    expectError(await invite(email), 409, 'e-mail address already registered')
  })

  test('an expired or revoked invitation no longer works; inviting an address again replaces its code', async () => {
    const expiring = uniqueEmail('expiring')
    const first = (await invite(expiring)).body
    const second = (await invite(expiring)).body
    expect(second.id).not.toBe(first.id)
    expectError(await http.post('/api/v1/auth/register', { email: expiring, password, invitation: first.code }), 403)
    const sql = server.systemSql()
    try {
      await sql`UPDATE invitations SET expires_at = now() - interval '1 second' WHERE email = ${expiring}`
    } finally {
      await sql.end()
    }
    expectError(await http.post('/api/v1/auth/register', { email: expiring, password, invitation: second.code }), 403)
    const revoked = uniqueEmail('revoked')
    const invitation = (await invite(revoked)).body
    const deleted = await http.call('DELETE', `/api/v1/admin/invitations/${invitation.id}`, { token: admin.token })
    expect(deleted.status).toBe(200)
    expect(deleted.body.email).toBe(revoked)
    expectError(
      await http.call('DELETE', `/api/v1/admin/invitations/${invitation.id}`, { token: admin.token }),
      404,
      'invitation not found',
    )
    expectError(
      await http.post('/api/v1/auth/register', { email: revoked, password, invitation: invitation.code }),
      403,
    )
  })

  test('bad requests and other callers: 400, 403', async () => {
    expectError(await invite('not an address'), 400, 'invalid body: email: expected an e-mail address')
    expectError(
      await invite(uniqueEmail('x'), { expires_in_days: 31 }),
      400,
      /^invalid body: expires_in_days: expected a whole number of days from 1 to 30/,
    )
    const member = await http.post('/api/v1/admin/users', { email: uniqueEmail('member'), password }, admin.token)
    const token = (await http.post('/api/v1/auth/login', { email: member.body.email, password })).body.token
    expectError(
      await http.post('/api/v1/admin/invitations', { email: uniqueEmail('x') }, token),
      403,
      'permission denied: user:manage needs the sysadmin role on this server; a sysadmin can grant it',
    )
    expectError(
      await http.get('/api/v1/admin/invitations', token),
      403,
      'permission denied: user:read needs the sysadmin role on this server; a sysadmin can grant it',
    )
  })

  test(`at most ${OPEN_INVITATIONS_MAX} open invitations`, async () => {
    const sql = server.systemSql()
    try {
      const [open] = await sql<
        { count: number }[]
      >`SELECT count(*)::int AS count FROM invitations WHERE expires_at > now()`
      await sql`
        INSERT INTO invitations (id, email, code_hash, expires_at)
        SELECT gen_random_uuid(), 'bulk-' || n || '@example.com', sha256(n::text::bytea), now() + interval '1 day'
        FROM generate_series(1, ${OPEN_INVITATIONS_MAX - open!.count - 1}) n`
    } finally {
      await sql.end()
    }
    try {
      expect((await invite(uniqueEmail('last'))).status).toBe(201)
      expectError(
        await invite(uniqueEmail('one-too-many')),
        409,
        `${OPEN_INVITATIONS_MAX} invitations are open already: revoke some, or let them expire`,
      )
      // Re-inviting an address already invited takes no more room.
      expect((await invite('bulk-1@example.com')).status).toBe(201)
    } finally {
      const cleanup = server.systemSql()
      await cleanup`DELETE FROM invitations WHERE email LIKE 'bulk-%'`
      await cleanup.end()
    }
  })

  test('the sign-up form asks for the invitation code, and with it makes the account and goes on', async () => {
    expect(await (await server.request('/app')).text()).toContain('<meta name="kgs-registration" content="invite">')
    const client = await registerClient(server.url)
    const signIn = await authorizationPages(server, client)
    expect(signIn.first.html).toContain('You need the invitation code an administrator gave you.')
    const pages = await authorizationPages(server, client, 'create')
    expect(pages.first.html).toContain('<label for="invitation">Invitation code</label>')
    const email = uniqueEmail('form')
    const { code } = (await invite(email)).body
    const wrong = await pages.post('/api/v1/oauth/authorize/register', { email, password, invitation: 'wrong' })
    expect(wrong.status).toBe(403)
    expect(wrong.html).toContain(
      'Registration is by invitation: this invitation code is not open for this e-mail address',
    )
    const made = await pages.post('/api/v1/oauth/authorize/register', { email, password, invitation: code })
    expect(made.status).toBe(200)
    expect(made.html).toContain(`Signed in as ${email}`)
    expect(await signsIn(http, email)).toBe(200)
  })
})
