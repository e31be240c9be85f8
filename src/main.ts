#!/usr/bin/env bun
// CLI entry: parses the subcommand and hands over. Exit codes: 0 success, 1 failure,
// 2 usage error (unknown subcommand or flag).
//
// Each command imports what it needs when it runs: the offline tools (bundle, version,
// healthcheck) then start in a few milliseconds instead of loading the whole server.
import { parseArgs } from 'node:util'
import { ConfigError, deriveBaseUrl, loadConfig, parseEnv } from './config.ts'
import { createLogger } from './log.ts'
import { VERSION } from './version.ts'
import { BUNDLE_USAGE, BundleUsageError, runBundleCommand } from './bundle/cli.ts'

const USAGE = `Usage: kgs <command>

Commands:
  serve        run the HTTP API (by default on an embedded database in ./data)
  migrate      apply pending database migrations and exit
  promote-sysadmin <email>
               grant the sysadmin role to that account (idempotent; server running or not)
  bundle inspect|verify|canonical <file>
               offline tools for graph bundle files (kgs bundle help for details)
  healthcheck  exit 0 if the server on PORT answers /healthz (for container health checks)
  version      print the version
  help         print this help

Configuration is read from the environment; see README.md (PORT, HOST, BASE_URL, DATA_DIR,
DATABASE_URL, JWT_SECRET, LOG_LEVEL, BODY_LIMIT, ACCESS_TOKEN_TTL, SESSION_TTL).
`

class UsageError extends Error {}

type Command = (args: string[]) => Promise<number>

/** Subcommands take no flags of their own yet; any flag is a usage error (strict parsing). */
function noArguments(args: string[]): void {
  const { positionals } = parseArgs({ args, options: {}, strict: true, allowPositionals: true })
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}`)
}

const commands: Record<string, Command> = {
  async serve(args) {
    noArguments(args)
    const config = loadConfig()
    const log = createLogger(config.logLevel)
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

  async migrate(args) {
    noArguments(args)
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

  async 'promote-sysadmin'(args) {
    const { positionals } = parseArgs({ args, options: {}, strict: true, allowPositionals: true })
    if (positionals.length !== 1) throw new UsageError('expected exactly one e-mail address')
    const email = positionals[0]!
    const config = parseEnv(process.env)
    const log = createLogger('warn', (text) => process.stderr.write(text))
    const { promoteSysadmin } = await import('./rbac/promote.ts')
    const outcome = await promoteSysadmin(config, email, log)
    if (outcome === 'unknown-user') {
      process.stderr.write(`kgs promote-sysadmin: no account with e-mail ${email}\n`)
      return 1
    }
    console.log(outcome === 'promoted' ? `${email} is now sysadmin` : `${email} is already sysadmin; nothing changed`)
    return 0
  },

  async bundle(args) {
    if (args[0] === 'help' || args[0] === '--help') {
      process.stdout.write(BUNDLE_USAGE)
      return 0
    }
    return runBundleCommand(args)
  },

  async healthcheck(args) {
    noArguments(args)
    const config = parseEnv(process.env)
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
    try {
      const response = await fetch(`${deriveBaseUrl(host, config.port)}/healthz`, { signal: AbortSignal.timeout(2000) })
      if (response.ok) return 0
      process.stderr.write(`kgs healthcheck: /healthz answered ${response.status}\n`)
    } catch (error) {
      process.stderr.write(`kgs healthcheck: ${(error as Error).message}\n`)
    }
    return 1
  },

  async version(args) {
    noArguments(args)
    console.log(`kgs ${VERSION}`)
    return 0
  },

  async help() {
    process.stdout.write(USAGE)
    return 0
  },
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv
  if (name === '--help' || name === '-h') return commands.help!([])
  if (name === '--version') return commands.version!([])
  const command = name === undefined ? undefined : commands[name]
  if (!command) {
    process.stderr.write(`kgs: ${name === undefined ? 'missing command' : `unknown command ${JSON.stringify(name)}`}\n\n${USAGE}`)
    return 2
  }
  try {
    return await command(args)
  } catch (error) {
    if (error instanceof UsageError || error instanceof BundleUsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`kgs ${name}: ${(error as Error).message}\n\n${name === 'bundle' ? BUNDLE_USAGE : USAGE}`)
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
