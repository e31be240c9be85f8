// The shapes of the permissions answers: the route's schema, and (by Static) the type the web app reads.
import { t } from 'elysia'

const Permission = t.Object({ domain: t.String(), resource: t.String(), action: t.String() })

/** GET /api/v1/permissions: who the caller is and what they may do, all an app needs to open a page with. */
export const PermissionsAnswer = t.Object({
  user_id: t.String(),
  user: t.Object(
    { id: t.String(), email: t.String(), name: t.String() },
    { description: 'the caller, as GET /api/v1/users/me names them' },
  ),
  system_admin: t.Boolean(),
  permissions: t.Array(Permission),
  repository: t.Optional(
    t.Object(
      { id: t.String(), name: t.String(), slug: t.String() },
      { description: 'with X-Repository-ID: the repository it names' },
    ),
  ),
})
