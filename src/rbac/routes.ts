// /api/v1/admin/* and /api/v1/permissions: schema, permission, call into Rbac, Accounts and OAuthTokens.
import { Elysia, t } from 'elysia'
import type { Accounts } from '../accounts/accounts.ts'
import type { OAuthTokens } from '../oauth/tokens.ts'
import type { accessControl } from '../http/access.ts'
import { HttpError } from '../http/errors.ts'
import { pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import {
  REPOSITORY_PERMISSIONS,
  ROLES,
  SYSTEM_DOMAIN,
  SYSTEM_PERMISSIONS,
  isRole,
  splitPermission,
  type Permission,
  type RepositoryRole,
} from '../permissions.ts'
import type { Rbac } from './rbac.ts'
import { setMemberRole } from './members.ts'
import { PermissionsAnswer } from './schemas.ts'
import { normalizeEmail } from '../accounts/users.ts'
import { REPOSITORY_HEADER } from '../http/path.ts'

const Assignment = t.Object({ user_id: t.String(), role: t.String(), domain: t.String() })
const AssignmentBody = t.Object(
  {
    user_id: t.Optional(
      t.String({ pattern: UUID_PATTERN, error: 'expected a user id (UUID)', description: 'the user by id' }),
    ),
    email: t.Optional(
      t.String({
        maxLength: 254,
        error: 'expected an e-mail address',
        description: 'or by the e-mail address of their account',
      }),
    ),
    role: t.String({ maxLength: 64, description: Object.keys(ROLES).join(', ') }),
    domain: t.String({ maxLength: 64, description: '"system", or a repository UUID or slug' }),
  },
  { additionalProperties: false, description: 'the user by exactly one of user_id and email' },
)
const UserSearch = t.Object({
  q: t.Optional(
    t.String({
      maxLength: 254,
      description: 'only users whose e-mail address or name contains this text, in any case',
      error: 'expected a search text of at most 254 characters',
    }),
  ),
})
const HeldRole = t.Object({
  role: t.String(),
  domain: t.String({ description: '"system", or the repository UUID' }),
  repository: t.Optional(
    t.Object(
      { name: t.String(), slug: t.String() },
      { description: "the repository's name and slug, for a repository role" },
    ),
  ),
})
// Each route's own error answers (the OpenAPI document lists exactly these, with its rule's 401 and 403).
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }
/** A JSON body: invalid (400), too large (413), of another type (415). */
const bodyErrors = { 400: ErrorBody, 413: ErrorBody, 415: ErrorBody }

export interface RbacRoutesOptions {
  rbac: Rbac
  accounts: Accounts
  oauth: Pick<OAuthTokens, 'revokeUserGrants'>
  access: ReturnType<typeof accessControl>
  /** A repository by UUID or slug (repositories/, which sits above rbac/ and is passed in). */
  repositories: { resolve(idOrSlug: string): Promise<{ id: string; name: string; slug: string } | undefined> }
}

/** The permissions `userId` holds in `domain`, from its roles there. */
function permissionsIn(rbac: Rbac, userId: string, domain: string): Permission[] {
  if (rbac.isSysadmin(userId)) return [...(domain === SYSTEM_DOMAIN ? SYSTEM_PERMISSIONS : REPOSITORY_PERMISSIONS)]
  const held = rbac.rolesOf(userId).filter((a) => a.domain === domain)
  return [...new Set(held.flatMap((a) => ROLES[a.role].permissions))]
}

export function rbacRoutes({ rbac, accounts, oauth, access, repositories }: RbacRoutesOptions) {
  /** The user an assignment body names, by id or e-mail: 400 for neither, both, or no such account. */
  const namedUser = async (body: { user_id?: string; email?: string }) => {
    if ((body.user_id === undefined) === (body.email === undefined))
      throw new HttpError(400, 'invalid body: name the user by exactly one of user_id and email')
    if (body.email !== undefined) {
      const email = normalizeEmail(body.email)
      if (!email) throw new HttpError(400, 'invalid body: email: expected an e-mail address')
      const user = await accounts.findUserByEmail(email)
      if (!user) throw new HttpError(400, `unknown user ${email}: no account has this e-mail address`)
      return user
    }
    const user = await accounts.findUser(body.user_id!.toLowerCase())
    if (!user) throw new HttpError(400, `unknown user ${body.user_id!.toLowerCase()}`)
    return user
  }
  /** Validates an assignment body: 400 for an unknown user, role or repository, or a role outside its domain kind. */
  const validate = async (body: { user_id?: string; email?: string; role: string; domain: string }) => {
    if (!isRole(body.role))
      throw new HttpError(
        400,
        `unknown role ${JSON.stringify(body.role)}; expected one of ${Object.keys(ROLES).join(', ')}`,
      )
    const user = await namedUser(body)
    const domain = body.domain === SYSTEM_DOMAIN ? SYSTEM_DOMAIN : (await repositories.resolve(body.domain))?.id
    if (!domain) throw new HttpError(400, `unknown repository ${JSON.stringify(body.domain)}`)
    const kind = domain === SYSTEM_DOMAIN ? 'system' : 'repository'
    if (ROLES[body.role].domain_kind !== kind)
      throw new HttpError(
        400,
        `role ${body.role} applies to ${ROLES[body.role].domain_kind} domains, not to ${kind === 'system' ? 'the system domain' : 'a repository'}`,
      )
    return { user, assignment: { user_id: user.id, role: body.role, domain } }
  }
  /** The user's roles, each repository one with the repository's name (from the repositories' cache). */
  const heldRoles = (userId: string) =>
    Promise.all(
      rbac.rolesOf(userId).map(async ({ role, domain }) => {
        if (domain === SYSTEM_DOMAIN) return { role, domain }
        const repository = await repositories.resolve(domain)
        return repository
          ? { role, domain, repository: { name: repository.name, slug: repository.slug } }
          : { role, domain }
      }),
    )

  return new Elysia({ name: 'kgs/rbac', prefix: '/api/v1' })
    .use(access)
    .use(pagination)
    .get(
      '/admin/users',
      async ({ page, query }) =>
        Promise.all(
          (await accounts.listUsers(page.limit, page.after, query.q?.trim() || undefined)).map(
            async ({ updated_at: _, ...user }) => ({ ...user, roles: await heldRoles(user.id) }),
          ),
        ),
      {
        permission: 'user:read',
        paginated: true,
        query: UserSearch,
        response: {
          200: t.Array(
            t.Object({
              id: t.String(),
              email: t.String(),
              name: t.String(),
              created_at: t.String(),
              roles: t.Array(HeldRole),
            }),
          ),
          400: ErrorBody,
        },
        detail: {
          tags: ['admin'],
          summary:
            'Users with their roles, all or those ?q= finds in their e-mail or name (paginated; Link: rel="next")',
        },
      },
    )
    .delete(
      '/admin/users/:userID/sessions',
      async ({ params }) => {
        const userId = params.userID.toLowerCase()
        if (!(await accounts.userExists(userId))) throw new HttpError(404, 'user not found')
        const sessions = await accounts.endUserSessions(userId)
        return { sessions_ended: sessions, grants_revoked: await oauth.revokeUserGrants(userId) }
      },
      {
        permission: 'user:manage',
        params: t.Object({ userID: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) }),
        response: { 200: t.Object({ sessions_ended: t.Integer(), grants_revoked: t.Integer() }), ...errors },
        detail: {
          tags: ['admin'],
          summary: 'End every session and revoke every OAuth grant of a user: their tokens stop working at once',
        },
      },
    )
    .put(
      '/admin/users/roles',
      async ({ body }) => {
        const { user, assignment } = await validate(body)
        // A repository role replaces the user's other role there, as PUT /{repoID}/members does.
        if (assignment.domain === SYSTEM_DOMAIN) await rbac.assign(assignment)
        else await setMemberRole(rbac, assignment.domain, user, assignment.role as RepositoryRole)
        return assignment
      },
      {
        permission: 'role:manage',
        body: AssignmentBody,
        response: { 200: Assignment, ...bodyErrors, 409: ErrorBody },
        detail: {
          tags: ['admin'],
          summary:
            "Assign a role to a user named by id or e-mail (idempotent): a system role is added to the user's others; a repository role replaces the user's role in that repository (one role per user and repository; 409 for the last repoadmin)",
        },
      },
    )
    .delete(
      '/admin/users/roles',
      async ({ body }) => {
        const { assignment } = await validate(body)
        if (!(await rbac.remove(assignment))) throw new HttpError(404, 'no such role assignment')
        return assignment
      },
      {
        permission: 'role:manage',
        body: AssignmentBody,
        response: { 200: Assignment, ...bodyErrors, 404: ErrorBody },
        detail: { tags: ['admin'], summary: 'Remove a role assignment' },
      },
    )
    .get(
      '/admin/permissions',
      () =>
        Object.entries(ROLES).map(([role, definition]) => ({
          role,
          domain_kind: definition.domain_kind,
          permissions: [...definition.permissions],
        })),
      {
        permission: 'role:read',
        response: {
          200: t.Array(t.Object({ role: t.String(), domain_kind: t.String(), permissions: t.Array(t.String()) })),
        },
        detail: { tags: ['admin'], summary: 'Every role and the permissions it carries' },
      },
    )
    .get(
      '/permissions',
      async ({ principal, request }) => {
        // With X-Repository-ID: the system domain and that repository only (if the caller may see it).
        const named = request.headers.get(REPOSITORY_HEADER)
        const repository = named ? await repositories.resolve(named) : undefined
        if (named && (!repository || !rbac.sees(principal.userId, repository.id))) {
          throw new HttpError(404, 'repository not found')
        }
        const domains = [SYSTEM_DOMAIN, ...(repository ? [repository.id] : rbac.repositoriesOf(principal.userId))]
        const { id, email, name } = await accounts.getUser(principal.userId)
        return {
          user_id: principal.userId,
          user: { id, email, name },
          system_admin: rbac.isSysadmin(principal.userId),
          permissions: domains.flatMap((domain) =>
            permissionsIn(rbac, principal.userId, domain).map((permission) => {
              const [resource, action] = splitPermission(permission)
              return { domain, resource, action }
            }),
          ),
          ...(repository ? { repository: { id: repository.id, name: repository.name, slug: repository.slug } } : {}),
        }
      },
      {
        auth: true,
        response: {
          200: PermissionsAnswer,
          404: ErrorBody,
        },
        detail: {
          tags: ['admin'],
          summary:
            'The caller (user) and their permissions in the system domain and every repository it has a role in; with X-Repository-ID, that repository too',
          parameters: [
            {
              in: 'header',
              name: 'X-Repository-ID',
              required: false,
              schema: { type: 'string' },
              description:
                'only the system domain and this repository (UUID or slug), which the answer names (repository); 404 if the caller does not see it',
            },
          ],
        },
      },
    )
}
