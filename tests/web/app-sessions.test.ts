// The web app's sessions in headless Chromium, on the selected backend: a browser holds one grant
// of the app however often it reloads or opens a tab (counted through GET /oauth/grants?web_app=true,
// the list the Agents page shows), with no token where page script could read it; a second
// browser (context) is a second session, listed on the first's Agents page and ended from there,
// after which the second is signed out at its next request and its next load; signing out ends the
// browser's session in every tab, and the next sign-in asks for the password.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'

const account = { email: uniqueEmail('sessions'), password: 'correct horse battery' }
let server: TestServer
let http: ReturnType<typeof api>
/** The account's session token: the API's view of the grants, from outside the browsers. */
let token: string
let browser: Browser
let here: BrowserContext
let tab: Page

beforeAll(async () => {
  server = await startTestServer()
  http = api(server.url)
  const registered = await http.post('/api/v1/auth/register', account)
  expect(registered.status).toBe(201)
  token = registered.body.token
  browser = await launchBrowser({ offNetwork: true })
  here = await browser.newContext()
  tab = await here.newPage()
})

afterAll(async () => {
  await browser?.close()
  await server.stop()
})

type Grant = { id: string; browser: string | null }
/** The account's app sessions, as the Agents page lists them. */
const appSessions = async () => (await http.get('/api/v1/oauth/grants?web_app=true', token)).body as Grant[]

/** Opens the app in `page` and waits until it is signed in (the header's navigation) or shows its Sign in button. */
async function load(page: Page, path = '/app'): Promise<'signed-in' | 'signed-out'> {
  await page.goto(server.url + path)
  const shell = page.locator('header nav')
  const signIn = page.getByRole('button', { name: 'Sign in' })
  await shell.or(signIn).first().waitFor()
  return (await shell.count()) > 0 ? 'signed-in' : 'signed-out'
}

async function signIn(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByLabel('Email').fill(account.email)
  await page.getByLabel('Password').fill(account.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('header nav').waitFor()
}

/** What page script can read where tokens could be kept. */
const readable = (page: Page) =>
  page.evaluate<string>('JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie])')

describe(`the web app's sessions in the browser (${BACKEND})`, () => {
  test('a browser with no session shows Sign in without asking the token endpoint (no failed request logged)', async () => {
    const fresh = await browser.newContext()
    try {
      const page = await fresh.newPage()
      const failed: string[] = []
      page.on('console', (message) => message.type() === 'error' && failed.push(message.text()))
      // Recorded in the page: a listener on Playwright's request events would race under Bun (tests/helpers/browser.ts).
      await page.addInitScript(
        `{ const fetch = window.fetch.bind(window); window.__sent = []; window.fetch = (input, init) => (window.__sent.push(String(input)), fetch(input, init)) }`,
      )
      expect(await load(page)).toBe('signed-out')
      expect(await page.evaluate<string[]>('window.__sent')).toEqual([])
      expect(failed).toEqual([])
    } finally {
      await fresh.close()
    }
  })

  test('five reloads and a second tab: one grant of the app for this browser, no token readable by script', async () => {
    expect(await load(tab)).toBe('signed-out')
    await signIn(tab)
    for (let reload = 0; reload < 5; reload++) {
      await tab.reload()
      await tab.locator('header').getByText(account.email).waitFor()
      // No new sign-in: the document is the reloaded one, not the end of a trip through the authorization pages.
      expect(await tab.evaluate<string>("performance.getEntriesByType('navigation')[0].type")).toBe('reload')
      expect(new URL(tab.url()).pathname).toBe('/app')
    }
    const second = await here.newPage()
    expect(await load(second, '/app/agents')).toBe('signed-in')
    await second.getByRole('heading', { level: 1, name: 'Connected agents' }).waitFor()
    const sessions = await appSessions()
    expect(sessions).toHaveLength(1)
    expect(sessions[0]!.browser).toMatch(/^Chrome \d+ on Linux$/)
    await second.locator('main tbody tr').filter({ hasText: 'This browser' }).waitFor()
    for (const page of [tab, second]) expect(await readable(page)).toBe('[{},{},""]')
    await second.close()
  })

  test("a second browser's session is listed on the first's Agents page and ended from there: the second is signed out", async () => {
    const there = await browser.newContext()
    try {
      const other = await there.newPage()
      expect(await load(other)).toBe('signed-out')
      await signIn(other)
      expect(await appSessions()).toHaveLength(2)

      await load(tab, '/app/agents')
      const rows = tab.getByRole('table', { name: 'Browsers signed in to this app' }).locator('tbody tr')
      await rows.filter({ hasText: 'Another browser' }).waitFor()
      expect(await rows.count()).toBe(2)
      expect(await rows.filter({ hasText: 'This browser' }).getByRole('button', { name: 'Sign out' }).count()).toBe(1)
      const results = await new AxeBuilder({ page: tab }).analyze()
      expect(
        results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id),
      ).toEqual([])
      await rows
        .filter({ hasText: 'Another browser' })
        .getByRole('button', { name: /^End the session in Chrome \d+ on Linux/ })
        .click()
      await tab
        .getByRole('group', { name: /^End the session in Chrome \d+ on Linux\?$/ })
        .getByRole('button', { name: 'End' })
        .click()
      await tab.locator('main').getByRole('status').filter({ hasText: 'that browser is signed out' }).waitFor()
      // The list as it is reloaded: this browser's session alone.
      await rows.filter({ hasText: 'This browser' }).waitFor()
      expect(await rows.count()).toBe(1)
      expect(await appSessions()).toHaveLength(1)

      // Its next request finds its grant revoked and the refresh refused: the app shows Sign in.
      await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click()
      await other.getByRole('button', { name: 'Sign in' }).waitFor()
      expect(await load(other)).toBe('signed-out')
      // Its sign-in on the authorization pages ended with it: the password is asked again.
      await other.getByRole('button', { name: 'Sign in' }).click()
      await other.getByLabel('Password').waitFor()
    } finally {
      await there.close()
    }
  })

  test('sign-out ends the session in every tab of the browser; the next sign-in asks for the password', async () => {
    const second = await here.newPage()
    expect(await load(second)).toBe('signed-in')
    await load(tab, '/app/agents')
    await tab
      .locator('main tbody tr')
      .filter({ hasText: 'This browser' })
      .getByRole('button', { name: 'Sign out' })
      .click()
    await tab.getByRole('button', { name: 'Sign in' }).waitFor()
    expect(await appSessions()).toEqual([])
    expect((await here.cookies()).map((cookie) => cookie.name)).not.toContain('kgs_app_refresh')
    // The other tab's next request: signed out too.
    await second.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click()
    await second.getByRole('button', { name: 'Sign in' }).waitFor()
    await tab.getByRole('button', { name: 'Sign in' }).click()
    await tab.getByLabel('Password').waitFor()
  })
})
