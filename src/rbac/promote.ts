// `kgs promote-sysadmin <email>`: grants sysadmin in the system domain, idempotently, whether or
// not a server is running. With a running embedded server the data directory is its alone, so
// the request goes to the server over its control socket; otherwise straight to the database
// (PostgreSQL instances hear of it through NOTIFY and apply it within a second).
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config.ts'
import { findUserIdByEmail, normalizeEmail } from '../accounts/users.ts'
import { LocalEventBus, PostgresEventBus, type EventBus } from '../db/events.ts'
import { embeddedSocketPath, runningHolder } from '../db/embedded.ts'
import { Pools } from '../db/pools.ts'
import type { Logger } from '../log.ts'
import { insertAssignment } from './assignments.ts'
import { SYSTEM_DOMAIN } from './permissions.ts'
import { changeRoles } from './rbac.ts'

export type PromoteOutcome = 'promoted' | 'unchanged' | 'unknown-user'

export class PromoteError extends Error {}

/** Grants sysadmin to the account with this e-mail through any pool and bus. */
export async function promoteByEmail(pools: Pools, bus: EventBus, email: string, apply?: () => Promise<void>): Promise<PromoteOutcome> {
  const normalized = normalizeEmail(email)
  const userId = normalized && (await findUserIdByEmail(pools.system, normalized))
  if (!userId) return 'unknown-user'
  const changed = await changeRoles(pools.system, bus, (tx) => insertAssignment(tx, { user_id: userId, role: 'sysadmin', domain: SYSTEM_DOMAIN }))
  if (changed) await apply?.()
  return changed ? 'promoted' : 'unchanged'
}

export function controlSocketPath(dataDir: string): string {
  return embeddedSocketPath(join(dataDir, 'pg'), 'control')
}

/**
 * The server side: a Unix socket in the data directory's 0700 run folder (so only the owner of
 * the data can use it), answering POST /promote-sysadmin {email}.
 */
export function serveControlSocket(dataDir: string, pools: Pools, bus: EventBus, applied: () => Promise<void>) {
  const path = controlSocketPath(dataDir)
  rmSync(path, { force: true })
  const server = Bun.serve({
    unix: path,
    async fetch(request) {
      if (request.method !== 'POST' || new URL(request.url).pathname !== '/promote-sysadmin') return Response.json({ error: 'not found' }, { status: 404 })
      const body = (await request.json().catch(() => undefined)) as { email?: unknown } | undefined
      if (typeof body?.email !== 'string') return Response.json({ error: 'expected {"email": "..."}' }, { status: 400 })
      return Response.json({ outcome: await promoteByEmail(pools, bus, body.email, applied) })
    },
  })
  return {
    async stop() {
      await server.stop(true)
      rmSync(path, { force: true })
    },
  }
}

/** The CLI side: through the running embedded server if there is one, else directly. */
export async function promoteSysadmin(config: Config, email: string, log: Logger): Promise<PromoteOutcome> {
  if (!config.databaseUrl && runningHolder(join(config.dataDir, 'pg')) !== undefined) {
    const socket = controlSocketPath(config.dataDir)
    if (!existsSync(socket)) throw new PromoteError('the kgs server using this data directory is still starting; try again in a moment')
    const response = await fetch('http://kgs/promote-sysadmin', {
      unix: socket,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email }),
    })
    if (!response.ok) throw new PromoteError(`the running server refused: ${(await response.text()).slice(0, 200)}`)
    return ((await response.json()) as { outcome: PromoteOutcome }).outcome
  }
  const pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  try {
    await pools.migrate()
    const bus = pools.backend === 'postgres' ? new PostgresEventBus(pools, log) : new LocalEventBus()
    return await promoteByEmail(pools, bus, email)
  } finally {
    await pools.close()
  }
}
