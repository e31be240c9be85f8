// One user journey over HTTP against `kgs serve` run from source on a given runtime:
//   bun scripts/journey.ts deno|bun [s3|rgw]
// on the embedded database, or on PostgreSQL when DATABASE_URL is set (a database of its own);
// blobs under DATA_DIR, or with `s3` in a loopback fake S3 (tests/helpers/fake-s3.ts), or with
// `rgw` blobs and vectors (LANCEDB_URI=s3://…) in a bucket of its own on the Ceph RADOS Gateway
// that TEST_S3_* name (tests/helpers/object-store.ts).
// The web app's files, register, create a repository, import an uploaded bundle, browse, search, export (pushed to
// this server's registry), import that export from the registry, sign in through the OAuth flow
// in Chromium, and promote a sysadmin with the CLI against the running server. Every step checks
// what it got; the first failed check ends the run with exit code 1. Prints each step's time.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as oauth from 'oauth4webapi'
import { launchBrowser, listenOnLoopback, signInAndDecide } from '../tests/helpers/browser.ts'
import { startFakeS3 } from '../tests/helpers/fake-s3.ts'
import { OBJECT_STORE, createBucket, listKeys, openUploads } from '../tests/helpers/object-store.ts'
import { generateBundle } from './gen-bundle.ts'

const [runtimeName, blobs = 'local', ...extra] = process.argv.slice(2)
if ((runtimeName !== 'deno' && runtimeName !== 'bun') || !['local', 's3', 'rgw'].includes(blobs) || extra.length > 0)
  throw new Error('usage: bun scripts/journey.ts deno|bun [s3|rgw]')
if (blobs === 'rgw' && !OBJECT_STORE)
  throw new Error(
    'rgw: set TEST_S3_ENDPOINT, TEST_S3_REGION, TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY (ceph-rgw start prints them as S3_*)',
  )
const root = join(import.meta.dir, '..')
const main = join(root, 'src', 'main.ts')
const command =
  runtimeName === 'deno' ? [join(root, 'node_modules', '.bin', 'deno'), 'run', '-A', main] : [process.execPath, main]
const backend = `${process.env.DATABASE_URL ? 'postgres' : 'embedded'}${{ local: '', s3: ', S3', rgw: ', blobs and vectors on Ceph RGW' }[blobs]}`
const s3 =
  blobs === 's3'
    ? startFakeS3()
    : blobs === 'rgw'
      ? { ...OBJECT_STORE!, bucket: await createBucket(OBJECT_STORE!, 'journey') }
      : undefined
const dir = mkdtempSync(join(tmpdir(), 'kgs-journey-'))
const env: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? dir,
  DATA_DIR: join(dir, 'data'),
  PORT: '0',
  HOST: '127.0.0.1',
  WORKERS: '1',
  JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  ...(s3
    ? {
        S3_BUCKET: s3.bucket,
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        S3_PREFIX: 'journey/',
      }
    : {}),
  ...(blobs === 'rgw' ? { LANCEDB_URI: `s3://${s3!.bucket}/lance` } : {}),
}

const child = Bun.spawn([...command, 'serve'], { cwd: root, env, stdout: 'pipe', stderr: 'pipe' })
let log = ''
let errors = ''
void (async () => {
  for await (const chunk of child.stderr) errors += new TextDecoder().decode(chunk)
})()

function fail(message: string): never {
  child.kill('SIGKILL')
  console.error(
    `journey (${runtimeName}, ${backend}) failed: ${message}\n--- server stderr ---\n${errors.slice(-4000)}`,
  )
  rmSync(dir, { recursive: true, force: true })
  process.exit(1)
}
function check(condition: unknown, message: string): asserts condition {
  if (!condition) fail(message)
}

const timings: [string, number][] = []
let lastMark = performance.now()
const journeyStarted = lastMark
function step(name: string): void {
  const now = performance.now()
  timings.push([name, Math.round(now - lastMark)])
  lastMark = now
}

// Ready: the log line with the URL.
const reader = child.stdout.getReader()
let url: string | undefined
while (!url) {
  const { done, value } = await reader.read()
  if (done) fail(`kgs serve exited before it was ready:\n${log}`)
  log += new TextDecoder().decode(value)
  url = /"msg":"ready","url":"([^"]+)"/.exec(log)?.[1]
}
void (async () => {
  while (!(await reader.read()).done);
})()
step('start')

async function call<T = any>(
  method: string,
  path: string,
  options: { body?: unknown; raw?: Uint8Array<ArrayBuffer>; token?: string; type?: string } = {},
): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.raw) headers['content-type'] = options.type ?? 'application/gzip'
  else if (options.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(url + path, {
    method,
    headers,
    body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  })
  const text = await response.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // Not JSON: kept as text.
  }
  return { status: response.status, body }
}

async function jobDone(slug: string, started: { status: number; body: any }, token: string): Promise<any> {
  check(started.status === 202, `job not queued: ${started.status} ${JSON.stringify(started.body)}`)
  const deadline = Date.now() + 120_000
  for (;;) {
    const job = (await call('GET', `/${slug}/jobs/${started.body.id}`, { token })).body
    if (!['queued', 'running'].includes(job.status)) {
      check(job.status === 'succeeded', `job ${job.kind} ended ${job.status}: ${job.error}`)
      return job
    }
    check(Date.now() < deadline, `job ${job.kind} still ${job.status} after 120 s`)
    await Bun.sleep(25)
  }
}

/** Waits until no job of the repository is queued or running (an import's follow-ups: embeddings). */
async function settled(slug: string, token: string): Promise<void> {
  const deadline = Date.now() + 120_000
  for (;;) {
    const jobs = (await call('GET', `/${slug}/jobs?limit=100`, { token })).body
    check(Array.isArray(jobs), `jobs: ${JSON.stringify(jobs)}`)
    const failed = jobs.find((job: any) => job.status === 'failed')
    check(!failed, `job ${failed?.kind} failed: ${failed?.error}`)
    if (jobs.every((job: any) => !['queued', 'running'].includes(job.status))) return
    check(Date.now() < deadline, 'jobs still running after 120 s')
    await Bun.sleep(25)
  }
}

// The web app's page and files (dist/web/, which `npm run build` or `npm run build:web` makes).
for (const path of ['/app', '/app/assets/app.js', '/app/assets/app.css']) {
  const res = await call('GET', path)
  check(res.status === 200 && String(res.body).length > 0, `${path}: ${res.status}`)
}
step('web app')

const password = 'correct horse battery'
const owner = { email: `owner-${crypto.randomUUID().slice(0, 8)}@example.com`, password }
const admin = { email: `admin-${crypto.randomUUID().slice(0, 8)}@example.com`, password }
const registered = await call('POST', '/api/v1/auth/register', { body: owner })
check(registered.status === 201, `register: ${registered.status} ${JSON.stringify(registered.body)}`)
const token: string = registered.body.token
const adminRegistered = await call('POST', '/api/v1/auth/register', { body: admin })
check(adminRegistered.status === 201, `register: ${adminRegistered.status}`)
const me = await call('GET', '/api/v1/users/me', { token })
check(me.status === 200 && me.body.email === owner.email, `users/me: ${me.status} ${JSON.stringify(me.body)}`)
step('register')

const repo = await call('POST', '/api/v1/repositories', { body: { name: 'Journey' }, token })
check(repo.status === 201, `repository: ${repo.status} ${JSON.stringify(repo.body)}`)
const slug: string = repo.body.slug
step('repository')

const bundle = await generateBundle(join(dir, 'journey.kgb.gz'), { facts: 200, dimensions: 0, seed: 7 })
await jobDone(
  slug,
  await call('POST', `/${slug}/import-graph`, { raw: new Uint8Array(readFileSync(bundle.path)), token }),
  token,
)
await settled(slug, token)
step('import (upload)')

const concepts = await call('GET', `/${slug}/concepts?limit=500`, { token })
check(
  concepts.status === 200 && Array.isArray(concepts.body) && concepts.body.length === bundle.counts.concepts,
  `browse concepts: ${concepts.status}, ${concepts.body.length} of ${bundle.counts.concepts}`,
)
const sources = await call('GET', `/${slug}/sources`, { token })
check(
  sources.status === 200 && Array.isArray(sources.body) && sources.body.length > 0,
  `browse sources: ${sources.status} ${JSON.stringify(sources.body).slice(0, 200)}`,
)
step('browse')

const word = String(concepts.body[0].canonical_name).split(/\s+/)[0]
const hits = await call('GET', `/${slug}/search?q=${encodeURIComponent(word!)}`, { token })
check(
  hits.status === 200 && Array.isArray(hits.body) && hits.body.length > 0,
  `search ${word}: ${hits.status} ${JSON.stringify(hits.body).slice(0, 200)}`,
)
step('search')

const exported = await jobDone(
  slug,
  await call('POST', `/${slug}/export-graph`, { body: { name: 'journey-export' }, token }),
  token,
)
const graphId: string | undefined = exported.result?.graph_id
check(typeof graphId === 'string', `export: no graph_id in ${JSON.stringify(exported.result)}`)
const download = await fetch(`${url}/${slug}/export-graph/download`, { headers: { authorization: `Bearer ${token}` } })
const bytes = new Uint8Array(await download.arrayBuffer())
check(
  download.status === 200 && bytes[0] === 0x1f && bytes[1] === 0x8b,
  `export download: ${download.status}, ${bytes.length} bytes`,
)
step('export')

const copy = await call('POST', '/api/v1/repositories', { body: { name: 'Journey copy' }, token })
check(copy.status === 201, `repository: ${copy.status}`)
await jobDone(
  copy.body.slug,
  await call('POST', `/${copy.body.slug}/import-graph`, { body: { graph_id: graphId }, token }),
  token,
)
const copied = await call('GET', `/${copy.body.slug}/concepts?limit=500`, { token })
check(
  copied.status === 200 && copied.body.length === bundle.counts.concepts,
  `registry import: ${copied.body.length} concepts of ${bundle.counts.concepts}`,
)
step('registry import')

// OAuth 2.1: dynamic registration, authorization code + PKCE with sign-in and consent in Chromium.
const insecure = { [oauth.allowInsecureRequests]: true }
const listener = listenOnLoopback('127.0.0.1')
const redirectUri = `http://127.0.0.1:${listener.port}/callback`
const issuer = new URL(url)
const as = await oauth.processDiscoveryResponse(
  issuer,
  await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
)
const client = await oauth.processDynamicClientRegistrationResponse(
  await oauth.dynamicClientRegistrationRequest(
    as,
    { redirect_uris: [redirectUri], client_name: 'Journey agent', scope: 'read write' },
    insecure,
  ),
)
const verifier = oauth.generateRandomCodeVerifier()
const state = oauth.generateRandomState()
const authorize = new URL(as.authorization_endpoint!)
authorize.search = new URLSearchParams({
  response_type: 'code',
  client_id: client.client_id,
  redirect_uri: redirectUri,
  code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  scope: 'read write',
  state,
}).toString()
const browser = await launchBrowser()
const redirected = listener.nextRedirect()
const page = await browser.newPage()
await page.goto(authorize.href)
await signInAndDecide(page, owner, 'Allow')
const callback = await redirected
await browser.close()
listener.stop()
const params = oauth.validateAuthResponse(as, client, callback, state)
const tokens = await oauth.processAuthorizationCodeResponse(
  as,
  client,
  await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure),
)
const agentMe = await call('GET', '/api/v1/users/me', { token: tokens.access_token })
check(
  agentMe.status === 200 && agentMe.body.email === owner.email,
  `OAuth access token: ${agentMe.status} ${JSON.stringify(agentMe.body)}`,
)
step('OAuth in Chromium')

// promote-sysadmin on the same runtime, against the running server (embedded: over its control socket).
const adminToken: string = adminRegistered.body.token
// The admin makes itself a viewer of the copy (its owner, the copy's only repoadmin, must stay one).
const adminId: string = adminRegistered.body.user.id
const grant = () =>
  call('PUT', '/api/v1/admin/users/roles', {
    body: { user_id: adminId, role: 'viewer', domain: copy.body.id },
    token: adminToken,
  })
const before = await grant()
check(before.status === 403, `before promotion an admin route answered ${before.status}`)
const promote = Bun.spawnSync([...command, 'promote-sysadmin', admin.email], { cwd: root, env })
check(promote.exitCode === 0, `promote-sysadmin exited ${promote.exitCode}: ${promote.stderr.toString()}`)
const after = await grant()
check(after.status === 200, `after promotion the admin route answered ${after.status} ${JSON.stringify(after.body)}`)
step('promote-sysadmin')

child.kill('SIGTERM')
const code = await child.exited
check(code === 0, `kgs serve exited ${code} after SIGTERM`)
step('stop')
if (s3) {
  // The blobs (imported bodies and images, the export, the registry's bundle) went to the bucket
  // under S3_PREFIX, none to DATA_DIR; on the gateway, so did the vectors.
  const keys = 'objects' in s3 ? [...s3.objects.keys()] : await listKeys(OBJECT_STORE!, s3.bucket)
  check(
    keys.some((key) => key.startsWith('journey/registry/graphs/')),
    `S3: no registry bundle among ${JSON.stringify(keys.slice(0, 50))}`,
  )
  check(!existsSync(join(env.DATA_DIR!, 'blobs')), 'S3: blobs were written to DATA_DIR')
  if ('objects' in s3) {
    check(
      s3.refused() === 0 && s3.openUploads() === 0,
      `S3: ${s3.refused()} requests refused, ${s3.openUploads()} uploads left open`,
    )
    await s3.stop()
  } else {
    check(
      keys.some((key) => /^lance\/facts_[0-9a-f]{32}\.lance\//.test(key)),
      `RGW: no vector table among ${JSON.stringify(keys.slice(0, 50))}`,
    )
    check(!existsSync(join(env.DATA_DIR!, 'lance')), 'RGW: vectors were written to DATA_DIR')
    const open = await openUploads(OBJECT_STORE!, s3.bucket)
    check(open === 0, `RGW: ${open} uploads left open`)
  }
}
rmSync(dir, { recursive: true, force: true })

const total = Math.round(performance.now() - journeyStarted)
console.log(
  `journey (${runtimeName}, ${backend}): ${timings.map(([name, ms]) => `${name} ${ms} ms`).join(', ')}; total ${total} ms`,
)
