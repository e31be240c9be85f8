// What each page of the web app asks the API for when the person arrives on it, at most
// MAX_REQUESTS, counted in the page itself, both ways a person arrives: by a link within the app
// (the header's reads are done by then) and by a fresh load of the page's address (a link opened
// from elsewhere, a reload), signed in with the browser's app session. An API request is the app's
// call of the kgs API: same origin, outside /app/ (the app's own files), except the token refresh
// through the HttpOnly cookie (/api/v1/oauth/token), which is the signing in, not the page; and a
// stored image of a source (/{repo}/images/{id}), which the page fetches as an <img> would load it
// (counted apart: at most MAX_IMAGES). Also: no page loads a script beyond the app's one bundle (no
// graph library, on the concept page or any other: the neighbourhood is drawn in SVG).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'
import { generateBundle } from '../../scripts/gen-bundle.ts'

const MAX_REQUESTS = 4
/** How many stored images a source's page shows (src/web/pages/sources/sources.tsx). */
const MAX_IMAGES = 12
const TOKEN_ENDPOINT = '/api/v1/oauth/token'
const IMAGE = /^\/[^/]+\/images\/[^/?]+$/
/** How long the page must have had no request in flight, and nothing loading, to count as arrived. */
const QUIET_MS = 300
const account = { email: uniqueEmail('requests'), password: 'correct horse battery' }

let server: TestServer
let http: ReturnType<typeof api>
let token: string
let dir: string
let browser: Browser
let page: Page
let processedSource: string

/**
 * Counts the page's requests to the API (same origin, outside /app: not the app's own files) in
 * window.__api, and when the last one started or ended. Injected by Playwright, not subject to the
 * page's CSP; Playwright's request events would race under Bun (tests/helpers/browser.ts).
 */
const COUNT_REQUESTS = `{
  const fetch = window.fetch.bind(window)
  window.__api = { paths: [], inFlight: 0, changed: performance.now() }
  window.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href)
    if (url.origin !== location.origin || url.pathname.startsWith('/app/')) return fetch(input, init)
    window.__api.paths.push(url.pathname + url.search)
    window.__api.inFlight++
    window.__api.changed = performance.now()
    try {
      return await fetch(input, init)
    } finally {
      window.__api.inFlight--
      window.__api.changed = performance.now()
    }
  }
}`

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  http = api(server.url)
  const registered = await http.post('/api/v1/auth/register', account)
  expect(registered.status).toBe(201)
  token = registered.body.token
  expect((await server.promote(account.email)).code).toBe(0)
  expect((await http.post('/api/v1/repositories', { slug: 'tour', name: 'Tour' }, token)).status).toBe(201)
  dir = mkdtempSync(join(tmpdir(), 'kgs-requests-'))
  await generateBundle(join(dir, 'tour.json.gz'), { facts: 240, vectors: 'kgs-hash-v1', seed: 7, name: 'tour' })
  const started = await http.call('POST', '/tour/import-graph', {
    token,
    raw: readFileSync(join(dir, 'tour.json.gz')),
    headers: { 'content-type': 'application/gzip' },
  })
  expect(started.status).toBe(202)
  expect((await waitForJob(http, `/tour/jobs/${started.body.id}`, token)).status).toBe('succeeded')
  // A source kgs read and processed itself: its page reads its chunks and the facts drawn from them too.
  const form = new FormData()
  form.append(
    'file',
    new File(['# Kettles\n\nA kettle boils water.\n\n## Spouts\n\nA spout pours the water.\n'], 'kettles.md'),
  )
  const added = await http.call('POST', '/tour/ingest', { raw: form, token })
  expect(added.status).toBe(202)
  processedSource = added.body.jobs[0].source_id
  await settleJobs(http, 'tour', token)
  browser = await launchBrowser({ offNetwork: true })
  const context = await browser.newContext()
  await context.addInitScript(COUNT_REQUESTS)
  page = await context.newPage()
})

afterAll(async () => {
  await browser?.close()
  await server.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** What the predicate of `arrive` reads in the page (this file's types have no DOM). */
interface Arrived {
  __api: { inFlight: number; changed: number }
  document: { querySelector(selector: string): { textContent: string | null } | null }
  performance: { now(): number }
}

/** Waits until the page shows its heading and has had nothing in flight, and nothing loading, for QUIET_MS; answers what it asked. */
async function settled(): Promise<string[]> {
  await page.locator('main h1').first().waitFor()
  // A function, not a string: the page's CSP refuses eval, which a string predicate's polling needs.
  await page.waitForFunction(
    (quiet) => {
      const { __api: counted, document, performance } = globalThis as unknown as Arrived
      return (
        counted.inFlight === 0 &&
        performance.now() - counted.changed > quiet &&
        !document.querySelector('main')?.textContent?.includes('Loading…')
      )
    },
    QUIET_MS,
    { polling: 50 },
  )
  return await page.evaluate<string[]>('window.__api.paths')
}

/** Goes to `path` as a link within the app does, and answers the paths the page asked for until it settled. */
async function arrive(path: string): Promise<string[]> {
  await page.evaluate(`window.__api.paths = []; window.__api.changed = performance.now()`)
  await page.evaluate(
    `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
  )
  await page.waitForURL(server.url + path)
  return await settled()
}

/** Loads `path` afresh (the address opened, or reloaded), and answers the paths the page asked for until it settled, signed in. */
async function load(path: string): Promise<string[]> {
  await page.goto(server.url + path)
  // The sign-in card has a heading too: the header's Sign out says the tab resumed the browser's session.
  await page.getByRole('banner').getByRole('button', { name: 'Sign out' }).waitFor()
  return await settled()
}

/** What of `asked` counts as the page's API requests: not the token refresh (signing in), not a stored image. */
const apiRequests = (asked: string[]) =>
  asked.filter((path) => path.split('?')[0] !== TOKEN_ENDPOINT && !IMAGE.test(path.split('?')[0]!))

/** The scripts the page has loaded since it was loaded, by path. */
const scripts = () =>
  page.evaluate<string[]>(
    `[...document.scripts].map((s) => s.src).concat(performance.getEntriesByType('resource').filter((e) => e.initiatorType === 'script' || /\\.m?js($|\\?)/.test(e.name)).map((e) => e.name)).map((u) => new URL(u).pathname)`,
  )

/**
 * The app's pages this page links to by its navigation (the header's, the repository's tabs) and
 * its write bar ("Add a …", "Edit this …"): the pages of the route table, as a person finds them.
 */
const pagesLinked = () =>
  page.evaluate<string[]>(
    `[...document.querySelectorAll('header nav a, nav.tabs a, main .actions a')].map((a) => a.pathname)`,
  )

describe(`requests on arrival (${BACKEND})`, () => {
  test(`every page asks the API at most ${MAX_REQUESTS} times; no page loads a script beyond the app's bundle`, async () => {
    await page.goto(`${server.url}/app`)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByLabel('Email').fill(account.email)
    await page.getByLabel('Password').fill(account.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Repositories' }).waitFor()

    const first = async (list: string, query = '') =>
      (await http.get(`/tour/${list}?limit=1${query}`, token)).body[0].id as string
    const [fact, source, investigation] = [await first('facts'), await first('sources'), await first('investigations')]
    // A concept with related concepts (its page draws them), and a report with a parent (its page reads both).
    const concepts = (await http.get('/tour/concepts?limit=100', token)).body as { id: string }[]
    let concept: string | undefined
    for (const { id } of concepts)
      if (!concept && (await http.get(`/tour/concepts/${id}/related?limit=1`, token)).body.length > 0) concept = id
    const reports = (await http.get('/tour/reports?limit=100', token)).body as {
      id: string
      parent_id: string | null
    }[]
    const report = (reports.find((r) => r.parent_id !== null) ?? reports[0])!.id
    expect(concept).toBeDefined()

    const r = '/app/r/tour'
    const paths = [
      '/app/registry',
      '/app/agents',
      '/app/admin/users',
      '/app',
      // Into the repository from outside it: its frame's reads (the repository, the permissions there) count here.
      `${r}/facts`,
      `${r}/facts/${fact}`,
      `${r}/facts/new`,
      `${r}/facts/${fact}/edit`,
      `${r}/concepts`,
      `${r}/concepts/${concept}`,
      `${r}/concepts/new`,
      `${r}/concepts/${concept}/edit`,
      `${r}/sources`,
      `${r}/sources/${source}`,
      `${r}/sources/${processedSource}`,
      `${r}/sources/new`,
      `${r}/investigations`,
      `${r}/investigations/${investigation}`,
      `${r}/reports`,
      `${r}/reports/${report}`,
      `${r}/reports/new`,
      `${r}/reports/${report}/edit`,
      `${r}/search`,
      `${r}/transfer`,
      `${r}/members`,
      `${r}/settings`,
    ]
    const byLink: Record<string, string[]> = {}
    const linked = new Set<string>()
    for (const path of paths) {
      byLink[path] = await arrive(path)
      for (const href of await pagesLinked()) linked.add(href)
      if (path === `${r}/concepts/${concept}`) await page.locator('svg.graph circle').first().waitFor()
      expect(await scripts()).toEqual(expect.arrayContaining(['/app/assets/app.js']))
      expect([...new Set(await scripts())]).toEqual(['/app/assets/app.js'])
    }
    // Every page the app links to is counted here (a new page in the route table must join the list).
    expect([...linked].filter((href) => !paths.includes(href))).toEqual([])
    const byLoad: Record<string, string[]> = {}
    for (const path of paths) byLoad[path] = await load(path)

    const over = (counted: Record<string, string[]>) =>
      Object.entries(counted)
        .map(([path, asked]) => [path, apiRequests(asked)] as const)
        .filter(([, requests]) => requests.length > MAX_REQUESTS)
    expect(over(byLink)).toEqual([])
    expect(over(byLoad)).toEqual([])
    const images = Object.entries({ ...byLink, ...byLoad }).filter(
      ([, asked]) => asked.filter((path) => IMAGE.test(path)).length > MAX_IMAGES,
    )
    expect(images).toEqual([])
    // What the counts rest on: the pages did ask (a page that failed to load would ask nothing), and
    // a load signed in by one refresh, which a link within the app needs not.
    for (const counted of [byLink, byLoad])
      expect(apiRequests(counted[`${r}/concepts/${concept}`]!).map((asked) => asked.split('?')[0])).toEqual(
        expect.arrayContaining([
          `/tour/concepts/${concept}`,
          `/tour/concepts/${concept}/neighbourhood`,
          `/tour/concepts/${concept}/related`,
        ]),
      )
    for (const counted of [byLink, byLoad])
      expect(apiRequests(counted[`${r}/sources/${processedSource}`]!).map((asked) => asked.split('?')[0])).toEqual(
        expect.arrayContaining([
          `/tour/sources/${processedSource}`,
          `/tour/sources/${processedSource}/chunks`,
          `/tour/sources/${processedSource}/facts`,
        ]),
      )
    for (const path of paths) {
      expect(byLoad[path]!.filter((asked) => asked === TOKEN_ENDPOINT)).toHaveLength(1)
      expect(byLink[path]!.filter((asked) => asked === TOKEN_ENDPOINT)).toHaveLength(0)
    }
    const most = (counted: Record<string, string[]>) =>
      Math.max(...Object.values(counted).map((asked) => apiRequests(asked).length))
    console.log(
      `API requests on arrival (${BACKEND}), at most: ${most(byLink)} by a link within the app, ${most(byLoad)} by a load`,
    )
  })

  test("the app's bundle carries no graph library", async () => {
    const bundle = await (await server.request('/app/assets/app.js')).text()
    expect(bundle).not.toMatch(/cytoscape/i)
  })
})
