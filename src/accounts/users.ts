// The users table: accounts and profiles. Passwords never leave this module except as hashes.
import type { Sql } from 'postgres'
import { rethrowUnique } from '../db/conflict.ts'
import { isoTimestamp, type Db } from '../db/sql.ts'
import { afterCursor, pageKeyColumn, withPageKeys, type PageKey, pageOrder } from '../db/pages.ts'
import type { User } from './schemas.ts'

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/

/** Trimmed and lowercased (the uniqueness rule); undefined when it is not an address. */
export function normalizeEmail(email: string): string | undefined {
  const normalized = email.trim().toLowerCase()
  return normalized.length <= 254 && EMAIL.test(normalized) ? normalized : undefined
}

const EMAIL_TAKEN = 'e-mail address already registered'

const userColumns = (sql: Db) =>
  sql`id, email, name, ${isoTimestamp(sql, 'created_at')} AS created_at, ${isoTimestamp(sql, 'updated_at')} AS updated_at`

export async function insertUser(sql: Db, user: { email: string; name: string; passwordHash: string }): Promise<User> {
  try {
    const [row] = await sql<User[]>`
      INSERT INTO users (id, email, name, password_hash)
      VALUES (${crypto.randomUUID()}, ${user.email}, ${user.name}, ${user.passwordHash})
      RETURNING ${userColumns(sql)}`
    return row!
  } catch (error) {
    rethrowUnique(error, EMAIL_TAKEN)
  }
}

export async function findUserById(sql: Sql, id: string): Promise<User | undefined> {
  const [row] = await sql<User[]>`SELECT ${userColumns(sql)} FROM users WHERE id = ${id}`
  return row
}

export async function findCredentials(
  sql: Sql,
  email: string,
): Promise<(User & { password_hash: string }) | undefined> {
  const [row] = await sql<
    (User & { password_hash: string })[]
  >`SELECT ${userColumns(sql)}, password_hash FROM users WHERE email = ${email}`
  return row
}

/**
 * Replaces a password hash with one of the same password at another cost, unless it changed since
 * it was read (a concurrent sign-in re-hashed it first). The profile is unchanged: no updated_at.
 */
export async function replacePasswordHash(sql: Sql, id: string, from: string, to: string): Promise<void> {
  await sql`UPDATE users SET password_hash = ${to} WHERE id = ${id} AND password_hash = ${from}`
}

/** LIKE's wildcards and its escape character, taken literally. */
const literalPattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** One page of users in (created_at, id) order, with one row of look-ahead; `search`: whose e-mail or name contains it, in any case. */
export async function listUsers(
  sql: Sql,
  limit: number,
  after?: PageKey,
  search?: string,
): Promise<(User & { page_key: PageKey })[]> {
  const matching = search
    ? sql`(email ILIKE ${literalPattern(search)} OR name ILIKE ${literalPattern(search)})`
    : sql`true`
  const rows = await sql<(User & { key_at: string })[]>`
    SELECT ${userColumns(sql)}, ${pageKeyColumn(sql)} FROM users
    WHERE ${matching} AND ${afterCursor(sql, after)}
    ORDER BY ${pageOrder(sql, 'users')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows)
}

export async function findUserIdByEmail(sql: Db, email: string): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`SELECT id FROM users WHERE email = ${email}`
  return row?.id
}

export async function updateUser(
  sql: Db,
  id: string,
  changes: { name?: string; email?: string },
): Promise<User | undefined> {
  try {
    const [row] = await sql<User[]>`
      UPDATE users SET
        name = coalesce(${changes.name ?? null}::text, name),
        email = coalesce(${changes.email ?? null}::text, email),
        updated_at = now()
      WHERE id = ${id}
      RETURNING ${userColumns(sql)}`
    return row
  } catch (error) {
    rethrowUnique(error, EMAIL_TAKEN)
  }
}
