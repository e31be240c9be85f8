#!/usr/bin/env bun
// CLI entry: parses the subcommand and hands over. Exit codes: 0 success, 1 failure,
// 2 usage error (unknown subcommand or flag).
//
// Each command imports what it needs when it runs: the offline tools (bundle, version,
// healthcheck) then start in a few milliseconds instead of loading the whole server.
import { runtime } from './runtime/index.ts'
import { parseArgs } from 'node:util'
import { ConfigError, deriveBaseUrl, listenAddress, loadConfig, parseEnv } from './config.ts'
import { createLogger } from './log.ts'
import { VERSION } from './version.ts'
import { BUNDLE_USAGE, BundleUsageError, runBundleCommand } from './bundle/format/cli.ts'

interface Command {
  /** The synopsis: `kgs <this>`. */
  synopsis: string
  /** One line for `kgs help`. */
  summary: string
  /** What `kgs help <command>` adds: details, flags, environment. */
  details: string
  run(args: string[]): Promise<number>
}

class UsageError extends Error {}

const CONFIG_HINT = 'Configuration comes from the environment: kgs help config lists every variable.'

/** Parses a command's flags strictly; any flag it does not declare is a usage error. */
function parse<O extends Record<string, { type: 'string' | 'boolean' }>>(
  args: string[],
  options: O,
  positionals: { min: number; max: number; what: string },
) {
  const parsed = parseArgs({ args, options, strict: true, allowPositionals: true })
  const count = parsed.positionals.length
  if (count > positionals.max)
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals.max])}`)
  if (count < positionals.min) throw new UsageError(`expected ${positionals.what}`)
  return parsed
}
const NONE = { min: 0, max: 0, what: 'no arguments' }
const EMAIL = { min: 1, max: 1, what: 'exactly one e-mail address' }

/** Admin commands print a refusal (AdminError) as one line and exit 1. */
async function admin<T>(name: string, action: () => Promise<T>): Promise<T | undefined> {
  const { AdminError } = await import('./admin.ts')
  try {
    return await action()
  } catch (error) {
    if (!(error instanceof AdminError)) throw error
    process.stderr.write(`kgs ${name}: ${error.message}\n`)
    return undefined
  }
}

/** The password of `kgs user create`: typed at a prompt (not echoed, asked twice) or read from stdin. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const text = await new Response(runtime.stdin()).text()
    return text.split(/\r?\n/, 1)[0]!
  }
  const ask = (prompt: string) =>
    new Promise<string>((resolve, reject) => {
      let typed = ''
      const finish = (outcome: () => void) => {
        process.stdin.off('data', onData)
        process.stdin.setRawMode(false)
        process.stdin.pause()
        process.stderr.write('\n')
        outcome()
      }
      const onData = (chunk: Buffer) => {
        for (const char of chunk.toString('utf8')) {
          if (char === '\r' || char === '\n') return finish(() => resolve(typed))
          if (char === '\u0003') return finish(() => reject(new UsageError('cancelled')))
          typed = char === '\u007f' ? typed.slice(0, -1) : typed + char
        }
      }
      process.stderr.write(prompt)
      process.stdin.setRawMode(true)
      process.stdin.on('data', onData)
      process.stdin.resume()
    })
  const password = await ask('Password: ')
  if ((await ask('Password again: ')) !== password) throw new UsageError('the passwords differ')
  return password
}

const commands: Record<string, Command> = {
  serve: {
    synopsis: 'serve',
    summary: 'run the HTTP API (by default on an embedded database in ./data)',
    details: `Listens on HOST:PORT (localhost:8080, that is 127.0.0.1: this machine only; HOST=0.0.0.0
for every interface), on the embedded database in DATA_DIR, or on the PostgreSQL server
DATABASE_URL names. The first start initialises the embedded database (a few seconds; /readyz
answers 503 until then). From a source checkout it first builds the web app into dist/web/ when
that is missing or older than src/web/. SIGTERM or SIGINT drains requests for up to 10 s and
hands running jobs back to the queue; a second signal exits at once.

Then open http://localhost:8080/swagger to explore the API. No flags.`,
    async run(args) {
      parse(args, {}, NONE)
      const config = loadConfig()
      const log = createLogger(config.logLevel)
      if (await runtime.prepareWebApp()) log.info('built the web app', { dir: 'dist/web' })
      const { startServer } = await import('./server.ts')
      const server = await startServer(config, log)
      let signalled = false
      const shutdown = (signal: string) => {
        if (signalled) {
          // A second signal means "now": skip the drain.
          log.warn('forced exit', { signal })
          log.flush()
          process.exit(1)
        }
        signalled = true
        log.info('shutting down', { signal })
        void server.stop().then(() => process.exit(0))
      }
      process.on('SIGTERM', () => shutdown('SIGTERM'))
      process.on('SIGINT', () => shutdown('SIGINT'))
      try {
        await server.ready
      } catch (error) {
        await server.stop()
        throw error
      }
      return new Promise<number>(() => {}) // runs until a signal arrives
    },
  },

  migrate: {
    synopsis: 'migrate',
    summary: 'apply pending database migrations and exit',
    details: `Applies the system migrations, then those of every repository database, each in its own
transaction under an advisory lock (safe while other instances run). kgs serve does the same at
start-up; this is for deployments that migrate before starting a new version. No flags.`,
    async run(args) {
      parse(args, {}, NONE)
      const config = loadConfig()
      const { Pools } = await import('./db/pools.ts')
      const pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
      try {
        const applied = await pools.migrate()
        console.log(applied.length ? `system: applied ${applied.join(', ')}` : 'system: up to date')
        const { repositories, migrated } = await pools.migrateRepositories()
        console.log(`repositories: ${repositories} checked, ${migrated} migrated`)
      } finally {
        await pools.close()
      }
      return 0
    },
  },

  'promote-sysadmin': {
    synopsis: 'promote-sysadmin <email>',
    summary: 'grant the sysadmin role to that account (idempotent; server running or not)',
    details: `Works with the server running (through its control socket) or stopped. Refuses a data
directory that holds no kgs data. No flags.`,
    async run(args) {
      const email = parse(args, {}, EMAIL).positionals[0]!
      const { runAdmin } = await import('./admin.ts')
      const outcome = await admin('promote-sysadmin', () =>
        runAdmin(parseEnv(process.env), quietLog(), 'promote-sysadmin', { email }),
      )
      if (outcome === undefined) return 1
      if (outcome === 'unknown-user') {
        process.stderr.write(`kgs promote-sysadmin: no account with e-mail ${email}\n`)
        return 1
      }
      console.log(outcome === 'promoted' ? `${email} is now sysadmin` : `${email} is already sysadmin; nothing changed`)
      return 0
    },
  },

  user: {
    synopsis: 'user create <email> [--name NAME] | user list',
    summary: 'create an account, or list the accounts',
    details: `user create <email> [--name NAME]
    Creates an account, as registration does (a member). The password is never an argument:
    it is asked for twice at the terminal, or read from the first line of stdin:
      printf '%s\\n' "$PASSWORD" | kgs user create ada@example.com
user list
    Prints every account: id, e-mail, creation time and name, tab-separated, oldest first.

Both work with the server running or stopped, and refuse a data directory that holds no kgs data.`,
    async run(args) {
      const [sub, ...rest] = args
      const { requireData, runAdmin } = await import('./admin.ts')
      const config = parseEnv(process.env)
      if (sub === 'create') {
        const { positionals, values } = parse(rest, { name: { type: 'string' } }, EMAIL)
        const user = await admin('user create', async () => {
          requireData(config) // before asking for a password in vain
          return runAdmin(config, quietLog(), 'user-create', {
            email: positionals[0]!,
            name: values.name,
            password: await readPassword(),
          })
        })
        if (!user) return 1
        console.log(`created ${user.email} (${user.id})`)
        return 0
      }
      if (sub === 'list') {
        parse(rest, {}, NONE)
        const users = await admin('user list', () => runAdmin(config, quietLog(), 'user-list', {}))
        if (!users) return 1
        for (const user of users) console.log([user.id, user.email, user.created_at, user.name].join('\t'))
        return 0
      }
      throw new UsageError(
        sub === undefined
          ? 'expected create or list'
          : `unknown subcommand ${JSON.stringify(sub)}; expected create or list`,
      )
    },
  },

  ingest: {
    synopsis: 'ingest <repository> <file|folder|url>… [--url URL --token TOKEN] [--no-process]',
    summary: 'add documents (web pages, PDFs, Markdown, text) to a repository as sources',
    details: `Each URL, file, or readable file of a folder (PDF, HTML, Markdown, text, by extension;
recursively, hidden ones left out) becomes a source of the repository (its slug or id), and the
job that fetches and parses it is followed to its end: a progress bar per document on a
terminal, a line per change otherwise, then a summary (added, unchanged, failed with reasons).
The same URL or the same bytes again is the same source; "unchanged" is a URL whose server said
the copy kgs has is current. Exits 1 if any document failed.

Against a running kgs:
  --url URL        its base URL (or KGS_URL), e.g. http://localhost:8080
  --token TOKEN    a session or OAuth access token (or KGS_TOKEN, better: arguments are seen
                   by other users of the machine; never printed); adding needs source:write
                   in the repository and, for an OAuth token, the write scope
Without a URL, on the data directory (DATA_DIR, or DATABASE_URL): kgs runs in this process
until the jobs are done. An embedded data directory a running server holds is refused: go
through that server with --url and --token.

  --no-process     parse only: record process=false on the jobs (drawing facts and concepts
                   from a source is not built yet)`,
    async run(args) {
      const { positionals, values } = parse(
        args,
        { url: { type: 'string' }, token: { type: 'string' }, 'no-process': { type: 'boolean' } },
        { min: 2, max: Number.POSITIVE_INFINITY, what: 'a repository and at least one file, folder or URL' },
      )
      const [repository, ...names] = positionals as [string, ...string[]]
      const url = values.url ?? process.env.KGS_URL
      const token = values.token ?? process.env.KGS_TOKEN
      if (url && !token) throw new UsageError('--url needs --token (or KGS_TOKEN)')
      const { expandArguments, remoteTarget, runIngest } = await import('./ingest/cli.ts')
      const items = await expandArguments(names)
      let target: Awaited<ReturnType<typeof remoteTarget>>
      if (url) target = remoteTarget(url, token!, repository)
      else {
        const { localIngestTarget } = await import('./local-ingest.ts')
        const opened = await admin('ingest', () => localIngestTarget(process.env, quietLog(), repository))
        if (!opened) return 1
        target = opened
      }
      // Ctrl-C: kgs in this process hands its running jobs back to the queue before exiting.
      const interrupted = () => void target.close().finally(() => process.exit(130))
      process.once('SIGINT', interrupted)
      try {
        return await runIngest(target, items, {
          process: !values['no-process'],
          out: {
            write: (text) => process.stdout.write(text),
            isTTY: Boolean(process.stdout.isTTY),
            columns: process.stdout.columns,
          },
        })
      } finally {
        process.off('SIGINT', interrupted)
        await target.close()
      }
    },
  },

  bundle: {
    synopsis: 'bundle inspect|verify|canonical <file>',
    summary: 'offline tools for graph bundle files',
    details: BUNDLE_USAGE.trimEnd(),
    async run(args) {
      if (args[0] !== 'help') return runBundleCommand(args)
      process.stdout.write(commandHelp('bundle'))
      return 0
    },
  },

  healthcheck: {
    synopsis: 'healthcheck',
    summary: 'exit 0 if the server on PORT answers /healthz (for container health checks)',
    details: 'Asks http://127.0.0.1:$PORT/healthz (HOST if it names one address), waiting 2 s at most. No flags.',
    async run(args) {
      parse(args, {}, NONE)
      const config = parseEnv(process.env)
      const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : listenAddress(config.host)
      try {
        const response = await fetch(`${deriveBaseUrl(host, config.port)}/healthz`, {
          signal: AbortSignal.timeout(2000),
        })
        if (response.ok) return 0
        process.stderr.write(`kgs healthcheck: /healthz answered ${response.status}\n`)
      } catch (error) {
        process.stderr.write(`kgs healthcheck: ${(error as Error).message}\n`)
      }
      return 1
    },
  },

  version: {
    synopsis: 'version',
    summary: 'print the version',
    details: 'Also kgs --version. No flags.',
    async run(args) {
      parse(args, {}, NONE)
      console.log(`kgs ${VERSION}`)
      return 0
    },
  },

  help: {
    synopsis: 'help [command | config]',
    summary: "print this help, a command's, or every configuration variable",
    details: 'kgs help <command> is the same as kgs <command> --help.',
    async run(args) {
      const [topic] = parse(args, {}, { min: 0, max: 1, what: 'at most one topic' }).positionals
      if (topic === undefined) process.stdout.write(usage())
      else if (topic === 'config') process.stdout.write((await import('./config-reference.ts')).configText())
      else if (Object.hasOwn(commands, topic)) process.stdout.write(commandHelp(topic))
      else throw new UsageError(`no help on ${JSON.stringify(topic)}; expected a command or config`)
      return 0
    },
  },
}

function usage(): string {
  const lines = Object.values(commands).map((command) => {
    const name = command.synopsis.length <= 12 ? command.synopsis.padEnd(13) : `${command.synopsis}\n${' '.repeat(15)}`
    return `  ${name}${command.summary}`
  })
  return `Usage: kgs <command>\n\nCommands:\n${lines.join('\n')}\n\nkgs help <command> (or kgs <command> --help) explains a command and its flags.\n${CONFIG_HINT}\n`
}

function commandHelp(name: string): string {
  const command = commands[name]!
  return `Usage: kgs ${command.synopsis}\n\n${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.\n\n${command.details}\n\n${CONFIG_HINT}\n`
}

/** Admin commands log only warnings, to stderr: their stdout is their answer. */
const quietLog = () => createLogger('warn', (text) => process.stderr.write(text))

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv
  if (name === '--help' || name === '-h') return commands.help!.run([])
  if (name === '--version') return commands.version!.run([])
  // Not a command for people: the ingest job's document reader, one document per process.
  if (name === '__read-document') return (await import('./ingest/read-child.ts')).serveReadDocument()
  const command = name !== undefined && Object.hasOwn(commands, name) ? commands[name] : undefined
  if (!command) {
    process.stderr.write(
      `kgs: ${name === undefined ? 'missing command' : `unknown command ${JSON.stringify(name)}`}\n\n${usage()}`,
    )
    return 2
  }
  // Anywhere among a command's arguments (kgs serve --help, kgs user create --help).
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(commandHelp(name!))
    return 0
  }
  try {
    return await command.run(args)
  } catch (error) {
    if (
      error instanceof UsageError ||
      error instanceof BundleUsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`kgs ${name}: ${(error as Error).message}\n\n${commandHelp(name!)}`)
      return 2
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`kgs: ${error.message}\n`)
      return 1
    }
    process.stderr.write(`kgs ${name}: ${(error as Error).message ?? String(error)}\n`)
    return 1
  }
}

process.exit(await main(process.argv.slice(2)))
