// Swagger UI as a newcomer uses it, in headless Chromium with every request that leaves the
// machine refused: the page loads from kgs alone, "Authorize" signs in through kgs's own OAuth
// server (authorization code + PKCE, in a popup), and "Try it out" calls the API with the token.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { REFUSED_OFF_MACHINE, launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { SWAGGER_CLIENT_ID } from '../../src/http/swagger-ui.ts'

const account = { email: uniqueEmail('swagger'), password: 'correct horse battery' }

let server: TestServer
let browser: Browser
let context: BrowserContext
let page: Page
let repository: { id: string; name: string }
/** Every request the pages tried to send off the machine. */
const offsite: string[] = []
/** What the page's Content-Security-Policy refused (it must not need more than kgs). */
const blocked: string[] = []

beforeAll(async () => {
  server = await startTestServer()
  const http = api(server.url)
  const registered = await http.post('/api/v1/auth/register', account)
  expect(registered.status).toBe(201)
  const created = await http.post('/api/v1/repositories', { name: 'Swagger tour' }, registered.body.token)
  expect(created.status).toBe(201)
  repository = created.body
  browser = await launchBrowser({ offNetwork: true })
  context = await browser.newContext()
  page = await context.newPage()
  page.on('console', (message) => {
    if (message.type() !== 'error') return
    if (message.text().includes('Content Security Policy')) blocked.push(message.text())
    if (message.text().includes(REFUSED_OFF_MACHINE)) offsite.push(message.location().url)
  })
})

afterAll(async () => {
  await browser?.close()
  await server.stop()
})

/** The operation block of `method path`, expanded. */
async function operation(method: string, path: string): Promise<Locator> {
  const block = page
    .locator(`.opblock-${method}`)
    .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
    .first()
  await block.locator('.opblock-summary').click()
  return block
}

async function execute(block: Locator): Promise<{ status: string; body: string }> {
  await block.getByRole('button', { name: 'Execute' }).click()
  const response = block.locator('.live-responses-table .response').first()
  const status = (await response.locator('.response-col_status').textContent({ timeout: 20_000 }))!.trim()
  const body = (await response.locator('.response-col_description pre').first().textContent())!
  return { status, body }
}

describe(`Swagger UI (${BACKEND})`, () => {
  test('the browser is off the network: a request leaving the machine fails, and is seen', async () => {
    // about:blank has no Content-Security-Policy, so the request reaches the network stack.
    await page.goto('about:blank')
    const refused = page.waitForEvent('console', (message) => message.text().includes(REFUSED_OFF_MACHINE))
    await page.evaluate(() => fetch('https://cdn.example.com/swagger-ui.css').catch(() => undefined))
    await refused
    expect(offsite).toEqual(['https://cdn.example.com/swagger-ui.css'])
    offsite.length = 0
  })

  test('loads from kgs alone, signs in through Authorize (OAuth + PKCE) and tries routes out', async () => {
    const served = await page.goto(`${server.url}/swagger`)
    expect(served!.headers()['content-security-policy']).toContain("default-src 'self'")
    expect(await page.locator('.swagger-ui .info .title').textContent()).toContain('kgs')

    await page.getByRole('button', { name: 'Authorize' }).first().click()
    const oauth = page.locator('.auth-container', { hasText: 'oauth2' })
    expect(await oauth.locator('input[data-name="clientId"]').inputValue()).toBe(SWAGGER_CLIENT_ID)
    expect(await page.locator('#auth-bearer-value').count()).toBe(1)
    const [popup] = await Promise.all([
      context.waitForEvent('page'),
      oauth.getByRole('button', { name: 'Apply given OAuth2 credentials' }).click(),
    ])
    await popup.getByLabel('Email').fill(account.email)
    await popup.getByLabel('Password').fill(account.password)
    await popup.getByRole('button', { name: 'Sign in' }).click()
    // Swagger UI is kgs's own client: the consent page vouches for it.
    expect(await popup.locator('body').textContent()).toContain('This is kgs’s own application: kgs registered it')
    expect(await popup.locator('body').textContent()).not.toContain('registered itself')
    await popup.getByRole('button', { name: 'Allow' }).click()
    // The redirect page hands the code to Swagger UI, which exchanges it and offers Logout.
    await oauth.getByRole('button', { name: 'Remove authorization' }).waitFor({ timeout: 20_000 })
    await page.getByRole('button', { name: 'Close' }).first().click()

    const me = await execute(await operation('get', '/api/v1/users/me'))
    expect(me.status).toBe('200')
    expect(JSON.parse(me.body).email).toBe(account.email)

    const repo = await operation('get', '/{repoID}')
    await repo.locator('tr[data-param-name="repoID"] input').fill(repository.id)
    const answered = await execute(repo)
    expect(answered.status).toBe('200')
    expect(JSON.parse(answered.body)).toMatchObject({ id: repository.id, name: repository.name })

    expect(offsite).toEqual([])
    expect(blocked).toEqual([])
  })
})
