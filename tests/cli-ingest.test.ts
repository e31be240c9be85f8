// `kgs ingest` run as a child process, as a person runs it: against a running kgs (KGS_URL and
// KGS_TOKEN) and on a data directory no server holds (kgs then runs in the command's process),
// with a folder of documents written here, URLs of a loopback document server
// (INGEST_FETCH_ALLOW_PRIVATE), and the documents that fail: a 0-byte file, a page the server
// does not have. Its output is plain lines (stdout is a pipe here); the sources are read back. What a
// terminal is shown (bars redrawn in place) is the same run in this process, its output captured.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { api, type Account } from './helpers/api.ts'
import { BACKEND, instanceEnvironment, tempDir } from './helpers/backend.ts'
import { fixture } from './helpers/fixture.ts'
import { runKgs, startTestServer, type Instance, type TestServer } from './helpers/server.ts'
import { KETTLES_PAGE, makePdf } from './ingest/documents.ts'
import { expandArguments, remoteTarget, runIngest } from '../src/ingest/cli.ts'

const ETAG = '"kettles-1"'

let docs: ReturnType<typeof Bun.serve>
let docsUrl: string
/** A folder of documents: four readable ones (one nested), one empty, a hidden one and one of another type (both left out). */
let folder: string

beforeAll(async () => {
  docs = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      if (new URL(request.url).pathname !== '/kettles.html') return new Response('not here', { status: 404 })
      if (request.headers.get('if-none-match') === ETAG)
        return new Response(null, { status: 304, headers: { etag: ETAG } })
      return new Response(KETTLES_PAGE, { headers: { 'content-type': 'text/html; charset=utf-8', etag: ETAG } })
    },
  })
  docsUrl = `http://127.0.0.1:${docs.port}`
  folder = tempDir('kgs-ingest-folder-')
  mkdirSync(join(folder, 'nested'))
  mkdirSync(join(folder, '.git'))
  writeFileSync(
    join(folder, 'teapots.md'),
    '# Teapots\n\nA teapot brews tea.\n\n## Glazes\n\nGlazed pots keep no taste.\n',
  )
  writeFileSync(join(folder, 'cups.txt'), 'Cups hold tea.\n\nSaucers catch drips.\n')
  writeFileSync(join(folder, 'nested', 'page.html'), KETTLES_PAGE.replace('Kettles', 'Nested kettles'))
  writeFileSync(join(folder, 'paper.pdf'), await makePdf({ pages: [['Page one says hello.']], title: 'One page' }))
  writeFileSync(join(folder, 'empty.txt'), '')
  writeFileSync(join(folder, '.hidden.md'), '# Hidden\n')
  writeFileSync(join(folder, '.git', 'notes.md'), '# Not a document\n')
  writeFileSync(join(folder, 'image.png'), new Uint8Array([0x89, 0x50, 0x4e, 0x47]))
})
afterAll(() => docs.stop(true))

/** The summary line of a run's output. */
const summary = (stdout: string) => /^(\d+) added, (\d+) unchanged, (\d+) failed$/m.exec(stdout)?.slice(1).map(Number)

/** The documents the folder and the URLs make: the lines each ends with. */
function expectFolderAndUrls(stdout: string) {
  // Each added and then processed: what it was read into, then what was drawn from it.
  expect(stdout).toMatch(
    new RegExp(`^${join(folder, 'teapots.md')}: added \\(markdown, 2 chunks; \\d+ facts, \\d+ concepts\\)$`, 'm'),
  )
  expect(stdout).toContain(`${join(folder, 'cups.txt')}: added (text, `)
  expect(stdout).toContain(`${join(folder, 'nested', 'page.html')}: added (web, `)
  expect(stdout).toContain(`${join(folder, 'paper.pdf')}: added (pdf, 1 chunks; `)
  expect(stdout).toContain(`${docsUrl}/kettles.html: added (web, `)
  expect(stdout).toMatch(new RegExp(`^  ${join(folder, 'empty.txt')}: .*empty \\(0 bytes\\)$`, 'm'))
  expect(stdout).toMatch(new RegExp(`^  ${docsUrl}/missing.html: .*404`, 'm'))
  expect(stdout).not.toContain('hidden')
  expect(stdout).not.toContain('notes.md')
  expect(stdout).not.toContain('image.png')
  expect(summary(stdout)).toEqual([5, 0, 2])
}

/** The sources of the repository, by URL (an upload's is upload://sha256/…): kind and status. */
async function sourcesOf(server: TestServer, repositoryId: string) {
  const sql = await server.context.pools.forRepository(repositoryId)
  return (await sql`SELECT url, kind, status, parsed_title FROM sources ORDER BY url`) as unknown as {
    url: string
    kind: string
    status: string
    parsed_title: string
  }[]
}

function expectSources(rows: Awaited<ReturnType<typeof sourcesOf>>) {
  expect(
    rows
      .filter((row) => row.status === 'processed')
      .map((row) => row.parsed_title)
      .sort(),
  ).toEqual(['Cups hold tea.', 'Kettles', 'Nested kettles', 'One page', 'Teapots'])
  expect(rows.find((row) => row.url === `${docsUrl}/kettles.html`)).toMatchObject({ kind: 'web', status: 'processed' })
  expect(rows.find((row) => row.url === `${docsUrl}/missing.html`)).toMatchObject({ status: 'failed' })
  // The empty file was refused before anything was made of it.
  expect(rows).toHaveLength(6)
}

describe(`kgs ingest against a running kgs (${BACKEND})`, () => {
  let server: TestServer
  let owner: Account
  let viewer: Account
  let repo: { id: string; slug: string }
  beforeAll(async () => {
    ;({
      server,
      users: { owner, viewer },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1', INGEST_FETCH_ALLOW_PRIVATE: 'true' } },
      users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
      repositories: { repo: { by: 'owner', name: 'CLI ingest', roles: { viewer: 'viewer' } } },
    }))
  })
  afterAll(() => server.stop())

  test('a folder and URLs: a line per document, a summary, exit 1 for the two that failed; the token never printed', async () => {
    const run = await runKgs(['ingest', repo.slug, folder, `${docsUrl}/kettles.html`, `${docsUrl}/missing.html`], {
      KGS_URL: server.url,
      KGS_TOKEN: owner.token,
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(1)
    expectFolderAndUrls(run.stdout)
    // Each document's progress, in plain lines.
    expect(run.stdout).toContain(`${docsUrl}/kettles.html: adding\n`)
    expect(`${run.stdout}${run.stderr}`).not.toContain(owner.token)
    expectSources(await sourcesOf(server, repo.id))
  })

  test('the same page and file again: the page unchanged (its server answers 304), the file the same source; exit 0', async () => {
    const before = await sourcesOf(server, repo.id)
    const run = await runKgs(
      ['ingest', repo.id, `${docsUrl}/kettles.html`, join(folder, 'teapots.md'), '--url', server.url],
      { KGS_TOKEN: owner.token },
    )
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toContain(`${docsUrl}/kettles.html: unchanged\n`)
    expect(summary(run.stdout)).toEqual([1, 1, 0])
    expect((await sourcesOf(server, repo.id)).length).toBe(before.length)
  })

  test('a viewer is refused each document, in the words of the API, and nothing is written', async () => {
    const before = await sourcesOf(server, repo.id)
    const run = await runKgs(['ingest', repo.slug, join(folder, 'cups.txt'), `${docsUrl}/kettles.html`], {
      KGS_URL: server.url,
      KGS_TOKEN: viewer.token,
    })
    expect(run.code).toBe(1)
    expect(summary(run.stdout)).toEqual([0, 0, 2])
    expect(run.stdout).toContain(`  ${docsUrl}/kettles.html: permission denied: source:write needs the`)
    expect(await sourcesOf(server, repo.id)).toEqual(before)
  })

  test('--no-process: the document is added and parsed, and nothing is drawn from it', async () => {
    const notes = join(tempDir('kgs-ingest-unprocessed-'), 'saucers.md')
    writeFileSync(notes, '# Saucers\n\nA saucer catches the drips of a cup.\n')
    const run = await runKgs(['ingest', repo.slug, notes, '--no-process'], {
      KGS_URL: server.url,
      KGS_TOKEN: owner.token,
    })
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toContain(`${notes}: added (markdown, 1 chunks)\n`)
    const sql = await server.context.pools.forRepository(repo.id)
    const [source] = await sql`
      SELECT s.id, s.status, (SELECT count(*)::int FROM fact_sources fs WHERE fs.source_id = s.id) AS facts
      FROM sources s WHERE s.parsed_title = 'Saucers'`
    expect(source).toMatchObject({ status: 'parsed', facts: 0 })
    const processing = await server.context.pools.system`
      SELECT id FROM jobs WHERE kind = 'process_source' AND params->>'source_id' = ${source!.id}`
    expect(processing).toHaveLength(0)
  })

  test('on a terminal: a bar per document in progress, redrawn in place within the width, each done line printed once', async () => {
    let written = ''
    const items = await expandArguments([
      join(folder, 'teapots.md'),
      join(folder, 'nested'),
      `${docsUrl}/kettles.html?on-a-terminal`,
    ])
    const code = await runIngest(remoteTarget(server.url, owner.token, repo.slug), items, {
      process: true,
      out: { write: (text) => (written += text), isTTY: true, columns: 40 },
    })
    expect(code).toBe(0)
    const bars = [...written.matchAll(/\r\x1b\[2K([^\n]*)\n/g)].map((match) => match[1]!)
    expect(bars.length).toBeGreaterThan(0)
    for (const bar of bars) {
      // The bar whole; a phase longer than the room left is cut at its end.
      expect(bar).toMatch(/ \[[#-]{20}\] +\d+% [a-z ]+…?$/)
      expect(bar.length).toBeLessThan(40)
    }
    // The redrawing moves up over the block it drew and clears it.
    expect(written).toMatch(/\x1b\[\d+A\x1b\[J/)
    expect(written.split(`${join(folder, 'teapots.md')}: added`)).toHaveLength(2)
    expect(written).toEndWith('\n3 added, 0 unchanged, 0 failed\n')
  })

  test('usage errors exit 2: no document, a URL without a token', async () => {
    expect((await runKgs(['ingest', repo.slug], {})).code).toBe(2)
    const tokenless = await runKgs(['ingest', repo.slug, join(folder, 'cups.txt')], { KGS_URL: server.url })
    expect(tokenless.code).toBe(2)
    expect(tokenless.stderr).toStartWith('kgs ingest: --url needs --token (or KGS_TOKEN)')
    const help = await runKgs(['help', 'ingest'], {})
    expect(help).toMatchObject({ code: 0, stderr: '' })
    expect(help.stdout).toContain('KGS_TOKEN')
  })
})

describe(`kgs ingest on the data directory (${BACKEND})`, () => {
  let instance: Instance
  let repo: { id: string; slug: string }
  const env = (): Record<string, string> => ({ ...instance.env, INGEST_FETCH_ALLOW_PRIVATE: 'true' })
  beforeAll(async () => {
    instance = await instanceEnvironment()
    const server = await startTestServer({ instance })
    const http = api(server.url)
    const owner = await http.post('/api/v1/auth/register', {
      email: `cli-${crypto.randomUUID().slice(0, 8)}@example.com`,
      password: 'correct horse battery',
    })
    repo = (await http.post('/api/v1/repositories', { name: 'Local ingest' }, owner.body.token)).body
    await server.stop()
  })
  afterAll(() => instance.cleanup())

  test('no server: kgs runs in the command, adds the folder and the URLs and follows their jobs to the end', async () => {
    const run = await runKgs(['ingest', repo.slug, folder, `${docsUrl}/kettles.html`, `${docsUrl}/missing.html`], env())
    expect(run.code).toBe(1)
    expectFolderAndUrls(run.stdout)
    const server = await startTestServer({ instance })
    try {
      expectSources(await sourcesOf(server, repo.id))
    } finally {
      await server.stop()
    }
  })

  test('a repository that is not there, or a data directory with no kgs data: one line, exit 1', async () => {
    const missing = await runKgs(['ingest', 'no-such-repository', join(folder, 'cups.txt')], env())
    expect(missing).toMatchObject({
      code: 1,
      stderr: 'kgs ingest: no repository "no-such-repository" (give its slug or id)\n',
    })
    const { DATABASE_URL: _, ...embedded } = env()
    const empty = await runKgs(['ingest', repo.slug, join(folder, 'cups.txt')], { ...embedded, DATA_DIR: tempDir() })
    expect(empty.code).toBe(1)
    expect(empty.stderr).toStartWith('kgs ingest: no kgs data in ')
  })

  test.skipIf(BACKEND === 'postgres')(
    'an embedded data directory a server holds is refused, naming the way through it',
    async () => {
      const server = await startTestServer({ instance })
      try {
        const held = await runKgs(['ingest', repo.slug, join(folder, 'cups.txt')], env())
        expect(held).toMatchObject({
          code: 1,
          stderr:
            'kgs ingest: a kgs server is using this data directory: add through it with --url and --token (or KGS_URL and KGS_TOKEN)\n',
        })
      } finally {
        await server.stop()
      }
    },
  )
})
