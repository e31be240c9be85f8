// The shapes of accounts in the API, and (by Static) the types the stores read.
import { t } from 'elysia'
import type { Static } from '@sinclair/typebox'
import { PASSWORD_MAX, PASSWORD_MIN } from './passwords.ts'

// The fields of accounts' request bodies.
export const Email = t.String({
  minLength: 3,
  maxLength: 254,
  description: 'e-mail address; trimmed and lowercased',
  error: 'expected an e-mail address',
})
export const Password = t.String({
  minLength: PASSWORD_MIN,
  maxLength: PASSWORD_MAX,
  description: `${PASSWORD_MIN}–${PASSWORD_MAX} characters, write-only`,
  error: `expected a password of ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`,
})
export const Name = t.String({ maxLength: 200, error: 'expected a name of at most 200 characters' })
export const Invitation = t.String({
  maxLength: 64,
  description: 'the invitation code a sysadmin gave for this e-mail address (REGISTRATION=invite; ignored otherwise)',
  error: 'expected an invitation code',
})

export const User = t.Object({
  id: t.String({ format: 'uuid' }),
  email: t.String(),
  name: t.String(),
  created_at: t.String(),
  updated_at: t.String(),
})
export type User = Static<typeof User>

export const SessionGrant = t.Object({
  user: User,
  token: t.String({ description: 'access token (JWT)' }),
  refresh_token: t.String(),
})
export type SessionGrant = Static<typeof SessionGrant>

/** A live session as its user sees it (the store's row). */
const SessionSummary = t.Object({
  id: t.String({ format: 'uuid' }),
  created_at: t.String(),
  expires_at: t.String({ description: 'the absolute end of the session' }),
})
export type SessionSummary = Static<typeof SessionSummary>
export const Session = t.Composite([
  SessionSummary,
  t.Object({ current: t.Boolean({ description: 'whether this is the session of the token that asked' }) }),
])
