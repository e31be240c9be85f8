// CORS as a browser-based client (the MCP Inspector) meets it (docs/spec/decisions.md §5a): from a page on
// another origin, in headless Chromium, the metadata, registration, token, revocation and a
// bearer API call succeed; the authorization pages, which carry cookies, answer no other origin.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { obtainCode, pkcePair, registerClient, authorizationQuery } from '../helpers/oauth.ts'

const account = { email: uniqueEmail('inspector'), password: 'correct horse battery' }
let server: TestServer
let browser: Browser
let page: Page
let otherOrigin: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  server = await startTestServer()
  expect((await api(server.url).post('/api/v1/auth/register', account)).status).toBe(201)
  // The browser-based client's own origin: another port is another origin.
  otherOrigin = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () => new Response('<!doctype html><title>inspector</title>', { headers: { 'content-type': 'text/html' } }),
  })
  browser = await launchBrowser()
  page = await browser.newPage()
  await page.goto(`http://127.0.0.1:${otherOrigin.port}/`)
})
afterAll(async () => {
  await browser?.close()
  otherOrigin?.stop(true)
  await server.stop()
})

interface Seen {
  ok: true
  status: number
  body: unknown
  challenge: string | null
}

/** fetch() run by the page: what a script on the other origin can read, or the error it gets. */
function fetchFromPage(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Seen | { ok: false; error: string }> {
  return page.evaluate(
    async ({ url, init }) => {
      try {
        const res = await fetch(url, init)
        const text = await res.text()
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {}
        return { ok: true as const, status: res.status, body, challenge: res.headers.get('www-authenticate') }
      } catch (error) {
        return { ok: false as const, error: String(error) }
      }
    },
    { url, init },
  )
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
})

describe(`CORS from another origin, in Chromium (${BACKEND})`, () => {
  test('metadata documents', async () => {
    for (const path of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/api/v1',
    ]) {
      expect(await fetchFromPage(server.url + path)).toMatchObject({ ok: true, status: 200 })
    }
  })

  test('registration (a JSON POST, so a preflight first)', async () => {
    const registered = await fetchFromPage(`${server.url}/api/v1/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'] }),
    })
    expect(registered).toMatchObject({ ok: true, status: 201, body: { redirect_uris: ['http://127.0.0.1:9/cb'] } })
  })

  test('token, a bearer API call (preflighted for Authorization), its 401 challenge, and revocation', async () => {
    const client = await registerClient(server.url)
    const { verifier, challenge } = pkcePair()
    const { code } = await obtainCode(server.url, client, account, { challenge })
    const token = await fetchFromPage(
      `${server.url}/api/v1/oauth/token`,
      form({
        grant_type: 'authorization_code',
        code,
        redirect_uri: client.redirect_uri,
        code_verifier: verifier,
        client_id: client.client_id,
      }),
    )
    expect(token).toMatchObject({ ok: true, status: 200 })
    const { access_token, refresh_token } = (token as Seen).body as { access_token: string; refresh_token: string }

    const me = await fetchFromPage(`${server.url}/api/v1/users/me`, {
      headers: { authorization: `Bearer ${access_token}` },
    })
    expect(me).toMatchObject({ ok: true, status: 200, body: { email: account.email } })
    const anonymous = await fetchFromPage(`${server.url}/api/v1/repositories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    expect(anonymous).toMatchObject({ ok: true, status: 401 })
    expect((anonymous as Seen).challenge).toContain('resource_metadata=')

    expect(
      await fetchFromPage(
        `${server.url}/api/v1/oauth/revoke`,
        form({ token: refresh_token, client_id: client.client_id }),
      ),
    ).toMatchObject({ ok: true, status: 200 })
    const refused = await fetchFromPage(
      `${server.url}/api/v1/oauth/token`,
      form({ grant_type: 'refresh_token', refresh_token, client_id: client.client_id }),
    )
    expect(refused).toMatchObject({ ok: true, status: 400, body: { error: 'invalid_grant' } })
  })

  test('the authorization pages answer no other origin', async () => {
    const client = await registerClient(server.url)
    const query = authorizationQuery(client)
    expect(await fetchFromPage(`${server.url}/api/v1/oauth/authorize?${query}`)).toMatchObject({ ok: false })
    expect(
      await fetchFromPage(
        `${server.url}/api/v1/oauth/authorize/login`,
        form({ authorization_id: crypto.randomUUID(), csrf_token: 'x', email: account.email, password: 'x' }),
      ),
    ).toMatchObject({
      ok: false,
    })
    expect(
      await fetchFromPage(
        `${server.url}/api/v1/oauth/authorize`,
        form({ authorization_id: crypto.randomUUID(), csrf_token: 'x', decision: 'allow' }),
      ),
    ).toMatchObject({ ok: false })
    // Nor do they answer a preflight.
    const preflight = await fetch(`${server.url}/api/v1/oauth/authorize/login`, {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:9', 'access-control-request-method': 'POST' },
    })
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
  })
})
