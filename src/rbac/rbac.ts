// The in-memory Casbin enforcer (RBAC with domains) and its lifecycle. Checks are synchronous
// and cost no database round trip. Any change (API or CLI, on any instance) bumps a version and
// notifies; every instance then rebuilds its enforcer from the table and swaps it in whole.
import { runtime } from '../runtime/index.ts'
import { newEnforcer, newModelFromString, type Enforcer } from 'casbin'
import type { Sql } from 'postgres'
import type { EventBus } from '../db/events.ts'
import type { Db } from '../db/sql.ts'
import type { Logger } from '../log.ts'
import { describeError } from '../log.ts'
import {
  currentVersion,
  deleteAssignment,
  deleteDomain,
  insertAssignment,
  loadAssignments,
  type Assignment,
} from './assignments.ts'
import {
  REPOSITORY_ROLES,
  ROLES,
  SYSTEM_DOMAIN,
  splitPermission,
  type Permission,
  type RepositoryRole,
} from '../permissions.ts'

const ROLES_CHANGED = 'kgs_roles_changed'

/**
 * Decisions remembered per enforcer: casbin evaluates its matcher against every policy on each
 * check (a third of the CPU of a scoped request in profiles). A decision only changes when the
 * enforcer is rebuilt, and a rebuild starts a new, empty memo; the bound keeps memory flat.
 */
const DECISIONS_MAX = 100_000

/** How often an instance on PostgreSQL compares its version with the database's. */
const CATCH_UP_MS = 5_000

// Policies are written per domain kind; a repository role applies in any repository domain where
// the user holds it (g checks the domain), never in the system domain. sysadmin in the system
// domain is allowed everything everywhere.
const MODEL = `
[request_definition]
r = sub, dom, obj, act

[policy_definition]
p = sub, dom, obj, act

[role_definition]
g = _, _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = g(r.sub, "sysadmin", "system") || (g(r.sub, p.sub, r.dom) && ((p.dom == "system" && r.dom == "system") || (p.dom == "repository" && r.dom != "system")) && r.obj == p.obj && r.act == p.act)
`

const POLICIES = Object.entries(ROLES).flatMap(([role, definition]) =>
  definition.permissions.map((permission) => [role, definition.domain_kind, ...splitPermission(permission)]),
)

async function buildEnforcer(assignments: Assignment[]): Promise<Enforcer> {
  const enforcer = await newEnforcer(newModelFromString(MODEL))
  await enforcer.addPolicies(POLICIES)
  if (assignments.length) await enforcer.addGroupingPolicies(assignments.map((a) => [a.user_id, a.role, a.domain]))
  return enforcer
}

export interface RbacOptions {
  system: Sql
  bus: EventBus
  log: Logger
  /** Compare versions periodically (several instances share the database). */
  catchUp: boolean
}

export class Rbac {
  private timer: Timer | undefined
  private decisions = new Map<string, boolean>()
  private reloading: Promise<void> | undefined
  private reloadAgain: Promise<void> | undefined

  private constructor(
    private readonly options: RbacOptions,
    private enforcer: Enforcer,
    private version: number,
    private byUser: Map<string, Assignment[]>,
  ) {}

  static async start(options: RbacOptions): Promise<Rbac> {
    const { version, assignments } = await loadAssignments(options.system)
    const rbac = new Rbac(options, await buildEnforcer(assignments), version, groupByUser(assignments))
    await options.bus.subscribe(ROLES_CHANGED, () => void rbac.reload())
    if (options.catchUp) {
      rbac.timer = setInterval(() => void rbac.reloadIfStale(), CATCH_UP_MS)
      runtime.unref(rbac.timer)
    }
    return rbac
  }

  stop(): void {
    clearInterval(this.timer)
  }

  can(userId: string, domain: string, permission: Permission): boolean {
    const key = `${userId} ${domain} ${permission}`
    let allowed = this.decisions.get(key)
    if (allowed === undefined) {
      const [resource, action] = splitPermission(permission)
      allowed = this.enforcer.enforceSync(userId, domain, resource, action)
      if (this.decisions.size >= DECISIONS_MAX) this.decisions.clear()
      this.decisions.set(key, allowed)
    }
    return allowed
  }

  isSysadmin(userId: string): boolean {
    return this.rolesOf(userId).some((a) => a.role === 'sysadmin' && a.domain === SYSTEM_DOMAIN)
  }

  rolesOf(userId: string): readonly Assignment[] {
    return this.byUser.get(userId) ?? []
  }

  /** Repository domains (ids) in which the user holds any role. */
  repositoriesOf(userId: string): string[] {
    return [
      ...new Set(
        this.rolesOf(userId)
          .filter((a) => a.domain !== SYSTEM_DOMAIN)
          .map((a) => a.domain),
      ),
    ]
  }

  /**
   * Who sees a repository (docs/spec/decisions.md §2): a sysadmin every one, anyone else those
   * they hold a role in. The one answer scope resolution, GET /permissions and the repository
   * list ask: 'all', or the ids of the repositories the user sees.
   */
  visibleRepositories(userId: string): 'all' | ReadonlySet<string> {
    if (this.isSysadmin(userId)) return 'all'
    return new Set(this.repositoriesOf(userId))
  }

  /** Whether the user sees the repository (visibleRepositories). */
  sees(userId: string, repositoryId: string): boolean {
    const visible = this.visibleRepositories(userId)
    return visible === 'all' || visible.has(repositoryId)
  }

  /** The user's role in a repository, the strongest if they hold several; null for none. */
  roleIn(userId: string, repositoryId: string): RepositoryRole | null {
    const held = new Set(
      this.rolesOf(userId)
        .filter((a) => a.domain === repositoryId)
        .map((a) => a.role),
    )
    return REPOSITORY_ROLES.find((role) => held.has(role)) ?? null
  }

  /** Idempotent; returns whether anything changed. Applied here at once, elsewhere via the bus. */
  async assign(assignment: Assignment): Promise<boolean> {
    return this.change((tx) => insertAssignment(tx, assignment))
  }

  async remove(assignment: Assignment): Promise<boolean> {
    return this.change((tx) => deleteAssignment(tx, assignment))
  }

  async removeDomain(domain: string): Promise<boolean> {
    return this.change(async (tx) => (await deleteDomain(tx, domain)) > 0)
  }

  /** Runs `write` in a transaction of the assignments; if it changed anything, every instance applies it (this one before returning). */
  async change(write: (tx: Db) => Promise<boolean>): Promise<boolean> {
    const changed = await changeRoles(this.options.system, this.options.bus, write)
    if (changed) await this.reload()
    return changed
  }

  /**
   * Rebuilds the enforcer from the table. A call during a rebuild gets one more rebuild after it
   * (that rebuild's snapshot may predate the change that prompted the call).
   */
  reload(): Promise<void> {
    if (this.reloading) {
      this.reloadAgain ??= this.reloading.then(() => {
        this.reloadAgain = undefined
        return this.reload()
      })
      return this.reloadAgain
    }
    this.reloading = (async () => {
      try {
        const { version, assignments } = await loadAssignments(this.options.system)
        const enforcer = await buildEnforcer(assignments)
        this.enforcer = enforcer
        this.decisions = new Map()
        this.byUser = groupByUser(assignments)
        this.version = version
      } catch (error) {
        this.options.log.error('role reload failed', describeError(error))
      } finally {
        this.reloading = undefined
      }
    })()
    return this.reloading
  }

  private async reloadIfStale(): Promise<void> {
    try {
      if ((await currentVersion(this.options.system)) !== this.version) await this.reload()
    } catch (error) {
      this.options.log.warn('role version check failed', describeError(error))
    }
  }
}

/**
 * Writes a change to the assignments and, if anything changed, tells every instance in the same
 * transaction. Also used without a running enforcer (kgs promote-sysadmin).
 */
export async function changeRoles(system: Sql, bus: EventBus, write: (tx: Db) => Promise<boolean>): Promise<boolean> {
  return system.begin(async (tx) => {
    const changed = await write(tx)
    if (changed) await bus.publish(tx, ROLES_CHANGED, '')
    return changed
  })
}

function groupByUser(assignments: Assignment[]): Map<string, Assignment[]> {
  const byUser = new Map<string, Assignment[]>()
  for (const a of assignments) {
    const list = byUser.get(a.user_id)
    if (list) list.push(a)
    else byUser.set(a.user_id, [a])
  }
  return byUser
}
