// OAuth as the clients nobody on this project wrote go through it, end to end against the real
// server, with headless Chromium for the person: the MCP TypeScript SDK's `auth()` (as Claude,
// Cursor and VS Code-style hosts run it), given the base URL or {base}/api/v1 as the server URL,
// with its loopback redirect on 127.0.0.1, localhost and [::1]; and openid-client (strict,
// RFC 9207-checking). These libraries are the judges: the test only plays the person.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { auth, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import * as openid from 'openid-client'
import type { Browser } from 'playwright-core'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { launchBrowser, listenOnLoopback, signInAndDecide } from '../helpers/browser.ts'
import { InMemoryHostProvider } from '../helpers/mcp-host.ts'
import { rejected } from '../helpers/promises.ts'

const account = { email: uniqueEmail('agent-user'), password: 'correct horse battery' }
let server: TestServer
let browser: Browser

beforeAll(async () => {
  server = await startTestServer()
  expect((await api(server.url).post('/api/v1/auth/register', account)).status).toBe(201)
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await server.stop()
})

/** The person's part: the authorization URL in a fresh browser, sign in, Allow; the redirect the agent's listener caught. */
async function allowInBrowser(url: URL, redirect: Promise<URL>): Promise<URL> {
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    await page.goto(url.href)
    await signInAndDecide(page, account, 'Allow')
    return await redirect
  } finally {
    await context.close()
  }
}

const LOOPBACKS = [
  { host: '127.0.0.1', bind: '127.0.0.1' },
  { host: 'localhost', bind: '127.0.0.1' },
  { host: '[::1]', bind: '::1' },
]

describe(`the MCP TypeScript SDK's auth() (${BACKEND})`, () => {
  for (const { host, bind } of LOOPBACKS) {
    for (const target of ['base URL', '/api/v1'] as const) {
      test(`server URL = ${target}, redirect on ${host}: discovery, registration, consent, code, API call, refresh`, async () => {
        const listener = listenOnLoopback(bind)
        try {
          const provider = new InMemoryHostProvider(`http://${host}:${listener.port}/callback`, 'MCP SDK agent')
          const serverUrl = target === 'base URL' ? server.url : `${server.url}/api/v1`
          // A host meets /api/v1 through a 401 (anonymous, with a body) and reads the challenge;
          // given the base URL, the SDK finds the root document by itself (RFC 9728 §3.1).
          let challenge: { resourceMetadataUrl?: URL; scope?: string } = {}
          if (target === '/api/v1') {
            const refused = await fetch(`${serverUrl}/repositories`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{"name":"x"}',
            })
            expect(refused.status).toBe(401)
            challenge = extractWWWAuthenticateParams(refused)
            expect(challenge.resourceMetadataUrl?.href).toBe(
              `${server.url}/.well-known/oauth-protected-resource/api/v1`,
            )
            expect(challenge.scope).toBe('write')
          }
          expect(await auth(provider, { serverUrl, ...challenge })).toBe('REDIRECT')
          const requested = provider.authorizationUrl!
          expect(requested.searchParams.get('resource')).toBe(serverUrl)
          // Least privilege: the challenge's scope, not every scope listed.
          if (target === '/api/v1') expect(requested.searchParams.get('scope')).toBe('write')

          const callback = await allowInBrowser(requested, listener.nextRedirect())
          expect(callback.host).toBe(`${host}:${listener.port}`)
          expect(callback.searchParams.get('iss')).toBe(server.url)
          expect(
            await auth(provider, { serverUrl, authorizationCode: callback.searchParams.get('code')!, ...challenge }),
          ).toBe('AUTHORIZED')
          const first = provider.saved!
          const claims = JSON.parse(Buffer.from(first.access_token.split('.')[1]!, 'base64url').toString()) as {
            aud: string
          }
          expect(claims.aud).toBe(serverUrl)
          const me = await api(server.url).get('/api/v1/users/me', first.access_token)
          expect(me.status).toBe(200)
          expect(me.body.email).toBe(account.email)

          // With tokens saved, auth() refreshes.
          expect(await auth(provider, { serverUrl, ...challenge })).toBe('AUTHORIZED')
          expect(provider.saved!.refresh_token).not.toBe(first.refresh_token)
          expect((await api(server.url).get('/api/v1/users/me', provider.saved!.access_token)).status).toBe(200)
        } finally {
          listener.stop()
        }
      })
    }
  }
})

describe(`openid-client (${BACKEND})`, () => {
  test('registration, authorization with PKCE, state and iss checked, code exchange, refresh, revocation', async () => {
    const listener = listenOnLoopback('127.0.0.1')
    try {
      const redirectUri = `http://127.0.0.1:${listener.port}/callback`
      const options = { algorithm: 'oauth2' as const, execute: [openid.allowInsecureRequests] }
      const config = await openid.dynamicClientRegistration(
        new URL(server.url),
        {
          redirect_uris: [redirectUri],
          client_name: 'openid-client agent',
          token_endpoint_auth_method: 'none',
          scope: 'read write',
        },
        openid.None(),
        options,
      )
      const verifier = openid.randomPKCECodeVerifier()
      const state = openid.randomState()
      const url = openid.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'read',
        code_challenge: await openid.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        resource: `${server.url}/api/v1`,
      })
      const callback = await allowInBrowser(url, listener.nextRedirect())
      const tokens = await openid.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      })
      expect(tokens.scope).toBe('read')
      expect((await api(server.url).get('/api/v1/users/me', tokens.access_token)).status).toBe(200)
      const refreshed = await openid.refreshTokenGrant(config, tokens.refresh_token!)
      expect((await api(server.url).get('/api/v1/users/me', refreshed.access_token)).status).toBe(200)
      await openid.tokenRevocation(config, refreshed.refresh_token!)
      expect(await rejected(openid.refreshTokenGrant(config, refreshed.refresh_token!))).toThrow()
    } finally {
      listener.stop()
    }
  })
})
