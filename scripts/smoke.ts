// Smoke test of the compiled binary: start it from an unrelated directory with nothing but
// DATA_DIR, wait for /readyz, check /healthz and the web app's embedded files, run a job on a worker thread (the embedded worker
// entry point, LanceDB's native module), search, stop it with SIGTERM and expect exit 0; then
// verify a generated bundle with `kgs bundle verify`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { generateBundle } from './gen-bundle.ts'

const binary = resolve(process.argv[2] ?? join(import.meta.dir, '..', 'dist', 'kgs'))
const cwd = mkdtempSync(join(tmpdir(), 'kgs-smoke-'))
const child = Bun.spawn([binary, 'serve'], {
  cwd,
  env: { DATA_DIR: join(cwd, 'data'), PORT: '0', HOST: '127.0.0.1', PATH: '/usr/bin:/bin' },
  stdout: 'pipe',
  stderr: 'inherit',
})
const fail = (message: string): never => {
  child.kill('SIGKILL')
  console.error(`smoke: ${message}`)
  process.exit(1)
}
const deadline = setTimeout(() => fail('not ready within 30 s'), 30_000)
let output = ''
let url: string | undefined
const reader = child.stdout.getReader()
while (!url) {
  const { done, value } = await reader.read()
  if (done) break
  output += new TextDecoder().decode(value)
  url = /"msg":"ready","url":"([^"]+)"/.exec(output)?.[1]
}
// Keep draining the log so the server never writes into a closed pipe.
void (async () => {
  while (!(await reader.read()).done);
})()
clearTimeout(deadline)
if (!url) fail(`exited before it was ready:\n${output}`)
const health = await fetch(`${url}/healthz`)
const body = (await health.json()) as { status?: string; version?: string }
if (health.status !== 200 || body.status !== 'ok') fail(`/healthz answered ${health.status} ${JSON.stringify(body)}`)
// The web app's files are embedded in the binary.
for (const path of ['/app', '/app/assets/app.js', '/app/assets/app.css']) {
  const res = await fetch(`${url}${path}`)
  if (res.status !== 200 || (await res.arrayBuffer()).byteLength === 0) fail(`${path} answered ${res.status}`)
}
const call = async (method: string, path: string, body?: unknown, token?: string) => {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return (await res.json()) as Record<string, any>
}
const { token } = await call('POST', '/api/v1/auth/register', {
  email: 'smoke@example.com',
  password: 'correct horse battery',
})
const repository = await call('POST', '/api/v1/repositories', { name: 'smoke' }, token)
let job = await call('POST', `/${repository.slug}/jobs`, { kind: 'embed_facts' }, token)
for (let i = 0; job.status === 'queued' || job.status === 'running'; i++) {
  if (i > 600) fail(`embed_facts still ${job.status}`)
  await Bun.sleep(50)
  job = await call('GET', `/${repository.slug}/jobs/${job.id}`, undefined, token)
}
if (job.status !== 'succeeded') fail(`embed_facts ended ${job.status}: ${job.error}`)
const hits = await call('GET', `/${repository.slug}/search?q=ice`, undefined, token)
if (!Array.isArray(hits)) fail(`search answered ${JSON.stringify(hits)}`)
child.kill('SIGTERM')
const code = await child.exited
if (code !== 0) fail(`exit code ${code} after SIGTERM`)
// The offline bundle tools (their codecs are compiled at start-up) in the binary.
const bundle = join(cwd, 'smoke.json.gz')
const generated = await generateBundle(bundle, { facts: 200, dimensions: 8 })
const verify = Bun.spawnSync([binary, 'bundle', 'verify', bundle], { cwd })
// The verdict names the hash rule that matched after the path (docs/bundles.md).
if (verify.exitCode !== 0 || !verify.stdout.toString().startsWith(`ok ${generated.sha256} ${bundle} by `))
  fail(`bundle verify: ${verify.exitCode} ${verify.stdout}${verify.stderr}`)
rmSync(cwd, { recursive: true, force: true })
console.log(
  `smoke: ok (kgs ${body.version} served /healthz and the web app from ${cwd}, ran a job on a worker thread, searched, stopped cleanly, verified a bundle)`,
)
