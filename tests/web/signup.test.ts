// Getting an account through the web app, in headless Chromium: signing up from the sign-in card
// on kgs's authorization pages (the password rules shown first), landing in the app signed in,
// also with an invitation a sysadmin made on the Users page; where REGISTRATION=closed, the card and the sign-in page saying who makes accounts; and the
// sysadmin's Users page by e-mail: a search, a role from the list given in a repository chosen
// by name, replacing the role the user held there. axe-core at 1280 and 375 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { runKgs, startTestServer, type TestServer } from '../helpers/server.ts'

const password = 'correct horse battery'

let browser: Browser
beforeAll(async () => {
  browser = await launchBrowser({ offNetwork: true })
})
afterAll(() => browser?.close())

/** axe-core on the page as it is, at 1280 and at 375 px (where nothing may be wider than the screen). */
async function accessible(page: Page): Promise<void> {
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 800 })
    const results = await new AxeBuilder({ page }).analyze()
    const bad = results.violations.filter(
      (violation) => violation.impact === 'serious' || violation.impact === 'critical',
    )
    expect({
      width,
      bad: bad.map(
        (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
      ),
    }).toEqual({ width, bad: [] })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width)
  }
  await page.setViewportSize({ width: 1280, height: 800 })
}

/** A page of its own browser context (its own cookies: another person). */
async function newPage(): Promise<Page> {
  return (await browser.newContext()).newPage()
}

describe(`signing up in the app, REGISTRATION=open (${BACKEND})`, () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(() => server.stop())

  test('from the sign-in card to the sign-up form, the password rules shown first, and into the app signed in', async () => {
    const page = await newPage()
    await page.goto(`${server.url}/app`)
    const create = page.getByRole('button', { name: 'Create an account' })
    await create.waitFor()
    await accessible(page)
    await create.click()
    await page.getByRole('heading', { level: 1, name: 'Create an account' }).waitFor()
    // The rules are on the page, tied to the field, before anything is sent.
    const passwordField = page.getByLabel('Password')
    expect(await page.locator('#password-rules').textContent()).toBe(
      '8 to 256 characters; any characters, spaces included.',
    )
    expect(await passwordField.getAttribute('aria-describedby')).toBe('password-rules')
    expect(await passwordField.getAttribute('minlength')).toBe('8')
    await accessible(page)
    // A password too short is held back by the browser: nothing is posted.
    const email = uniqueEmail('signup')
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Name (optional)').fill('Ada')
    await passwordField.fill('short')
    await page.getByRole('button', { name: 'Create the account', exact: true }).click()
    expect(await page.evaluate<boolean>("document.getElementById('password').validity.tooShort")).toBe(true)
    expect(new URL(page.url()).pathname).toBe('/api/v1/oauth/authorize')
    await passwordField.fill(password)
    await page.getByRole('button', { name: 'Create the account', exact: true }).click()
    // Back in the app, signed in as the new account, with no consent asked (kgs's own app).
    await page.getByRole('heading', { level: 1, name: 'Repositories' }).waitFor()
    await page.locator('header').getByText(email).waitFor()
    const me = await api(server.url).post('/api/v1/auth/login', { email, password })
    expect(me.body.user).toMatchObject({ email, name: 'Ada' })
    await page.context().close()
  })

  test('from the sign-in page of the flow too, and back to the sign-in form', async () => {
    const page = await newPage()
    await page.goto(`${server.url}/app`)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('heading', { level: 1, name: 'Sign in to continue' }).waitFor()
    await accessible(page)
    await page.getByRole('button', { name: 'Create an account' }).click()
    await page.getByRole('heading', { level: 1, name: 'Create an account' }).waitFor()
    await page.getByRole('button', { name: 'Sign in instead' }).click()
    await page.getByRole('heading', { level: 1, name: 'Sign in to continue' }).waitFor()
    await page.getByRole('button', { name: 'Create an account' }).click()
    const email = uniqueEmail('via-sign-in')
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Create the account', exact: true }).click()
    await page.locator('header').getByText(email).waitFor()
    await page.context().close()
  })

  test("the sysadmin's Users page: found by e-mail, a role from the list in a repository by name, the old role replaced", async () => {
    const http = api(server.url)
    const admin = { email: uniqueEmail('admin'), password }
    const adminToken = (await http.post('/api/v1/auth/register', admin)).body.token
    expect((await server.promote(admin.email)).code).toBe(0)
    expect((await http.post('/api/v1/repositories', { name: 'Papers' }, adminToken)).status).toBe(201)
    const member = (await http.post('/api/v1/auth/register', { email: uniqueEmail('member'), password })).body.user
    expect((await http.put('/papers/members', { email: member.email, role: 'viewer' }, adminToken)).status).toBe(200)

    const page = await newPage()
    await page.goto(`${server.url}/app/admin/users`)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByLabel('Email').fill(admin.email)
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('heading', { level: 1, name: 'Users and roles' }).waitFor()
    await page.locator('main tbody tr').first().waitFor()
    // Found by a part of the e-mail, in another case: only that user is listed.
    await page.getByLabel('E-mail or name').fill(member.email.split('@')[0].toUpperCase())
    await page.getByRole('button', { name: 'Find' }).click()
    const rows = page.locator('main tbody tr')
    await rows.filter({ hasText: 'viewer in Papers' }).waitFor()
    expect(await rows.count()).toBe(1)
    expect(await rows.first().textContent()).toContain(member.email)
    await accessible(page)
    // A repository role from the list, the repository by its name.
    const give = page.locator('main form').filter({ has: page.getByRole('heading', { name: 'Give a role' }) })
    const roleOptions = await give.getByLabel('Role').locator('option').allTextContents()
    expect(roleOptions).toEqual(['Choose a role', 'repoadmin', 'editor', 'curator', 'viewer', 'sysadmin', 'member'])
    await give.getByLabel('E-mail').fill(member.email)
    await give.getByLabel('Role').selectOption('editor')
    await give.getByLabel('Repository').selectOption({ label: 'Papers (papers)' })
    await accessible(page)
    await give.getByRole('button', { name: 'Give the role' }).click()
    await page
      .locator('main')
      .getByRole('status')
      .filter({ hasText: `${member.email} is now editor in Papers.` })
      .waitFor()
    await rows.filter({ hasText: 'editor in Papers' }).waitFor()
    expect(await rows.first().textContent()).not.toContain('viewer in Papers')
    expect((await http.call('GET', '/papers/members', { token: adminToken })).body).toContainEqual(
      expect.objectContaining({ email: member.email, role: 'editor' }),
    )
    // Removed from its row, after a confirmation.
    await page.getByRole('button', { name: `Remove editor in Papers from ${member.email}` }).click()
    await page
      .getByRole('group', { name: `Remove editor in Papers from ${member.email}?` })
      .getByRole('button', { name: 'Remove' })
      .click()
    await page
      .locator('main')
      .getByRole('status')
      .filter({ hasText: `${member.email} is no longer editor in Papers.` })
      .waitFor()
    expect(
      ((await http.call('GET', '/papers/members', { token: adminToken })).body as { email: string }[]).map(
        (m) => m.email,
      ),
    ).toEqual([admin.email])
    await page.context().close()
  })
})

describe(`where REGISTRATION=closed (${BACKEND})`, () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ env: { REGISTRATION: 'closed' } })
  })
  afterAll(() => server.stop())

  test('the sign-in card and the sign-in page say who makes accounts, and offer no sign-up', async () => {
    const page = await newPage()
    await page.goto(`${server.url}/app`)
    const closed =
      'No account yet? Accounts here are made by an administrator: ask yours for one (they create it with kgs user create).'
    await page.getByText(closed).waitFor()
    expect(await page.getByRole('button', { name: 'Create an account' }).count()).toBe(0)
    await accessible(page)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('heading', { level: 1, name: 'Sign in to continue' }).waitFor()
    await page.getByText(closed).waitFor()
    expect(await page.getByRole('button', { name: 'Create an account' }).count()).toBe(0)
    await accessible(page)
    await page.context().close()
  })
})

describe(`signing up by invitation, REGISTRATION=invite (${BACKEND})`, () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ env: { REGISTRATION: 'invite' } })
  })
  afterAll(() => server.stop())

  test('a sysadmin invites an address on the Users page; its owner signs up with the code and lands signed in', async () => {
    const http = api(server.url)
    const admin = { email: uniqueEmail('admin'), password }
    expect(
      (await runKgs(['user', 'create', admin.email], server.env, undefined, new TextEncoder().encode(`${password}\n`)))
        .code,
    ).toBe(0)
    expect((await server.promote(admin.email)).code).toBe(0)
    const adminPage = await newPage()
    await adminPage.goto(`${server.url}/app/admin/users`)
    await adminPage.getByRole('button', { name: 'Sign in', exact: true }).click()
    await adminPage.getByLabel('Email').fill(admin.email)
    await adminPage.getByLabel('Password').fill(password)
    await adminPage.getByRole('button', { name: 'Sign in', exact: true }).click()
    const newAccount = adminPage
      .locator('main form')
      .filter({ has: adminPage.getByRole('heading', { name: 'New account' }) })
    await newAccount.waitFor()
    const email = uniqueEmail('invited')
    await newAccount.getByLabel('E-mail').fill(email)
    await newAccount.getByRole('button', { name: 'Invite' }).click()
    await newAccount
      .getByRole('status')
      .filter({ hasText: `${email} is invited until` })
      .waitFor()
    const code = (await newAccount.getByRole('status').locator('code').textContent())!
    expect(code).toMatch(/^[A-Za-z0-9_-]{32}$/)
    await accessible(adminPage)
    await adminPage.context().close()

    const page = await newPage()
    await page.goto(`${server.url}/app`)
    await page
      .getByText('Signing up needs the invitation code an administrator gave you for your e-mail address.')
      .waitFor()
    await page.getByRole('button', { name: 'Create an account' }).click()
    await page.getByLabel('Invitation code').waitFor()
    await accessible(page)
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Password').fill(password)
    await page.getByLabel('Invitation code').fill(code)
    await page.getByRole('button', { name: 'Create the account', exact: true }).click()
    await page.locator('header').getByText(email).waitFor()
    // Used up: the code is no longer open.
    expectError(
      await http.post('/api/v1/auth/register', { email, password, invitation: code }),
      403,
      /^registration is by invitation: this invitation code is not open/,
    )
    await page.context().close()
  })
})
