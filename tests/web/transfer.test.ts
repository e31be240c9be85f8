// Export and import in the web app, in headless Chromium off the network: a bundle file imported
// through the file field (the upload's bar and the job's reaching 100 %, then its facts listed), an
// export naming and linking the registry graph it made, two exports of one repository shown as
// two versions of one name, "Import into…" a second repository (offered only the repositories the
// person may import into) ending with its facts; the graph id's pattern working; no console error
// or warning on the way; axe-clean at 1280 and 375 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import type { TestServer } from '../helpers/server.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'

const FACTS = 60

let server: TestServer
let http: ReturnType<typeof api>
let person: Account
let browser: Browser
let page: Page
let dir: string
let bundlePath: string
/** What the pages logged as errors or warnings, and the errors they threw. */
const logged: string[] = []

beforeAll(async () => {
  ;({
    server,
    http,
    users: { person },
  } = await fixture({
    server: { env: { WORKERS: '1' } },
    users: { person: 'member', admin: 'sysadmin' },
    repositories: {
      files: { by: 'person', name: 'Files' },
      second: { by: 'person', name: 'Second' },
      // Seen, but not a repository the person may import into.
      viewed: { by: 'admin', name: 'Viewed', roles: { person: 'viewer' } },
    },
  }))
  dir = mkdtempSync(join(tmpdir(), 'kgs-transfer-'))
  bundlePath = join(dir, 'files.json.gz')
  await generateBundle(bundlePath, { facts: FACTS, dimensions: 0, seed: 3, name: 'generated' })
  browser = await launchBrowser({ offNetwork: true })
  page = await (await browser.newContext()).newPage()
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') logged.push(`${page.url()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => logged.push(`${page.url()}: ${error.message}`))
})

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** axe-core finds nothing serious or critical, at 1280 px and at 375 px, where nothing is wider than the screen. */
async function accessibleAtBothWidths(): Promise<void> {
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 800 })
    const results = await new AxeBuilder({ page }).analyze()
    const bad = results.violations.filter(
      (violation) => violation.impact === 'serious' || violation.impact === 'critical',
    )
    expect(
      bad.map(
        (violation) =>
          `${width} px: ${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
      ),
    ).toEqual([])
    if (width === 375)
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
  }
  await page.setViewportSize({ width: 1280, height: 800 })
}

/** Goes to an app path as a link would (a full load would sign in again: the token is in memory only). */
async function open(path: string, heading: string): Promise<void> {
  await page.evaluate(
    `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
  )
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
}

/** The status a job's end shows, once it shows. */
async function outcome(within = page.locator('main')): Promise<string> {
  const status = within.getByRole('status').or(within.getByRole('alert')).last()
  await status.waitFor({ timeout: 60_000 })
  return (await status.textContent())!
}

const factRows = () => page.locator('main ul.rows > li')

describe(`export and import in the app (${BACKEND})`, () => {
  test('signs in', async () => {
    await page.goto(`${server.url}/app`)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByLabel('Email').fill(person.email)
    await page.getByLabel('Password').fill('correct horse battery')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { level: 1, name: 'Repositories' }).waitFor()
  })

  test('a bundle file through the file field: the upload and the job reach 100 %, the result in words, then its facts', async () => {
    await open('/app/r/files/transfer', 'Export and import')
    await accessibleAtBothWidths()
    await page.getByLabel('Bundle file (.json.gz)').setInputFiles(bundlePath)
    await page.getByRole('button', { name: 'Upload and import' }).click()
    const said = await outcome()
    expect(said).toMatch(
      new RegExp(
        `^Imported ${FACTS} facts, \\d+ concepts, \\d+ sources, \\d+ reports? and \\d+ investigations? from the file “files\\.json\\.gz”\\.`,
      ),
    )
    const upload = page.getByRole('progressbar', { name: /^Upload: / })
    expect(await upload.getAttribute('value')).toBe('100')
    expect(await upload.getAttribute('aria-valuetext')).toBe('100%')
    const job = page.getByRole('progressbar', { name: /^Import: done/ })
    expect(await job.getAttribute('value')).toBe('100')
    await accessibleAtBothWidths()
    await page.getByRole('link', { name: 'See the facts' }).click()
    await page.getByRole('heading', { level: 1, name: 'Facts' }).waitFor()
    await page.locator('main nav.pager').waitFor()
    expect(await factRows().count()).toBe(50)
    expect((await http.get('/api/v1/repositories/files', person.token)).body.counts.facts).toBe(FACTS)
  })

  test('an export names the registry graph it made and links to it; a second export is its version 2', async () => {
    for (const version of [1, 2]) {
      await open('/app/r/files/transfer', 'Export and import')
      await page.getByRole('button', { name: 'Export this repository' }).click()
      const exported = page
        .locator('main')
        .getByRole('status')
        .filter({ hasText: `as graph “Files”, version ${version}.` })
      await exported.waitFor({ timeout: 60_000 })
      expect(await exported.textContent()).toMatch(
        new RegExp(`^Exported ${FACTS} facts, \\d+ concepts, \\d+ sources, `),
      )
    }
    await accessibleAtBothWidths()
    await page.getByRole('link', { name: 'graph “Files”, version 2' }).click()
    await page.getByRole('heading', { level: 1, name: 'Registry' }).waitFor()
    expect(new URL(page.url()).search).toBe('?name=Files')
    await page.getByRole('heading', { level: 2, name: 'Files' }).waitFor()
  })

  test('the registry: the two exports are two versions of one name, newest first, with time and counts', async () => {
    await open('/app/registry', 'Registry')
    const names = page.locator('main section h2')
    await names.first().waitFor()
    expect(await names.allTextContents()).toEqual(['Files'])
    const section = page.locator('main section').filter({ has: page.getByRole('heading', { name: 'Files' }) })
    expect(await section.locator('p.meta').first().textContent()).toBe('2 versions')
    const versions = section.getByRole('list', { name: 'Versions of Files' }).locator('> li')
    expect(await versions.count()).toBe(2)
    const texts = await versions.allTextContents()
    for (const [i, text] of texts.entries()) {
      expect(text).toMatch(new RegExp(`^Version ${2 - i} · \\d{1,2} \\w{3} \\d{4}, \\d{2}:\\d{2}`))
      expect(text).toMatch(
        new RegExp(`${FACTS} facts, \\d+ concepts and \\d+ sources · pushed by ${person.email.replace(/[.]/g, '\\.')}`),
      )
    }
    await accessibleAtBothWidths()
  })

  test('"Import into…" a second repository, among only those the person may import into, ending with its facts', async () => {
    const newest = page.locator('main section li').filter({ hasText: 'Version 2' })
    await newest.getByRole('button', { name: 'Import into…' }).click()
    const picker = newest.getByLabel('Import into')
    await picker.waitFor()
    // Files and Second (repoadmin), not Viewed (viewer): graph:import, as GET /api/v1/permissions says.
    expect((await picker.locator('option').allTextContents()).sort()).toEqual(['Files', 'Second'])
    await accessibleAtBothWidths()
    await picker.selectOption({ label: 'Second' })
    await newest.getByRole('button', { name: 'Import', exact: true }).click()
    const said = await outcome(newest)
    expect(said).toMatch(new RegExp(`^Imported ${FACTS} facts, .* from graph “Files”, version 2 into Second\\.`))
    await accessibleAtBothWidths()
    await newest.getByRole('link', { name: 'See the facts of Second' }).click()
    await page.getByRole('heading', { level: 1, name: 'Facts' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/app/r/second/facts')
    await page.locator('main nav.pager').waitFor()
    expect(await factRows().count()).toBe(50)
  })

  test("the graph id's pattern checks; a registry graph imported by id names it", async () => {
    await open('/app/r/second/transfer', 'Export and import')
    const field = page.getByLabel('Graph id')
    await field.fill('not a graph id at all, but 36 chars!')
    expect(
      await field.evaluate((input: { validity: { patternMismatch: boolean } }) => input.validity.patternMismatch),
    ).toBe(true)
    const [files] = (await http.get('/api/v1/graphs/names?name=Files', person.token)).body
    await field.fill(files.versions[1].id.toUpperCase())
    expect(await field.evaluate((input: { validity: { valid: boolean } }) => input.validity.valid)).toBe(true)
    await page.getByRole('button', { name: 'Import', exact: true }).click()
    // Everything was there already: the second repository holds that graph's facts.
    expect(await outcome()).toMatch(
      /^Imported nothing new from graph “Files”, version 1\. Already there and kept as they were: 60 facts, \d+ concepts and \d+ sources\./,
    )
  })

  test('no page logged an error or a warning', () => {
    expect(logged).toEqual([])
  })
})
