// A user's OAuth grant in the API, and (by Static) the row the store reads.
import { t } from 'elysia'
import type { Static } from '@sinclair/typebox'

export const Grant = t.Object({
  id: t.String({ format: 'uuid' }),
  client_id: t.String(),
  client_name: t.String({ description: 'as the client registered it (RFC 7591); may be empty' }),
  scope: t.String(),
  created_at: t.String({ description: 'when the user allowed it' }),
  // GRANT_SECONDS after the consent.
  expires_at: t.String({ description: 'when it ends by itself' }),
})
export type GrantSummary = Static<typeof Grant>
