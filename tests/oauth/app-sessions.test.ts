// The web app's sessions over HTTP, on the selected backend (src/oauth/app-session.ts): its refresh
// token only in an HttpOnly cookie, a refresh through the cookie (from kgs's own origin only), one
// grant per browser (a sign-in replaces the one the browser held), the Agents page's list of them
// (GET /oauth/grants?web_app=, `current`, `browser`, `last_used_at`), ending another browser's
// (its pages' sign-in ends too), the sign-out (DELETE /oauth/app-session) and SESSION_IDLE_TTL.
// Each "browser" is a cookie jar. Time is moved by backdating refresh tokens, as tests/accounts/idle.test.ts does.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { browserCookie, obtainTokens, pkcePair, registerClient, authorizationQuery } from '../helpers/oauth.ts'
import { WEB_APP_CLIENT_ID } from '../../src/http/web-app.ts'

const PASSWORD = 'correct horse battery'
const IDLE = '1h'
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0'
let server: TestServer
let http: ReturnType<typeof api>

beforeAll(async () => {
  server = await startTestServer({ env: { SESSION_IDLE_TTL: IDLE } })
  http = api(server.url)
  // The web app's client is registered when its page is first served.
  expect((await server.request('/app')).status).toBe(200)
})
afterAll(() => server.stop())

type Answer = { status: number; body: Record<string, string>; cookies: string[] }

/** A browser: its cookie jar, its User-Agent, and the web app's requests as its pages send them (same origin). */
class Browser {
  readonly jar = new Map<string, string>([browserCookie().split('=') as [string, string]])
  constructor(
    readonly userAgent = CHROME,
    readonly of: () => TestServer = () => server,
  ) {}

  redirectUri = () => `${this.of().url}/app/callback`

  cookie = () => [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ')

  async send(path: string, init: { method: string; form?: Record<string, string>; site?: string }): Promise<Answer> {
    const res = await fetch(this.of().url + path, {
      method: init.method,
      redirect: 'manual',
      headers: {
        cookie: this.cookie(),
        'user-agent': this.userAgent,
        'sec-fetch-site': init.site ?? 'same-origin',
        ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: init.form ? new URLSearchParams(init.form) : undefined,
    })
    const cookies = res.headers.getSetCookie()
    for (const cookie of cookies) {
      const [pair] = cookie.split(';')
      const [name, value] = pair!.split('=') as [string, string]
      if (/Max-Age=0/.test(cookie)) this.jar.delete(name)
      else this.jar.set(name, value)
    }
    const text = await res.text()
    return {
      status: res.status,
      body: text.startsWith('{') ? JSON.parse(text) : { location: res.headers.get('location') ?? '', page: text },
      cookies,
    }
  }

  /** The authorization request of the web app: the sign-in page, or (signed in on the pages) the redirect with the code. */
  async authorize(challenge: string): Promise<Answer> {
    const query = authorizationQuery(
      { client_id: WEB_APP_CLIENT_ID, redirect_uri: this.redirectUri() },
      { state: 's' },
      challenge,
    )
    return this.send(`/api/v1/oauth/authorize?${query}`, { method: 'GET', site: 'none' })
  }

  /** Signs the web app in, as its /app/callback does: the token endpoint's answer. */
  async signIn(email: string): Promise<Answer> {
    const { verifier, challenge } = pkcePair()
    let answer = await this.authorize(challenge)
    if (!answer.body.location) {
      const field = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(answer.body.page!)![1]!
      answer = await this.send('/api/v1/oauth/authorize/login', {
        method: 'POST',
        form: {
          authorization_id: field('authorization_id'),
          csrf_token: field('csrf_token'),
          email,
          password: PASSWORD,
        },
      })
    }
    const code = new URL(answer.body.location!).searchParams.get('code')!
    return this.send('/api/v1/oauth/token', {
      method: 'POST',
      form: {
        grant_type: 'authorization_code',
        code,
        redirect_uri: this.redirectUri(),
        code_verifier: verifier,
        client_id: WEB_APP_CLIENT_ID,
      },
    })
  }

  /** A reload or a new tab: the refresh through the cookie. */
  refresh = (site?: string) =>
    this.send('/api/v1/oauth/token', {
      method: 'POST',
      form: { grant_type: 'refresh_token', client_id: WEB_APP_CLIENT_ID },
      site,
    })
  signOut = (site?: string) => this.send('/api/v1/oauth/app-session', { method: 'DELETE', site })
}

async function account(): Promise<{ email: string; token: string }> {
  const email = uniqueEmail()
  const res = await http.post('/api/v1/auth/register', { email, password: PASSWORD })
  expect(res.status).toBe(201)
  return { email, token: res.body.token }
}

type Grant = {
  id: string
  client_id: string
  browser: string | null
  current: boolean
  created_at: string
  last_used_at: string
}
const appSessions = async (token: string | undefined) =>
  (await http.get('/api/v1/oauth/grants?web_app=true', token)).body as Grant[]

describe(`the web app's sessions (${BACKEND})`, () => {
  test('the refresh token is only in an HttpOnly, SameSite=Strict cookie on /api/v1/oauth; a refresh through it rotates it', async () => {
    const { email } = await account()
    const browser = new Browser()
    const signedIn = await browser.signIn(email)
    expect(signedIn.status).toBe(200)
    expect(Object.keys(signedIn.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type'])
    expect(signedIn.cookies).toEqual([
      expect.stringMatching(
        /^kgs_app_refresh=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/oauth; Max-Age=2592000; HttpOnly; SameSite=Strict$/,
      ),
      'kgs_app_signed_in=1; Path=/app; Max-Age=2592000; HttpOnly; SameSite=Strict',
    ])
    const first = browser.jar.get('kgs_app_refresh')!
    expect((await http.get('/api/v1/users/me', signedIn.body.access_token)).status).toBe(200)

    const refreshed = await browser.refresh()
    expect(refreshed.status).toBe(200)
    expect(refreshed.body.refresh_token).toBeUndefined()
    expect((await http.get('/api/v1/users/me', refreshed.body.access_token)).status).toBe(200)
    expect(browser.jar.get('kgs_app_refresh')).not.toBe(first)
    // Rotation and reuse detection as for any client: the spent token revokes the grant.
    const reused = await http.call('POST', '/api/v1/oauth/token', {
      raw: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first, client_id: WEB_APP_CLIENT_ID }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expectOAuthError(reused, 400, 'invalid_grant', /already used/)
    expectError(await http.get('/api/v1/users/me', refreshed.body.access_token), 401)
    // The browser's next refresh finds its grant over, and forgets the cookie.
    const over = await browser.refresh()
    expectOAuthError(over, 400, 'invalid_grant', /revoked/)
    expect(over.cookies).toEqual([
      'kgs_app_refresh=; Path=/api/v1/oauth; Max-Age=0; HttpOnly; SameSite=Strict',
      'kgs_app_signed_in=; Path=/app; Max-Age=0; HttpOnly; SameSite=Strict',
    ])
    expect(browser.jar.has('kgs_app_refresh')).toBe(false)
  })

  test('the cookie counts only on requests from kgs’s own origin; other clients keep their refresh token in the answer', async () => {
    const { email } = await account()
    const browser = new Browser()
    expect((await browser.signIn(email)).status).toBe(200)
    const cookie = browser.jar.get('kgs_app_refresh')
    for (const site of ['cross-site', 'same-site'])
      expectOAuthError(await browser.refresh(site), 400, 'invalid_request', /refresh_token is required/)
    expect(browser.jar.get('kgs_app_refresh')).toBe(cookie)
    expect((await browser.refresh()).status).toBe(200)
    const agent = await registerClient(server.url)
    const tokens = await obtainTokens(server.url, agent, { email, password: PASSWORD })
    expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  test('a browser holds one grant of the app: reloads refresh it, a sign-in there replaces it; another browser has its own', async () => {
    const { email, token } = await account()
    const chrome = new Browser(CHROME)
    const first = await chrome.signIn(email)
    for (let reload = 0; reload < 5; reload++) expect((await chrome.refresh()).status).toBe(200)
    expect(await appSessions(token)).toHaveLength(1)
    // Signing in again in the same browser (the pages remember it: no password) replaces its grant.
    const again = await chrome.signIn(email)
    expect(again.status).toBe(200)
    expectError(await http.get('/api/v1/users/me', first.body.access_token), 401)
    const [only] = await appSessions(token)
    expect((await appSessions(again.body.access_token)).map((g) => [g.id, g.current, g.browser])).toEqual([
      [only!.id, true, 'Chrome 131 on Linux'],
    ])

    const firefox = new Browser(FIREFOX)
    const other = await firefox.signIn(email)
    expect(other.status).toBe(200)
    const listed = await appSessions(other.body.access_token)
    expect(listed.map((g) => [g.browser, g.current])).toEqual([
      ['Chrome 131 on Linux', false],
      ['Firefox 133 on Windows', true],
    ])
    for (const g of listed) expect(Date.parse(g.last_used_at)).toBeGreaterThanOrEqual(Date.parse(g.created_at))
    // Agents are listed apart from the app's sessions; a session token is no grant (nothing current).
    const agent = await registerClient(server.url, { client_name: 'Agent' })
    await obtainTokens(server.url, agent, { email, password: PASSWORD })
    const agents = (await http.get('/api/v1/oauth/grants?web_app=false', token)).body as Grant[]
    expect(agents.map((g) => [g.client_id, g.browser, g.current])).toEqual([[agent.client_id, null, false]])
    expect(((await http.get('/api/v1/oauth/grants', token)).body as Grant[]).map((g) => g.client_id).sort()).toEqual(
      [agent.client_id, WEB_APP_CLIENT_ID, WEB_APP_CLIENT_ID].sort(),
    )
    expectError(await http.get('/api/v1/oauth/grants?web_app=maybe', token), 400, /web_app/)
  })

  test("ending another browser's session signs it out: its refresh fails, and the pages ask it for the password again", async () => {
    const { email } = await account()
    const here = new Browser(CHROME)
    const there = new Browser(FIREFOX)
    const mine = await here.signIn(email)
    expect((await there.signIn(email)).status).toBe(200)
    const theirs = (await appSessions(mine.body.access_token)).find((g) => !g.current)!
    const ended = await http.call('DELETE', `/api/v1/oauth/grants/${theirs.id}`, { token: mine.body.access_token })
    expect(ended.status).toBe(200)
    expect(ended.body).toMatchObject({
      id: theirs.id,
      client_id: WEB_APP_CLIENT_ID,
      browser: 'Firefox 133 on Windows',
      current: false,
    })
    expectOAuthError(await there.refresh(), 400, 'invalid_grant')
    expect(there.jar.has('kgs_app_refresh')).toBe(false)
    // Its pages' sign-in ended with it: a new authorization there shows the sign-in page, not a code.
    const { challenge } = pkcePair()
    const page = await there.authorize(challenge)
    expect(page.status).toBe(200)
    expect(page.body.page).toContain('name="password"')
    // This browser goes on, and signs in again without a password.
    expect((await here.refresh()).status).toBe(200)
    expect((await here.authorize(pkcePair().challenge)).status).toBe(303)
    expect((await appSessions(mine.body.access_token)).map((g) => g.current)).toEqual([true])
  })

  test('DELETE /oauth/app-session signs the browser out: its grant revoked, the pages’ sign-in ended, both cookies cleared; from kgs’s own origin only', async () => {
    const { email, token } = await account()
    const browser = new Browser()
    const signedIn = await browser.signIn(email)
    expectError(await browser.signOut('cross-site'), 403, "the web app signs out from kgs's own pages only")
    expectError(await browser.signOut('same-site'), 403)
    expect((await http.get('/api/v1/users/me', signedIn.body.access_token)).status).toBe(200)

    const out = await browser.signOut()
    expect(out.status).toBe(200)
    expect(out.body).toEqual({})
    expect(out.cookies.map((c) => c.split(';')[0])).toEqual([
      'kgs_app_refresh=',
      'kgs_app_signed_in=',
      'kgs_oauth_session=',
    ])
    expect(out.cookies.every((c) => c.includes('Max-Age=0'))).toBe(true)
    expectError(await http.get('/api/v1/users/me', signedIn.body.access_token), 401)
    expect(await appSessions(token)).toEqual([])
    expectOAuthError(await browser.refresh(), 400, 'invalid_request')
    const page = await browser.authorize(pkcePair().challenge)
    expect(page.body.page).toContain('name="password"')
    // Without a cookie it ends nothing and says the same.
    expect((await new Browser().signOut()).status).toBe(200)
  })

  test(`a session unused for longer than SESSION_IDLE_TTL (${IDLE}) leaves the list and ends at its refresh, the cookie forgotten`, async () => {
    const { email, token } = await account()
    const browser = new Browser()
    expect((await browser.signIn(email)).status).toBe(200)
    const [session] = await appSessions(token)
    const sql = server.context.pools.system
    const backdate = (minutes: number) =>
      sql`UPDATE oauth_refresh_tokens SET created_at = now() - make_interval(mins => ${minutes}) WHERE family_id = ${session!.id}`
    await backdate(59)
    expect(await appSessions(token)).toHaveLength(1)
    expect((await browser.refresh()).status).toBe(200)
    await backdate(61)
    expect(await appSessions(token)).toEqual([])
    const idle = await browser.refresh()
    expectOAuthError(idle, 400, 'invalid_grant', /unused longer than SESSION_IDLE_TTL/)
    expect(browser.jar.has('kgs_app_refresh')).toBe(false)
  })
})

describe(`the web app's sessions under THROTTLE_TOKEN_PER_CLIENT (${BACKEND})`, () => {
  let throttled: TestServer
  beforeAll(async () => {
    throttled = await startTestServer({ env: { THROTTLE_TOKEN_PER_CLIENT: '2/1h' } })
    expect((await throttled.request('/app')).status).toBe(200)
  })
  afterAll(() => throttled.stop())

  test('a signed-out browser loading the app (a refresh without any token) draws nothing from the budget', async () => {
    const visitor = () => new Browser(CHROME, () => throttled)
    for (let load = 0; load < 5; load++)
      expectOAuthError(await visitor().refresh(), 400, 'invalid_request', /holds no sign-in of the web app/)
    const email = uniqueEmail()
    expect((await api(throttled.url).post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
    const browser = visitor()
    expect((await browser.signIn(email)).status).toBe(200)
    expect((await browser.refresh()).status).toBe(200)
    // Refreshes that guess a token do count: the third is refused, and signed-out loads still are not.
    const guess = () =>
      browser.send('/api/v1/oauth/token', {
        method: 'POST',
        form: { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43), client_id: WEB_APP_CLIENT_ID },
      })
    for (let attempt = 0; attempt < 2; attempt++) expectOAuthError(await guess(), 400, 'invalid_grant')
    expect((await guess()).status).toBe(429)
    expectOAuthError(await visitor().refresh(), 400, 'invalid_request')
  })
})
