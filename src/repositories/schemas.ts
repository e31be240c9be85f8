// A repository in the API, and (by Static) the row the store reads.
import { t } from 'elysia'
import type { Static } from '@sinclair/typebox'

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
