// The consent page lets the person grant less than a host asks for: read only for a write
// request, write or read for an admin one; never more, whatever the form posted says.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { launchBrowser, listenOnLoopback } from '../helpers/browser.ts'
import {
  browserCookie,
  obtainTokens,
  pkcePair,
  registerClient,
  type TestClient,
  authorizationQuery,
} from '../helpers/oauth.ts'

let server: TestServer
let http: ReturnType<typeof api>
let client: TestClient
const account = { email: uniqueEmail('narrow'), password: 'correct horse battery' }

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
  client = await registerClient(server.url, { client_name: 'Narrowing host', scope: 'read write admin' })
  expect((await http.post('/api/v1/auth/register', account)).status).toBe(201)
})
afterAll(() => server.stop())

/** Signs in for a request of `scope` and stops at the consent page: its HTML and what its form posts. */
async function consentFor(scope: string) {
  const browser = browserCookie()
  const query = authorizationQuery(client, { scope })
  const first = await (
    await fetch(`${server.url}/api/v1/oauth/authorize?${query}`, { headers: { cookie: browser } })
  ).text()
  const authorization_id = /name="authorization_id" value="([^"]+)"/.exec(first)![1]!
  const csrf_token = /name="csrf_token" value="([^"]+)"/.exec(first)![1]!
  const post = (path: string, fields: Record<string, string>, cookie: string) =>
    fetch(server.url + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams(fields),
    })
  const login = await post('/api/v1/oauth/authorize/login', { authorization_id, csrf_token, ...account }, browser)
  const cookies = `${browser}; ${login.headers.get('set-cookie')!.split(';')[0]!}`
  return {
    html: await login.text(),
    decide: (fields: Record<string, string>) =>
      post('/api/v1/oauth/authorize', { authorization_id, csrf_token, ...fields }, cookies),
  }
}

/** The choices the consent page offers: each radio's value, and which is checked. */
const choices = (html: string) =>
  [...html.matchAll(/<input type="radio" name="scope" value="([a-z]+)"( checked)?>([^<]+)</g)].map(
    ([, value, checked, label]) => ({ value, checked: !!checked, label }),
  )

describe(`consent narrows the scope (${BACKEND})`, () => {
  test('the page offers the scope asked for (chosen) and each narrower one; a read request has nothing to narrow', async () => {
    expect(choices((await consentFor('read write')).html)).toEqual([
      { value: 'write', checked: true, label: 'Allow read and write' },
      { value: 'read', checked: false, label: 'Allow read only' },
    ])
    expect(choices((await consentFor('admin')).html).map(({ value }) => value)).toEqual(['admin', 'write', 'read'])
    const read = await consentFor('read')
    expect(choices(read.html)).toEqual([])
    expect(read.html).toContain('name="decision" value="allow"')
  })

  test('"Allow read only" for a write request: the token response says read, and the token reads but cannot write', async () => {
    const tokens = await obtainTokens(server.url, client, account, 'read write', 'read')
    expect(tokens.scope).toBe('read')
    expect((await http.get('/api/v1/users/me', tokens.access_token)).status).toBe(200)
    const write = await http.post(
      '/api/v1/repositories',
      { name: `by a read token ${crypto.randomUUID().slice(0, 6)}` },
      tokens.access_token,
    )
    expectError(
      write,
      403,
      'insufficient scope: repository:create needs a token with the write scope (this one has read); authorize again with write',
    )
    expect(write.headers.get('www-authenticate')).toContain('error="insufficient_scope", scope="write"')
    // A refresh cannot win back what the person did not grant.
    const refresh = (scope?: string) =>
      fetch(`${server.url}/api/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token!,
          client_id: client.client_id,
          ...(client.client_secret ? { client_secret: client.client_secret } : {}),
          ...(scope ? { scope } : {}),
        }),
      })
    const wider = await refresh('read write')
    expect(wider.status).toBe(400)
    expect(((await wider.json()) as { error: string }).error).toBe('invalid_scope')
    const same = await refresh()
    expect(same.status).toBe(200)
    expect(((await same.json()) as { scope: string }).scope).toBe('read')
  })

  test('an admin request narrowed to write writes but cannot delete a repository; allowed as asked, it keeps its scope', async () => {
    const write = await obtainTokens(server.url, client, account, 'admin', 'write')
    expect(write.scope).toBe('write')
    const created = await http.post(
      '/api/v1/repositories',
      { name: `narrowed ${crypto.randomUUID().slice(0, 6)}` },
      write.access_token,
    )
    expect(created.status).toBe(201)
    expectError(
      await http.call('DELETE', `/api/v1/repositories/${created.body.slug}`, {
        token: write.access_token,
        body: { confirm: created.body.slug },
      }),
      403,
      'insufficient scope: repository:delete needs a token with the admin scope (this one has write); authorize again with admin',
    )
    const asked = await obtainTokens(server.url, client, account, 'read write')
    expect(asked.scope).toBe('read write')
    const admin = await obtainTokens(server.url, client, account, 'admin', 'admin')
    expect(admin.scope).toBe('admin')
    expect(
      (
        await http.call('DELETE', `/api/v1/repositories/${created.body.slug}`, {
          token: admin.access_token,
          body: { confirm: created.body.slug },
        })
      ).status,
    ).toBe(200)
  })

  test('a tampered form allowing more than was asked, or a scope that does not exist, is refused and issues no code', async () => {
    for (const [asked, posted] of [
      ['read write', 'admin'],
      ['read', 'write'],
      ['write', 'everything'],
    ]) {
      const consent = await consentFor(asked!)
      const tampered = await consent.decide({ decision: 'allow', scope: posted! })
      expect([asked, posted, tampered.status, tampered.headers.get('location')]).toEqual([asked, posted, 403, null])
      expect(await tampered.text()).toContain('allowed more than the application asked for')
      // The request is still open: the person's own choice goes through.
      const honest = await consent.decide({ decision: 'allow', scope: 'read' })
      expect(honest.status).toBe(303)
      expect(new URL(honest.headers.get('location')!).searchParams.get('code')).toBeTruthy()
    }
  })

  test('in Chromium: the choice is labelled, axe-clean at 1280 and 375 px; "Allow read only" grants read', async () => {
    const listener = listenOnLoopback('127.0.0.1')
    const browser = await launchBrowser()
    try {
      const host = await registerClient(server.url, {
        client_name: 'Browser host',
        redirect_uris: [`http://127.0.0.1:${listener.port}/callback`],
      })
      const { verifier, challenge } = pkcePair()
      const query = authorizationQuery(host, { scope: 'read write' }, challenge)
      const page = await (await browser.newContext()).newPage()
      await page.goto(`${server.url}/api/v1/oauth/authorize?${query}`)
      await page.getByLabel('Email').fill(account.email)
      await page.getByLabel('Password').fill(account.password)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('group', { name: 'What may it do?' }).waitFor()
      expect(await page.getByRole('radio', { name: 'Allow read and write' }).isChecked()).toBe(true)
      for (const width of [1280, 375]) {
        await page.setViewportSize({ width, height: 800 })
        const results = await new AxeBuilder({ page }).analyze()
        expect({
          width,
          violations: results.violations
            .filter((v) => v.impact === 'serious' || v.impact === 'critical')
            .map((v) => v.id),
        }).toEqual({ width, violations: [] })
        expect({ width, fits: (await page.evaluate<number>('document.documentElement.scrollWidth')) <= width }).toEqual(
          { width, fits: true },
        )
      }
      await page.getByRole('radio', { name: 'Allow read only' }).check()
      const redirected = listener.nextRedirect()
      await page.getByRole('button', { name: 'Allow', exact: true }).click()
      const code = (await redirected).searchParams.get('code')!
      const fields = {
        grant_type: 'authorization_code',
        code,
        redirect_uri: host.redirect_uri,
        code_verifier: verifier,
        client_id: host.client_id,
        ...(host.client_secret ? { client_secret: host.client_secret } : {}),
      }
      const tokens = await fetch(`${server.url}/api/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
      })
      expect(tokens.status).toBe(200)
      expect(((await tokens.json()) as { scope: string }).scope).toBe('read')
    } finally {
      await browser.close()
      listener.stop()
    }
  })
})
