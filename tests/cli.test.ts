// `kgs` as a user runs it: subcommands, exit codes, and the server process lifecycle.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { VERSION } from '../src/version.ts'
import { MIGRATIONS } from '../src/db/migrations/index.ts'
import { BACKEND, instanceEnvironment, tempDir } from './helpers/backend.ts'
import { EnvSchema } from '../src/config-variables.ts'
import { api, uniqueEmail } from './helpers/api.ts'
import { runKgs, startServerProcess } from './helpers/server.ts'

describe('subcommands', () => {
  test('help prints usage on stdout and exits 0', async () => {
    const { code, stdout } = await runKgs(['help'], {})
    expect(code).toBe(0)
    expect(stdout).toContain('Usage: kgs <command>')
    for (const command of ['serve', 'migrate', 'healthcheck', 'version', 'help'])
      expect(stdout).toContain(`  ${command} `)
  })

  test('version', async () => {
    const { code, stdout } = await runKgs(['version'], {})
    expect(code).toBe(0)
    expect(stdout.trim()).toBe(`kgs ${VERSION}`)
  })

  const usageErrors: [string, string[], string][] = [
    ['no command', [], 'kgs: missing command'],
    ['an unknown command', ['frobnicate'], 'kgs: unknown command "frobnicate"'],
    ['an unknown flag', ['serve', '--bogus'], "kgs serve: Unknown option '--bogus'"],
    ['a stray argument', ['version', 'extra'], 'kgs version: unexpected argument "extra"'],
  ]
  for (const [what, args, message] of usageErrors) {
    test(`${what}: usage on stderr, exit 2`, async () => {
      const { code, stdout, stderr } = await runKgs(args, {})
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr).toStartWith(message)
      expect(stderr).toContain('Usage: kgs ')
    })
  }

  test('a bad configuration value stops start-up with one line naming it', async () => {
    const { code, stderr } = await runKgs(['serve'], { PORT: 'eighty' })
    expect(code).toBe(1)
    expect(stderr).toBe('kgs: invalid PORT: expected an integer from 0 to 65535, got "eighty"\n')
  })
})

describe('help', () => {
  const COMMANDS = ['serve', 'migrate', 'promote-sysadmin', 'user', 'bundle', 'healthcheck', 'version', 'help']

  test('kgs help names every command', async () => {
    const { stdout } = await runKgs(['help'], {})
    for (const command of COMMANDS) expect(stdout).toContain(`  ${command}`)
  })

  for (const command of COMMANDS) {
    test(`kgs help ${command} and kgs ${command} --help print the command's usage and exit 0`, async () => {
      const viaHelp = await runKgs(['help', command], {})
      const viaFlag = await runKgs([command, '--help'], {})
      expect(viaHelp.code).toBe(0)
      expect(viaHelp.stdout).toStartWith(`Usage: kgs ${command}`)
      expect(viaFlag).toEqual(viaHelp)
    })
  }

  test('kgs help config lists every configuration variable with its default', async () => {
    const { code, stdout } = await runKgs(['help', 'config'], {})
    expect(code).toBe(0)
    for (const name of Object.keys(EnvSchema.properties)) expect(stdout).toContain(`  ${name} (default: `)
  })
})

describe(`user (${BACKEND})`, () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  beforeAll(async () => {
    instance = await instanceEnvironment()
  })
  afterAll(() => instance.cleanup())
  const stdin = (text: string) => new TextEncoder().encode(text)

  test('user create reads the password from stdin, never an argument; the account signs in; user list shows it', async () => {
    const server = await startServerProcess(instance.env)
    try {
      const email = uniqueEmail('cli')
      expect((await runKgs(['user', 'create', email, 'correct horse battery'], instance.env)).code).toBe(2)
      const created = await runKgs(
        ['user', 'create', email, '--name', 'Ada'],
        instance.env,
        undefined,
        stdin('correct horse battery\n'),
      )
      expect(created.stderr).toBe('')
      expect(created.code).toBe(0)
      expect(created.stdout).toStartWith(`created ${email} (`)
      const login = await api(server.url).post('/api/v1/auth/login', { email, password: 'correct horse battery' })
      expect(login.status).toBe(200)
      // A member, as after registration: it may create a repository.
      expect((await api(server.url).post('/api/v1/repositories', { name: 'cli' }, login.body.token)).status).toBe(201)

      const again = await runKgs(['user', 'create', email], instance.env, undefined, stdin('another password\n'))
      expect(again).toMatchObject({ code: 1, stderr: 'kgs user create: e-mail address already registered\n' })
      const short = await runKgs(['user', 'create', uniqueEmail('cli')], instance.env, undefined, stdin('short\n'))
      expect(short).toMatchObject({ code: 1, stderr: 'kgs user create: the password must be 8 to 256 characters\n' })

      const listed = await runKgs(['user', 'list'], instance.env)
      expect(listed.code).toBe(0)
      expect(listed.stdout.split('\n')).toContainEqual(
        expect.stringMatching(new RegExp(`^[0-9a-f-]{36}\t${email}\t\\S+\tAda$`)),
      )
    } finally {
      await server.stop()
    }
    // And with the server stopped, straight to the database.
    const email = uniqueEmail('offline')
    expect(
      (await runKgs(['user', 'create', email], instance.env, undefined, stdin('correct horse battery\n'))).code,
    ).toBe(0)
    expect((await runKgs(['user', 'list'], instance.env)).stdout).toContain(`\t${email}\t`)
  })

  test('admin commands refuse a data directory that holds no kgs data, and leave it empty', async () => {
    const empty = tempDir()
    const env = { DATA_DIR: empty, JWT_SECRET: instance.env.JWT_SECRET ?? 'x'.repeat(32) }
    for (const args of [
      ['user', 'list'],
      ['user', 'create', 'a@example.com'],
      ['promote-sysadmin', 'a@example.com'],
    ]) {
      const result = await runKgs(args, env, undefined, stdin('correct horse battery\n'))
      expect(result).toEqual({
        code: 1,
        stdout: '',
        stderr: `kgs ${args.slice(0, args[0] === 'user' ? 2 : 1).join(' ')}: no kgs data in ${empty}; set DATA_DIR or DATABASE_URL\n`,
      })
    }
    expect(readdirSync(empty)).toEqual([])
  })
})

describe(`migrate (${BACKEND})`, () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  beforeAll(async () => {
    instance = await instanceEnvironment()
  })
  afterAll(() => instance.cleanup())

  test('applies the migrations, then is a no-op the second time', async () => {
    const first = await runKgs(['migrate'], instance.env)
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    expect(first.stdout).toBe(
      `system: applied ${MIGRATIONS.system.map((m) => m.name).join(', ')}\nrepositories: 0 checked, 0 migrated\n`,
    )
    const second = await runKgs(['migrate'], instance.env)
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('system: up to date\nrepositories: 0 checked, 0 migrated\n')
  })
})

describe(`serve lifecycle (${BACKEND})`, () => {
  let instance: Awaited<ReturnType<typeof instanceEnvironment>>
  beforeAll(async () => {
    instance = await instanceEnvironment()
    // This test is about the generated secret, so none is configured.
    delete instance.env.JWT_SECRET
  })
  afterAll(() => instance.cleanup())

  test('SIGTERM stops cleanly; a restart keeps the data and the generated secret', async () => {
    const first = await startServerProcess(instance.env)
    expect((await fetch(first.url + '/readyz')).status).toBe(200)
    const secret = readFileSync(join(instance.dataDir, 'secret'), 'utf8')
    expect(await first.stop('SIGTERM')).toBe(0)
    expect(first.output()).toContain('"msg":"migrations applied"')
    expect(first.output()).toContain('"msg":"stopped"')

    const second = await startServerProcess(instance.env)
    expect((await fetch(second.url + '/readyz')).status).toBe(200)
    // The database survived: nothing left to migrate.
    expect(second.output()).not.toContain('"msg":"migrations applied"')
    expect(readFileSync(join(instance.dataDir, 'secret'), 'utf8')).toBe(secret)
    expect(await second.stop('SIGINT')).toBe(0)
  })

  test('SIGTERM lets an in-flight request finish before the process exits', async () => {
    const server = await startServerProcess(instance.env, 'debug')
    const body = JSON.stringify({
      email: `drain-${crypto.randomUUID().slice(0, 8)}@example.com`,
      password: 'correct horse battery',
    })
    const half = body.length >> 1
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode(body.slice(0, half)))
        await released
        controller.enqueue(new TextEncoder().encode(body.slice(half)))
        controller.close()
      },
    })
    const inFlight = fetch(server.url + '/api/v1/auth/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
      body: stream,
    })
    // The request is inside the server, waiting for the rest of its body, when the signal arrives.
    await server.waitFor(
      /"msg":"request started","request_id":"[^"]+","method":"POST","path":"\/api\/v1\/auth\/register"/,
    )
    server.process.kill('SIGTERM')
    await server.waitFor(/"msg":"shutting down"/)
    release()
    const response = await inFlight
    expect(response.status).toBe(201)
    expect(await server.process.exited).toBe(0)
  })

  test('healthcheck exits 0 against a running server and 1 when nothing answers', async () => {
    const server = await startServerProcess(instance.env)
    const port = new URL(server.url).port
    expect((await runKgs(['healthcheck'], { PORT: port, HOST: '127.0.0.1' })).code).toBe(0)
    await server.stop()
    const down = await runKgs(['healthcheck'], { PORT: port, HOST: '127.0.0.1' })
    expect(down.code).toBe(1)
    expect(down.stderr).toStartWith('kgs healthcheck: ')
  })

  test('each request is logged as one JSON line with request id, method, path, status and ms; health probes only at debug', async () => {
    const server = await startServerProcess(instance.env)
    const res = await fetch(server.url + '/?secret=not-logged')
    expect(res.status).toBe(200)
    const requestId = res.headers.get('x-request-id')!
    const probes = await Promise.all(['/healthz', '/readyz'].map((path) => fetch(server.url + path)))
    await server.stop()
    const line = server
      .output()
      .split('\n')
      .find((l) => l.includes(requestId))!
    const entry = JSON.parse(line)
    expect(entry).toMatchObject({
      level: 'info',
      msg: 'request',
      request_id: requestId,
      method: 'GET',
      path: '/',
      status: 200,
    })
    expect(typeof entry.ms).toBe('number')
    expect(line).not.toContain('not-logged')
    for (const probe of probes) expect(server.output()).not.toContain(probe.headers.get('x-request-id')!)

    const debugging = await startServerProcess(instance.env, 'debug')
    const probe = await fetch(debugging.url + '/readyz')
    await debugging.stop()
    const probeLine = debugging
      .output()
      .split('\n')
      .find((l) => l.includes(probe.headers.get('x-request-id')!) && l.includes('"msg":"request"'))!
    expect(JSON.parse(probeLine)).toMatchObject({ level: 'debug', path: '/readyz', status: 200 })
  })

  if (BACKEND === 'embedded') {
    test('a second process on the same data directory gets a clear error', async () => {
      const server = await startServerProcess(instance.env)
      const second = await runKgs(['serve'], { ...instance.env, PORT: '0' })
      expect(second.code).toBe(1)
      expect(second.stderr).toContain(
        `kgs serve: data directory ${instance.dataDir} is in use by another kgs process (pid ${server.process.pid})`,
      )
      expect((await fetch(server.url + '/readyz')).status).toBe(200)
      expect(await server.stop()).toBe(0)
    })
  } else {
    test('two processes share one PostgreSQL database (a fleet)', async () => {
      const [a, b] = await Promise.all([startServerProcess(instance.env), startServerProcess(instance.env)])
      expect((await fetch(a.url + '/readyz')).status).toBe(200)
      expect((await fetch(b.url + '/readyz')).status).toBe(200)
      expect(await Promise.all([a.stop(), b.stop()])).toEqual([0, 0])
    })
  }
})
