// Repository members (docs/spec/decisions.md §4): a repoadmin grants and removes repository roles
// in their repository, without any system permission. A member holds one role there (granting
// one replaces the others, through this module's setMemberRole whether a repoadmin grants it or
// a sysadmin through PUT /admin/users/roles), and the repository always keeps a repoadmin: the
// last one can be neither demoted nor removed (409).
import type { Sql } from 'postgres'
import { findUserById, findUserIdByEmail, normalizeEmail } from '../accounts/users.ts'
import type { User } from '../accounts/schemas.ts'
import { afterCursor, pageKeyColumn, pageOrder, withPageKeys, type PageKey } from '../db/pages.ts'
import type { Db } from '../db/sql.ts'
import { HttpError } from '../http/errors.ts'
import { REPOSITORY_ROLES, ROLES, isRole, type RepositoryRole } from '../permissions.ts'
import { bumpVersion } from './assignments.ts'
import type { Rbac } from './rbac.ts'

export interface Member {
  user_id: string
  email: string
  name: string
  role: RepositoryRole
}

const NOT_A_MEMBER = 'not a member of this repository'
const LAST_REPOADMIN = 'a repository keeps at least one repoadmin: make another member repoadmin first'

/**
 * A page of the repository's members in the order they joined, each with their strongest role
 * (an assignment made through the admin route may have given someone several).
 */
export async function listMembers(
  sql: Sql,
  repositoryId: string,
  limit: number,
  after?: PageKey,
): Promise<(Member & { page_key: PageKey })[]> {
  // The subquery's columns alone are in scope for the cursor's (created_at, id).
  const rows = await sql<{ id: string; email: string; name: string; role: RepositoryRole; key_at: string }[]>`
    SELECT id, email, name, role, ${pageKeyColumn(sql)} FROM (
      SELECT held.user_id AS id, u.email, u.name, held.role, held.created_at
      FROM (
        SELECT DISTINCT ON (user_id) user_id, role, min(created_at) OVER (PARTITION BY user_id) AS created_at
        FROM role_assignments WHERE domain = ${repositoryId}
        ORDER BY user_id, array_position(${[...REPOSITORY_ROLES]}::text[], role)
      ) held JOIN users u ON u.id = held.user_id
    ) members
    WHERE ${afterCursor(sql, after)}
    ORDER BY ${pageOrder(sql, 'members')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows).map(({ id, ...member }) => ({ user_id: id, ...member }))
}

/** The repository role a request names: 400 for an unknown role or a system one. */
export function repositoryRole(role: string): RepositoryRole {
  const roles = REPOSITORY_ROLES.join(', ')
  if (!isRole(role))
    throw new HttpError(
      400,
      `invalid body: role: unknown role ${JSON.stringify(role.slice(0, 64))}; a member's role is one of ${roles}`,
    )
  if (ROLES[role].domain_kind !== 'repository')
    throw new HttpError(400, `invalid body: role: ${role} is a system role; a member's role is one of ${roles}`)
  return role as RepositoryRole
}

/**
 * The e-mail address a members request names its user by. An id is refused, whatever it is:
 * ids are public (a registry graph's owner_id), so adding by id would add, and show the e-mail
 * of, someone the repoadmin does not know.
 */
export function memberEmail(who: { email?: string; user_id?: unknown }): string {
  if (who.user_id !== undefined)
    throw new HttpError(400, 'invalid body: user_id: members are added by e-mail, not by id')
  if (who.email === undefined)
    throw new HttpError(400, 'invalid body: email: required (members are added by the e-mail address of their account)')
  const email = normalizeEmail(who.email)
  if (!email) throw new HttpError(400, 'invalid body: email: expected an e-mail address')
  return email
}

/**
 * The account with this (normalized) e-mail: 404 for none, which tells the repoadmin what
 * registration's 409 tells anyone. Adding someone creates no account and sends nothing: they
 * register first.
 */
export async function findMemberAccount(sql: Sql, email: string): Promise<User> {
  const userId = await findUserIdByEmail(sql, email)
  const user = userId && (await findUserById(sql, userId))
  if (!user)
    throw new HttpError(
      404,
      `no account with the e-mail address ${email}: they sign up first, or a sysadmin creates or invites the account (kgs sends no e-mail)`,
    )
  return user
}

/**
 * The domain's repoadmins, their assignments locked until the transaction ends: of two
 * concurrent changes that would each leave one repoadmin fewer, the second waits for the first
 * and then sees what it left (a row it deleted is skipped), so the repository never ends up
 * without one. Always in the same order, so that two lockers cannot deadlock.
 */
async function lockRepoadmins(tx: Db, repositoryId: string): Promise<string[]> {
  const rows = await tx<{ user_id: string }[]>`
    SELECT user_id::text FROM role_assignments WHERE domain = ${repositoryId} AND role = 'repoadmin' ORDER BY user_id FOR UPDATE`
  return rows.map((row) => row.user_id)
}

/** The user's roles in the repository, the earliest assigned first. */
const rolesIn = async (tx: Db, repositoryId: string, userId: string) =>
  (
    await tx<
      { role: RepositoryRole }[]
    >`SELECT role FROM role_assignments WHERE domain = ${repositoryId} AND user_id = ${userId} ORDER BY created_at, role`
  ).map((row) => row.role)

/** 409 when taking `userId`'s repoadmin role would leave the repository without one. */
function keepsARepoadmin(repoadmins: string[], userId: string): void {
  if (repoadmins.length === 1 && repoadmins[0] === userId) throw new HttpError(409, LAST_REPOADMIN)
}

/** Makes `user` a member with exactly `role` (idempotent); every instance applies it within a second. */
export async function setMemberRole(
  rbac: Rbac,
  repositoryId: string,
  user: User,
  role: RepositoryRole,
): Promise<Member> {
  await rbac.change(async (tx) => {
    const repoadmins = await lockRepoadmins(tx, repositoryId)
    const held = await rolesIn(tx, repositoryId, user.id)
    if (held.length === 1 && held[0] === role) return false
    if (role !== 'repoadmin') keepsARepoadmin(repoadmins, user.id)
    if (held.length === 0) {
      await tx`INSERT INTO role_assignments (user_id, role, domain) VALUES (${user.id}, ${role}, ${repositoryId})`
    } else {
      // One assignment stays and takes the role, so the member keeps their place in the list.
      const kept = held.includes(role) ? role : held[0]!
      await tx`DELETE FROM role_assignments WHERE domain = ${repositoryId} AND user_id = ${user.id} AND role <> ${kept}`
      if (kept !== role)
        await tx`UPDATE role_assignments SET role = ${role} WHERE domain = ${repositoryId} AND user_id = ${user.id}`
    }
    await bumpVersion(tx)
    return true
  })
  return { user_id: user.id, email: user.email, name: user.name, role }
}

/** Removes every role the user holds in the repository: 404 if none; the member as they were. */
export async function removeMember(rbac: Rbac, sql: Sql, repositoryId: string, userId: string): Promise<Member> {
  const user = await findUserById(sql, userId.toLowerCase())
  if (!user) throw new HttpError(404, NOT_A_MEMBER)
  let removed: RepositoryRole | undefined
  await rbac.change(async (tx) => {
    const repoadmins = await lockRepoadmins(tx, repositoryId)
    const held = new Set(await rolesIn(tx, repositoryId, user.id))
    removed = REPOSITORY_ROLES.find((role) => held.has(role))
    if (!removed) throw new HttpError(404, NOT_A_MEMBER)
    keepsARepoadmin(repoadmins, user.id)
    await tx`DELETE FROM role_assignments WHERE domain = ${repositoryId} AND user_id = ${user.id}`
    await bumpVersion(tx)
    return true
  })
  return { user_id: user.id, email: user.email, name: user.name, role: removed! }
}
