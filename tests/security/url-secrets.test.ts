// Credentials in configured URLs (SECURITY.md, "Bounded by design", finding 3): with REGISTRY_URL
// and EMBEDDING_URL holding user:password@, and a registry and an embedding provider that fail and
// echo everything they were sent (the URL, the Authorization header) in their error bodies, no
// answer of the API, no job error and no log line carries the password, the user name, the registry
// token or the API key.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { api, registerAccount, type Account } from '../helpers/api.ts'
import { gzipBundle, validBundleJson } from '../helpers/broken-bundles.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { instanceEnvironment } from '../helpers/backend.ts'
import { startServerProcess, type ServerProcess } from '../helpers/server.ts'
import { ConfigError, parseEnv } from '../../src/config.ts'

const USER = 'kgs-user-f00d'
const PASSWORD = 'pw-5ecret-c0ffee'
const REGISTRY_TOKEN = 'registry-token-5ecret-beef'
const API_KEY = 'sk-5ecret-api-key-cafe'
const SECRETS = [
  USER,
  PASSWORD,
  REGISTRY_TOKEN,
  API_KEY,
  encodeURIComponent(PASSWORD),
  Buffer.from(`${USER}:${PASSWORD}`).toString('base64'),
]

let upstream: ReturnType<typeof Bun.serve>
let server: ServerProcess
let instance: Awaited<ReturnType<typeof instanceEnvironment>>
let http: ReturnType<typeof api>
let owner: Account
let repo: { id: string; slug: string }
const answers: string[] = []

/** Every answer, headers and body, is kept to be searched. */
async function call(
  method: string,
  path: string,
  init: { body?: unknown; raw?: Uint8Array; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { authorization: `Bearer ${owner.token}`, ...init.headers }
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(server.url + path, {
    method,
    headers,
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  })
  const text = await res.text()
  answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`)
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

beforeAll(async () => {
  // Fails every request, quoting all it was sent: the worst an upstream can do.
  upstream = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const echo = `${request.method} ${request.url} authorization=${request.headers.get('authorization')} body=${(await request.text()).slice(0, 100)}`
      return Response.json({ error: { message: echo }, detail: echo }, { status: 401 })
    },
  })
  const base = `http://${USER}:${PASSWORD}@127.0.0.1:${upstream.port}`
  instance = await instanceEnvironment()
  // A process of its own, so that the log lines of its job threads are read too.
  const env = {
    ...instance.env,
    JWT_SECRET: 'j'.repeat(40),
    WORKERS: '1',
    REGISTRY_URL: `${base}/registry`,
    REGISTRY_TOKEN,
    EMBEDDING_URL: `${base}/v1`,
    EMBEDDING_MODEL: 'm',
    EMBEDDING_API_KEY: API_KEY,
  }
  server = await startServerProcess(env, 'debug')
  http = api(server.url)
  owner = await registerAccount(http)
  repo = (await http.post('/api/v1/repositories', { name: 'Secrets' }, owner.token)).body
})
afterAll(async () => {
  await server.stop()
  await instance.cleanup()
  upstream.stop(true)
})

describe(`credentials in configured URLs are never shown (${BACKEND})`, () => {
  test('a failing registry and embedder: no answer, job error or log line carries a secret', async () => {
    const byId = await call('POST', `/${repo.slug}/import-graph`, { body: { graph_id: crypto.randomUUID() } })
    expect(byId.status).toBe(502)
    expect(byId.body.error).toBe(`the registry could not be asked: registry answered 401 unauthorized`)
    expect(
      (await call('POST', `/${repo.slug}/import-graph`, { body: { name: 'g', sha256: '0'.repeat(64) } })).status,
    ).toBe(502)
    const search = await call('GET', `/${repo.slug}/search?q=rain&mode=vector`)
    expect(search).toEqual({
      status: 502,
      body: { error: 'the embedding provider failed: embedding provider answered 401 unauthorized' },
    })
    // Jobs that meet them: an export pushing to the registry, an import whose follow-up embeds.
    expect((await call('POST', `/${repo.slug}/export-graph`, { body: { name: 'leaky' } })).status).toBe(202)
    expect((await uploadBundle(http, repo.slug, owner.token, gzipBundle(validBundleJson()))).status).toBe(202)
    for (;;) {
      const jobs = (await call('GET', `/${repo.slug}/jobs`)).body as { kind: string; error: string | null }[]
      const failed = jobs.filter((job) => job.error !== null).map((job) => job.kind)
      if (failed.includes('export_graph') && failed.some((kind) => kind.startsWith('embed'))) break
      await Bun.sleep(50)
    }
    const jobs = (await call('GET', `/${repo.slug}/jobs`)).body as { kind: string; error: string | null }[]
    expect(jobs.find((job) => job.kind === 'export_graph')!.error).toMatch(/registry answered 401 unauthorized/)
    await server.waitFor(/"kind":"export_graph".*registry answered 401/)
    const logLines = server.output().split('\n')
    for (const secret of SECRETS) {
      for (const text of [...answers, ...logLines])
        if (text.includes(secret)) throw new Error(`${secret} shown in: ${text}`)
    }
    // The upstream URL is still named, without its userinfo, where a message names it.
    expect(logLines.join('') + answers.join('')).not.toContain('@127.0.0.1')
  })

  test('a failing start names the URL without its userinfo', () => {
    const env = {
      REGISTRY_URL: `http://${USER}:${PASSWORD}@registry.example/with space`,
      DATABASE_URL: `mysql://${USER}:${PASSWORD}@db.example/kgs`,
    }
    for (const [name, value] of Object.entries(env)) {
      let error: unknown
      try {
        parseEnv({ [name]: value })
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(ConfigError)
      for (const secret of SECRETS) expect((error as Error).message).not.toContain(secret)
      expect((error as Error).message).toContain('example')
    }
  })
})
