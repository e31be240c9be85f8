// /api/v1/oauth/grants: a user's OAuth grants, listed and revoked by the user, with a session
// token or in one of kgs's own apps (the web app's grants page): an agent cannot see or revoke
// the grants of others. Schema and auth here; the SQL in grants.ts, revocation in OAuthTokens.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import type { accessControl } from '../http/access.ts'
import { HttpError } from '../http/errors.ts'
import { pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { findClient } from './clients.ts'
import type { OAuthTokens } from './tokens.ts'
import { Grant } from './schemas.ts'

const GrantParams = t.Object({ grantID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }

export interface GrantRoutesOptions {
  oauth: Pick<OAuthTokens, 'listUserGrants' | 'revokeUserGrant'>
  access: ReturnType<typeof accessControl>
  system: Sql
}

export function grantRoutes({ oauth, access, system }: GrantRoutesOptions) {
  const rule = { what: 'grants', orFirstParty: async (clientId: string) => (await findClient(system, clientId))?.first_party === true }
  return new Elysia({ name: 'kgs/oauth-grants', prefix: '/api/v1' })
    .use(access)
    .use(pagination)
    .get('/oauth/grants', async ({ principal, page }) => oauth.listUserGrants(principal.userId, page.limit, page.after), {
      session: rule,
      paginated: true,
      response: { 200: t.Array(Grant), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      detail: { tags: ['oauth'], summary: "The caller's live OAuth grants, oldest first (paginated; a session token, or a token of one of kgs's own apps)" },
    })
    .delete(
      '/oauth/grants/:grantID',
      async ({ principal, params }) => {
        const grant = await oauth.revokeUserGrant(principal.userId, params.grantID.toLowerCase())
        if (!grant) throw new HttpError(404, 'grant not found')
        return grant
      },
      {
        session: rule,
        params: GrantParams,
        response: { 200: Grant, ...errors },
        detail: { tags: ['oauth'], summary: "Revoke one of the caller's OAuth grants: its tokens stop working at once (a session token, or a token of one of kgs's own apps)" },
      },
    )
}
