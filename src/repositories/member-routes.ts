// A repository's members (docs/spec/decisions.md §4), at /{repoID}/members and at /api/v1/members
// with X-Repository-ID: who holds a role there, and a repoadmin's granting and removing of roles,
// with no system permission. The rules are in rbac/members.ts.
import { t } from 'elysia'
import type { Sql } from 'postgres'
import { pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { REPOSITORY_ROLES } from '../permissions.ts'
import {
  findMemberAccount,
  listMembers,
  memberEmail,
  removeMember,
  repositoryRole,
  setMemberRole,
} from '../rbac/members.ts'
import type { Rbac } from '../rbac/rbac.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { repositoryScope } from './scope.ts'
import { repositoryScopedRoutes } from './scoped-routes.ts'

const Member = t.Object({
  user_id: t.String(),
  email: t.String(),
  name: t.String(),
  role: t.UnionEnum(REPOSITORY_ROLES, { description: 'the strongest, if an administrator gave them several' }),
})
const MemberBody = t.Object(
  {
    email: t.Optional(
      t.String({
        maxLength: 254,
        error: 'expected an e-mail address',
        description: 'the user, by the e-mail address of their account (required)',
      }),
    ),
    // Declared so that its refusal says why, whatever the value: an id never adds anyone.
    user_id: t.Optional(t.Unknown({ description: 'refused (400): members are added by e-mail, never by id' })),
    role: t.String({ maxLength: 64, description: REPOSITORY_ROLES.join(', ') }),
  },
  { additionalProperties: false, description: 'the e-mail address of an account, and the role' },
)
// Each route's own answers besides the rule's (400, 401, 403, 404).
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
/** The last repoadmin demoted or removed. */
const lastRepoadmin = { 409: ErrorBody }
/** A JSON body: too large (413), of another type (415). */
const bodyErrors = { 413: ErrorBody, 415: ErrorBody }

export interface MemberRoutesOptions {
  scope: ReturnType<typeof repositoryScope>
  rbac: Rbac
  system: Sql
}

export function memberRoutes({ scope, rbac, system }: MemberRoutesOptions) {
  return repositoryScopedRoutes('kgs/members', scope, (app, at) => {
    const describe = (summary: string) => at.detail({ tags: ['members'], summary })
    return app
      .use(pagination)
      .get('/members', ({ repository, page }) => listMembers(system, repository.id, page.limit, page.after), {
        repository: 'member:read',
        paginated: true,
        params: at.repositoryParams,
        response: { 200: t.Array(Member), ...errors },
        detail: describe('Everyone who holds a role in the repository, with their role'),
      })
      .put(
        '/members',
        async ({ repository, body }) => {
          // Every refusal of the body comes before the account is looked up.
          const email = memberEmail(body)
          const role = repositoryRole(body.role)
          return setMemberRole(rbac, repository.id, await findMemberAccount(system, email), role)
        },
        {
          repository: 'member:manage',
          params: at.repositoryParams,
          body: MemberBody,
          response: { 200: Member, ...errors, ...lastRepoadmin, ...bodyErrors },
          detail: describe(
            'Give a user, named by the e-mail address of their account, a repository role, replacing any other they hold there (idempotent); they are a member at once. A user_id is refused (400). An unknown e-mail is 404: no account is created and nothing is sent. 409 for demoting the last repoadmin.',
          ),
        },
      )
      .delete(
        '/members/:userID',
        ({ repository, params }) => removeMember(rbac, system, repository.id, params.userID),
        {
          repository: 'member:manage',
          params: at.params({ userID: t.String({ pattern: UUID_PATTERN, error: 'expected a user id (UUID)' }) }),
          response: { 200: Member, ...errors, ...lastRepoadmin },
          detail: describe("Remove a user's roles in the repository; 409 for the last repoadmin"),
        },
      )
  })
}
