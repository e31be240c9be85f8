// `kgs promote-sysadmin <email>`: grants sysadmin in the system domain, idempotently, whether or
// not a server is running (src/admin.ts runs it in the right process).
import { findUserIdByEmail, normalizeEmail } from '../accounts/users.ts'
import type { EventBus } from '../db/events.ts'
import type { Pools } from '../db/pools.ts'
import { insertAssignment } from './assignments.ts'
import { SYSTEM_DOMAIN } from '../permissions.ts'
import { changeRoles } from './rbac.ts'

export type PromoteOutcome = 'promoted' | 'unchanged' | 'unknown-user'

/** Grants sysadmin to the account with this e-mail through any pool and bus. */
export async function promoteByEmail(
  pools: Pools,
  bus: EventBus,
  email: string,
  apply?: () => Promise<void>,
): Promise<PromoteOutcome> {
  const normalized = normalizeEmail(email)
  const userId = normalized && (await findUserIdByEmail(pools.system, normalized))
  if (!userId) return 'unknown-user'
  const changed = await changeRoles(pools.system, bus, (tx) =>
    insertAssignment(tx, { user_id: userId, role: 'sysadmin', domain: SYSTEM_DOMAIN }),
  )
  if (changed) await apply?.()
  return changed ? 'promoted' : 'unchanged'
}
