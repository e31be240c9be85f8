// The authorization code flow end to end, as a real agent and a real person go through it:
// oauth4webapi registers a client and builds the request, headless Chromium (tests/helpers/browser.ts,
// driven by playwright-core) signs in and presses Allow or Deny, a loopback listener catches the redirect,
// and oauth4webapi validates the response, exchanges the code, refreshes and revokes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import type { Browser } from 'playwright-core'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { launchBrowser, listenOnLoopback, signInAndDecide, type LoopbackListener } from '../helpers/browser.ts'
const insecure = { [oauth.allowInsecureRequests]: true } // the test servers speak http on loopback
const account = { email: uniqueEmail('person'), password: 'correct horse battery' }

let server: TestServer
let browser: Browser
let listener: LoopbackListener
let as: oauth.AuthorizationServer
let client: oauth.Client
let redirectUri: string

beforeAll(async () => {
  server = await startTestServer()
  expect((await api(server.url).post('/api/v1/auth/register', account)).status).toBe(201)
  // The agent's loopback redirect listener (RFC 8252 §7.3).
  listener = listenOnLoopback('127.0.0.1')
  redirectUri = `http://127.0.0.1:${listener.port}/callback`
  const issuer = new URL(server.url)
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
  )
  client = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      { redirect_uris: [redirectUri], client_name: 'E2E agent', scope: 'read write' },
      insecure,
    ),
  )
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  listener?.stop()
  await server.stop()
})

/** Opens the authorize URL in a fresh browser context, signs in, presses `button`; returns the redirect. */
async function authorizeInBrowser(button: 'Allow' | 'Deny') {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint!)
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    scope: 'read write',
    state,
  }).toString()
  const redirected = listener.nextRedirect()
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(url.href)
  await signInAndDecide(page, account, button)
  const callback = await redirected
  await context.close()
  return { callback, verifier, state }
}

describe(`OAuth in a real browser (${BACKEND})`, () => {
  test('Allow: code → tokens → API → refresh → revoke, all validated by oauth4webapi', async () => {
    const { callback, verifier, state } = await authorizeInBrowser('Allow')
    // Checks state and iss (RFC 9207) strictly.
    const params = oauth.validateAuthResponse(as, client, callback, state)
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure),
    )
    expect(tokens.scope).toBe('read write')

    const me = await api(server.url).get('/api/v1/users/me', tokens.access_token)
    expect(me.status).toBe(200)
    expect(me.body.email).toBe(account.email)

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    )
    expect((await api(server.url).get('/api/v1/users/me', refreshed.access_token)).status).toBe(200)

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure),
    )
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), refreshed.access_token, {
        ...insecure,
        additionalParameters: { token_type_hint: 'access_token' },
      }),
    )
    expect((await api(server.url).get('/api/v1/users/me', refreshed.access_token)).status).toBe(401)
    const refused = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure)
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant')
  })

  test('Deny: access_denied with state and iss', async () => {
    const { callback, state } = await authorizeInBrowser('Deny')
    expect(callback.searchParams.get('error')).toBe('access_denied')
    expect(callback.searchParams.get('state')).toBe(state)
    expect(callback.searchParams.get('iss')).toBe(server.url)
    let error: unknown
    try {
      oauth.validateAuthResponse(as, client, callback, state)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(oauth.AuthorizationResponseError)
    expect((error as oauth.AuthorizationResponseError).error).toBe('access_denied')
  })
})
