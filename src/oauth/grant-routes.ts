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
import { WEB_APP_CLIENT_ID } from '../http/web-app.ts'
import { findClient } from './clients.ts'
import type { OAuthTokens } from './tokens.ts'
import { Grant } from './schemas.ts'

const GrantParams = t.Object({ grantID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const GrantQuery = t.Object({
  web_app: t.Optional(
    t.Boolean({
      description:
        "true: only the web app's grants, its sessions in browsers (one per browser); false: every other client's; absent: all",
      error: 'expected true or false',
    }),
  ),
})
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }

export interface GrantRoutesOptions {
  oauth: Pick<OAuthTokens, 'listUserGrants' | 'revokeUserGrant'>
  access: ReturnType<typeof accessControl>
  system: Sql
}

export function grantRoutes({ oauth, access, system }: GrantRoutesOptions) {
  const rule = {
    what: 'grants',
    orFirstParty: async (clientId: string) => (await findClient(system, clientId))?.first_party === true,
  }
  return new Elysia({ name: 'kgs/oauth-grants', prefix: '/api/v1' })
    .use(access)
    .use(pagination)
    .get(
      '/oauth/grants',
      async ({ principal, page, query }) =>
        oauth.listUserGrants(principal.userId, page.limit, page.after, {
          client:
            query.web_app === undefined
              ? undefined
              : query.web_app
                ? { only: WEB_APP_CLIENT_ID }
                : { except: WEB_APP_CLIENT_ID },
          currentGrant: principal.grantId,
        }),
      {
        session: rule,
        paginated: true,
        query: GrantQuery,
        response: { 200: t.Array(Grant), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
        detail: {
          tags: ['oauth'],
          summary:
            "The caller's live OAuth grants, oldest first, the caller's own marked current (paginated; a session token, or a token of one of kgs's own apps)",
        },
      },
    )
    .delete(
      '/oauth/grants/:grantID',
      async ({ principal, params }) => {
        const grant = await oauth.revokeUserGrant(principal.userId, params.grantID.toLowerCase(), principal.grantId)
        if (!grant) throw new HttpError(404, 'grant not found')
        return grant
      },
      {
        session: rule,
        params: GrantParams,
        response: { 200: Grant, ...errors },
        detail: {
          tags: ['oauth'],
          summary:
            "Revoke one of the caller's OAuth grants: its tokens stop working at once; for a web app session, that browser's sign-in on the authorization pages ends too (a session token, or a token of one of kgs's own apps)",
        },
      },
    )
}
