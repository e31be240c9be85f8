// The repositories table.
import type { Sql } from 'postgres'
import { isoTimestamp, likePrefix, type Db } from '../db/sql.ts'
import { rethrowUnique } from '../db/conflict.ts'
import { afterCursor, pageKeyColumn, withPageKeys, type PageKey, pageOrder } from '../db/pages.ts'
import type { Repository } from './schemas.ts'
import { countColumns, countsFromRow, type GraphCounts } from './counts.ts'

const columns = (sql: Db) =>
  sql`id, name, slug, description, owner_id, ${isoTimestamp(sql, 'created_at')} AS created_at, ${isoTimestamp(sql, 'updated_at')} AS updated_at`

export async function insertRepository(
  sql: Db,
  r: { id: string; name: string; slug: string; description: string; ownerId: string },
): Promise<Repository> {
  try {
    const [row] = await sql<Repository[]>`
      INSERT INTO repositories (id, name, slug, description, owner_id) VALUES (${r.id}, ${r.name}, ${r.slug}, ${r.description}, ${r.ownerId})
      RETURNING ${columns(sql)}`
    return row!
  } catch (error) {
    rethrowUnique(error, 'slug already taken')
  }
}

export async function findRepository(sql: Db, by: { id: string } | { slug: string }): Promise<Repository | undefined> {
  const [row] = await sql<
    Repository[]
  >`SELECT ${columns(sql)} FROM repositories WHERE ${'id' in by ? sql`id = ${by.id}` : sql`slug = ${by.slug}`}`
  return row
}

export async function updateRepository(
  sql: Db,
  id: string,
  changes: { name?: string; slug?: string; description?: string },
): Promise<Repository | undefined> {
  try {
    const [row] = await sql<Repository[]>`
      UPDATE repositories SET
        name = coalesce(${changes.name ?? null}::text, name),
        slug = coalesce(${changes.slug ?? null}::text, slug),
        description = coalesce(${changes.description ?? null}::text, description),
        updated_at = now()
      WHERE id = ${id}
      RETURNING ${columns(sql)}`
    return row
  } catch (error) {
    rethrowUnique(error, 'slug already taken')
  }
}

export async function deleteRepository(sql: Db, id: string): Promise<boolean> {
  return (await sql`DELETE FROM repositories WHERE id = ${id} RETURNING id`).length > 0
}

/**
 * A page of repositories, all of them or those with the given ids, each with its copy of the
 * graph counts (undefined when there is none yet); one row of look-ahead.
 */
export async function listRepositories(
  sql: Sql,
  only: string[] | undefined,
  limit: number,
  after?: PageKey,
): Promise<(Repository & { counts: GraphCounts | undefined; page_key: PageKey })[]> {
  const rows = await sql<(Repository & Record<keyof GraphCounts, string | null> & { key_at: string })[]>`
    SELECT ${columns(sql)}, ${countColumns(sql)}, ${pageKeyColumn(sql)} FROM repositories LEFT JOIN repository_counts c ON c.repository_id = repositories.id
    WHERE ${afterCursor(sql, after)} ${only ? sql`AND id = ANY(${only}::uuid[])` : sql``}
    ORDER BY ${pageOrder(sql, 'repositories')}
    LIMIT ${limit + 1}`
  return withPageKeys(rows).map(({ sources, facts, concepts, reports, investigations, ...repository }) => ({
    ...repository,
    counts: countsFromRow({ sources, facts, concepts, reports, investigations }),
  }))
}

/** The slugs starting with `prefix` of the repositories `only` names (all, undefined), first `limit` by slug, with how many there are. */
export async function slugsStartingWith(
  sql: Sql,
  only: string[] | undefined,
  prefix: string,
  limit: number,
): Promise<{ slugs: string[]; total: number }> {
  const rows = await sql<{ slug: string; total: number }[]>`
    SELECT slug, count(*) OVER ()::int AS total FROM repositories
    WHERE slug LIKE ${likePrefix(prefix)} ${only ? sql`AND id = ANY(${only}::uuid[])` : sql``}
    ORDER BY slug LIMIT ${limit}`
  return { slugs: rows.map((r) => r.slug), total: rows[0]?.total ?? 0 }
}

/** The id of the repository after `after` (the first, undefined) in id order among those `only` names (all, undefined). */
export async function nextRepositoryId(
  sql: Sql,
  only: string[] | undefined,
  after: string | undefined,
): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`
    SELECT id FROM repositories
    WHERE ${after ? sql`id > ${after}` : sql`true`} ${only ? sql`AND id = ANY(${only}::uuid[])` : sql``}
    ORDER BY id LIMIT 1`
  return row?.id
}
