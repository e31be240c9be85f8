// The role_assignments table. Every change bumps rbac_version in the same transaction.
import type { Sql } from 'postgres'
import type { Db } from '../db/sql.ts'
import type { Role } from '../permissions.ts'

export interface Assignment {
  user_id: string
  role: Role
  domain: string
}

/** Returns whether the assignment is new. */
export async function insertAssignment(tx: Db, a: Assignment): Promise<boolean> {
  const rows =
    await tx`INSERT INTO role_assignments (user_id, role, domain) VALUES (${a.user_id}, ${a.role}, ${a.domain}) ON CONFLICT DO NOTHING RETURNING user_id`
  if (rows.length > 0) await bumpVersion(tx)
  return rows.length > 0
}

/** Returns whether there was such an assignment. */
export async function deleteAssignment(tx: Db, a: Assignment): Promise<boolean> {
  const rows =
    await tx`DELETE FROM role_assignments WHERE user_id = ${a.user_id} AND role = ${a.role} AND domain = ${a.domain} RETURNING user_id`
  if (rows.length > 0) await bumpVersion(tx)
  return rows.length > 0
}

export async function deleteDomain(tx: Db, domain: string): Promise<number> {
  const rows = await tx`DELETE FROM role_assignments WHERE domain = ${domain} RETURNING user_id`
  if (rows.length > 0) await bumpVersion(tx)
  return rows.length
}

export async function bumpVersion(tx: Db): Promise<void> {
  await tx`UPDATE rbac_version SET version = version + 1`
}

export async function loadAssignments(sql: Sql): Promise<{ version: number; assignments: Assignment[] }> {
  // One snapshot: the version and the rows it describes.
  return sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
    const [version] = await tx<{ version: string }[]>`SELECT version FROM rbac_version`
    const assignments = await tx<
      Assignment[]
    >`SELECT user_id::text, role, domain FROM role_assignments ORDER BY user_id, domain, role`
    return { version: Number(version!.version), assignments }
  })
}

export async function currentVersion(db: Db): Promise<number> {
  const [row] = await db<{ version: string }[]>`SELECT version FROM rbac_version`
  return Number(row!.version)
}
