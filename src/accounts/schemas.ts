// The shapes of accounts in the API, and (by Static) the types the stores read.
import { t } from 'elysia'
import type { Static } from '@sinclair/typebox'

export const User = t.Object({ id: t.String({ format: 'uuid' }), email: t.String(), name: t.String(), created_at: t.String(), updated_at: t.String() })
export type User = Static<typeof User>

export const SessionGrant = t.Object({ user: User, token: t.String({ description: 'access token (JWT)' }), refresh_token: t.String() })
export type SessionGrant = Static<typeof SessionGrant>

/** A live session as its user sees it (the store's row). */
const SessionSummary = t.Object({
  id: t.String({ format: 'uuid' }),
  created_at: t.String(),
  expires_at: t.String({ description: 'the absolute end of the session' }),
})
export type SessionSummary = Static<typeof SessionSummary>
export const Session = t.Composite([SessionSummary, t.Object({ current: t.Boolean({ description: 'whether this is the session of the token that asked' }) })])
