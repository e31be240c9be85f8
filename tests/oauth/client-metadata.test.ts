// Client ID Metadata Documents over real HTTPS on loopback: a kgs child process trusts the test's
// own certificate through NODE_EXTRA_CA_CERTS and may reach loopback through
// CLIENT_METADATA_FETCH_ALLOW_PRIVATE, exactly as the media fetcher's tests reach their loopback
// server through MEDIA_FETCH_ALLOW_PRIVATE (tests/media/fetch-job.test.ts). Without that setting
// (the default) every loopback, private and link-local address is refused before any connection;
// without the certificate trusted, nothing gets through either.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectOAuthError, uniqueEmail } from '../helpers/api.ts'
import { startTestServer, type ServerProcess, type TestServer } from '../helpers/server.ts'
import {
  clientDocument,
  startDocumentServer,
  startServerTrusting,
  testCertificate,
  type DocumentServer,
} from '../helpers/client-metadata.ts'
import { browserCookie, obtainCode, obtainTokens, pkcePair, authorizationQuery } from '../helpers/oauth.ts'
import { freshSeconds, METADATA_DOCUMENT_MAX_BYTES } from '../../src/oauth/client-metadata.ts'
import { createLogger } from '../../src/log.ts'
import { withSystemDb } from '../security/system-db.ts'

const CALLBACK = 'http://127.0.0.1:43123/callback'
const account = { email: uniqueEmail('cimd'), password: 'correct horse battery' }
const json = (body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json', ...headers } })
/** Whether the /flaky document is served (else 404). */
let flakyServed = true

const certificate = testCertificate()
let docs: DocumentServer
let kgs: ServerProcess
/** The account's session token (the grants list takes only one). */
let session: string
const url = (path: string) => `${docs.origin}${path}`

beforeAll(async () => {
  docs = startDocumentServer(certificate, (path, origin) => {
    const self = origin + path
    switch (path) {
      case '/cached/client.json':
        return json(clientDocument(self, CALLBACK, { client_name: 'Cached host' }), {
          'cache-control': 'public, max-age=300',
        })
      case '/uncached/client.json':
        return json(clientDocument(self, CALLBACK), { 'cache-control': 'no-store' })
      case '/other/client.json':
        return json(clientDocument(self, CALLBACK), { 'cache-control': 'no-store' })
      case '/hostile/client.json':
        return json(clientDocument(self, CALLBACK, { client_name: '<img src=x onerror=alert(1)>"Trusted"' }))
      case '/flaky/client.json':
        return flakyServed ? json(clientDocument(self, CALLBACK)) : undefined
      case '/mismatch/client.json':
        return json(clientDocument(`${origin}/somebody-else.json`, CALLBACK))
      case '/oversize/client.json':
        return json(clientDocument(self, CALLBACK, { padding: 'x'.repeat(METADATA_DOCUMENT_MAX_BYTES) }))
      case '/slow/client.json':
        return new Promise<Response>(() => {})
      case '/redirect/client.json':
        return new Response(null, { status: 302, headers: { location: '/cached/client.json' } })
      case '/secret/client.json':
        return json(clientDocument(self, CALLBACK, { token_endpoint_auth_method: 'client_secret_basic' }))
      case '/no-redirects/client.json':
        return json(clientDocument(self, CALLBACK, { redirect_uris: [] }))
      case '/html/client.json':
        return new Response(JSON.stringify(clientDocument(self, CALLBACK)), {
          headers: { 'content-type': 'text/html' },
        })
    }
    return undefined
  })
  kgs = await startServerTrusting(certificate, { CLIENT_METADATA_FETCH_TIMEOUT: '1s' })
  const registered = await api(kgs.url).post('/api/v1/auth/register', account)
  expect(registered.status).toBe(201)
  session = registered.body.token
}, 60_000)

afterAll(async () => {
  await kgs?.stop()
  docs?.stop()
})

/** GET /authorize for `clientId` as a browser: the status and the page. */
async function authorizePage(
  server: { url: string },
  clientId: string,
  redirectUri = CALLBACK,
): Promise<{ status: number; page: string }> {
  const query = authorizationQuery({ client_id: clientId, redirect_uri: redirectUri })
  const res = await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: browserCookie() } })
  return { status: res.status, page: await res.text() }
}

/** A form post to an OAuth endpoint, answered as JSON. */
const postForm = (server: { url: string }, path: string, fields: Record<string, string>) =>
  fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  }).then(async (res) => ({
    status: res.status,
    body: await res.json(),
  }))

const hitsOf = (path: string) => docs.hits.filter((hit) => hit === path).length

describe(`client ID metadata documents (${BACKEND})`, () => {
  test('the authorization server metadata says they are supported', async () => {
    const metadata = (await (await fetch(`${kgs.url}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >
    expect(metadata.client_id_metadata_document_supported).toBe(true)
  })

  test('a client known by its document signs in, gets tokens and refreshes them; the document is fetched once while its max-age lasts', async () => {
    const client = { client_id: url('/cached/client.json'), redirect_uri: CALLBACK }
    const { status, page } = await authorizePage(kgs, client.client_id)
    expect(status).toBe(200)
    // The consent and sign-in pages name the host that publishes the document, not only its chosen name.
    expect(page).toContain(`<strong>Cached host</strong> from <span class="host">${new URL(docs.origin).host}</span>`)
    const tokens = await obtainTokens(kgs.url, client, account)
    expect((await api(kgs.url).get('/api/v1/users/me', tokens.access_token)).body.email).toBe(account.email)
    const refreshed = await fetch(`${kgs.url}/api/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: client.client_id,
      }),
    })
    expect(refreshed.status).toBe(200)
    expect(hitsOf('/cached/client.json')).toBe(1)
    // A grant lists the client by its document's name.
    const grants = await api(kgs.url).get('/api/v1/oauth/grants', session)
    expect(grants.body).toContainEqual(
      expect.objectContaining({ client_id: client.client_id, client_name: 'Cached host' }),
    )
  })

  test('a document with no-store is fetched again at each use (authorization, token)', async () => {
    const before = hitsOf('/uncached/client.json')
    await obtainTokens(kgs.url, { client_id: url('/uncached/client.json'), redirect_uri: CALLBACK }, account)
    expect(hitsOf('/uncached/client.json') - before).toBe(2)
  })

  test("the client's self-chosen name is shown as text, never as markup", async () => {
    const { status, page } = await authorizePage(kgs, url('/hostile/client.json'))
    expect(status).toBe(200)
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;Trusted&quot;')
    expect(page).not.toContain('<img')
  })

  test('documents that cannot be used are refused on the authorization page, each saying why', async () => {
    const cases: [string, RegExp][] = [
      ['/mismatch/client.json', /names the client_id .*somebody-else\.json.*, not the URL it was fetched from/],
      ['/oversize/client.json', new RegExp(`more than the limit of ${METADATA_DOCUMENT_MAX_BYTES}`)],
      ['/slow/client.json', /no complete answer within 1000 ms/],
      ['/redirect/client.json', /HTTP 302, a redirect \(not followed\)/],
      ['/secret/client.json', /asks for token_endpoint_auth_method .*client_secret_basic.*; only none is supported/],
      ['/no-redirects/client.json', /has no redirect_uris/],
      ['/html/client.json', /is served as .*text\/html.*, not application\/json/],
      ['/missing/client.json', /HTTP 404/],
    ]
    for (const [path, why] of cases) {
      const { status, page } = await authorizePage(kgs, url(path))
      expect({ path, status }).toEqual({ path, status: 400 })
      expect(page).toMatch(why)
    }
  })

  test('a redirect_uri the document does not list is refused', async () => {
    const { status, page } = await authorizePage(kgs, url('/cached/client.json'), 'http://127.0.0.1:43123/elsewhere')
    expect(status).toBe(400)
    expect(page).toContain('The redirect_uri is not registered for this client.')
  })

  test('client_ids that are not https URLs with a path are not documents: unknown clients', async () => {
    for (const clientId of [
      url('/cached/client.json').replace('https:', 'http:'),
      `${docs.origin}/`,
      `${url('/cached/client.json')}#x`,
      url('/a/../cached/client.json'),
    ]) {
      const { status, page } = await authorizePage(kgs, clientId)
      expect({ clientId, status }).toEqual({ clientId, status: 400 })
      expect(page).toContain('Unknown client.')
    }
  })

  test('the code goes only to the client it was issued to; a document gone since is invalid_client at the token endpoint', async () => {
    const { verifier, challenge } = pkcePair()
    const issued = await obtainCode(
      kgs.url,
      { client_id: url('/cached/client.json'), redirect_uri: CALLBACK },
      account,
      { challenge },
    )
    const exchange = (clientId: string, code: string, codeVerifier: string) =>
      fetch(`${kgs.url}/api/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: CALLBACK,
          code_verifier: codeVerifier,
          client_id: clientId,
        }),
      }).then(async (res) => ({ status: res.status, body: await res.json() }))
    expectOAuthError(
      await exchange(url('/other/client.json'), issued.code, verifier),
      400,
      'invalid_grant',
      /another client/,
    )

    const flaky = pkcePair()
    const flakyCode = await obtainCode(
      kgs.url,
      { client_id: url('/flaky/client.json'), redirect_uri: CALLBACK },
      account,
      { challenge: flaky.challenge },
    )
    flakyServed = false
    try {
      expectOAuthError(
        await exchange(url('/flaky/client.json'), flakyCode.code, flaky.verifier),
        401,
        'invalid_client',
        /HTTP 404/,
      )
    } finally {
      flakyServed = true
    }
  })
})

describe(`client ID metadata documents: what is not reached (${BACKEND})`, () => {
  let guarded: TestServer
  let untrusting: TestServer
  /** The log lines of each server (warnings and errors). */
  const logged = { guarded: '', untrusting: '' }
  const logger = (which: keyof typeof logged) => createLogger('warn', (text) => (logged[which] += text))
  beforeAll(async () => {
    // The default: no private addresses.
    guarded = await startTestServer({ log: logger('guarded') })
    // Private addresses allowed, but the test certificate not trusted (this process has no NODE_EXTRA_CA_CERTS for it).
    untrusting = await startTestServer({
      env: { CLIENT_METADATA_FETCH_ALLOW_PRIVATE: 'true' },
      log: logger('untrusting'),
    })
  })
  afterAll(async () => {
    await guarded?.stop()
    await untrusting?.stop()
  })

  /** The client rows of these ids: a document never fetched leaves none. */
  const clientRows = (server: TestServer, ids: string[]) =>
    withSystemDb(server, async (sql) => [...(await sql`SELECT id FROM oauth_clients WHERE id = ANY(${ids})`)])
  const SENTENCE = 'its metadata document could not be fetched from a public address'

  test('loopback, private, link-local and IPv4-mapped addresses are refused before any connection: one sentence outside, the detail in the log', async () => {
    const port = new URL(docs.origin).port
    const before = docs.hits.length
    const cases: [string, RegExp][] = [
      [url('/cached/client.json'), /127\.0\.0\.1 is not a public address \(loopback\)/],
      [
        `https://localhost:${port}/cached/client.json`,
        /localhost resolves to (127\.0\.0\.1|::1), not a public address \(loopback\)/,
      ],
      [`https://[::1]:${port}/cached/client.json`, /\[::1\] is not a public address \(loopback\)/],
      [`https://[::ffff:7f00:1]:${port}/cached/client.json`, /not a public address \(IPv4-mapped loopback\)/],
      ['https://10.0.0.1/client.json', /10\.0\.0\.1 is not a public address \(private\)/],
      ['https://169.254.169.254/latest/client.json', /169\.254\.169\.254 is not a public address \(link-local\)/],
    ]
    for (const [clientId, detail] of cases) {
      logged.guarded = ''
      const { status, page } = await authorizePage(guarded, clientId)
      expect({ clientId, status }).toEqual({ clientId, status: 400 })
      expect(page).toContain(`client ID ${clientId} cannot be used: ${SENTENCE}.</p>`)
      expect(page).not.toMatch(
        /resolves|not a public address|loopback|private|link-local|127\.0\.0\.1 is|::1\]? is|10\.0\.0\.1 is/,
      )
      // The token endpoint says the same, and the log has what was found, each time.
      const token = await postForm(guarded, '/api/v1/oauth/token', {
        grant_type: 'authorization_code',
        client_id: clientId,
        code: 'x',
        redirect_uri: CALLBACK,
        code_verifier: 'x'.repeat(43),
      })
      expectOAuthError(token, 401, 'invalid_client', new RegExp(`^this client ID cannot be used: ${SENTENCE}$`))
      const lines = logged.guarded
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
      expect(lines).toHaveLength(2)
      for (const line of lines) {
        expect(line).toMatchObject({
          level: 'warn',
          msg: 'oauth: a client metadata document could not be fetched before any connection',
          client_id: clientId,
        })
        expect(line.reason).toMatch(detail)
      }
    }
    expect(docs.hits.length).toBe(before)
    expect(
      await clientRows(
        guarded,
        cases.map(([clientId]) => clientId),
      ),
    ).toEqual([])
  })

  test('a name that does not resolve, and a connection refused, are the same sentence; the resolver and the socket speak only to the log', async () => {
    const unresolvable = `https://no-such-host-${crypto.randomUUID().slice(0, 8)}.invalid/client.json`
    // Allowed to try loopback, but nothing listens on port 1.
    const refused = 'https://127.0.0.1:1/client.json'
    for (const [server, which, clientId, detail] of [
      [guarded, 'guarded', unresolvable, /cannot resolve no-such-host-.*\.invalid: /],
      [untrusting, 'untrusting', refused, /ECONNREFUSED 127\.0\.0\.1:1/],
    ] as const) {
      logged[which] = ''
      const { status, page } = await authorizePage(server, clientId)
      expect(status).toBe(400)
      expect(page).toContain(`client ID ${clientId} cannot be used: ${SENTENCE}.</p>`)
      expect(page).not.toMatch(/resolve|ENOTFOUND|EAI_|ECONNREFUSED|connect /)
      expect(JSON.parse(logged[which].trim()).reason).toMatch(detail)
      expect(await clientRows(server, [clientId])).toEqual([])
    }
  })

  test('a certificate no configured authority vouches for is refused', async () => {
    const { status, page } = await authorizePage(untrusting, url('/cached/client.json'))
    expect(status).toBe(400)
    expect(page).toMatch(/could not be fetched: .*(certificate|self.signed|verify)/i)
  })
})

describe('cache lifetimes of documents', () => {
  test('Cache-Control wins over Expires; no-store and no-cache are not kept; a day at most', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(freshSeconds({ 'cache-control': 'public, max-age=300' }, now)).toBe(300)
    expect(freshSeconds({ 'cache-control': 'max-age=300, no-store' }, now)).toBe(0)
    expect(freshSeconds({ 'cache-control': 'no-cache' }, now)).toBe(0)
    expect(freshSeconds({ 'cache-control': 'max-age=99999999' }, now)).toBe(86_400)
    expect(freshSeconds({ expires: 'Thu, 01 Jan 2026 00:10:00 GMT', date: 'Thu, 01 Jan 2026 00:00:00 GMT' }, now)).toBe(
      600,
    )
    expect(freshSeconds({ expires: 'Wed, 31 Dec 2025 00:00:00 GMT' }, now)).toBe(0)
    expect(freshSeconds({ expires: 'garbage' }, now)).toBe(0)
    expect(freshSeconds({}, now)).toBe(0)
  })
})
