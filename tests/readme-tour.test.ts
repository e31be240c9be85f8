// The README's tour as a reader runs it: its shell blocks, extracted from README.md, run in bash as
// written (with errexit and pipefail, so that no step may fail unnoticed) against a started
// server, twice in a row: the second run signs in where the first registered, and neither shows a
// curl error. Only what a reader has right after `npm install`: no node_modules/.bin on the PATH
// (`npx bun` finds Bun), no jq.
// The files the tour writes under /tmp go to a scratch directory of this run's instead, so that
// two runs at once (CI's two legs) do not write and read each other's.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { BACKEND, instanceEnvironment, tempDir } from './helpers/backend.ts'
import { ROOT, startServerProcess, type ServerProcess } from './helpers/server.ts'
import { bundleProblems, summarizeBundle } from '../src/bundle/format/tools.ts'

const TOUR_HEADING = '## A five-minute tour'
const scratch = tempDir('kgs-tour-')
/** Where the tour saves the export it downloads. */
const EXPORT_FILE = join(scratch, 'tour-export.json.gz')

/** The shell blocks of the README's tour section, in order, their /tmp/ files in `scratch`. */
function tourScript(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const start = readme.indexOf(TOUR_HEADING)
  expect(start).toBeGreaterThan(-1)
  const next = readme.indexOf('\n## ', start + TOUR_HEADING.length)
  const section = readme.slice(start, next === -1 ? undefined : next)
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)
  expect(blocks.length).toBeGreaterThan(0)
  const script = blocks.join('\n')
  expect(script).toContain('/tmp/tour-export.json.gz')
  return script.replaceAll('/tmp/', `${scratch}/`)
}

/** The PATH of a shell right after `npm install`: the test runner's, less node_modules/.bin. */
const readerPath = () =>
  (process.env.PATH ?? '')
    .split(delimiter)
    .filter((entry) => !entry.endsWith(join('node_modules', '.bin')))
    .join(delimiter)

describe(`the README's tour (${BACKEND})`, () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  let server: ServerProcess
  beforeAll(async () => {
    instance = await instanceEnvironment()
    server = await startServerProcess({ ...instance.env, WORKERS: '1' })
  })
  afterAll(async () => {
    await server?.stop()
    await instance?.cleanup()
  })

  async function runTour() {
    const child = Bun.spawn(['bash', '-euo', 'pipefail', '-c', tourScript()], {
      cwd: ROOT,
      env: { PATH: readerPath(), HOME: process.env.HOME ?? '/root', K: server.url },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    expect({ code, stderr }).toMatchObject({ code: 0 })
    // A run that went through shows the reader no curl error (a retried 503 reads as a failure).
    expect(stderr.split('\n').filter((line) => line.startsWith('curl: '))).toEqual([])
    return { stdout, stderr }
  }

  /** What every run shows: the import succeeded, the document added was processed into its fact, which a search finds, the export was downloaded and names itself, the refreshed token works. */
  async function expectTourDone(stdout: string) {
    expect(stdout).toContain('succeeded 100%\n')
    expect(stdout).toContain(
      'processed: # Kettles\n\nA kettle boils water for tea.\n\n## Kinds\n\nElectric or stove-top.',
    )
    // Twice: the facts drawn from the document, and the best hit of a search for "kettle" among all.
    expect(stdout.split("[ 'A kettle boils water for tea.' ]\n").length - 1).toBe(2)
    expect(stdout).toContain('ada@example.com\n')
    const sha256 = /^x-graph-sha256: ([0-9a-f]{64})\r?$/im.exec(stdout)?.[1]
    expect(sha256).toBeDefined()
    const summary = await summarizeBundle(Bun.file(EXPORT_FILE).stream())
    expect(bundleProblems(summary)).toEqual([])
    // The bundle's facts and the one drawn from the document.
    expect(summary.metadata).toMatchObject({ name: 'Tour', fact_count: 201, sha256 })
  }

  test('the first run registers, imports, searches, adds a document, exports, downloads and refreshes', async () => {
    const { stdout } = await runTour()
    expect(stdout).toContain('"slug":"tour"')
    await expectTourDone(stdout)
  })

  test('a second run signs in instead of registering, and goes through again', async () => {
    const { stdout } = await runTour()
    expect(stdout).toContain('{"error":"slug already taken"}')
    await expectTourDone(stdout)
  })
})
