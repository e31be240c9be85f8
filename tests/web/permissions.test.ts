// The web app shows each person only what their role lets them do, over a repository with an
// imported graph, in headless Chromium: a viewer is offered no write on any page of it (no Add,
// Edit or Delete, no Export or Import, no member management) and is told up front what a write
// page needs; an editor gets the writes but not member management; the Members page explains
// each role in one line, and those lines claim exactly what the server's role table carries.
// axe-core finds nothing serious at 1280 and 375 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { REPOSITORY_ROLES, ROLE_LINES, claims } from '../../src/web/roles.ts'

const password = 'correct horse battery'
const slug = 'perms'
let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let dir: string
let browser: Browser
/** One row of each kind of the imported graph, for the pages of a row. */
const ids: Record<'fact' | 'concept' | 'source' | 'investigation' | 'report', string> = {
  fact: '',
  concept: '',
  source: '',
  investigation: '',
  report: '',
}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  http = api(server.url)
  owner = await registerAccount(http)
  expect((await http.post('/api/v1/repositories', { slug, name: 'Permissions' }, owner.token)).status).toBe(201)
  dir = mkdtempSync(join(tmpdir(), 'kgs-perms-'))
  const bundle = join(dir, 'perms.json.gz')
  await generateBundle(bundle, { facts: 60, vectors: 'kgs-hash-v1', seed: 11, name: 'perms' })
  const started = await http.call('POST', `/${slug}/import-graph`, {
    token: owner.token,
    raw: readFileSync(bundle),
    headers: { 'content-type': 'application/gzip' },
  })
  expect(started.status).toBe(202)
  const job = await waitForJob(http, `/${slug}/jobs/${started.body.id}`, owner.token)
  expect(job.status).toBe('succeeded')
  await settleJobs(http, slug, owner.token)
  for (const kind of Object.keys(ids) as (keyof typeof ids)[]) {
    const [row] = (await http.get(`/${slug}/${kind}s?limit=1`, owner.token)).body as { id: string }[]
    ids[kind] = row!.id
  }
  browser = await launchBrowser({ offNetwork: true })
})

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** A new member of the repository with `role`. */
async function member(role: string): Promise<Account> {
  const account = await registerAccount(http)
  expect((await http.put(`/${slug}/members`, { email: account.email, role }, owner.token)).status).toBe(200)
  return account
}

/** A browser of its own, signed in as `account` through the authorization pages. */
async function signedIn(account: Account): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(`${server.url}/app`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByLabel('Email').fill(account.email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('header').getByText(account.email).waitFor()
  return { context, page }
}

/**
 * Opens an app path as a link would, and waits until the page has its answer to GET
 * /permissions (the write controls follow it) and the heading is there, then a frame more.
 */
async function visit(page: Page, path: string): Promise<void> {
  await page.evaluate('performance.clearResourceTimings()')
  await page.evaluate(
    `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
  )
  await page.waitForURL(server.url + path)
  // Not waitForFunction: past its first check it evaluates with eval, which the app's CSP refuses.
  await page.evaluate(`new Promise((resolve) => {
    const answered = () => performance.getEntriesByType('resource').some((entry) => entry.name.includes('/api/v1/permissions') && entry.responseEnd > 0)
    if (answered()) return resolve()
    new PerformanceObserver((_, observer) => answered() && (observer.disconnect(), resolve())).observe({ type: 'resource' })
  })`)
  await page.locator('main h1').first().waitFor()
  await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 50)))')
}

async function accessible(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze()
  const bad = results.violations.filter(
    (violation) => violation.impact === 'serious' || violation.impact === 'critical',
  )
  expect(
    bad.map(
      (violation) =>
        `${page.url()} ${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
    ),
  ).toEqual([])
}

/** Axe at 1280 px and at 375 px, where nothing may be wider than the screen either. */
async function accessibleAtBothWidths(page: Page): Promise<void> {
  await accessible(page)
  await page.setViewportSize({ width: 375, height: 740 })
  try {
    await accessible(page)
    const width = await page.evaluate<number>('document.documentElement.scrollWidth')
    expect({ url: page.url(), fits: width <= 375 }).toEqual({ url: page.url(), fits: true })
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 })
  }
}

/** The write controls on the page: links and buttons that add, edit or delete, export, import, or manage members. */
async function writeControls(page: Page): Promise<string[]> {
  const controls = page.locator('main').getByRole('link', { name: /^(Add a|Edit this)/ })
  const buttons = page.locator('main').getByRole('button', {
    name: /^(Delete this|Export this repository|Import|Upload and import|Add|Remove|Create|Save changes)/,
  })
  const selects = page.locator('main select[aria-label^="Role of"], main select[aria-label="Role"]')
  return [
    ...(await controls.allTextContents()),
    ...(await buttons.allTextContents()),
    ...(await selects.evaluateAll((all) => all.map((s) => s.getAttribute('aria-label') ?? ''))),
  ]
}

const base = `/app/r/${slug}`
/** Every page of the repository: its lists, a row of each kind, search, export and import, members, settings. */
const PAGES = () => [
  `${base}/facts`,
  `${base}/facts/${ids.fact}`,
  `${base}/concepts`,
  `${base}/concepts/${ids.concept}`,
  `${base}/sources`,
  `${base}/sources/${ids.source}`,
  `${base}/investigations`,
  `${base}/investigations/${ids.investigation}`,
  `${base}/reports`,
  `${base}/reports/${ids.report}`,
  `${base}/search`,
  `${base}/transfer`,
  `${base}/members`,
  `${base}/settings`,
]

describe(`what the app offers follows the person's role (${BACKEND})`, () => {
  test("the role one-liners claim exactly the permissions of the server's role table", async () => {
    const admin = await registerAccount(http)
    await server.context.rbac.assign({ user_id: admin.id, role: 'sysadmin', domain: 'system' })
    const table = (await http.get('/api/v1/admin/permissions', admin.token)).body as {
      role: string
      domain_kind: string
      permissions: string[]
    }[]
    const repositoryRoles = table.filter((row) => row.domain_kind === 'repository')
    const ours: string[] = [...REPOSITORY_ROLES].sort()
    expect(ours).toEqual(repositoryRoles.map((row) => row.role).sort())
    for (const row of repositoryRoles) {
      const claimed: string[] = claims(row.role as (typeof REPOSITORY_ROLES)[number]).sort()
      expect({ role: row.role, claimed }).toEqual({ role: row.role, claimed: [...row.permissions].sort() })
    }
    expect(ROLE_LINES.map(({ role }) => role)).toEqual([...REPOSITORY_ROLES])
    expect(ROLE_LINES.find(({ role }) => role === 'viewer')!.line).toContain('changes nothing')
  })

  test('a viewer is offered no write on any page, and a write page says what it needs before any form', async () => {
    const viewer = await member('viewer')
    const { context, page } = await signedIn(viewer)
    try {
      for (const path of PAGES()) {
        await visit(page, path)
        expect({ path, controls: await writeControls(page) }).toEqual({ path, controls: [] })
        await accessible(page)
      }
      // Export and import say which role they need and who grants it.
      await visit(page, `${base}/transfer`)
      const refusals = await page.locator('main .refused').allTextContents()
      expect(refusals.map((text) => text.replace(/\s+/g, ' ').split('.')[0])).toEqual([
        'Exporting this repository needs the curator, editor or repoadmin role in this repository; a repoadmin of it can grant it',
        'Importing into this repository needs the editor or repoadmin role in this repository; a repoadmin of it can grant it',
      ])
      await accessibleAtBothWidths(page)
      // Members: the list, each role's line, whom to ask; no control to change anything.
      await visit(page, `${base}/members`)
      await page.locator('main tbody tr').first().waitFor()
      expect(await page.locator('main dl.roles dd').allTextContents()).toEqual(ROLE_LINES.map(({ line }) => line))
      expect(await page.locator('main').textContent()).toContain(
        'A repoadmin of this repository gives and changes roles',
      )
      expect(await page.locator('main form, main select').count()).toBe(0)
      await accessibleAtBothWidths(page)
      // A write page opened anyway: no form to fill in vain, the same words as the API's refusal.
      const refused = await http.post(`/${slug}/facts`, { text: 'A viewer tries.' }, viewer.token)
      expect(refused.status).toBe(403)
      for (const [path, heading] of [
        [`${base}/facts/new`, 'New fact'],
        [`${base}/concepts/new`, 'New concept'],
        [`${base}/reports/new`, 'New report'],
        [`${base}/facts/${ids.fact}/edit`, 'Edit the fact'],
      ] as const) {
        await visit(page, path)
        await page.getByRole('heading', { level: 1, name: heading }).waitFor()
        expect({ path, forms: await page.locator('main form').count() }).toEqual({ path, forms: 0 })
        expect(await page.locator('main .refused').textContent()).toMatch(
          /needs the (curator, )?editor or repoadmin role in this repository; a repoadmin of it can grant it/,
        )
      }
      await visit(page, `${base}/facts/new`)
      expect(await page.locator('main .refused').textContent()).toContain(
        (refused.body as { error: string }).error.replace('permission denied: fact:write ', ''),
      )
      await accessibleAtBothWidths(page)
    } finally {
      await context.close()
    }
  })

  test('an editor is offered the writes, but not member management', async () => {
    const { context, page } = await signedIn(await member('editor'))
    try {
      await visit(page, `${base}/facts`)
      await page.getByRole('link', { name: 'Add a fact' }).waitFor()
      await visit(page, `${base}/facts/${ids.fact}`)
      await page.getByRole('link', { name: 'Edit this fact' }).waitFor()
      await page.getByRole('button', { name: 'Delete this fact' }).waitFor()
      await visit(page, `${base}/reports/${ids.report}`)
      await page.getByRole('link', { name: 'Edit this report' }).waitFor()
      await visit(page, `${base}/transfer`)
      await page.getByRole('button', { name: 'Export this repository' }).waitFor()
      await page.getByRole('button', { name: 'Import', exact: true }).waitFor()
      expect(await page.locator('main .refused').count()).toBe(0)
      await visit(page, `${base}/facts/new`)
      await page.locator('main form').waitFor()
      await visit(page, `${base}/members`)
      await page.locator('main tbody tr').first().waitFor()
      expect(await writeControls(page)).toEqual([])
      expect(await page.locator('main dl.roles dt').allTextContents()).toEqual([...REPOSITORY_ROLES])
      await visit(page, `${base}/settings`)
      await page.getByText('Slug (its address)').waitFor()
      expect(await writeControls(page)).toEqual([])
      await accessibleAtBothWidths(page)
    } finally {
      await context.close()
    }
  })

  test('a repoadmin manages members, the role picker saying what the chosen role may do', async () => {
    const { context, page } = await signedIn(owner)
    try {
      // What the viewer and the editor were not offered is there, and found by the same check.
      await visit(page, `${base}/facts/${ids.fact}`)
      await page.getByRole('button', { name: 'Delete this fact' }).waitFor()
      expect(await writeControls(page)).toEqual(['Edit this fact', 'Delete this fact'])
      await visit(page, `${base}/transfer`)
      await page.getByRole('button', { name: 'Import', exact: true }).waitFor()
      expect(await writeControls(page)).toEqual(['Export this repository', 'Upload and import', 'Import'])
      await visit(page, `${base}/settings`)
      await page.getByRole('button', { name: 'Delete this repository…' }).waitFor()
      await visit(page, `${base}/members`)
      await page.getByRole('button', { name: `Remove ${owner.email}` }).waitFor()
      expect(await writeControls(page)).toEqual(
        expect.arrayContaining(['Add', `Remove`, `Role of ${owner.email}`, 'Role']),
      )
      const picker = page.getByRole('combobox', { name: 'Role', exact: true })
      await picker.waitFor()
      for (const { role, line } of ROLE_LINES) {
        await picker.selectOption(role)
        expect(await page.locator('#chosen-role').textContent()).toBe(line)
      }
      expect(await picker.getAttribute('aria-describedby')).toBe('chosen-role')
      expect(await page.getByRole('button', { name: `Remove ${owner.email}` }).count()).toBe(1)
      await accessibleAtBothWidths(page)
    } finally {
      await context.close()
    }
  })
})
