// The web app against crafted links, in headless Chromium: a path whose segment is not an id
// (an encoded slash, a dot segment) is Not found and sends no API request; a Markdown link with
// such a path is no link; a fact's deletion sends DELETE of that fact's API path and nothing else;
// a repository's deletion asks for its slug. Then the copy: plurals, empty lists, pagers only
// where there is a second page, what a search score means, Markdown headings below the page's,
// busy and done states, and tables whose words stay whole 375 px wide; axe-core at 1280 and 375 px.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'

const password = 'correct horse battery'
const owner = { email: uniqueEmail('crafted'), password }

let server: TestServer
let http: ReturnType<typeof api>
let token: string
let browser: Browser
let page: Page
let repo: { id: string; slug: string }
let factId: string
let doomedFactId: string
let conceptId: string
let reportId: string

/** Every API request the page sends (method, path, body), recorded in the page by a wrapper of fetch (see app.test.ts). */
const RECORD_REQUESTS = `{
  const fetch = window.fetch.bind(window)
  window.__requests = []
  window.fetch = (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input), location.href)
    window.__requests.push({ method: (init && init.method) || 'GET', path: url.pathname, body: init && typeof init.body === 'string' ? init.body : undefined })
    return fetch(input, init)
  }
}`
type Sent = { method: string; path: string; body?: string }
const sent = () => page.evaluate<Sent[]>('window.__requests')
const forget = () => page.evaluate('window.__requests.length = 0')

/** The crafted segment of the report: "Delete this fact" on it once sent DELETE /api/v1/repositories/<repo>. */
const crafted = (slug: string) => `..%2F..%2Fapi%2Fv1%2Frepositories%2F${slug}`

const write = async (path: string, body: unknown) => {
  const res = await http.post(path, body, token)
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  http = api(server.url)
  const registered = await http.post('/api/v1/auth/register', owner)
  expect(registered.status).toBe(201)
  token = registered.body.token
  repo = await write('/api/v1/repositories', { name: 'Crafted' })
  const source = await write(`/${repo.slug}/sources`, {
    url: 'https://example.org/ice',
    kind: 'web',
    status: 'parsed',
    parsed_title: 'Ice',
    parsed_markdown: '# The source’s own title\n\nSea ice.',
  })
  const concept = await write(`/${repo.slug}/concepts`, { canonical_name: 'Sea ice' })
  conceptId = concept.id
  factId = (
    await write(`/${repo.slug}/facts`, {
      text: 'Sea ice thins in summer.',
      sources: [{ source_id: source.id }],
      concepts: [{ concept_id: concept.id }],
    })
  ).id
  doomedFactId = (await write(`/${repo.slug}/facts`, { text: 'A fact to delete.' })).id
  await write(`/${repo.slug}/syntheses`, {
    canonical_name: 'Sea ice',
    content: '# Sea ice, synthesized\n\nIt [thins](<fact:' + factId + '>).',
    covered_concept_ids: [concept.id],
  })
  await write(`/${repo.slug}/investigations`, { title: 'Why ice thins', source_ids: [source.id] })
  reportId = (
    await write(`/${repo.slug}/reports`, {
      title: 'A curated report',
      body_md: [
        '# The report’s own title',
        '',
        `Open [the crafted page](/app/r/${repo.slug}/facts/${crafted(repo.slug)}), [a relative one](${crafted(repo.slug)}) or [the real fact](/app/r/${repo.slug}/facts/${factId}).`,
      ].join('\n'),
    })
  ).id
  // The list shows the counts as copied after the writes (a write answers before its copy is made).
  await server.context.repositories.countsCopied(repo.id)
  browser = await launchBrowser({ offNetwork: true })
  const context = await browser.newContext()
  await context.addInitScript(RECORD_REQUESTS)
  page = await context.newPage()
  await page.goto(`${server.url}/app`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByLabel('Email').fill(owner.email)
  await page.getByLabel('Password').fill(owner.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('header').getByText(owner.email).waitFor()
})

afterAll(async () => {
  await browser?.close()
  await server.stop()
})

async function accessible(): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze()
  const bad = results.violations.filter(
    (violation) => violation.impact === 'serious' || violation.impact === 'critical',
  )
  expect(
    bad.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`),
  ).toEqual([])
}

/** Opens an app path within the app, as a link would (the token is in the page's memory only), and waits for its heading. */
async function open(path: string, heading: string | RegExp): Promise<void> {
  await page.evaluate(
    `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
  )
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
}

const main = () => page.locator('main')

describe(`crafted links in the web app (${BACKEND})`, () => {
  test('a crafted link, loaded from outside, is Not found and sends no API request but the sign-in', async () => {
    await forget()
    const path = `/app/r/${repo.slug}/facts/${crafted(repo.slug)}`
    await page.goto(server.url + path)
    await page.getByRole('heading', { level: 1, name: 'Not found' }).waitFor()
    expect(new URL(page.url()).pathname).toBe(path)
    // The sign-in of the reloaded tab and its session's permissions: nothing of the repository, no write.
    const requests = await sent()
    expect(requests.filter(({ path }) => !['/api/v1/oauth/token', '/api/v1/permissions'].includes(path))).toEqual([])
    expect(requests.filter(({ method }) => method !== 'GET' && method !== 'POST')).toEqual([])
    expect(await page.getByRole('button', { name: /Delete/ }).count()).toBe(0)
    expect((await http.get(`/api/v1/repositories/${repo.slug}`, token)).status).toBe(200)
  })

  test('within the app, every path with a segment that is not an id is Not found, with no request at all', async () => {
    const paths = [
      `/app/r/${repo.slug}/facts/${crafted(repo.slug)}`,
      `/app/r/${repo.slug}/facts/${crafted(repo.slug)}/edit`,
      `/app/r/${repo.slug}/concepts/..%2F${conceptId}`,
      `/app/r/${repo.slug}/facts/%2e%2e%2F%2e%2e%2Fapi%2Fv1%2Frepositories%2F${repo.slug}`,
      `/app/r/${repo.slug}%2Ffacts`,
      `/app/r/..%2Fapi%2Fv1%2Frepositories%2F${repo.slug}/facts`,
      `/app/r/${repo.slug}/reports/${reportId}%20`,
    ]
    for (const path of paths) {
      await forget()
      await open(path, 'Not found')
      expect({ path, requests: await sent() }).toEqual({ path, requests: [] })
    }
    // An id in capitals is still an id.
    await open(`/app/r/${repo.slug}/facts/${factId.toUpperCase()}`, 'Fact')
    await page.getByText('Sea ice thins in summer.').waitFor()
  })

  test("a report's Markdown link with such a path is no link; one with a real path navigates in the app", async () => {
    await open(`/app/r/${repo.slug}/reports/${reportId}`, 'A curated report')
    const markdown = main().locator('.markdown')
    await markdown.getByText('the crafted page').waitFor()
    for (const text of ['the crafted page', 'a relative one']) {
      expect(
        await markdown
          .locator('a')
          .filter({ hasText: text })
          .evaluate((anchor) => anchor.hasAttribute('href')),
      ).toBe(false)
      await forget()
      await markdown.getByText(text).click()
      expect(new URL(page.url()).pathname).toBe(`/app/r/${repo.slug}/reports/${reportId}`)
      expect(await sent()).toEqual([])
    }
    await accessible()
    await markdown.getByRole('link', { name: 'the real fact' }).click()
    await page.getByRole('heading', { level: 1, name: 'Fact' }).waitFor()
    expect(new URL(page.url()).pathname).toBe(`/app/r/${repo.slug}/facts/${factId}`)
  })

  test("deleting a fact sends DELETE of that fact's API path, and says it is done", async () => {
    await open(`/app/r/${repo.slug}/facts/${doomedFactId}`, 'Fact')
    await page.getByRole('button', { name: 'Delete this fact' }).click()
    await forget()
    await page.getByRole('button', { name: 'Yes, delete it' }).click()
    await page.getByRole('heading', { level: 1, name: 'Facts' }).waitFor()
    await main().getByRole('status').filter({ hasText: 'The fact is deleted.' }).waitFor()
    const writes = (await sent()).filter(({ method }) => method !== 'GET')
    expect(writes).toEqual([{ method: 'DELETE', path: `/${repo.slug}/facts/${doomedFactId}`, body: undefined }])
    expect((await http.get(`/${repo.slug}/facts/${doomedFactId}`, token)).status).toBe(404)
    expect((await http.get(`/${repo.slug}/facts/${factId}`, token)).status).toBe(200)
  })

  test('deleting a repository asks for its slug, typed, and sends it as the confirmation', async () => {
    const doomed = await write('/api/v1/repositories', { name: 'Doomed' })
    await open(`/app/r/${doomed.slug}/settings`, 'Settings')
    await page.getByRole('button', { name: 'Delete this repository…' }).click()
    const confirm = page.getByRole('button', { name: 'Delete the repository' })
    const slug = page.getByLabel(/Type its slug/)
    expect(await confirm.isDisabled()).toBe(true)
    await slug.fill(repo.slug)
    expect(await confirm.isDisabled()).toBe(true)
    await accessible()
    await slug.fill(doomed.slug)
    expect(await confirm.isDisabled()).toBe(false)
    expect((await http.get(`/api/v1/repositories/${doomed.id}`, token)).status).toBe(200)
    await forget()
    await confirm.click()
    await page.getByRole('heading', { level: 1, name: 'Repositories' }).waitFor()
    await main().getByRole('status').filter({ hasText: 'The repository Doomed is deleted.' }).waitFor()
    const writes = (await sent()).filter(({ method }) => method !== 'GET')
    expect(writes).toEqual([
      { method: 'DELETE', path: `/api/v1/repositories/${doomed.id}`, body: JSON.stringify({ confirm: doomed.slug }) },
    ])
    expect((await http.get(`/api/v1/repositories/${doomed.id}`, token)).status).toBe(404)
    expect((await http.get(`/api/v1/repositories/${repo.id}`, token)).status).toBe(200)
  })
})

describe(`the web app's copy and small states (${BACKEND})`, () => {
  test('counts in words, singular or plural', async () => {
    // One fact of the two is deleted above: the copy of the counts after it is made.
    await server.context.repositories.countsCopied(repo.id)
    await open('/app', 'Repositories')
    const row = main()
      .locator('ul.rows > li')
      .filter({ has: page.getByRole('link', { name: 'Crafted' }) })
    await row.waitFor()
    const meta = await row.locator('.meta').textContent()
    expect(meta).toBe('repoadmin · 1 source · 1 fact · 1 concept · 1 report · 1 investigation')
    await open(`/app/r/${repo.slug}/concepts/${conceptId}`, 'Sea ice')
    await page.getByText(/· 1 fact$/).waitFor()
  })

  test('the fact form says "No sources yet." and "No concepts yet."; Create is busy while it works, and the fact page says it is created', async () => {
    await open(`/app/r/${repo.slug}/facts/new`, 'New fact')
    await main().getByText('No sources yet.').waitFor()
    await main().getByText('No concepts yet.').waitFor()
    expect(await main().textContent()).not.toContain('No its')
    await accessible()
    await page.getByLabel('Text').fill(`Written in the copy test ${crypto.randomUUID().slice(0, 8)}`)
    // The answer held back until the button has been seen busy.
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    await page.route(`**/${repo.slug}/facts`, async (route) => {
      if (route.request().method() !== 'POST') return route.continue()
      await held
      await route.continue()
    })
    await page.getByRole('button', { name: 'Create' }).click()
    const busy = page.getByRole('button', { name: 'Creating…' })
    await busy.waitFor()
    expect(await busy.isDisabled()).toBe(true)
    release()
    await page.getByRole('heading', { level: 1, name: 'Fact' }).waitFor()
    await main().getByRole('status').filter({ hasText: 'The fact is created.' }).waitFor()
    await page.unroute(`**/${repo.slug}/facts`)
  })

  test('a taken name is said in terms of the name the form asks for', async () => {
    await open('/app', 'Repositories')
    await page.getByLabel('Name').fill('Crafted')
    await page.getByRole('button', { name: 'Create' }).click()
    const alert = main().getByRole('alert')
    await alert.waitFor()
    expect(await alert.textContent()).toBe(
      'A repository with this name (or one that makes the same address) exists already: choose another name.',
    )
  })

  test('a pager only under a list of more than one page; an empty list says so, without one', async () => {
    await open(`/app/r/${repo.slug}/facts`, 'Facts')
    await main().locator('ul.rows > li').first().waitFor()
    expect(await main().locator('nav.pager').count()).toBe(0)
    const empty = await write('/api/v1/repositories', { name: 'Empty' })
    await open(`/app/r/${empty.slug}/sources`, 'Sources')
    await main().getByText('None yet.').waitFor()
    expect(await main().locator('nav.pager').count()).toBe(0)
    expect(await main().textContent()).not.toContain('in all')
    // 51 facts: two pages of 50.
    const many = await write('/api/v1/repositories', { name: 'Many' })
    for (let i = 0; i < 51; i += 17)
      await Promise.all(
        Array.from({ length: 17 }, (_, j) => write(`/${many.slug}/facts`, { text: `Fact number ${i + j}` })),
      )
    await open(`/app/r/${many.slug}/facts`, 'Facts')
    await main().locator('nav.pager').waitFor()
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByText('Page 2').waitFor()
    expect(await main().locator('ul.rows > li').count()).toBe(1)
  })

  test('search results say what their score means, for the mode asked', async () => {
    await open(`/app/r/${repo.slug}/search`, 'Search')
    await page.getByLabel('Query').fill('sea ice')
    await page.getByRole('button', { name: 'Search' }).click()
    const results = page.getByRole('list', { name: 'Results' })
    await results.waitFor()
    expect(await page.locator('#score-meaning').textContent()).toContain('1 / (60 + its place there)')
    expect(await results.getAttribute('aria-describedby')).toBe('score-meaning')
    await page.getByLabel('Mode').selectOption('keyword')
    await page.getByRole('button', { name: 'Search' }).click()
    await page.locator('#score-meaning').filter({ hasText: 'full-text rank' }).waitFor()
    await accessible()
  })

  test("Markdown headings sit below the page's own: a synthesis's # under its h2, a report's and a source's under their h1", async () => {
    await open(`/app/r/${repo.slug}/concepts/${conceptId}`, 'Sea ice')
    await page.getByRole('heading', { level: 3, name: 'Sea ice, synthesized' }).waitFor()
    expect(await main().locator('h1').count()).toBe(1)
    await open(`/app/r/${repo.slug}/reports/${reportId}`, 'A curated report')
    await page.getByRole('heading', { level: 2, name: 'The report’s own title' }).waitFor()
    expect(await main().locator('h1').count()).toBe(1)
    await open(`/app/r/${repo.slug}/sources`, 'Sources')
    await main().getByRole('link', { name: 'Ice' }).click()
    await page.getByRole('heading', { level: 2, name: 'The source’s own title' }).waitFor()
    expect(await main().locator('h1').count()).toBe(1)
  })

  test('members at 375 px: no header or button broken mid-word; adding is busy, then said; axe-clean at 1280 and 375 px', async () => {
    const other = { email: uniqueEmail('a-rather-long-member-address'), password }
    expect((await http.post('/api/v1/auth/register', other)).status).toBe(201)
    await page.setViewportSize({ width: 1280, height: 900 })
    await open(`/app/r/${repo.slug}/members`, 'Members')
    await page.getByLabel('E-mail').fill(other.email)
    await page.getByRole('button', { name: 'Add' }).click()
    await main()
      .getByRole('status')
      .filter({ hasText: `${other.email} is now viewer.` })
      .waitFor()
    await main().getByRole('cell', { name: other.email, exact: true }).waitFor()
    await accessible()
    await page.setViewportSize({ width: 375, height: 800 })
    // Each header and each button's text on one line (one box per line of a range over it), within its box.
    const broken = await page.evaluate<
      string[]
    >(`[...document.querySelectorAll('main table th, main table td button')].flatMap((cell) => {
      const range = document.createRange()
      range.selectNodeContents(cell)
      const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)))
      return lines.size === 1 && cell.scrollWidth <= cell.clientWidth ? [] : [cell.textContent + ': ' + lines.size + ' lines, ' + cell.scrollWidth + ' > ' + cell.clientWidth]
    })`)
    expect(broken).toEqual([])
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    await accessible()
    await open(`/app/r/${repo.slug}/search`, 'Search')
    await accessible()
    await page.setViewportSize({ width: 1280, height: 900 })
  })
})
