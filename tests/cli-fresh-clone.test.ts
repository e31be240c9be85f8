// Every command of `kgs help` as a reader runs it right after `npm install`: from a copy of the
// checkout's files (what a clone has: no dist/, so no web app built yet), node_modules linked
// in, `bun src/main.ts …` in that directory. The offline commands must work without dist/ and
// leave none behind; `serve` then builds the web app itself and serves it, on this machine only
// when HOST is unset. .ci/run runs this file before anything else builds the web app.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { copyFileSync, existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { api, uniqueEmail } from './helpers/api.ts'
import { BACKEND, instanceEnvironment, tempDir } from './helpers/backend.ts'
import { ROOT, runKgs, startServerProcess, type Instance } from './helpers/server.ts'

/** The checkout's files as a clone has them (tracked, and new ones not ignored), in a new directory. */
function cloneLike(): string {
  const listed = Bun.spawnSync(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    stderr: 'pipe',
  })
  if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`)
  const dir = tempDir('kgs-clone-')
  // node_modules is linked in below (a worktree's own node_modules may be a symlink git lists).
  const files = listed.stdout
    .toString()
    .split('\0')
    .filter(
      (path) => path !== '' && path !== 'node_modules' && !path.startsWith('dist/') && existsSync(join(ROOT, path)),
    )
  for (const path of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    copyFileSync(join(ROOT, path), join(dir, path))
  }
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'))
  return dir
}

const BUNDLE = 'tests/fixtures/go-original/V1-build-v1.json.gz'

describe(`the command line on a fresh clone (${BACKEND})`, () => {
  let clone: string
  let instance: Instance
  const kgs = (args: string[], env: Record<string, string> = {}, stdin?: string) =>
    runKgs(args, env, clone, stdin === undefined ? undefined : new TextEncoder().encode(stdin))
  beforeAll(async () => {
    clone = cloneLike()
    instance = await instanceEnvironment()
  })
  afterAll(async () => {
    await instance?.cleanup()
    rmSync(clone, { recursive: true, force: true })
  })

  test('the clone has no dist/', () => {
    expect(existsSync(join(clone, 'src', 'main.ts'))).toBe(true)
    expect(existsSync(join(clone, 'dist'))).toBe(false)
  })

  /** The commands `kgs help` lists, each run below. */
  const COMMANDS = [
    'serve',
    'migrate',
    'promote-sysadmin',
    'user',
    'ingest',
    'bundle',
    'healthcheck',
    'version',
    'help',
  ]

  test("help, help config, each command's help and version exit 0; help lists no command this file leaves out", async () => {
    const help = await kgs(['help'])
    expect(help).toMatchObject({ code: 0, stderr: '' })
    expect(help.stdout).toStartWith('Usage: kgs <command>')
    expect([...help.stdout.matchAll(/^ {2}([a-z-]+)/gm)].map((match) => match[1])).toEqual(COMMANDS)
    for (const command of COMMANDS) {
      const usage = await kgs(['help', command])
      expect(usage).toMatchObject({ code: 0, stderr: '' })
      expect(usage.stdout).toStartWith(`Usage: kgs ${command}`)
    }
    const config = await kgs(['help', 'config'])
    expect(config).toMatchObject({ code: 0, stderr: '' })
    expect(config.stdout).toContain('  HOST (default: localhost)')
    const version = await kgs(['version'])
    expect(version).toMatchObject({ code: 0, stderr: '' })
    expect(version.stdout).toStartWith('kgs ')
  })

  test('bundle verify, inspect and canonical read a bundle offline', async () => {
    const verified = await kgs(['bundle', 'verify', BUNDLE])
    expect(verified).toMatchObject({ code: 0, stderr: '' })
    const hash = /^ok ([0-9a-f]{64}) /.exec(verified.stdout)?.[1]
    expect(hash).toBeDefined()
    const inspected = await kgs(['bundle', 'inspect', BUNDLE])
    expect(inspected).toMatchObject({ code: 0, stderr: '' })
    expect(inspected.stdout).toContain(`sha256         ${hash}`)
    // The canonical bytes are what the hash is of.
    const canonical = await kgs(['bundle', 'canonical', BUNDLE])
    expect(canonical.code).toBe(0)
    expect(new Bun.CryptoHasher('sha256').update(canonical.stdout).digest('hex')).toBe(hash!)
    expect((await kgs(['bundle', 'verify'])).code).toBe(2)
  })

  test('migrate, user create (password on stdin), user list and promote-sysadmin work on the data, offline', async () => {
    const migrated = await kgs(['migrate'], instance.env)
    expect(migrated).toMatchObject({ code: 0, stderr: '' })
    expect(migrated.stdout).toContain('repositories: ')
    const email = uniqueEmail('fresh-clone')
    const created = await kgs(['user', 'create', email, '--name', 'Ada'], instance.env, 'correct horse battery\n')
    expect(created).toMatchObject({ code: 0, stderr: '' })
    expect(created.stdout).toStartWith(`created ${email} (`)
    const listed = await kgs(['user', 'list'], instance.env)
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(`\t${email}\t`)
    expect(await kgs(['promote-sysadmin', email], instance.env)).toMatchObject({
      code: 0,
      stdout: `${email} is now sysadmin\n`,
    })
    expect(await kgs(['promote-sysadmin', email], instance.env)).toMatchObject({
      code: 0,
      stdout: `${email} is already sysadmin; nothing changed\n`,
    })
  })

  test('none of those commands built anything', () => {
    expect(existsSync(join(clone, 'dist'))).toBe(false)
  })

  test('serve builds the web app, serves it, and listens on 127.0.0.1 only when HOST is unset; healthcheck finds it; kgs ingest adds through it and on its data', async () => {
    const { HOST: _, ...env } = instance.env
    const notes = join(tempDir('kgs-fresh-ingest-'), 'notes.md')
    writeFileSync(notes, '# Notes\n\nWritten for kgs ingest.\n')
    let repository = ''
    const server = await startServerProcess(env, 'info', [process.execPath, join(clone, 'src', 'main.ts'), 'serve'])
    try {
      expect(server.output()).toContain('"msg":"built the web app"')
      const { port, hostname } = new URL(server.url)
      expect(hostname).toBe('localhost')
      const script = await fetch(`http://127.0.0.1:${port}/app/assets/app.js`)
      expect(script.status).toBe(200)
      expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
      expect((await script.text()).length).toBeGreaterThan(1000)
      expect(existsSync(join(clone, 'dist', 'web', 'app.css'))).toBe(true)
      // Linux routes all of 127/8 to the loopback: a server on every interface would answer here.
      const elsewhere = await fetch(`http://127.0.0.2:${port}/healthz`).then(
        () => 'answered',
        (error: { code?: string }) => error.code,
      )
      expect(elsewhere).toBe('ECONNREFUSED')
      expect(await kgs(['healthcheck'], { PORT: port })).toMatchObject({ code: 0, stderr: '' })
      // kgs ingest through the running server, as its user.
      const http = api(server.url)
      const registered = await http.post('/api/v1/auth/register', {
        email: uniqueEmail('fresh-ingest'),
        password: 'correct horse battery',
      })
      repository = (await http.post('/api/v1/repositories', { name: 'Fresh clone' }, registered.body.token)).body.slug
      const added = await kgs(['ingest', repository, notes, '--url', server.url], { KGS_TOKEN: registered.body.token })
      expect(added).toMatchObject({ code: 0, stderr: '' })
      expect(added.stdout).toContain('1 added, 0 unchanged, 0 failed')
    } finally {
      await server.stop()
    }
    const down = await kgs(['healthcheck'], { PORT: new URL(server.url).port })
    expect(down.code).toBe(1)
    expect(down.stderr).toStartWith('kgs healthcheck: ')
    // And on the data directory, with the server stopped: the same file, read again into its source.
    const again = await kgs(['ingest', repository, notes], instance.env)
    expect(again).toMatchObject({ code: 0, stderr: '' })
    expect(again.stdout).toContain('1 added, 0 unchanged, 0 failed')
  })
})
