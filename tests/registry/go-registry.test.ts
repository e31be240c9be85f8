// kgs's registry client against a registry that answers as the Go original's does (docs/spec/bundle.md
// §7; tests/helpers/go-registry.ts): directly, and through REGISTRY_URL for an import by
// graph_id and by (name, sha256), and an export's push.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { BACKEND } from '../helpers/backend.ts'
import { api, expectError, registerAccount, type Account } from '../helpers/api.ts'
import { startGoRegistry, type GoRegistry } from '../helpers/go-registry.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { generateBundle, type GenerateResult } from '../../scripts/gen-bundle.ts'
import { RegistryClient } from '../../src/registry/client.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { sha, smallBundle } from './helpers.ts'

const ALICE = 'alice@example.com'
const FACTS = 30

let go: GoRegistry
let client: RegistryClient
let dir: string
let bundle: GenerateResult

beforeAll(async () => {
  go = await startGoRegistry({ 'alice-token': ALICE, 'bob-token': 'bob@example.com' })
  client = new RegistryClient({ url: go.url, token: 'alice-token' })
  dir = mkdtempSync(join(tmpdir(), 'kgs-go-registry-'))
  bundle = await generateBundle(join(dir, 'bundle.json.gz'), { facts: FACTS, vectors: 'kgs-hash-v1', seed: 5 })
})

afterAll(async () => {
  await go?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** Pushes `count` small graphs whose names contain `name`, after it: they list before it, newest first. */
async function pushNewer(name: string, count: number) {
  for (let i = 0; i < count; i++)
    await client.push(smallBundle(`${name} ${i}`), { name: `${name} later ${i}`, sha256: sha(`${name} ${i}`) })
}

describe(`the registry client against Go's registry (${BACKEND})`, () => {
  test("push is 201 new:true even for a (name, sha256) it holds; Go's record is read with null bytes and owner_id, empty tags, zero counts", async () => {
    const name = `Go push ${crypto.randomUUID().slice(0, 8)}`
    const first = await client.push(bundle.path, { name, sha256: bundle.sha256 })
    expect(first).toEqual({ graph_id: expect.any(String), new: true })
    const again = await client.push(bundle.path, { name, sha256: bundle.sha256 })
    expect(again).toEqual({ graph_id: expect.any(String), new: true })
    expect(again.graph_id).not.toBe(first.graph_id)

    // What Go sends: no bytes, owner_id, tags or zero counts; schema_version 1 for a push without one.
    const raw = (await (
      await fetch(`${go.url}/api/v1/graphs/${first.graph_id}`, { headers: { authorization: 'Bearer alice-token' } })
    ).json()) as Record<string, string>
    expect(Object.keys(raw)).toEqual([
      'id',
      'name',
      'description',
      'owner',
      'sha256',
      'schema_version',
      'created_at',
      'updated_at',
    ])
    const record = await client.get(first.graph_id)
    expect(record).toEqual({
      id: first.graph_id,
      name,
      description: '',
      owner: ALICE,
      owner_id: null,
      tags: [],
      sha256: bundle.sha256,
      schema_version: 1,
      bytes: null,
      source_count: 0,
      fact_count: 0,
      concept_count: 0,
      summary_count: 0,
      synthesis_count: 0,
      report_count: 0,
      investigation_count: 0,
      created_at: raw.created_at!,
      updated_at: raw.updated_at!,
    })

    // What a push names comes back: tags, description, counts, version.
    const full = await client.push(bundle.path, {
      name: `${name} full`,
      description: 'Beschreibung',
      tags: ['géo'],
      schema_version: 2,
      fact_count: FACTS,
    })
    expect(await client.get(full.graph_id)).toMatchObject({
      description: 'Beschreibung',
      tags: ['géo'],
      sha256: null,
      schema_version: 2,
      fact_count: FACTS,
      source_count: 0,
    })
  })

  test('list pages by offset, newest first; find walks the pages to a graph past the first 200', async () => {
    const name = `Walk ${crypto.randomUUID().slice(0, 8)}`
    const target = await client.push(smallBundle(name), { name, sha256: sha(name) })
    await pushNewer(name, 200)

    const first = await client.list({ q: `${name} later`, limit: 3 })
    expect(first.graphs.map((g) => g.name)).toEqual([199, 198, 197].map((i) => `${name} later ${i}`))
    expect(new URL(first.next!).searchParams.get('offset')).toBe('3')
    const second = await client.list(first.next!)
    expect(second.graphs.map((g) => g.name)).toEqual([196, 195, 194].map((i) => `${name} later ${i}`))
    const last = await client.list({ q: `${name} later 19`, limit: 11 })
    expect(last.graphs).toHaveLength(11)
    expect(last.next).toBeUndefined()

    const asked = go.requests.length
    expect((await client.find(name, sha(name)))?.id).toBe(target.graph_id)
    const walked = go.requests.slice(asked).map((path) => new URL(path, go.url).searchParams)
    expect(walked.map((params) => [params.get('q'), params.get('limit'), params.get('offset')])).toEqual([
      [name, '200', null],
      [name, '200', '200'],
    ])
    expect(await client.find(name, sha('no such graph'))).toBeUndefined()
  })

  test('download takes the raw bytes without a content type; after a delete ({"message"}) the graph is gone; errors, JSON or plain text, are summarized by their status', async () => {
    const pushed = await client.push(bundle.path, { name: `Go bytes ${crypto.randomUUID().slice(0, 8)}` })
    const answer = await fetch(`${go.url}/api/v1/graphs/${pushed.graph_id}/bundle`, {
      headers: { authorization: 'Bearer alice-token' },
    })
    expect(answer.headers.get('content-type') ?? '').toBe('')
    await answer.body?.cancel()
    expect(
      Buffer.from(await new Response(await client.download(pushed.graph_id)).arrayBuffer()).equals(
        readFileSync(bundle.path),
      ),
    ).toBe(true)

    // kgs's client never deletes; the fake's delete answers as Go's does.
    const remove = (token: string) =>
      fetch(`${go.url}/api/v1/graphs/${pushed.graph_id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      })
    expect(await (await remove('bob-token')).json()).toEqual({ error: 'forbidden' })
    const removed = await remove('alice-token')
    expect({ status: removed.status, body: await removed.json() }).toEqual({
      status: 200,
      body: { message: 'graph deleted' },
    })
    expect(await client.get(pushed.graph_id)).toBeUndefined()
    // A registry's error body may quote the request (a token, a URL's userinfo): only its status is kept.
    expect(await client.download(pushed.graph_id).catch((e: unknown) => e)).toMatchObject({
      status: 404,
      message: 'registry answered 404 not found',
    })

    const stranger = new RegistryClient({ url: go.url, token: 'wrong' })
    expect(await stranger.list().catch((e: unknown) => e)).toMatchObject({
      status: 401,
      message: 'registry answered 401 unauthorized',
    })
    expect(await client.list(`${go.url}/api/v2/graphs`).catch((e: unknown) => e)).toMatchObject({
      status: 404,
      message: 'registry answered 404 not found',
    })
    expect(await client.push(smallBundle('nameless'), { name: '' }).catch((e: unknown) => e)).toMatchObject({
      status: 400,
      message: 'registry answered 400 bad request',
    })
  })
})

describe(`kgs with REGISTRY_URL at Go's registry (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let user: Account
  let pushed: { graph_id: string }

  const repository = async (name: string) =>
    (await http.post('/api/v1/repositories', { name }, user.token)).body as { id: string; slug: string }
  const run = async (slug: string, path: string, body: unknown): Promise<Job & { result: any }> => {
    const started = await http.post(`/${slug}/${path}`, body, user.token)
    expect(started.status).toBe(202)
    const job = await waitForJob(http, `/${slug}/jobs/${started.body.id}`, user.token)
    if (job.status !== 'succeeded') throw new Error(`${path} ${job.status}: ${job.error}`)
    return job as Job & { result: any }
  }

  beforeAll(async () => {
    server = await startTestServer({ env: { WORKERS: '1', REGISTRY_URL: go.url, REGISTRY_TOKEN: 'alice-token' } })
    http = api(server.url)
    user = await registerAccount(http)
    // As Go's client pushes: no schema version.
    pushed = await client.push(bundle.path, {
      name: `Go import ${crypto.randomUUID().slice(0, 8)}`,
      sha256: bundle.sha256,
    })
  })

  afterAll(async () => {
    await server?.stop()
  })

  test('import by graph_id: every fact arrives; the size, which Go does not tell, is what was downloaded', async () => {
    const repo = await repository('From Go by id')
    const job = await run(repo.slug, 'import-graph', { graph_id: pushed.graph_id })
    expect(job.result.imported).toMatchObject({
      facts: FACTS,
      sources: bundle.counts.sources,
      concepts: bundle.counts.concepts,
    })
    expect(job.progress.bytes).toBe(readFileSync(bundle.path).byteLength)

    const unknown = crypto.randomUUID()
    expectError(
      await http.post(`/${repo.slug}/import-graph`, { graph_id: unknown }, user.token),
      404,
      `graph ${unknown} is not in the registry`,
    )
  })

  test("import by (name, sha256), found past the first page of Go's list", async () => {
    const name = `Go by name ${crypto.randomUUID().slice(0, 8)}`
    await client.push(bundle.path, { name, sha256: bundle.sha256 })
    await pushNewer(name, 200)
    const repo = await repository('From Go by name')
    const job = await run(repo.slug, 'import-graph', { name, sha256: bundle.sha256 })
    expect(job.result.imported).toMatchObject({ facts: FACTS })
    expectError(
      await http.post(`/${repo.slug}/import-graph`, { name, sha256: sha('other') }, user.token),
      404,
      `graph ${JSON.stringify(name)} with sha256 ${sha('other')} is not in the registry`,
    )
  })

  test("export pushes to Go's registry: stored under the token's identity with the export's metadata", async () => {
    const repo = await repository('To Go')
    await run(repo.slug, 'import-graph', { graph_id: pushed.graph_id })
    const name = `Exported ${crypto.randomUUID().slice(0, 8)}`
    const job = await run(repo.slug, 'export-graph', { name })
    expect(job.result).toMatchObject({ name, new: true })
    const stored = go.graphs.find((g) => g.id === job.result.graph_id)!
    expect(stored).toMatchObject({ name, owner: ALICE, sha256: job.result.sha256, schema_version: 2 })
    expect(stored.counts.fact_count).toBe(FACTS)
    expect(JSON.parse(gunzipSync(stored.bundle).toString()).metadata.sha256).toBe(job.result.sha256)
  })
})
