// A repository's row (the store's type, by Static), and its record in the API: the row with the
// caller's role in it and its graph counts.
import { t } from 'elysia'
import type { Static } from '@sinclair/typebox'
import { REPOSITORY_ROLES } from '../permissions.ts'

export const Repository = t.Object({
  id: t.String(),
  name: t.String(),
  slug: t.String(),
  description: t.String(),
  owner_id: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
  updated_at: t.String(),
})
export type Repository = Static<typeof Repository>

const Count = t.Integer({ minimum: 0 })

export const RepositoryRecord = t.Object({
  ...Repository.properties,
  role: t.Union([t.UnionEnum(REPOSITORY_ROLES), t.Null()], {
    description: "the caller's role in the repository (the strongest, if several); null for a sysadmin who holds none",
  }),
  counts: t.Object(
    { sources: Count, facts: Count, concepts: Count, reports: Count, investigations: Count },
    { description: 'what the repository holds, kept current by every write and import' },
  ),
})
export type RepositoryRecord = Static<typeof RepositoryRecord>
