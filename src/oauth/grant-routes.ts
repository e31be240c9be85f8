// /api/v1/oauth/grants: a user's OAuth grants, listed and revoked by the user (with a session
// token). Schema and auth here; the SQL in grants.ts, revocation in OAuthTokens.
import { Elysia, t } from 'elysia'
import type { accessControl } from '../http/access.ts'
import { HttpError } from '../http/errors.ts'
import { PageQuery, decodeCursor, page, parseLimit } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { OAuthTokens } from './tokens.ts'

const Grant = t.Object({
  id: t.String({ format: 'uuid' }),
  client_id: t.String(),
  client_name: t.String({ description: 'as the client registered it (RFC 7591); may be empty' }),
  scope: t.String(),
  created_at: t.String({ description: 'when the user allowed it' }),
  expires_at: t.String({ description: 'when it ends by itself' }),
})
const GrantParams = t.Object({ grantID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }

export function grantRoutes(oauth: Pick<OAuthTokens, 'listUserGrants' | 'revokeUserGrant'>, access: ReturnType<typeof accessControl>) {
  return new Elysia({ name: 'kgs/oauth-grants', prefix: '/api/v1' })
    .use(access)
    .get(
      '/oauth/grants',
      async ({ principal, query, request, set }) => {
        const limit = parseLimit(query.limit)
        const rows = await oauth.listUserGrants(principal.userId, limit, decodeCursor(query.cursor))
        return page(rows, limit, request, set.headers as Record<string, string>)
      },
      {
        session: 'grants',
        query: PageQuery,
        response: { 200: t.Array(Grant), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
        detail: { tags: ['oauth'], summary: "The caller's live OAuth grants, oldest first (paginated; a session token only)" },
      },
    )
    .delete(
      '/oauth/grants/:grantID',
      async ({ principal, params }) => {
        const grant = await oauth.revokeUserGrant(principal.userId, params.grantID.toLowerCase())
        if (!grant) throw new HttpError(404, 'grant not found')
        return grant
      },
      {
        session: 'grants',
        params: GrantParams,
        response: { 200: Grant, ...errors },
        detail: { tags: ['oauth'], summary: "Revoke one of the caller's OAuth grants: its tokens stop working at once (a session token only)" },
      },
    )
}
