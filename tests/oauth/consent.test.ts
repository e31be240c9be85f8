// The sign-in and consent forms of the authorization pages, driven over HTTP as a browser posts
// them: CSRF binding, the pages' session cookie, a single decision, the code or access_denied.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { browserCookie, pkcePair, authorizationQuery } from '../helpers/oauth.ts'

let server: TestServer
let clientId: string
let user: { email: string }
let other: { email: string }
const PASSWORD = 'correct horse battery'
const REDIRECT = 'http://127.0.0.1:41235/callback'
/** The test's browser: its binding cookie goes with every request unless a test says otherwise. */
const BROWSER = browserCookie()

beforeAll(async () => {
  server = await startTestServer()
  const http = api(server.url)
  clientId = (await http.post('/api/v1/oauth/register', { redirect_uris: [REDIRECT], client_name: 'Consent test' }))
    .body.client_id
  user = {
    email: (await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).body.user.email,
  }
  other = {
    email: (await http.post('/api/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).body.user.email,
  }
})
afterAll(() => server.stop())

/** Opens an authorization request; returns the ids its page carries (and the cookie it was sent with). */
async function begin(cookie?: string) {
  const query = authorizationQuery(
    { client_id: clientId, redirect_uri: REDIRECT },
    { state: 's-123', scope: 'read write' },
  )
  const res = await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, {
    headers: { cookie: cookie ? `${BROWSER}; ${cookie}` : BROWSER },
  })
  const html = await res.text()
  return {
    status: res.status,
    html,
    csp: res.headers.get('content-security-policy') ?? '',
    authorizationId: /name="authorization_id" value="([^"]+)"/.exec(html)![1]!,
    csrf: /name="csrf_token" value="([^"]+)"/.exec(html)![1]!,
  }
}

const form = (path: string, fields: Record<string, string>, cookie?: string, browser = BROWSER) =>
  fetch(server.url + path, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: [browser, cookie].filter(Boolean).join('; '),
    },
    body: new URLSearchParams(fields),
  })

async function signIn(email = user.email) {
  const page = await begin()
  const res = await form('/api/v1/oauth/authorize/login', {
    authorization_id: page.authorizationId,
    csrf_token: page.csrf,
    email,
    password: PASSWORD,
  })
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!
  return { page, res, cookie }
}

describe(`sign-in and consent (${BACKEND})`, () => {
  test('signing in shows the consent page and sets the pages’ session cookie', async () => {
    const { res } = await signIn()
    expect(res.status).toBe(200)
    const setCookie = res.headers.get('set-cookie')!
    expect(setCookie).toMatch(
      /^kgs_oauth_session=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/oauth; Max-Age=3600; HttpOnly; SameSite=Lax$/,
    )
    const html = await res.text()
    expect(html).toContain('<button type="submit" name="decision" value="allow">Allow</button>')
    expect(html).toContain('value="deny" class="secondary">Deny</button>')
    expect(html).toContain('Consent test')
    expect(html).toContain('127.0.0.1:41235')
    expect(html).toContain(user.email)
    // The redirect after the consent form must be allowed by form-action.
    expect(res.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:41235")
  })

  test('[::1] redirects: form-action allows the scheme, since no CSP source can hold an IPv6 literal', async () => {
    const v6 = (
      await api(server.url).post('/api/v1/oauth/register', { redirect_uris: ['http://[::1]:41236/callback'] })
    ).body.client_id
    const query = authorizationQuery({ client_id: v6, redirect_uri: 'http://[::1]:41236/callback' })
    const page = await (
      await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: BROWSER } })
    ).text()
    const fields = {
      authorization_id: /name="authorization_id" value="([^"]+)"/.exec(page)![1]!,
      csrf_token: /name="csrf_token" value="([^"]+)"/.exec(page)![1]!,
      email: user.email,
      password: PASSWORD,
    }
    const consent = await form('/api/v1/oauth/authorize/login', fields)
    expect(consent.status).toBe(200)
    const csp = consent.headers.get('content-security-policy')!
    expect(csp).toContain("form-action 'self' http:;")
    expect(csp).not.toContain('[::1]')
  })

  test('a private-use redirect URI is shown whole on the pages (its "host" is the client’s own words)', async () => {
    const uri = 'cursor://anysphere.cursor-mcp/oauth/callback'
    const cursor = (
      await api(server.url).post('/api/v1/oauth/register', { redirect_uris: [uri], client_name: 'Cursor' })
    ).body.client_id
    const query = authorizationQuery({ client_id: cursor, redirect_uri: uri })
    const res = await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: BROWSER } })
    expect(res.status).toBe(200)
    expect(await res.text()).toContain(`<span class="host">${uri}</span>`)
  })

  test('Allow: 303 to the client with a code, state and iss; the decision is final', async () => {
    const { page, cookie } = await signIn()
    const res = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' },
      cookie,
    )
    expect(res.status).toBe(303)
    const location = new URL(res.headers.get('location')!)
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT)
    expect(location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(location.searchParams.get('state')).toBe('s-123')
    expect(location.searchParams.get('iss')).toBe(server.url)
    const again = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' },
      cookie,
    )
    expect(again.status).toBe(400)
    expect(await again.text()).toContain('expired or was already answered')
  })

  test('"Not you? Sign out": the pages’ session ends, the same request asks for a sign-in, and the next user decides', async () => {
    const { page, res, cookie } = await signIn()
    expect(await res.text()).toContain(
      '<button type="submit" name="decision" value="sign-out" class="secondary">Not you? Sign out</button>',
    )
    const out = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'sign-out' },
      cookie,
    )
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toBe(
      'kgs_oauth_session=; Path=/api/v1/oauth; Max-Age=0; HttpOnly; SameSite=Lax',
    )
    const signInPage = await out.text()
    expect(signInPage).toContain('<button type="submit">Sign in</button>')
    expect(signInPage).toContain(`name="authorization_id" value="${page.authorizationId}"`)
    // The old session is gone: a decision with its cookie is refused, and nothing was decided.
    const stale = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' },
      cookie,
    )
    expect(stale.status).toBe(403)
    const next = await begin(cookie)
    expect(next.html).toContain('<button type="submit">Sign in</button>')
    // The other user signs in on the same request and decides it.
    const again = await form('/api/v1/oauth/authorize/login', {
      authorization_id: page.authorizationId,
      csrf_token: page.csrf,
      email: other.email,
      password: PASSWORD,
    })
    expect(again.status).toBe(200)
    expect(await again.text()).toContain(`Signed in as ${other.email}.`)
    const otherCookie = again.headers.get('set-cookie')!.split(';')[0]!
    const allowed = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' },
      otherCookie,
    )
    expect(allowed.status).toBe(303)
    expect(new URL(allowed.headers.get('location')!).searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  test('Deny: access_denied with state and iss', async () => {
    const { page, cookie } = await signIn()
    const res = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'deny' },
      cookie,
    )
    expect(res.status).toBe(303)
    const location = new URL(res.headers.get('location')!)
    expect(location.searchParams.get('error')).toBe('access_denied')
    expect(location.searchParams.get('state')).toBe('s-123')
    expect(location.searchParams.get('iss')).toBe(server.url)
    expect(location.searchParams.get('code')).toBeNull()
  })

  test('within the session the next request goes straight to the consent page', async () => {
    const { cookie } = await signIn()
    const next = await begin(cookie)
    expect(next.status).toBe(200)
    expect(next.html).toContain('>Allow</button>')
    expect(next.html).not.toContain('>Sign in</button>')
    const res = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: next.authorizationId, csrf_token: next.csrf, decision: 'allow' },
      cookie,
    )
    expect(res.status).toBe(303)
  })

  test('a wrong password re-renders the sign-in page with an error (401); no cookie', async () => {
    const page = await begin()
    const res = await form('/api/v1/oauth/authorize/login', {
      authorization_id: page.authorizationId,
      csrf_token: page.csrf,
      email: user.email,
      password: 'wrong password',
    })
    expect(res.status).toBe(401)
    expect(res.headers.get('set-cookie')).toBeNull()
    const html = await res.text()
    expect(html).toContain('Wrong e-mail or password.')
    expect(html).toContain('>Sign in</button>')
  })

  test('CSRF: a missing, wrong, or another authorization’s token is refused (403)', async () => {
    const page = await begin()
    const another = await begin()
    for (const csrf of ['', 'x'.repeat(43), another.csrf]) {
      const res = await form('/api/v1/oauth/authorize/login', {
        authorization_id: page.authorizationId,
        csrf_token: csrf,
        email: user.email,
        password: PASSWORD,
      })
      expect(res.status).toBe(403)
      expect(await res.text()).toContain('CSRF check failed')
    }
    const { cookie } = await signIn()
    const decision = await form(
      '/api/v1/oauth/authorize',
      { authorization_id: page.authorizationId, csrf_token: another.csrf, decision: 'allow' },
      cookie,
    )
    expect(decision.status).toBe(403)
  })

  test('a pending authorization answers only the browser that started it (login CSRF without Fetch Metadata)', async () => {
    // The attacker opens an authorization in their browser and has the victim's browser post its
    // sign-in form, CSRF token and all; no Sec-Fetch-Site says where it came from.
    const attackers = await begin()
    const fields = {
      authorization_id: attackers.authorizationId,
      csrf_token: attackers.csrf,
      email: other.email,
      password: PASSWORD,
    }
    for (const victim of ['', browserCookie()]) {
      const res = await form('/api/v1/oauth/authorize/login', fields, undefined, victim)
      expect(res.status).toBe(403)
      expect(res.headers.get('set-cookie')).toBeNull()
      expect(await res.text()).toContain('started in another browser')
    }
    // The decision likewise, even with the right user's session.
    const { page, cookie } = await signIn()
    const session = cookie.split('; ').find((c) => c.startsWith('kgs_oauth_session='))!
    expect(
      (
        await form(
          '/api/v1/oauth/authorize',
          { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' },
          session,
          browserCookie(),
        )
      ).status,
    ).toBe(403)
    expect(
      (
        await form(
          '/api/v1/oauth/authorize',
          { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' },
          session,
        )
      ).status,
    ).toBe(303)
  })

  test('a browser without the binding cookie is given one on its first authorization request', async () => {
    const query = authorizationQuery({ client_id: clientId, redirect_uri: REDIRECT })
    const fresh = await fetch(`${server.url}/api/v1/oauth/authorize?${query}`)
    expect(fresh.headers.get('set-cookie')).toMatch(
      /^kgs_oauth_browser=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/oauth; HttpOnly; SameSite=Lax$/,
    )
    expect((await begin()).status).toBe(200)
  })

  test('a code_challenge serves one authorization: the same one again is refused', async () => {
    const { challenge } = pkcePair()
    const query = authorizationQuery({ client_id: clientId, redirect_uri: REDIRECT }, {}, challenge)
    const open = () => fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: BROWSER } })
    expect((await open()).status).toBe(200)
    const again = await open()
    expect(again.status).toBe(400)
    expect(await again.text()).toContain('this code_challenge was already used')
  })

  test('a decision needs the pages’ session of the user who signed in for it', async () => {
    const { page } = await signIn()
    const fields = { authorization_id: page.authorizationId, csrf_token: page.csrf, decision: 'allow' }
    expect((await form('/api/v1/oauth/authorize', fields)).status).toBe(403)
    const { cookie: otherCookie } = await signIn(other.email)
    expect((await form('/api/v1/oauth/authorize', fields, otherCookie)).status).toBe(403)
  })

  test('malformed forms: 400 naming the field', async () => {
    const page = await begin()
    const missing = await form('/api/v1/oauth/authorize/login', {
      authorization_id: page.authorizationId,
      csrf_token: page.csrf,
      email: user.email,
    })
    expect(missing.status).toBe(400)
    expect(((await missing.json()) as { error: string }).error).toMatch(/^invalid body: password: /)
    const badDecision = await form('/api/v1/oauth/authorize', {
      authorization_id: page.authorizationId,
      csrf_token: page.csrf,
      decision: 'maybe',
    })
    expect(badDecision.status).toBe(400)
    expect(((await badDecision.json()) as { error: string }).error).toMatch(/^invalid body: decision: /)
    const repeated = await fetch(`${server.url}/api/v1/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `authorization_id=${page.authorizationId}&csrf_token=${page.csrf}&decision=deny&decision=allow`,
    })
    expect(repeated.status).toBe(400)
    expect(await repeated.json()).toEqual({ error: 'parameter decision appears more than once' })
  })

  test('an unknown or expired authorization: 400', async () => {
    const unknown = await form('/api/v1/oauth/authorize/login', {
      authorization_id: crypto.randomUUID(),
      csrf_token: 'x',
      email: user.email,
      password: PASSWORD,
    })
    expect(unknown.status).toBe(400)
  })
})
