// The fast path of a read tool's tools/call (src/mcp/fast-call.ts) answers the very bytes the SDK
// answers: the requests the official clients of both revisions send (captured as they go out) are
// sent to the app and to the same app with every call going through the SDK, and the two answers
// (status, headers, body) must be equal; the same requests are shown to qualify for the fast path,
// and a call it must leave to the SDK (a refusal, bad arguments, a write) still gets the SDK's answer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { CallToolResult } from '@modelcontextprotocol/server'
import { generateBundle } from '../../scripts/gen-bundle.ts'
import { capturedToolCall, type McpRevision } from '../../scripts/lib/mcp-capture.ts'
import { createApp } from '../../src/app.ts'
import { fastToolCall } from '../../src/mcp/fast-call.ts'
import { COMPILED } from '../../src/mcp/server.ts'
import { BACKEND, tempDir } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { waitForJob } from '../helpers/jobs.ts'

const REVISIONS: McpRevision[] = ['2025-11-25', '2026-07-28']
let server: TestServer
let token: string
let viewerToken: string
let repo: { slug: string; fact: string; concept: string; query: string }

beforeAll(async () => {
  server = await startTestServer({ env: { WORKERS: '1' } })
  const http = api(server.url)
  token = (
    await http.post('/api/v1/auth/register', { email: uniqueEmail('mcp-fast'), password: 'correct horse battery' })
  ).body.token
  const viewer = { email: uniqueEmail('mcp-fast-viewer'), password: 'correct horse battery' }
  viewerToken = (await http.post('/api/v1/auth/register', viewer)).body.token
  const created = (await http.post('/api/v1/repositories', { name: 'Fast calls' }, token)).body
  const path = join(tempDir('kgs-mcp-fast-'), 'bundle.json.gz')
  await generateBundle(path, { facts: 30, vectors: 'kgs-hash-v1' })
  const started = await uploadBundle(http, created.slug, token, new Uint8Array(await Bun.file(path).arrayBuffer()))
  expect((await waitForJob(http, `/${created.slug}/jobs/${started.body.id}`, token)).status).toBe('succeeded')
  const [fact] = (await http.get(`/${created.slug}/facts?limit=1`, token)).body
  const [concept] = (await http.get(`/${created.slug}/concepts?limit=1`, token)).body
  repo = {
    slug: created.slug,
    fact: fact.id,
    concept: concept.id,
    query: String(fact.text).split(' ').slice(0, 4).join(' '),
  }
  expect(
    (await http.put(`/${created.slug}/members`, { email: viewer.email, role: 'viewer' }, token)).status,
  ).toBeLessThan(300)
}, 120_000)
afterAll(() => server?.stop())

/** The request an official client of `revision` sends for `tools/call name(args)` as `bearer`, captured as it goes out. */
async function capturedCall(revision: McpRevision, name: string, args: Record<string, unknown>, bearer = token) {
  const captured = await capturedToolCall(new URL(`${server.url}/api/v1/mcp`), bearer, revision, name, args)
  return {
    ...captured,
    request: () =>
      new Request(`${server.url}/api/v1/mcp`, { method: 'POST', headers: captured.headers, body: captured.body }),
  }
}

/** Status, headers and body of `response`, as a client receives them. */
const received = async (response: Response) => ({
  status: response.status,
  headers: [...response.headers].sort(),
  body: await response.text(),
})

/** The answers of the app and of the app with every call through the SDK to the same request. */
async function bothAnswers(request: () => Request) {
  const fast = createApp(server.context)
  const sdk = createApp(server.context, { mcpFastCalls: false })
  return { fast: await received(await fast.fetch(request())), sdk: await received(await sdk.fetch(request())) }
}

const reads = () => ({
  get_fact: { repository: repo.slug, fact_id: repo.fact },
  search: { repository: repo.slug, query: repo.query, limit: 5 },
  'search (concepts, keyword)': { repository: repo.slug, query: repo.query, kind: 'concepts', mode: 'keyword' },
  get_concept: { repository: repo.slug, concept_id: repo.concept },
  list_facts: { repository: repo.slug, limit: 3 },
  list_repositories: {},
})

describe(`the fast path of a read's tools/call answers what the SDK answers (${BACKEND})`, () => {
  for (const revision of REVISIONS)
    test(`${revision}: the same status, headers and body, and the requests qualify`, async () => {
      for (const [label, args] of Object.entries(reads())) {
        const name = label.split(' ')[0]!
        const call = await capturedCall(revision, name, args)
        const { fast, sdk } = await bothAnswers(call.request)
        expect(sdk.status).toBe(200)
        expect(sdk.body).not.toContain('"isError":true')
        expect({ label, ...fast }).toEqual({ label, ...sdk })
        // These requests are the fast path's: given the SDK's own result, it answers; the comparison above is of the two paths.
        const { result } = JSON.parse(
          revision === '2025-11-25' ? sdk.body.replace(/^event: message\ndata: /, '') : sdk.body,
        ) as { result: CallToolResult }
        const answered = await fastToolCall(
          async () => ({
            content: result.content,
            structuredContent: result.structuredContent,
          }),
          COMPILED,
        )(call.request(), JSON.parse(call.body), { userId: 'anyone' })
        expect({ label, answered: answered && (await received(answered)) }).toEqual({ label, answered: sdk })
      }
    }, 60_000)

  for (const revision of REVISIONS)
    test(`${revision}: what the fast path leaves to the SDK gets the SDK's answer (a refusal, bad arguments, a write)`, async () => {
      const cases = [
        await capturedCall(revision, 'get_fact', { repository: 'no-such-repository', fact_id: repo.fact }),
        await capturedCall(revision, 'get_fact', { repository: repo.slug, fact_id: 'not a uuid' }),
        await capturedCall(
          revision,
          'create_fact',
          { repository: repo.slug, text: 'A viewer may not write this.' },
          viewerToken,
        ),
      ]
      for (const call of cases) {
        const { fast, sdk } = await bothAnswers(call.request)
        expect(fast).toEqual(sdk)
        expect(sdk.body).toContain('"isError":true')
      }
    }, 60_000)
})
