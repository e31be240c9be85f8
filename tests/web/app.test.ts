// The web app at /app as a person uses it, in headless Chromium with every request that leaves
// the machine refused: sign-in through kgs's own authorization pages (code + PKCE, no consent for
// this first-party client), each page over a real imported graph, export and import with the
// job's progress, the registry, users and roles, members, the OAuth grants (agents), the token's
// refresh and revocation; keyboard use, axe-core on every page, 375 px wide; and a bundle full of
// script payloads, imported and shown with nothing executed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { REFUSED_OFF_MACHINE, launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { generateGraph } from '../../scripts/gen-graph.ts'
import { WEB_APP_CLIENT_ID } from '../../src/http/web-app.ts'
import { PAYLOADS, writeHostileBundle, XSS_MARK } from './hostile-bundle.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'

const password = 'correct horse battery'
const account = { email: uniqueEmail('app'), password }

let server: TestServer
let http: ReturnType<typeof api>
let token: string
let dir: string
let browser: Browser
let context: BrowserContext
let page: Page
const tour = { slug: 'tour', name: 'Tour' }
const hostile = { slug: 'hostile', name: 'Hostile' }
/** A repository big enough that a page loading the whole table would show it (KGS_APP_FACTS facts, written straight in). */
const large = { slug: 'large', name: 'Large', facts: Number(process.env.KGS_APP_FACTS ?? 10_000) }
/** Every request the pages tried to send off the machine, and what the CSP refused. */
const offsite: string[] = []
const blocked: string[] = []
const dialogs: string[] = []
/**
 * Records the token endpoint's answers in the page (window.__tokens), to check refresh rotation
 * and revocation from outside: the app keeps its tokens where a test cannot see them. Injected
 * by Playwright (not subject to the page's CSP); a listener on Playwright's response events would
 * race under Bun (see tests/helpers/browser.ts).
 */
const RECORD_TOKENS = `{
  const fetch = window.fetch.bind(window)
  window.__tokens = []
  window.fetch = async (input, init) => {
    const response = await fetch(input, init)
    if (String(input).endsWith('/api/v1/oauth/token') && response.ok) window.__tokens.push(await response.clone().json())
    return response
  }
}`
type Tokens = { access_token: string; refresh_token: string }[]
/** The token answers since the page last loaded. */
const tokens = () => page.evaluate<Tokens>('window.__tokens')

async function importBundle(slug: string, path: string): Promise<void> {
  const started = await http.call('POST', `/${slug}/import-graph`, {
    token,
    raw: readFileSync(path),
    headers: { 'content-type': 'application/gzip' },
  })
  expect(started.status).toBe(202)
  const job = await waitForJob(http, `/${slug}/jobs/${started.body.id}`, token)
  if (job.status !== 'succeeded') throw new Error(`import ${job.status}: ${job.error}`)
  await settleJobs(http, slug, token)
}

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  http = api(server.url)
  const registered = await http.post('/api/v1/auth/register', account)
  expect(registered.status).toBe(201)
  token = registered.body.token
  for (const repo of [tour, hostile]) expect((await http.post('/api/v1/repositories', repo, token)).status).toBe(201)
  dir = mkdtempSync(join(tmpdir(), 'kgs-app-'))
})

// The two graphs the pages show, each imported through the API in a hook of its own.
beforeAll(async () => {
  await generateBundle(join(dir, 'tour.json.gz'), { facts: 240, vectors: 'kgs-hash-v1', seed: 7, name: 'tour' })
  await importBundle(tour.slug, join(dir, 'tour.json.gz'))
})

beforeAll(async () => {
  const created = await http.post('/api/v1/repositories', { slug: large.slug, name: large.name }, token)
  expect(created.status).toBe(201)
  const started = performance.now()
  await generateGraph(await server.context.pools.forRepository(created.body.id), created.body.id, {
    facts: large.facts,
  })
  console.log(
    `large: ${large.facts.toLocaleString('en-US')} facts written in ${((performance.now() - started) / 1000).toFixed(0)} s (${BACKEND})`,
  )
  // A large KGS_APP_FACTS takes longer to write than the session token lives (ACCESS_TOKEN_TTL): a new one.
  const signedIn = await http.post('/api/v1/auth/login', account)
  expect(signedIn.status).toBe(200)
  token = signedIn.body.token
})

beforeAll(async () => {
  await writeHostileBundle(join(dir, 'hostile.json.gz'))
  await importBundle(hostile.slug, join(dir, 'hostile.json.gz'))
})

beforeAll(async () => {
  browser = await launchBrowser({ offNetwork: true })
  context = await browser.newContext()
  await context.addInitScript(RECORD_TOKENS)
  page = await context.newPage()
  page.on('console', (message) => {
    if (message.type() !== 'error') return
    if (message.text().includes('Content Security Policy')) blocked.push(`${page.url()}: ${message.text()}`)
    if (message.text().includes(REFUSED_OFF_MACHINE)) offsite.push(message.location().url)
  })
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
})

afterAll(async () => {
  await browser?.close()
  await server.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** axe-core on the page as it is: no serious or critical finding. */
async function accessible(): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze()
  const bad = results.violations.filter(
    (violation) => violation.impact === 'serious' || violation.impact === 'critical',
  )
  expect(
    bad.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`),
  ).toEqual([])
}

/**
 * Opens an app path and waits for its heading: within the app as a link would (a full load would
 * sign in again, the token being in the page's memory only), or by loading it when the app is not open.
 */
async function open(path: string, heading?: string | RegExp): Promise<void> {
  if (await page.locator('header nav').count()) {
    await page.evaluate(
      `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
    )
  } else await page.goto(server.url + path)
  await page.waitForURL(server.url + path)
  await page.locator('main h1').first().waitFor()
  if (heading) await page.getByRole('heading', { level: 1, name: heading }).waitFor()
}

/** Waits for a paged list to have loaded (its first row; a pager shows only under a list of more than one page). */
const listed = () => page.locator('main .rows > li').first().waitFor()

const signIn = async () => {
  await page.getByLabel('Email').fill(account.email)
  await page.getByLabel('Password').fill(account.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

describe(`the web app (${BACKEND})`, () => {
  test('a browser asking for / is sent to /app; API clients keep the JSON index; app is a reserved slug', async () => {
    const html = await server.request('/', {
      headers: { accept: 'text/html,application/xhtml+xml' },
      redirect: 'manual',
    })
    expect(html.status).toBe(302)
    expect(html.headers.get('location')).toBe('/app')
    const index = await http.get('/')
    expect(index.status).toBe(200)
    expect(index.body.links.app).toBe(`${server.url}/app`)
    expectError(await http.post('/api/v1/repositories', { name: 'App', slug: 'app' }, token), 400, /reserved/)
    const served = await server.request('/app/r/tour/facts')
    expect(served.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(served.headers.get('content-security-policy')).toContain("connect-src 'self'")
    expect(await served.text()).not.toMatch(/<script>|<style>|style=/)
    expect((await server.request('/app/assets/nothing.js')).status).toBe(404)
    // The budget: the app's JavaScript and CSS at most 100 KB gzip together, as served.
    let gzipped = 0
    for (const asset of ['app.js', 'app.css'])
      gzipped += Bun.gzipSync(new Uint8Array(await (await server.request(`/app/assets/${asset}`)).arrayBuffer())).length
    expect(gzipped).toBeLessThanOrEqual(100 * 1024)
  })

  test('signs in through the authorization page (code + PKCE, no consent), the access token only in memory, the refresh token in an HttpOnly cookie', async () => {
    await page.goto(server.url + '/')
    expect(new URL(page.url()).pathname).toBe('/app')
    await accessible()
    await page.getByRole('button', { name: 'Sign in' }).click()
    await signIn()
    await page.getByRole('heading', { name: 'Repositories' }).waitFor()
    await page.locator('header').getByText(account.email).waitFor()
    // The access token in memory only, the refresh token in a cookie no script reads: nothing in storage.
    const [signedIn] = await tokens()
    expect(Object.keys(signedIn!).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type'])
    expect(await page.evaluate<string>('JSON.stringify({ ...localStorage })')).toBe('{}')
    expect(await page.evaluate<string>('JSON.stringify({ ...sessionStorage })')).toBe('{}')
    expect(await page.evaluate<string>('document.cookie')).toBe('')
    expect((await context.cookies()).find((cookie) => cookie.name === 'kgs_app_refresh')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
      path: '/api/v1/oauth',
    })
  })

  test('repositories: listed, and one created from the form', async () => {
    await open('/app', 'Repositories')
    // The sign-in left the app on this page: the heading may be there before the list is.
    await page.getByRole('link', { name: 'Tour' }).waitFor()
    expect(await page.getByRole('link', { name: 'Tour' }).count()).toBe(1)
    // Each with the caller's role and the graph's size.
    const tourRow = page.locator('main ul.rows > li').filter({ has: page.getByRole('link', { name: 'Tour' }) })
    expect(await tourRow.textContent()).toMatch(/repoadmin.*240 facts/)
    await accessible()
    await page.getByLabel('Name').fill('Made in the app')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { name: 'Facts' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/app/r/made-in-the-app')
    // The API's own refusal, shown as it is.
    await open('/app', 'Repositories')
    await page.getByLabel('Name').fill('Made in the app')
    await page.getByRole('button', { name: 'Create' }).click()
    await page
      .getByRole('alert')
      .waitFor({ timeout: 10_000 })
      .catch(async () => {
        throw new Error(`no refusal shown at ${page.url()}; the page says: ${await page.locator('main').textContent()}`)
      })
    expect(await page.getByRole('alert').textContent()).toMatch(/already|taken|exists/i)
  })

  test('facts: paged, and a fact with its sources and concepts', async () => {
    await open('/app/r/tour/facts', 'Facts')
    await listed()
    const rows = page.locator('main ul.rows > li')
    expect(await rows.count()).toBe(50)
    const first = await rows.first().textContent()
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByText('Page 2').waitFor()
    expect(await rows.first().textContent()).not.toBe(first)
    await accessible()
    await rows.first().getByRole('link').click()
    await page.getByRole('heading', { name: 'Fact' }).waitFor()
    await page.getByRole('heading', { name: 'Sources' }).waitFor()
    expect(await page.locator('main ul.chips a').count()).toBeGreaterThan(0)
    await accessible()
  })

  test('a concept: summaries, synthesis, its facts and a picture of its neighbourhood, clickable', async () => {
    await open('/app/r/tour/concepts', 'Concepts')
    await accessible()
    await page.locator('main ul.rows a').first().click()
    await page.getByRole('heading', { name: 'Neighbourhood' }).waitFor()
    await page.locator('svg.graph circle').first().waitFor()
    await accessible()
    const neighbour = page.locator('figure.neighbourhood figcaption a').first()
    const name = (await neighbour.textContent())!
    await neighbour.click()
    await page.getByRole('heading', { level: 1, name, exact: true }).waitFor()
  })

  test('reports: the Markdown with its annotated sentences linked to their facts; sources and investigations', async () => {
    await open('/app/r/tour/reports', 'Reports')
    await page.locator('main ul.rows a').first().click()
    await page.locator('.markdown a.annotated').first().waitFor()
    const annotated = page.locator('.markdown a.annotated').first()
    expect(await annotated.getAttribute('href')).toMatch(/^\/app\/r\/tour\/facts\/[0-9a-f-]{36}$/)
    await accessible()
    await annotated.click()
    await page.getByRole('heading', { name: 'Fact' }).waitFor()

    await open('/app/r/tour/sources', 'Sources')
    await accessible()
    await page.locator('main ul.rows a').first().click()
    await page.locator('main .markdown').waitFor()
    await accessible()
    await open('/app/r/tour/investigations', 'Investigations')
    await page.locator('main ul.rows a').first().click()
    await page.getByRole('heading', { name: 'Sources' }).waitFor()
    await accessible()
  })

  test('search: results with their scores', async () => {
    const fact = (await http.call('GET', '/tour/facts?limit=1', { token })).body[0]
    await open('/app/r/tour/search', 'Search')
    await page.getByLabel('Query').fill(fact.text)
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    const results = page.getByRole('list', { name: 'Results' })
    await results.waitFor()
    expect(await results.locator('li').first().textContent()).toContain(fact.text)
    expect(await results.locator('li .meta').first().textContent()).toMatch(/score \d\.\d{3}/)
    // The query's words are marked in the results.
    expect(await results.locator('li').first().locator('mark').count()).toBeGreaterThan(0)
    // Keyword search, chosen: the same fact first.
    await page.getByLabel('Mode').selectOption('keyword')
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await page.getByRole('list', { name: 'Results' }).waitFor()
    expect(await results.locator('li').first().textContent()).toContain(fact.text)
    await accessible()
  })

  test('search: paged, with the number of results', async () => {
    // The word the most facts hold: keyword search ranks every match.
    const counts = new Map<string, number>()
    for (const fact of (await http.call('GET', '/tour/facts?limit=240', { token })).body as { text: string }[])
      for (const word of new Set(fact.text.toLowerCase().match(/[a-z]{4,}/g)))
        counts.set(word, (counts.get(word) ?? 0) + 1)
    const [word] = [...counts].sort((a, b) => b[1] - a[1])[0]!
    const all = await http.call('GET', `/tour/search?q=${word}&mode=keyword&limit=100`, { token })
    const total = Number(all.headers.get('x-total-count'))
    expect(total).toBeGreaterThan(20)
    await open('/app/r/tour/search', 'Search')
    await page.getByLabel('Query').fill(word)
    await page.getByLabel('Mode').selectOption('keyword')
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    const results = page.getByRole('list', { name: 'Results' })
    await results.waitFor()
    await page.getByText(`Page 1 · ${total} in all`).waitFor()
    expect(await results.locator('li').count()).toBe(20)
    const firstPage = await results.locator('li a').allTextContents()
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByText(`Page 2 · ${total} in all`).waitFor()
    const secondPage = await results.locator('li a').allTextContents()
    // The API's second page, in its order.
    expect(secondPage).toEqual(all.body.slice(20, 40).map((hit: { fact: { text: string } }) => hit.fact.text))
    expect(secondPage.filter((text) => firstPage.includes(text))).toEqual([])
    await accessible()
    await page.getByRole('button', { name: 'Previous page' }).click()
    await page.getByText(`Page 1 · ${total} in all`).waitFor()
    expect(await results.locator('li a').allTextContents()).toEqual(firstPage)
  })

  test("a fact's page lists the summaries and reports that cite it; a concept's, its related concepts", async () => {
    const facts = (await http.call('GET', '/tour/facts?limit=100', { token })).body as { id: string }[]
    let cited:
      | { id: string; citations: { kind: string; id: string; title: string; concept_id: string | null }[] }
      | undefined
    for (const fact of facts) {
      const citations = (await http.call('GET', `/tour/facts/${fact.id}/citations`, { token })).body
      if (
        citations.some((c: { kind: string }) => c.kind === 'summary') &&
        citations.some((c: { kind: string }) => c.kind === 'report')
      ) {
        cited = { id: fact.id, citations }
        break
      }
    }
    if (!cited) throw new Error('no fact of the tour graph is cited by both a summary and a report')
    await open(`/app/r/tour/facts/${cited.id}`, 'Fact')
    const citedBy = page.getByRole('region', { name: 'Cited by' })
    await citedBy.locator('li a').first().waitFor()
    expect(await citedBy.locator('li a').allTextContents()).toEqual(cited.citations.map((c) => c.title))
    await accessible()
    const report = cited.citations.find((c) => c.kind === 'report')!
    await citedBy.getByRole('link', { name: report.title, exact: true }).first().click()
    await page.getByRole('heading', { level: 1, name: report.title, exact: true }).waitFor()
    expect(new URL(page.url()).pathname).toBe(`/app/r/tour/reports/${report.id}`)

    const summary = cited.citations.find((c) => c.kind === 'summary')!
    const related = (await http.call('GET', `/tour/concepts/${summary.concept_id!}/related?limit=20`, { token }))
      .body as { canonical_name: string }[]
    await open(`/app/r/tour/concepts/${summary.concept_id!}`)
    const list = page.getByRole('region', { name: 'Related concepts' })
    await list.locator('li a').first().waitFor()
    expect(await list.locator('li a').allTextContents()).toEqual(related.map((c) => c.canonical_name))
    await accessible()
  })

  test('members: listed with roles; a repoadmin adds by e-mail, changes a role, removes with a confirmation; refusals shown plainly', async () => {
    const member = await http.post('/api/v1/auth/register', { email: uniqueEmail('shared'), password })
    const email = member.body.user.email as string
    await open('/app/r/tour/members', 'Members')
    const row = (who: string) => page.locator('main tbody tr').filter({ hasText: who })
    await row(account.email).waitFor()
    expect(await page.getByLabel(`Role of ${account.email}`).inputValue()).toBe('repoadmin')
    await accessible()
    const status = page.locator('main').getByRole('status')
    const alert = page.locator('main').getByRole('alert')
    // Added by e-mail, with a role.
    await page.getByLabel('E-mail').fill(email)
    await page.getByLabel('Role', { exact: true }).selectOption('editor')
    await page.getByRole('button', { name: 'Add' }).click()
    await status.filter({ hasText: `${email} is now editor.` }).waitFor()
    expect(await page.getByLabel(`Role of ${email}`).inputValue()).toBe('editor')
    // An unknown e-mail: the API's 404, as it says it.
    await page.getByLabel('E-mail').fill(uniqueEmail('nobody'))
    await page.getByRole('button', { name: 'Add' }).click()
    await alert.filter({ hasText: /no account with the e-mail address .* they sign up first/ }).waitFor()
    // A role changed in place.
    await page.getByLabel(`Role of ${email}`).selectOption('viewer')
    await status.filter({ hasText: `${email} is now viewer.` }).waitFor()
    expect((await http.call('GET', '/tour/members', { token })).body).toContainEqual(
      expect.objectContaining({ email, role: 'viewer' }),
    )
    // The last repoadmin cannot step down: the API's 409, and the role shown is the one kept.
    await page.getByLabel(`Role of ${account.email}`).selectOption('viewer')
    await alert.filter({ hasText: 'a repository keeps at least one repoadmin' }).waitFor()
    expect(await page.getByLabel(`Role of ${account.email}`).inputValue()).toBe('repoadmin')
    // Removal asks first, with the keyboard: focus lands on Cancel, which keeps the member.
    await page.getByRole('button', { name: `Remove ${email}` }).focus()
    await page.keyboard.press('Enter')
    const confirm = page.getByRole('group', { name: `Remove ${email} from this repository?` })
    await confirm.waitFor()
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Cancel')
    await accessible()
    await page.keyboard.press('Enter')
    await confirm.waitFor({ state: 'detached' })
    expect(await row(email).count()).toBe(1)
    await page.getByRole('button', { name: `Remove ${email}` }).click()
    await confirm.getByRole('button', { name: 'Remove' }).click()
    await status.filter({ hasText: `${email} is no longer a member.` }).waitFor()
    expect(await row(email).count()).toBe(0)
    expect(
      ((await http.call('GET', '/tour/members', { token })).body as { email: string }[]).map((m) => m.email),
    ).toEqual([account.email])
    await page.setViewportSize({ width: 375, height: 740 })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test('members: a viewer sees the list, without the controls to change it', async () => {
    const viewer = await http.post('/api/v1/auth/register', { email: uniqueEmail('viewer'), password })
    expect((await http.put('/tour/members', { email: viewer.body.user.email, role: 'viewer' }, token)).status).toBe(200)
    const other = await browser.newContext()
    try {
      const viewerPage = await other.newPage()
      await viewerPage.goto(`${server.url}/app/r/tour/members`)
      await viewerPage.getByRole('button', { name: 'Sign in' }).click()
      await viewerPage.getByLabel('Email').fill(viewer.body.user.email)
      await viewerPage.getByLabel('Password').fill(password)
      await viewerPage.getByRole('button', { name: 'Sign in' }).click()
      await viewerPage.locator('main tbody tr').filter({ hasText: account.email }).waitFor()
      expect(await viewerPage.locator('main tbody').textContent()).toContain('repoadmin')
      expect(await viewerPage.locator('main select, main form').count()).toBe(0)
    } finally {
      await other.close()
    }
    expect((await http.call('DELETE', `/tour/members/${viewer.body.user.id}`, { token })).status).toBe(200)
  })

  test('agents: the OAuth grants the person gave, one revoked after a confirmation', async () => {
    const agent = await registerClient(server.url, { client_name: 'Research agent' })
    const granted = await obtainTokens(server.url, agent, account)
    expect((await http.get('/api/v1/users/me', granted.access_token)).status).toBe(200)
    await open('/app', 'Repositories')
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click()
    await page.getByRole('heading', { level: 1, name: 'Connected agents' }).waitFor()
    const row = page.locator('main tbody tr').filter({ hasText: 'Research agent' })
    await row.waitFor()
    // This app's own sign-in is listed apart, as this browser's session, ended by signing out.
    const session = page.getByRole('table', { name: 'Browsers signed in to this app' }).locator('tbody tr')
    expect(await session.count()).toBe(1)
    expect(await session.textContent()).toContain('This browser')
    expect(await session.getByRole('button', { name: 'Sign out' }).count()).toBe(1)
    expect(
      await page
        .getByRole('table', { name: 'Agents with access' })
        .locator('tbody tr')
        .filter({ hasText: WEB_APP_CLIENT_ID })
        .count(),
    ).toBe(0)
    await accessible()
    await page.getByRole('button', { name: 'Revoke Research agent' }).click()
    const confirm = page.getByRole('group', { name: 'Revoke the access of Research agent?' })
    await confirm.getByRole('button', { name: 'Revoke' }).click()
    await page
      .locator('main')
      .getByRole('status')
      .filter({ hasText: 'Research agent can no longer act for you.' })
      .waitFor()
    expect(await row.count()).toBe(0)
    expect((await http.get('/api/v1/users/me', granted.access_token)).status).toBe(401)
    await page.setViewportSize({ width: 375, height: 740 })
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test('export to the registry and import from it, the job as a live bar; the registry with counts and owner', async () => {
    await open('/app/r/tour/transfer', 'Export and import')
    await accessible()
    await page.getByRole('button', { name: 'Export this repository' }).click()
    await page.locator('.job progress').waitFor()
    await page.getByRole('status').filter({ hasText: 'as graph “Tour”, version 1.' }).waitFor({ timeout: 30_000 })
    await open('/app/registry', 'Registry')
    const versions = page.getByRole('list', { name: 'Versions of Tour' })
    const row = versions.locator('> li').first()
    expect(await row.textContent()).toContain(account.email)
    expect(await row.textContent()).toContain('240 facts')
    await accessible()
    const [tourGraph] = (await http.get('/api/v1/graphs/names?name=Tour', token)).body
    await open(`/app/r/made-in-the-app/transfer`, 'Export and import')
    await page.getByLabel('Graph id').fill(tourGraph.versions[0].id)
    await page.getByRole('button', { name: 'Import', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Imported 240 facts' }).waitFor({ timeout: 30_000 })
    await open('/app/r/made-in-the-app/facts', 'Facts')
    await listed()
    expect(await page.locator('main ul.rows > li').count()).toBe(50)
  })

  test('users and roles, for a sysadmin', async () => {
    expect((await server.promote(account.email)).code).toBe(0)
    await open('/app/admin/users', 'Users and roles')
    // The users are a table, not a list of rows.
    await page.locator('main tbody tr').first().waitFor()
    expect(await page.locator('tbody').textContent()).toContain(account.email)
    await accessible()
    const other = await http.post('/api/v1/auth/register', { email: uniqueEmail('member'), password })
    const give = page.locator('main form').filter({ has: page.getByRole('heading', { name: 'Give a role' }) })
    await give.getByLabel('E-mail').fill(other.body.user.email)
    await give.getByLabel('Role').selectOption('viewer')
    await give.getByLabel('Repository').selectOption({ label: 'Tour (tour)' })
    await give.getByRole('button', { name: 'Give the role' }).click()
    await page
      .locator('main')
      .getByRole('status')
      .filter({ hasText: `${other.body.user.email} is now viewer in Tour.` })
      .waitFor()
    expect((await http.call('GET', '/tour/members', { token })).body).toContainEqual(
      expect.objectContaining({ email: other.body.user.email, role: 'viewer' }),
    )
    // An e-mail without an account: the API's refusal, as it says it.
    await give.getByLabel('E-mail').fill(uniqueEmail('nobody'))
    await give.getByRole('button', { name: 'Give the role' }).click()
    await page.locator('main').getByRole('alert').filter({ hasText: 'no account has this e-mail address' }).waitFor()
  })

  test('a denial is the API error shown plainly', async () => {
    await open('/app/r/no-such-repository/facts')
    expect(await page.getByRole('alert').first().textContent()).toMatch(/not found/i)
  })

  test('a large repository: the first page of its facts, its time printed', async () => {
    // Signed in already, unless this test runs alone (-t, to measure a larger KGS_APP_FACTS).
    if (!(await page.locator('header nav').count())) {
      await page.goto(server.url + '/app')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await signIn()
      await page.locator('header nav').waitFor()
    }
    await open('/app/r/tour/search', 'Search')
    const started = performance.now()
    await open('/app/r/large/facts', 'Facts')
    await listed()
    const ms = performance.now() - started
    expect(await page.locator('main ul.rows > li').count()).toBe(50)
    console.log(
      `first page of ${large.facts.toLocaleString('en-US')} facts shown in ${Math.round(ms)} ms (${BACKEND}; in-app navigation to rows on screen)`,
    )
  })

  test('keyboard: skip link, tabs and links work without a mouse', async () => {
    await open('/app/r/tour/facts', 'Facts')
    // The skip link comes first in the tab order: just before the header's first link.
    await page.getByRole('link', { name: 'kgs', exact: true }).focus()
    await page.keyboard.press('Shift+Tab')
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Skip to content')
    const concepts = page.getByRole('navigation', { name: 'Repository' }).getByRole('link', { name: 'Concepts' })
    await concepts.focus()
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Concepts' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/app/r/tour/concepts')
  })

  test('works 375 px wide: nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 375, height: 740 })
    for (const path of ['/app', '/app/r/tour/facts', '/app/registry']) {
      await open(path)
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    }
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test('a bundle full of script payloads is shown with nothing executed', async () => {
    const visit = async (list: string) => {
      await open(`/app/r/hostile/${list}`)
      await page.locator('main ul.rows a').first().waitFor()
      await page.locator('main ul.rows a').first().click()
      await page.locator('main article').waitFor()
    }
    for (const list of ['facts', 'concepts', 'sources', 'investigations', 'reports']) await visit(list)
    await open('/app/r/hostile/investigations', 'Investigations')
    await listed()
    expect(await page.locator('main ul.rows').textContent()).toContain('<script>')
    // Run in the page (a string: this file is type-checked without the DOM's types).
    const state = await page.evaluate(`({
      marked: window.${XSS_MARK},
      scripts: [...document.scripts].map((script) => script.src),
      handlers: [...document.querySelectorAll('*')].flatMap((element) => [...element.attributes].filter((a) => a.name.startsWith('on')).map((a) => a.name)),
      scriptLinks: [...document.querySelectorAll('a')].filter((a) => /^\\s*javascript:/i.test(a.getAttribute('href') ?? '')).length,
    })`)
    expect(state).toEqual({
      marked: undefined,
      scripts: [`${server.url}/app/assets/app.js`],
      handlers: [],
      scriptLinks: 0,
    })
    expect(dialogs).toEqual([])
  })

  test('refresh rotates the token; a reload signs in again silently; sign-out revokes', async () => {
    const refreshCookie = async () =>
      (await context.cookies()).find((cookie) => cookie.name === 'kgs_app_refresh')?.value
    await page.reload()
    await page.locator('header nav').waitFor()
    const [signedIn] = await tokens()
    const spent = await refreshCookie()
    // The access token revoked alone: the app's next call gets 401, refreshes, and goes on.
    const revoked = await http.call('POST', '/api/v1/oauth/revoke', {
      raw: new URLSearchParams({ token: signedIn!.access_token, client_id: WEB_APP_CLIENT_ID }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(revoked.status).toBe(200)
    await open('/app/r/tour/facts', 'Facts')
    await listed()
    expect(await page.locator('main ul.rows > li').count()).toBe(50)
    const [, refreshed, ...more] = await tokens()
    expect(more).toEqual([])
    expect(refreshed!.access_token).not.toBe(signedIn!.access_token)
    expect(await refreshCookie()).not.toBe(spent)
    // Rotation: the refresh token of the reload is spent, and presenting it revokes the grant.
    const reused = await http.call('POST', '/api/v1/oauth/token', {
      raw: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: spent!, client_id: WEB_APP_CLIENT_ID }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(reused.status).toBe(400)
    expect((await http.get('/api/v1/users/me', refreshed!.access_token)).status).toBe(401)
    // So the reload finds the browser signed out; the pages still remember it (no password), and
    // the sign-in comes back to the page it left.
    await page.reload()
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { level: 1, name: 'Facts' }).waitFor()

    // Sign-out revokes the grant: the tokens of this sign-in stop working.
    const [current] = await tokens()
    expect((await http.get('/api/v1/users/me', current!.access_token)).status).toBe(200)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('button', { name: 'Sign in' }).waitFor()
    expect((await http.get('/api/v1/users/me', current!.access_token)).status).toBe(401)
    // The next sign-in asks for the password again.
    await page.getByRole('button', { name: 'Sign in' }).click()
    await signIn()
    await page.getByRole('heading', { name: 'Repositories' }).waitFor()
    expect(offsite).toEqual([])
    expect(blocked).toEqual([])
  })
})

// Writing through the app, as a member of tour who is an editor and then a viewer: each write is
// checked through the API, each refusal is the API's own words on the page.
describe(`writing the graph in the web app (${BACKEND})`, () => {
  const writer = { email: uniqueEmail('writer'), password }
  let writerToken: string
  const member = (role: string) => http.put('/tour/members', { email: writer.email, role }, token)
  /** What a payload would have left in the page had it run (run in the page: a string, see above). */
  const executed = () =>
    page.evaluate(`({
      marked: window.${XSS_MARK},
      handlers: [...document.querySelectorAll('main *')].flatMap((element) => [...element.attributes].filter((a) => a.name.startsWith('on')).map((a) => a.name)),
      scriptLinks: [...document.querySelectorAll('a')].filter((a) => /^\\s*javascript:/i.test(a.getAttribute('href') ?? '')).length,
      scripts: document.scripts.length,
    })`)
  const nothingRan = { marked: undefined, handlers: [], scriptLinks: 0, scripts: 1 }
  const combobox = (name: string) => page.getByRole('combobox', { name: new RegExp(`^${name}`) })
  const alert = () => page.locator('main').getByRole('alert').first()
  /** Waits until the page has its answer to GET /permissions (the write buttons follow it), then a frame more. */
  const permissionsRead = async (navigation: () => Promise<void>) => {
    await page.evaluate('performance.clearResourceTimings()')
    await navigation()
    // Not waitForFunction: past its first check it evaluates the predicate with eval, which the app's CSP refuses.
    await page.evaluate(`new Promise((resolve) => {
      const answered = () => performance.getEntriesByType('resource').some((entry) => entry.name.includes('/api/v1/permissions') && entry.responseEnd > 0)
      if (answered()) return resolve()
      new PerformanceObserver((_, observer) => answered() && (observer.disconnect(), resolve())).observe({ type: 'resource' })
    })`)
    await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 50)))')
  }

  beforeAll(async () => {
    const registered = await http.post('/api/v1/auth/register', writer)
    expect(registered.status).toBe(201)
    writerToken = registered.body.token
    expect((await member('editor')).status).toBe(200)
    // The page signs in as the writer.
    if (await page.locator('header nav').count()) {
      await page.getByRole('button', { name: 'Sign out' }).click()
    } else await page.goto(server.url + '/app')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByLabel('Email').fill(writer.email)
    await page.getByLabel('Password').fill(writer.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('header').getByText(writer.email).waitFor()
  })

  test('an editor adds a fact with a source and a concept, edits it, deletes it after a confirmation; a script typed in runs nothing', async () => {
    await open('/app/r/tour/facts', 'Facts')
    await page.getByRole('link', { name: 'Add a fact' }).click()
    await page.getByRole('heading', { level: 1, name: 'New fact' }).waitFor()
    const text = `Typed in the app ${crypto.randomUUID().slice(0, 8)} ${PAYLOADS}`
    await page.getByLabel('Text').fill(text)
    await combobox('Source').selectOption({ index: 1 })
    await page.getByRole('button', { name: 'Add the source' }).click()
    await page.getByRole('list', { name: 'Its sources' }).getByRole('spinbutton').fill('3')
    await combobox('Concept').selectOption({ index: 1 })
    await page.getByRole('button', { name: 'Add the concept' }).click()
    await accessible()
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { level: 1, name: 'Fact', exact: true }).waitFor()
    const id = /facts\/([0-9a-f-]{36})$/.exec(page.url())![1]!
    // Shown as the text it is, and written as it was typed, with its links.
    await page.locator('main article, main [role=alert]').first().waitFor()
    expect(await page.locator('main').textContent()).toContain(text)
    expect(await page.locator('.fact-text').textContent()).toBe(text)
    const written = (await http.get(`/tour/facts/${id}`, token)).body
    expect(written.text).toBe(text)
    expect(written.sources.map((source: { chunk_index: number }) => source.chunk_index)).toEqual([3])
    expect(written.concepts).toHaveLength(1)
    expect(await executed()).toEqual(nothingRan)

    await page.getByRole('link', { name: 'Edit this fact' }).click()
    await page.getByRole('heading', { level: 1, name: 'Edit the fact' }).waitFor()
    expect(await page.getByLabel('Text').inputValue()).toBe(text)
    await accessible()
    await page.getByLabel('Text').fill(`${text} (edited)`)
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.locator('.fact-text').filter({ hasText: '(edited)' }).waitFor()
    const edited = (await http.get(`/tour/facts/${id}`, token)).body
    expect(edited.text).toBe(`${text} (edited)`)
    // Links untouched by the edit stay as they were.
    expect(edited.sources).toEqual(written.sources)

    await page.getByRole('button', { name: 'Delete this fact' }).click()
    await page.getByRole('group', { name: 'Delete this fact for good?' }).waitFor()
    // Nothing is deleted before the confirmation; the focus is on Cancel.
    expect((await http.get(`/tour/facts/${id}`, token)).status).toBe(200)
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Cancel')
    await accessible()
    await page.getByRole('button', { name: 'Yes, delete it' }).click()
    await page.getByRole('heading', { level: 1, name: 'Facts', exact: true }).waitFor()
    expect((await http.get(`/tour/facts/${id}`, token)).status).toBe(404)
  })

  test("a duplicate fact is the API's 409 with a link to the fact that exists", async () => {
    const existing = (await http.get('/tour/facts?limit=1', token)).body[0]
    await open('/app/r/tour/facts/new', 'New fact')
    await page.getByLabel('Text').fill(existing.text)
    await page.getByRole('button', { name: 'Create' }).click()
    const link = alert().getByRole('link', { name: 'Open the existing fact' })
    await link.waitFor()
    expect(await link.getAttribute('href')).toBe(`/app/r/tour/facts/${existing.id}`)
    await link.click()
    await page.locator('.fact-text').filter({ hasText: existing.text }).waitFor()
  })

  test('an edit of a fact changed since the page read it is refused (412) and says so; after a reload it saves', async () => {
    const fact = (await http.get('/tour/facts?limit=1', token)).body[0]
    await open(`/app/r/tour/facts/${fact.id}/edit`, 'Edit the fact')
    await page.getByLabel('Text').waitFor()
    // Someone else changes it meanwhile.
    expect((await http.call('PATCH', `/tour/facts/${fact.id}`, { token, body: { status: 'to_delete' } })).status).toBe(
      200,
    )
    await page.getByLabel('Text').fill(`${fact.text} (stale edit)`)
    await page.getByRole('button', { name: 'Save changes' }).click()
    await alert().waitFor()
    expect(await alert().textContent()).toContain('This fact changed since you opened it — reload it')
    expect(await alert().textContent()).toContain('If-Match failed')
    expect((await http.get(`/tour/facts/${fact.id}`, token)).body.text).toBe(fact.text)
    await accessible()
    await alert().getByRole('button', { name: 'Reload' }).click()
    // The form starts over from the fact as it is now (a new form: the refusal is gone with the old one).
    await alert().waitFor({ state: 'detached' })
    expect(await combobox('Status').inputValue()).toBe('to_delete')
    await combobox('Status').selectOption('stable')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByRole('heading', { level: 1, name: 'Fact', exact: true }).waitFor()
    expect((await http.get(`/tour/facts/${fact.id}`, token)).body.status).toBe('stable')
  })

  test('a concept: added with its context, description and aliases, edited, deleted, by keyboard', async () => {
    const name = `Typed concept ${crypto.randomUUID().slice(0, 8)}`
    await open('/app/r/tour/concepts', 'Concepts')
    await page.getByRole('link', { name: 'Add a concept' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { level: 1, name: 'New concept' }).waitFor()
    await accessible()
    await page.getByLabel('Name').focus()
    await page.keyboard.type(name)
    await page.keyboard.press('Tab')
    await page.keyboard.type('made in a test')
    await page.keyboard.press('Tab')
    await page.keyboard.type(`Described ${PAYLOADS}`)
    await page.keyboard.press('Tab')
    await page.keyboard.type('first alias')
    await page.keyboard.press('Enter')
    await page.keyboard.type('second alias')
    await page.getByRole('button', { name: 'Create' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { level: 1, name, exact: true }).waitFor()
    const id = /concepts\/([0-9a-f-]{36})$/.exec(page.url())![1]!
    const written = (await http.get(`/tour/concepts/${id}`, token)).body
    expect([written.context, written.description, written.aliases]).toEqual([
      'made in a test',
      `Described ${PAYLOADS}`,
      ['first alias', 'second alias'],
    ])
    await page.getByText('Also: first alias, second alias').waitFor()
    expect(await executed()).toEqual(nothingRan)

    await page.getByRole('link', { name: 'Edit this concept' }).click()
    await page.getByRole('heading', { level: 1, name: 'Edit the concept' }).waitFor()
    await page.getByLabel('Description').fill('Described again.')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByText('Described again.').waitFor()
    expect((await http.get(`/tour/concepts/${id}`, token)).body.aliases).toEqual(['first alias', 'second alias'])

    // Enabled once the page has read the concept's ETag (focus does not wait for that).
    await page.getByRole('button', { name: 'Delete this concept' }).and(page.locator(':enabled')).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('group', { name: 'Delete this concept for good?' }).waitFor()
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Cancel')
    await page.keyboard.press('Shift+Tab')
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Yes, delete it')
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Concepts', exact: true }).waitFor()
    expect((await http.get(`/tour/concepts/${id}`, token)).status).toBe(404)
  })

  test('a report: its Markdown body, its parent and an annotated sentence linked to its fact; a script typed in runs nothing', async () => {
    const fact = (await http.get('/tour/facts?limit=1', token)).body[0]
    const parent = (await http.get('/tour/reports?parent_id=none&limit=1', token)).body[0]
    const title = `Typed report ${crypto.randomUUID().slice(0, 8)}`
    await open('/app/r/tour/reports', 'Reports')
    await page.getByRole('link', { name: 'Add a report' }).click()
    await page.getByRole('heading', { level: 1, name: 'New report' }).waitFor()
    await page.getByLabel('Title').fill(title)
    await page
      .getByLabel(/^Body/)
      .fill(`The first claim holds.\n\n${PAYLOADS}\n\nA [cited fact](<fact:${fact.id}>) closes it.`)
    // The preview goes through the same inert rendering as the report's page.
    await page.getByRole('region', { name: 'Preview' }).getByRole('link', { name: 'cited fact' }).waitFor()
    expect(await executed()).toEqual(nothingRan)
    await combobox('Parent').selectOption(parent.id)
    await page.getByRole('button', { name: 'Set the parent' }).click()
    await combobox('Sentence').selectOption({ label: 'The first claim holds.' })
    await page.getByLabel('Find the fact').fill(fact.text)
    await page.getByRole('button', { name: 'Search facts' }).click()
    await combobox('Fact').selectOption(fact.id)
    await page.getByRole('button', { name: 'Annotate the sentence' }).click()
    await page.getByRole('list', { name: 'Its annotations' }).waitFor()
    await accessible()
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { level: 1, name: title, exact: true }).waitFor()
    const annotated = page.locator('.markdown a.annotated')
    expect(await annotated.textContent()).toBe('The first claim holds.')
    expect(await annotated.getAttribute('href')).toBe(`/app/r/tour/facts/${fact.id}`)
    await page.getByRole('navigation', { name: 'Report tree' }).getByRole('link', { name: parent.title }).waitFor()
    expect(await executed()).toEqual(nothingRan)
    const id = /reports\/([0-9a-f-]{36})$/.exec(page.url())![1]!
    const written = (await http.get(`/tour/reports/${id}`, token)).body
    expect([
      written.parent_id,
      written.annotations.map((a: { fact_id: string; posture: string }) => [a.fact_id, a.posture]),
    ]).toEqual([parent.id, [[fact.id, 'supports']]])

    // An edit that breaks a citation is the API's refusal, shown as it is.
    await page.getByRole('link', { name: 'Edit this report' }).click()
    await page.getByRole('heading', { level: 1, name: 'Edit the report' }).waitFor()
    const missing = crypto.randomUUID()
    await page.getByLabel(/^Body/).fill(`Cites [nothing](<fact:${missing}>).`)
    await page.getByRole('button', { name: 'Save changes' }).click()
    await alert().waitFor()
    expect(await alert().textContent()).toContain(missing)

    await open(`/app/r/tour/reports/${id}`, title)
    await page.getByRole('button', { name: 'Delete this report' }).click()
    await page.getByRole('button', { name: 'Yes, delete it' }).click()
    await page.getByRole('heading', { level: 1, name: 'Reports', exact: true }).waitFor()
    expect((await http.get(`/tour/reports/${id}`, token)).status).toBe(404)
  })

  test("the editor's pages work 375 px wide", async () => {
    await page.setViewportSize({ width: 375, height: 740 })
    for (const path of ['/app/r/tour/facts/new', '/app/r/tour/concepts/new', '/app/r/tour/reports/new']) {
      await open(path)
      await page.locator('main form').waitFor()
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    }
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  test("a viewer sees no write buttons, and a write page says what it needs, in the words of the API's 403, with no form to fill", async () => {
    expect((await member('viewer')).status).toBe(200)
    const fact = (await http.get('/tour/facts?limit=1', token)).body[0]
    await permissionsRead(async () => {
      await open('/app/r/tour/facts', 'Facts')
      await listed()
    })
    expect(await page.getByRole('link', { name: 'Add a fact' }).count()).toBe(0)
    await permissionsRead(() => open(`/app/r/tour/facts/${fact.id}`, /^Fact$/))
    await page.locator('.fact-text').waitFor()
    expect(await page.getByRole('link', { name: 'Edit this fact' }).count()).toBe(0)
    expect(await page.getByRole('button', { name: 'Delete this fact' }).count()).toBe(0)
    await accessible()

    const direct = await http.post('/tour/facts', { text: 'A viewer tries.' }, writerToken)
    expect(direct.status).toBe(403)
    await permissionsRead(() => open('/app/r/tour/facts/new', 'New fact'))
    expect(await page.locator('main form').count()).toBe(0)
    expect(await page.locator('main .refused').textContent()).toContain(
      direct.body.error.replace('permission denied: fact:write ', ''),
    )
    expect(dialogs).toEqual([])
  })
})
