// The "Add a source" page in headless Chromium off the network, with the documents on a loopback
// server (INGEST_FETCH_ALLOW_PRIVATE) and in files the test makes: two addresses and two dropped
// files (a PDF and Markdown) added at once, each bar reaching 100 %, each source opened and its
// Markdown read; an unreachable address, an empty file and a file past MEDIA_UPLOAD_MAX_BYTES
// (refused before it is sent) each say why; a web page and a Markdown file full of scripts, event
// handlers, javascript: links, frames and a refresh are ingested and their source pages show them
// with nothing of them running; a processed source's page shows its text chunk by chunk with the
// facts drawn from each marked and listed, its concepts and "Process again", which it follows to
// its end, a hostile fact's text as text; a concept's page says where each fact came from; a
// viewer is offered no "Add a source" and no "Process again", and is told what adding needs; axe-clean.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from '../helpers/browser.ts'
import { expectAccessibleAtBothWidths } from '../helpers/axe.ts'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { makePdf } from '../ingest/documents.ts'
import { permissionDenied } from '../../src/permissions.ts'

const password = 'correct horse battery'
const UPLOAD_MAX_BYTES = 100_000
const KETTLES = `<!doctype html><html><head><title>Kettles</title></head><body><article><h1>Kettles</h1>
<p>A kettle boils water for tea. The whistle tells when the water boils, and a good kettle pours without dripping.</p>
</article></body></html>`
const CUPS = '# Cups\n\nCups hold tea.\n\n## Saucers\n\nSaucers catch drips.\n'
const NOTES = '# Teapot notes\n\nA teapot brews tea.\n\n## Glazes\n\nGlazed pots keep no taste.\n'
/** Every way a page could run something, each of which would set window.__pwned, open a dialog, log or navigate. */
const HOSTILE = `<!doctype html><html><head>
<title>&lt;img src=x onerror="window.__pwned='title'"&gt; Hostile &lt;script&gt;alert('title')&lt;/script&gt;</title>
<meta http-equiv="refresh" content="0;url=/app/refreshed">
<script>window.__pwned = 'head script'; alert('head'); console.log('head script ran')</script>
</head><body onload="window.__pwned='body onload'">
<article><h1>Hostile page</h1>
<p>This page is about kettles and tea, with enough words in one paragraph for an article to be found here.
<img src="data:image/png;base64,bm90IGFuIGltYWdl" onerror="window.__pwned='img onerror'; alert('img')" alt="kettle"></p>
<p><a href="javascript:window.__pwned='link';alert('link')">a javascript link</a>, <a href="JaVaScRiPt:alert(2)">another</a>
and <a href=" javascript:alert(3)">a third</a>.</p>
<iframe src="javascript:parent.__pwned='iframe'" srcdoc="<script>parent.__pwned='srcdoc'</script>"></iframe>
<svg onload="window.__pwned='svg onload'"><script>window.__pwned='svg script'</script><a href="javascript:alert(4)"><text>svg link</text></a></svg>
<p>Markup as text: &lt;script&gt;window.__pwned='text'&lt;/script&gt; and &lt;img src=x onerror="window.__pwned='text img'"&gt;</p>
<p>[a Markdown link](javascript:alert(5)) and ![an image](javascript:alert(6)) and <b onmouseover="window.__pwned='hover'">bold</b></p>
<details open ontoggle="window.__pwned='toggle'"><summary>More</summary><p>Details.</p></details>
<form action="javascript:alert(7)"><button formaction="javascript:alert(8)">Go</button></form>
<object data="javascript:alert(9)"></object><embed src="javascript:alert(10)">
</article></body></html>`

/** The same, as a Markdown file, whose raw HTML a Markdown reader would pass through. */
const HOSTILE_MARKDOWN = `# <img src=x onerror="window.__pwned='title'"> Hostile notes <script>alert('title')</script>

<script>window.__pwned = 'script'; alert('script')</script>
<meta http-equiv="refresh" content="0;url=/app/refreshed">

Some text <img src="data:image/png;base64,bm90" onerror="window.__pwned='img'"> and <b onmouseover="window.__pwned='hover'">bold</b>.

[a javascript link](javascript:alert(1)), [another](JaVaScRiPt:alert(2)) and <a href="javascript:alert(3)">raw</a>.

<iframe src="javascript:parent.__pwned='iframe'" srcdoc="<script>parent.__pwned='srcdoc'</script>"></iframe>

<svg onload="window.__pwned='svg'"><script>window.__pwned='svg script'</script></svg>

![an image](javascript:alert(4)) <details open ontoggle="window.__pwned='toggle'"><summary>More</summary></details>
`

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let viewer: Account
let slug: string
let browser: Browser
let docs: ReturnType<typeof Bun.serve>
let docsUrl: string
/** A loopback address where nothing listens. */
let unreachableUrl: string
let pdf: Uint8Array

beforeAll(async () => {
  pdf = await makePdf({ pages: [['Page one says hello.'], ['Page two says goodbye.']], title: 'Two pages' })
  docs = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const documents: Record<string, [string, string]> = {
        '/kettles.html': [KETTLES, 'text/html; charset=utf-8'],
        '/cups.md': [CUPS, 'text/markdown'],
        '/hostile.html': [HOSTILE, 'text/html; charset=utf-8'],
        '/hostile.md': [HOSTILE_MARKDOWN, 'text/markdown; charset=utf-8'],
      }
      const found = documents[new URL(request.url).pathname]
      return found
        ? new Response(found[0], { headers: { 'content-type': found[1] } })
        : new Response('not here', { status: 404 })
    },
  })
  docsUrl = `http://127.0.0.1:${docs.port}`
  const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  unreachableUrl = `http://127.0.0.1:${closed.port}/gone.html`
  closed.stop(true)
  let repositories: { docs: { slug: string } }
  ;({
    server,
    http,
    users: { owner, viewer },
    repositories,
  } = await fixture({
    server: {
      env: { WORKERS: '1', INGEST_FETCH_ALLOW_PRIVATE: 'true', MEDIA_UPLOAD_MAX_BYTES: String(UPLOAD_MAX_BYTES) },
    },
    users: { owner: 'member', viewer: 'member', admin: 'sysadmin' },
    repositories: { docs: { by: 'owner', name: 'Documents', roles: { viewer: 'viewer' } } },
  }))
  slug = repositories.docs.slug
  browser = await launchBrowser({ offNetwork: true })
})

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  docs?.stop(true)
})

/**
 * A browser of its own, signed in as `account` through the authorization pages; `logged`: what
 * its page logs as errors or warnings, and the errors it throws.
 */
async function signedIn(account: Account): Promise<{ context: BrowserContext; page: Page; logged: string[] }> {
  const context = await browser.newContext()
  const page = await context.newPage()
  const logged: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') logged.push(`${page.url()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => logged.push(`${page.url()}: ${error.message}`))
  await page.goto(`${server.url}/app`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByLabel('Email').fill(account.email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('header').getByText(account.email).waitFor()
  return { context, page, logged }
}

/** Goes to an app path as a link would (a full load would sign in again: the token is in memory only). */
async function open(page: Page, path: string, heading: string | RegExp): Promise<void> {
  await page.evaluate(
    `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
  )
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
}

/** The item of the Added list for `name`. */
const item = (page: Page, name: string) => page.locator('main li.addition').filter({ hasText: name })

/** What the item says once its document is parsed or has failed. */
async function ended(page: Page, name: string): Promise<string> {
  const status = item(page, name)
    .getByRole('status')
    .filter({ hasText: /^(Parsed|Failed|Not sent)/ })
  await status.waitFor({ timeout: 60_000 })
  return (await status.textContent())!
}

/** Drops `files` on the page's drop zone, as a person dragging them from their desktop does. */
async function drop(page: Page, files: { name: string; type: string; bytes: Uint8Array }[]): Promise<void> {
  const dataTransfer = await page.evaluateHandle(
    (given) => {
      // What the function reads in the page (this file's types have no DOM).
      const { DataTransfer, File } = globalThis as unknown as {
        DataTransfer: new () => { items: { add(file: unknown): void } }
        File: new (parts: Uint8Array[], name: string, options: { type: string }) => unknown
      }
      const transfer = new DataTransfer()
      for (const file of given)
        transfer.items.add(new File([new Uint8Array(file.bytes)], file.name, { type: file.type }))
      return transfer
    },
    files.map((file) => ({ ...file, bytes: [...file.bytes] })),
  )
  await page.locator('main section.drop').dispatchEvent('drop', { dataTransfer })
}

/** Opens the source page's chunks and waits for the first. */
async function chunksShown(page: Page): Promise<void> {
  await page.locator('main details.chunks summary').click()
  await page.locator('main details.chunks pre').first().waitFor()
}

/** The ids of the repository's sources, by the API. */
const sourceIds = async () =>
  ((await http.get(`/${slug}/sources?limit=100`, owner.token)).body as { id: string }[]).map((source) => source.id)

describe(`adding sources in the app (${BACKEND})`, () => {
  let page: Page
  let logged: string[]

  test('"Add a source" on the sources list leads to the page, accessible', async () => {
    ;({ page, logged } = await signedIn(owner))
    await open(page, `/app/r/${slug}/sources`, 'Sources')
    await page.getByRole('link', { name: 'Add a source' }).click()
    await page.getByRole('heading', { level: 1, name: 'Add a source' }).waitFor()
    expect(await page.locator('main').textContent()).toContain('Each file at most 97.7 KiB')
    await expectAccessibleAtBothWidths(page)
  })

  test('two addresses and two dropped files at once: each bar reaches 100 %, each source has its Markdown', async () => {
    const urls = [`${docsUrl}/kettles.html`, `${docsUrl}/cups.md`]
    // With the keyboard: the field, then the button after it.
    await page.getByLabel(/^Web addresses/).fill(`${urls[0]}\n\n  ${urls[1]}  \n`)
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Add these addresses')
    await page.keyboard.press('Enter')
    // Every label the items' bars take, as they change.
    await page.evaluate(`window.__labels = []
      new MutationObserver(() => {
        for (const label of document.querySelectorAll('main li.addition label'))
          if (window.__labels.at(-1) !== label.textContent) window.__labels.push(label.textContent)
      }).observe(document.querySelector('main'), { subtree: true, childList: true, characterData: true })`)
    await drop(page, [
      { name: 'paper.pdf', type: 'application/pdf', bytes: pdf },
      { name: 'notes.md', type: 'text/markdown', bytes: new TextEncoder().encode(NOTES) },
    ])
    const expected = {
      [urls[0]!]: 'A kettle boils water for tea.',
      [urls[1]!]: 'Saucers catch drips.',
      'paper.pdf': 'Page two says goodbye.',
      'notes.md': 'Glazed pots keep no taste.',
    }
    for (const name of Object.keys(expected)) {
      expect(await ended(page, name)).toBe('Parsed. Open the source')
      const bar = item(page, name).getByRole('progressbar')
      expect(await bar.getAttribute('value')).toBe('100')
      expect(await bar.getAttribute('aria-valuetext')).toBe('100%')
      expect(await item(page, name).locator('label').textContent()).toBe(`${name}: parsed · 100 %`)
    }
    // Each file's bar counted its upload's bytes, then followed its job to the end.
    const labels = await page.evaluate<string[]>('window.__labels')
    for (const name of ['paper.pdf', 'notes.md']) {
      const taken = labels.filter((label) => label.startsWith(`${name}: `))
      const uploaded = taken.findIndex((label) => / uploading, .+ of .+ · 100 %$/.test(label))
      expect(uploaded).toBeGreaterThanOrEqual(0)
      expect(taken.slice(uploaded + 1).at(-1)).toBe(`${name}: parsed · 100 %`)
    }
    await expectAccessibleAtBothWidths(page)
    // Each source's page, from its item's link (the list stays on this page: the links are read first).
    const hrefs = Object.fromEntries(
      await Promise.all(
        Object.keys(expected).map(
          async (name) =>
            [name, await item(page, name).getByRole('link', { name: 'Open the source' }).getAttribute('href')] as const,
        ),
      ),
    )
    for (const [name, text] of Object.entries(expected)) {
      const source = (await http.get(`/${slug}/sources/${hrefs[name]!.split('/').at(-1)}`, owner.token)).body
      // The page follows the parse; the processing it sets off may have ended since.
      expect(['parsed', 'processed']).toContain(source.status)
      await open(page, hrefs[name]!, source.parsed_title || 'Source')
      await page.locator('main .markdown').getByText(text).waitFor()
      await chunksShown(page)
    }
    // The last opened, notes.md: its headings below the page's own.
    await page.locator('main .markdown h3', { hasText: 'Glazes' }).waitFor()
    await expectAccessibleAtBothWidths(page)
    expect(logged).toEqual([])
  })

  test('an unreachable address, an empty file and a file past the limit each say why; only the address is a source', async () => {
    const before = await sourceIds()
    await open(page, `/app/r/${slug}/sources/new`, 'Add a source')
    await page.getByLabel(/^Web addresses/).fill(unreachableUrl)
    await page.getByRole('button', { name: 'Add these addresses' }).click()
    await page.getByLabel('Choose files').setInputFiles([
      { name: 'empty.txt', mimeType: 'text/plain', buffer: Buffer.alloc(0) },
      { name: 'big.txt', mimeType: 'text/plain', buffer: Buffer.alloc(UPLOAD_MAX_BYTES + 50_000, 'x') },
    ])
    expect(await ended(page, unreachableUrl)).toBe('Failed: could not connect to the server of the URL. The source')
    expect(await ended(page, 'empty.txt')).toBe('Failed: the file "empty.txt" is empty (0 bytes).')
    expect(await ended(page, 'big.txt')).toBe('Not sent: it is 146.5 KiB, more than the limit of 97.7 KiB a file.')
    for (const name of [unreachableUrl, 'empty.txt', 'big.txt'])
      expect(await item(page, name).getByRole('progressbar').getAttribute('value')).toBe('0')
    const after = await sourceIds()
    expect(after.length).toBe(before.length + 1)
    const failed = (await http.get(`/${slug}/sources/${after.find((id) => !before.includes(id))}`, owner.token)).body
    expect({ url: failed.url, status: failed.status, reason: failed.status_reason }).toEqual({
      url: unreachableUrl,
      status: 'failed',
      reason: 'could not connect to the server of the URL',
    })
    await expectAccessibleAtBothWidths(page)
    // The empty file's 400, which Chromium logs as a resource that failed to load.
    expect(logged).toEqual([expect.stringContaining('the server responded with a status of 400')])
    logged.length = 0
  })

  test('a page and a Markdown file full of scripts, handlers and javascript: links are kept, and nothing of them runs on their source pages', async () => {
    await open(page, `/app/r/${slug}/sources/new`, 'Add a source')
    const urls = [`${docsUrl}/hostile.html`, `${docsUrl}/hostile.md`]
    await page.getByLabel(/^Web addresses/).fill(urls.join('\n'))
    await page.getByRole('button', { name: 'Add these addresses' }).click()
    const hrefs: string[] = []
    for (const url of urls) {
      expect(await ended(page, url)).toBe('Parsed. Open the source')
      hrefs.push((await item(page, url).getByRole('link', { name: 'Open the source' }).getAttribute('href'))!)
    }
    const fired: string[] = []
    page.on('dialog', (dialog) => {
      fired.push(`dialog: ${dialog.message()}`)
      void dialog.dismiss()
    })
    page.on('console', (message) => fired.push(`console: ${message.text()}`))
    page.on('popup', (popup) => fired.push(`popup: ${popup.url()}`))
    for (const [i, href] of hrefs.entries()) {
      const source = (await http.get(`/${slug}/sources/${href.split('/').at(-1)}`, owner.token)).body
      expect(source.parsed_title).toContain('Hostile')
      await open(page, href, source.parsed_title)
      // From here on the page must stay where it is (a refresh, a javascript: frame or link would move it).
      const moved = (frame: { url(): string }) => fired.push(`navigated: ${frame.url()}`)
      page.on('framenavigated', moved)
      await page.locator('main .markdown p').first().waitFor()
      await chunksShown(page)
      // The title and the address as text: what the API says, character for character.
      expect(await page.locator('main h1').textContent()).toBe(source.parsed_title)
      expect(await page.locator('main .meta a').first().textContent()).toBe(urls[i]!)
      // Pointed at, what could carry a mouse handler.
      for (const element of await page.locator('main .markdown a, main .markdown b, main .markdown img').all())
        await element.hover()
      const dangerous = await page.evaluate<string[]>(
        `[...document.querySelectorAll('main script, main iframe, main object, main embed, main meta, main form, main svg, main [onload], main [onerror], main [ontoggle], main [onmouseover], main [href^="javascript:" i], main [src^="javascript:" i]')].map((e) => e.outerHTML)`,
      )
      expect(dangerous).toEqual([])
      await expectAccessibleAtBothWidths(page)
      expect(await page.evaluate('window.__pwned')).toBeUndefined()
      page.off('framenavigated', moved)
      expect({ fired, at: page.url() }).toEqual({ fired: [], at: server.url + href })
    }
    // The Markdown file's markup is its text: shown, not run.
    expect(await page.locator('main .markdown').textContent()).toContain("<script>window.__pwned = 'script'")
    expect(logged).toEqual([])
  })
})

/** A Markdown document kgs processes into facts and concepts, each of its two sections a chunk. */
const TEA = `# Tea

Tea is brewed from the leaves of the tea plant. Green tea is steamed soon after picking.

## Kettles

A kettle boils the water for the tea. <script>window.__pwned = 'chunk'</script>
`
/** A fact whose text is markup and a concept whose name is, linked to a chunk of the tea source. */
const HOSTILE_FACT = `<img src=x onerror="window.__pwned='fact'"> Kettles sing <script>window.__pwned='fact script'</script>`
const HOSTILE_CONCEPT = `<b onmouseover="window.__pwned='concept'">Singing</b>`

describe(`a processed source and its concepts (${BACKEND})`, () => {
  let sourceId: string

  beforeAll(async () => {
    const form = new FormData()
    form.append('file', new File([TEA], 'tea.md', { type: 'text/markdown' }))
    const added = await http.call('POST', `/${slug}/ingest`, { raw: form, token: owner.token })
    expect(added.status).toBe(202)
    sourceId = added.body.jobs[0].source_id
    const ingested = await waitForJob(http, `/${slug}/jobs/${added.body.jobs[0].id}`, owner.token)
    const processJob = (ingested.result as { process_job_id: string }).process_job_id
    expect((await waitForJob(http, `/${slug}/jobs/${processJob}`, owner.token)).status).toBe('succeeded')
    const concept = await http.post(`/${slug}/concepts`, { canonical_name: HOSTILE_CONCEPT }, owner.token)
    const fact = await http.post(
      `/${slug}/facts`,
      {
        text: HOSTILE_FACT,
        sources: [{ source_id: sourceId, chunk_index: 1 }],
        concepts: [{ concept_id: concept.body.id }],
      },
      owner.token,
    )
    expect(fact.status).toBe(201)
  })

  test('its page: each chunk with its facts marked and listed, its concepts, "Process again" followed to its end; nothing hostile runs', async () => {
    const { context, page, logged } = await signedIn(owner)
    try {
      await open(page, `/app/r/${slug}/sources/${sourceId}`, 'Tea')
      await page.locator('main section.chunk').nth(1).waitFor()
      expect(await page.locator('main section.chunk').count()).toBe(2)
      // The built-in extractor's facts are the source's own sentences: marked where the chunk says them, each a link to its fact.
      const marked = page.locator('main section.chunk a.annotated')
      await marked.first().waitFor()
      expect(await marked.count()).toBeGreaterThanOrEqual(2)
      for (const href of await marked.evaluateAll((links) => links.map((a) => a.getAttribute('href'))))
        expect(href).toMatch(new RegExp(`^/app/r/${slug}/facts/[0-9a-f-]{36}$`))
      // Every fact of a chunk listed under it, the hostile one as its text.
      const kettles = page.locator('main section.chunk').nth(1)
      await kettles.locator('details.chunk-facts summary').click()
      expect(await kettles.locator('details.chunk-facts li').allTextContents()).toContain(HOSTILE_FACT)
      // Its concepts, the hostile name as text, each a link to its page.
      const concepts = page.locator('main section.source-concepts')
      expect(await concepts.getByRole('link').allTextContents()).toEqual(
        expect.arrayContaining(['tea', HOSTILE_CONCEPT]),
      )
      for (const element of await page.locator('main a:visible, main b:visible').all()) await element.hover()
      expect(await page.locator('main script, main img[onerror], main b[onmouseover]').count()).toBe(0)

      // Processing it again adds nothing: the bar runs to its end and says so; the page still shows the facts.
      await page.getByRole('button', { name: 'Process again' }).click()
      const said = page.locator('main section.process [role="status"]')
      await said.waitFor({ timeout: 60_000 })
      expect(await said.textContent()).toMatch(/^Processed: 0 facts added, \d+ already there; 0 concepts added\.$/)
      expect(await page.locator('main section.process progress').getAttribute('value')).toBe('100')
      await marked.first().waitFor()
      await expectAccessibleAtBothWidths(page)

      // A concept's page: opened, its facts say the source and the chunk each came from, linked to it.
      await concepts.getByRole('link', { name: HOSTILE_CONCEPT }).click()
      await page.getByRole('heading', { level: 1, name: HOSTILE_CONCEPT }).waitFor()
      await page.locator('main details.concept-facts summary').click()
      const origin = page.locator('main details.concept-facts .origins a')
      await origin.first().waitFor()
      expect(await origin.allTextContents()).toEqual(['Tea, chunk 1'])
      expect(await origin.first().getAttribute('href')).toBe(`/app/r/${slug}/sources/${sourceId}#chunk-1`)
      expect(await page.locator('main details.concept-facts ul.rows > li > a').allTextContents()).toEqual([
        HOSTILE_FACT,
      ])
      await expectAccessibleAtBothWidths(page)
      // The link leads to the chunk on the source's page.
      await origin.first().click()
      await page.getByRole('heading', { level: 1, name: 'Tea' }).waitFor()
      await page.locator('main section#chunk-1 a.annotated').first().waitFor()
      expect(await page.evaluate(`document.getElementById('chunk-1').getBoundingClientRect().top < innerHeight`)).toBe(
        true,
      )
      expect(await page.evaluate('window.__pwned')).toBeUndefined()
      expect(logged).toEqual([])
    } finally {
      await context.close()
    }
  })

  test('a viewer reads the page and is offered no "Process again"', async () => {
    const { context, page, logged } = await signedIn(viewer)
    try {
      await open(page, `/app/r/${slug}/sources/${sourceId}`, 'Tea')
      await page.locator('main section.chunk a.annotated').first().waitFor()
      expect(await page.getByRole('button', { name: /^Process/ }).count()).toBe(0)
      expect(logged).toEqual([])
    } finally {
      await context.close()
    }
  })
})

describe(`a viewer (${BACKEND})`, () => {
  test('is offered no "Add a source", and the page says what adding needs before any field', async () => {
    const { context, page, logged } = await signedIn(viewer)
    try {
      await page.goto(`${server.url}/app/r/${slug}/sources`)
      await page.getByRole('heading', { level: 1, name: 'Sources' }).waitFor()
      await page.locator('main ul.rows li').first().waitFor()
      expect(await page.getByRole('link', { name: 'Add a source' }).count()).toBe(0)
      // Opened directly, as a bookmark or a shared link does (the tab signs in again through its session).
      await page.goto(`${server.url}/app/r/${slug}/sources/new`)
      await page.getByRole('heading', { level: 1, name: 'Add a source' }).waitFor()
      const refusal = page.locator('main p.refused')
      await refusal.waitFor()
      // The sentence the API's 403 says (permissions.ts), of "Adding a source".
      const needs = permissionDenied('source:write', 'this repository').replace(/^permission denied: source:write /, '')
      expect(await refusal.textContent()).toStartWith(`Adding a source ${needs}`)
      expect(await page.locator('main textarea, main input').count()).toBe(0)
      await expectAccessibleAtBothWidths(page)
      expect(logged).toEqual([])
    } finally {
      await context.close()
    }
  })
})
