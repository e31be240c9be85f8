// The CLI's admin commands (promote-sysadmin, user create, user list). With a running embedded
// server the data directory is its alone, so they go to the server over its control socket;
// otherwise straight to the database (PostgreSQL instances hear of a role change through NOTIFY
// and apply it within a second).
import { runtime } from './runtime/index.ts'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Config, PasswordCost } from './config.ts'
import { insertUser, listUsers, normalizeEmail } from './accounts/users.ts'
import type { User } from './accounts/schemas.ts'
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN } from './accounts/passwords.ts'
import { LocalEventBus, PostgresEventBus, type EventBus } from './db/events.ts'
import { embeddedSocketPath, runningHolder } from './db/embedded.ts'
import { Pools } from './db/pools.ts'
import { ConflictError } from './db/conflict.ts'
import type { Logger } from './log.ts'
import { insertAssignment } from './rbac/assignments.ts'
import { SYSTEM_DOMAIN } from './permissions.ts'
import { promoteByEmail } from './rbac/promote.ts'
import { changeRoles } from './rbac/rbac.ts'

/** A failure to report on one line: the message is for the operator. */
export class AdminError extends Error {}

interface AdminContext {
  pools: Pools
  bus: EventBus
  /** What a new account's password is hashed at (the server's own, through its control socket). */
  passwordCost: PasswordCost
  /** Makes a running server apply a role change at once. */
  rolesChanged?: () => Promise<void>
}

const LIST_PAGE = 500

const ACTIONS = {
  'promote-sysadmin': (ctx: AdminContext, input: { email: string }) =>
    promoteByEmail(ctx.pools, ctx.bus, input.email, ctx.rolesChanged),

  /** An account as registration makes it: a member of the system domain. */
  async 'user-create'(ctx: AdminContext, input: { email: string; password: string; name?: string }): Promise<User> {
    const email = normalizeEmail(input.email)
    if (!email) throw new AdminError(`${JSON.stringify(input.email)} is not an e-mail address`)
    if (input.password.length < PASSWORD_MIN || input.password.length > PASSWORD_MAX)
      throw new AdminError(`the password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`)
    let user: User
    try {
      user = await insertUser(ctx.pools.system, {
        email,
        name: input.name?.trim() ?? '',
        passwordHash: await hashPassword(input.password, ctx.passwordCost),
      })
    } catch (error) {
      if (error instanceof ConflictError) throw new AdminError(error.message)
      throw error
    }
    await changeRoles(ctx.pools.system, ctx.bus, (tx) =>
      insertAssignment(tx, { user_id: user.id, role: 'member', domain: SYSTEM_DOMAIN }),
    )
    await ctx.rolesChanged?.()
    return user
  },

  async 'user-list'(ctx: AdminContext, _input: Record<string, never>): Promise<User[]> {
    const users: User[] = []
    for (let after: Parameters<typeof listUsers>[2]; ; ) {
      const rows = await listUsers(ctx.pools.system, LIST_PAGE, after)
      const page = rows.slice(0, LIST_PAGE)
      users.push(...page.map(({ page_key: _, ...user }) => user))
      if (rows.length <= LIST_PAGE) return users
      after = page.at(-1)!.page_key
    }
  },
}

export type AdminAction = keyof typeof ACTIONS
type Input<A extends AdminAction> = Parameters<(typeof ACTIONS)[A]>[1]
type Output<A extends AdminAction> = Awaited<ReturnType<(typeof ACTIONS)[A]>>

function controlSocketPath(dataDir: string): string {
  return embeddedSocketPath(join(dataDir, 'pg'), 'control')
}

/**
 * The server side: a Unix socket in the data directory's 0700 run folder (so only the owner of
 * the data can use it), answering POST /<action> with the action's input as JSON.
 */
export function serveControlSocket(dataDir: string, ctx: Required<AdminContext>) {
  const path = controlSocketPath(dataDir)
  rmSync(path, { force: true })
  const server = runtime.serve({
    unix: path,
    async fetch(request) {
      const action = new URL(request.url).pathname.slice(1)
      if (request.method !== 'POST' || !Object.hasOwn(ACTIONS, action))
        return Response.json({ error: 'not found' }, { status: 404 })
      const input = await request.json().catch(() => undefined)
      if (typeof input !== 'object' || input === null)
        return Response.json({ error: 'expected a JSON object' }, { status: 400 })
      try {
        return Response.json({
          output: await (ACTIONS[action as AdminAction] as (ctx: AdminContext, input: unknown) => Promise<unknown>)(
            ctx,
            input,
          ),
        })
      } catch (error) {
        if (error instanceof AdminError) return Response.json({ error: error.message }, { status: 400 })
        throw error
      }
    },
  })
  return {
    async stop() {
      await server.stop(true)
      rmSync(path, { force: true })
    },
  }
}

/**
 * Refuses an embedded DATA_DIR that holds no kgs database: an admin command run from the wrong
 * directory must not create an empty one there (and then report an unknown account).
 */
export function requireData(config: Config): void {
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'pg', 'system')))
    throw new AdminError(`no kgs data in ${process.env.DATA_DIR || './data'}; set DATA_DIR or DATABASE_URL`)
}

/** The CLI side: through the running embedded server if there is one, else directly. */
export async function runAdmin<A extends AdminAction>(
  config: Config,
  log: Logger,
  action: A,
  input: Input<A>,
): Promise<Output<A>> {
  requireData(config)
  if (!config.databaseUrl && runningHolder(join(config.dataDir, 'pg')) !== undefined) {
    const socket = controlSocketPath(config.dataDir)
    if (!existsSync(socket))
      throw new AdminError('the kgs server using this data directory is still starting; try again in a moment')
    const response = await runtime.fetchUnix(socket, `http://kgs/${action}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input),
    })
    const answer = (await response.json().catch(() => ({ error: `answered ${response.status}` }))) as {
      output?: Output<A>
      error?: string
    }
    if (!response.ok)
      throw new AdminError(response.status === 400 ? answer.error! : `the running server refused: ${answer.error}`)
    return answer.output!
  }
  const pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  try {
    await pools.migrate()
    const bus = pools.backend === 'postgres' ? new PostgresEventBus(pools, log) : new LocalEventBus()
    return (await (ACTIONS[action] as (ctx: AdminContext, input: Input<A>) => Promise<Output<A>>)(
      { pools, bus, passwordCost: config.passwordCost },
      input,
    )) as Output<A>
  } finally {
    await pools.close()
  }
}
