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
  last_used_at: t.String({
    description:
      'when it last got tokens: the consent or its latest refresh (access tokens are not tracked per request)',
  }),
  browser: t.Union([t.String(), t.Null()], {
    description:
      "the web app's grants (its sessions, one per browser): the browser that signed in, as 'Chrome 131 on Linux'; null for other clients",
  }),
  current: t.Boolean({ description: 'the grant of the access token making this request' }),
})
export type GrantSummary = Static<typeof Grant>
