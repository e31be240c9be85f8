// Authorization, said once, on the route: every route names exactly one of the rules below in its
// declaration, and the rule's macro does the whole check before the handler runs, which receives
// the authorized principal (and, for repository rules, the repository and its pool).
//
//   public: true                      no token asked for
//   auth: true                        any valid token
//   session: 'sessions'               a session token (an OAuth client acts within its scopes, and
//                                     these are not among them)
//   session: { what: 'grants',        a session token, or an access token of one of kgs's own
//     orFirstParty }                  clients (first_party: the web app, Swagger UI), which the
//                                     person uses as kgs itself; a third party's token is 403
//   permission: 'role:manage'         a system-domain permission
//   repository: 'fact:read'           a permission in the repository the request names (or, with
//                                     `forForm`, plus system permissions one form of the request
//                                     needs: the macro evaluates them, the handler knows the form)
//   repositoryOrSystem: 'job:read'    in the named repository, else in the system domain
//   self: { or: 'user:read', … }      the user the path names is the caller, or the permission
//   owner: { or: 'sysadmin', … }      the caller owns the resource (a lookup says who does), or
//                                     is a sysadmin
//
// Each rule records itself in the operation's OpenAPI detail: the rule (x-kgs-permission), the
// security requirement with the OAuth scope it needs, and the error answers it can give. The
// check's order is always: authentication (401, before the body is validated: see
// authenticatesFirst), then what the request names (400, 404), then permission and scope (403).
import { Elysia } from 'elysia'
import type { Sql } from 'postgres'
import {
  authenticatesFirst,
  forbidden,
  holdsSystemPermission,
  principalOf,
  requireScope,
  requireSessionToken,
  type Authenticator,
  type Authorizer,
  type Principal,
} from './auth.ts'
import { HttpError } from './errors.ts'
import { declaredErrors, repositoryHeader, securityDetail } from './openapi.ts'
import { REPOSITORY_HEADER } from './path.ts'
import {
  scopeAllows,
  scopeNeeded,
  type RepositoryPermission,
  type Scope,
  type SystemPermission,
} from '../permissions.ts'

/** The OpenAPI extension naming an operation's rule. */
export const RULE = 'x-kgs-permission'

/**
 * What a rule adds to its route's detail. `scope` undefined: any token; null: no token (public).
 * `errors`: the answers the rule itself can give.
 */
function declared(rule: string, scope: Scope | undefined | null, errors: number[]) {
  return { [RULE]: rule, ...(scope === null ? {} : securityDetail(scope)), ...declaredErrors(errors) }
}

/** `public: true`: the rule of routes anyone may call, declared as such so that no route is left without a rule. */
export const publicAccess = new Elysia({ name: 'kgs/public' }).macro({
  public: { detail: declared('public', null, []) },
})

/**
 * `session`'s second form: also an access token of one of kgs's own clients. `orFirstParty`
 * says whether a client is one (a lookup: the rule is on few, rarely called routes).
 */
interface SessionOrFirstParty {
  what: string
  orFirstParty(clientId: string): Promise<boolean>
}

/** The authorizer of the owner rule: a sysadmin may act on what others own. */
export interface OwnerAuthorizer extends Authorizer {
  isSysadmin(userId: string): boolean
}

type Params = Record<string, string>

/**
 * The principal, if it is `owner` or holds `or` (a system permission, or being a sysadmin): 403
 * with `refusal` otherwise. The scope an owner needs is the route's; acting by permission, also
 * the permission's. The service principal owns nothing and is no sysadmin.
 */
function ownerOrPermission(
  authorizer: OwnerAuthorizer,
  resourceMetadata: string,
  principal: Principal,
  owner: string | null,
  rule: { or: SystemPermission | 'sysadmin'; scope: Scope },
  refusal: HttpError,
): Principal {
  const owns = !principal.grants && owner === principal.userId
  if (!owns) {
    const holds =
      rule.or === 'sysadmin'
        ? !principal.grants && authorizer.isSysadmin(principal.userId)
        : holdsSystemPermission(authorizer, principal, rule.or)
    if (!holds) throw refusal
    if (rule.or !== 'sysadmin') requireScope(principal, scopeNeeded(rule.or), resourceMetadata, rule.or)
  }
  requireScope(principal, rule.scope, resourceMetadata)
  return principal
}

/**
 * Decides a system action: 403 unless the principal holds `permission` in the system domain
 * (naming the roles that carry it), then unless its token's scope covers it (asking for the
 * scope). The `permission` rule and the MCP server's system tools call it.
 */
export function authorizeSystemAction(
  authorizer: Authorizer,
  resourceMetadata: string,
  principal: Principal,
  permission: SystemPermission,
): void {
  if (!holdsSystemPermission(authorizer, principal, permission)) throw forbidden(permission)
  requireScope(principal, scopeNeeded(permission), resourceMetadata, permission)
}

/** The rules on the caller and the system domain. `seed` tells apart instances of other authenticators (the registry's). */
export function accessControl(authenticator: Authenticator, authorizer: OwnerAuthorizer, seed?: string) {
  const resourceMetadata = authenticator.resourceMetadataUrl
  const resolvePrincipal = ({ request }: { request: Request }) => ({ principal: principalOf(request) })
  return new Elysia({ name: 'kgs/access-control', seed }).use(publicAccess).macro({
    /**
     * `true`: any valid token, and a 401 asks for `read`. A scope: any valid token still, but a 401
     * (and the document) asks for that scope: the MCP endpoint's tools check each call's own scope,
     * and a host that asked for `read` could never write.
     */
    auth: (challenge: true | Scope) => ({
      detail: declared('authenticated', challenge === true ? undefined : challenge, [401]),
      ...authenticatesFirst(authenticator, challenge === true ? 'read' : challenge),
      resolve: resolvePrincipal,
    }),
    /**
     * `what` names the resource in the refusal: "sessions are managed with a session token". The
     * object form also lets in kgs's own clients (SessionOrFirstParty).
     */
    session: (rule: string | SessionOrFirstParty) => ({
      detail: declared(
        typeof rule === 'string' ? 'session-token' : 'session-token-or-first-party-client',
        undefined,
        [401, 403],
      ),
      ...authenticatesFirst(authenticator, 'read'),
      async resolve({ request }) {
        const principal = principalOf(request)
        if (typeof rule === 'string') requireSessionToken(principal, rule)
        else if (!principal.sessionId && !(principal.clientId && (await rule.orFirstParty(principal.clientId))))
          throw new HttpError(
            403,
            `${rule.what} are managed with a session token or in kgs's own apps, not with another client's OAuth access token`,
          )
        return { principal }
      },
    }),
    permission: (permission: SystemPermission) => ({
      detail: declared(`system ${permission}`, scopeNeeded(permission), [401, 403]),
      ...authenticatesFirst(authenticator, scopeNeeded(permission)),
      resolve({ request }) {
        const principal = principalOf(request)
        authorizeSystemAction(authorizer, resourceMetadata, principal, permission)
        return { principal }
      },
    }),
    /**
     * The user `user` finds from the path (404 when there is none) is the caller, or the caller
     * holds `or`. `scope`: what the caller needs on its own account.
     */
    self: (rule: { or: SystemPermission; scope: Scope; user(params: Params): Promise<string> }) => ({
      detail: declared(`self-or-system ${rule.or}`, rule.scope, [401, 403, 404]),
      ...authenticatesFirst(authenticator, rule.scope),
      async resolve({ request, params }) {
        const userId = await rule.user(params as Params)
        return {
          principal: ownerOrPermission(
            authorizer,
            resourceMetadata,
            principalOf(request),
            userId,
            rule,
            forbidden(rule.or),
          ),
        }
      },
    }),
    /**
     * The resource `of` finds from the path (404 when there is none) is owned by the caller, or
     * the caller holds `or`; else 403 with `refusal`.
     */
    owner: (rule: { or: 'sysadmin'; scope: Scope; of(params: Params): Promise<string | null>; refusal: string }) => ({
      detail: declared(`owner-or-${rule.or}`, rule.scope, [401, 403, 404]),
      ...authenticatesFirst(authenticator, rule.scope),
      async resolve({ request, params }) {
        const owner = await rule.of(params as Params)
        return {
          principal: ownerOrPermission(
            authorizer,
            resourceMetadata,
            principalOf(request),
            owner,
            rule,
            new HttpError(403, `permission denied: ${rule.refusal}`),
          ),
        }
      },
    }),
  })
}

/** How the repository rules find the repository a request names. */
export interface RepositoryLookup<R extends { id: string }> {
  /**
   * The repository named by the path (`fromPath`) or the X-Repository-ID header, if `userId` may
   * see it: 400 when neither names one or they disagree, 404 for one the caller may not see.
   */
  find(userId: string, fromPath: string | undefined, fromHeader: string | null): Promise<R>
  /** The repository's pool. */
  db(repository: R): Promise<Sql>
}

/** Where a repository action names its repository: a path parameter or the X-Repository-ID header (REST), a tool's argument (MCP). */
export interface NamedRepository {
  fromPath?: string
  fromHeader?: string | null
}

/**
 * The one decision of a repository action, whoever asks (the `repository` and
 * `repositoryOrSystem` rules below, the MCP server's tools and resources): finds the repository
 * `named` (400 when nothing names one or two names disagree, 404 for one the caller may not see),
 * then 403 unless the principal's roles there carry `permission` (naming the roles that do, and
 * the repository as `refusalNames` says), then 403 unless its token's scope covers it (asking for
 * the scope). Answers the repository.
 */
export function repositoryActions<R extends { id: string }>(
  authorizer: Authorizer,
  find: RepositoryLookup<R>['find'],
  resourceMetadata: string,
) {
  return async (
    principal: Principal,
    permission: RepositoryPermission,
    named: NamedRepository,
    refusalNames: (repository: R) => string = () => 'this repository',
  ): Promise<R> => {
    const repository = await find(principal.userId, named.fromPath, named.fromHeader ?? null)
    if (!authorizer.can(principal.userId, repository.id, permission))
      throw forbidden(permission, refusalNames(repository))
    requireScope(principal, scopeNeeded(permission), resourceMetadata, permission)
    return repository
  }
}

/**
 * A permission that depends on a query parameter (search's ?kind=): the permission of its value,
 * or of `default` when it is absent.
 */
interface PermissionByQuery {
  query: string
  default: string
  permissions: Record<string, RepositoryPermission>
}

/**
 * A repository permission, plus system permissions that only one form of the request needs (an
 * import from the registry also needs registry:pull, an upload does not). The macro evaluates
 * them, with their scopes, for every request and hands the handler `holds`; the handler, which
 * alone knows the form, refuses as that form must (an import refuses as for an unknown graph).
 * `forForm` maps each permission to the form it applies to, as the document says.
 */
interface PermissionWithFormPermissions {
  permission: RepositoryPermission
  forForm: Partial<Record<SystemPermission, string>>
}

type RepositoryRule = RepositoryPermission | PermissionByQuery | PermissionWithFormPermissions

/** The rules on a repository: its permissions, checked in the repository the request names. */
export function repositoryAccess<R extends { id: string }>(
  authenticator: Authenticator,
  authorizer: Authorizer,
  repositories: RepositoryLookup<R>,
) {
  const resourceMetadata = authenticator.resourceMetadataUrl
  const decide = repositoryActions(authorizer, repositories.find, resourceMetadata)

  /**
   * The principal, and the repository (when one is named) in whose domain `permission` was
   * checked; with `systemFallback` and no repository named, the system domain's permission.
   */
  const authorize = async (
    request: Request,
    params: unknown,
    permission: RepositoryPermission,
    systemFallback: boolean,
  ): Promise<{ principal: Principal; repository: R | undefined }> => {
    const principal = principalOf(request)
    const named = {
      fromPath: (params as Params | undefined)?.repoID,
      fromHeader: request.headers.get(REPOSITORY_HEADER),
    }
    if (systemFallback && named.fromPath === undefined && !named.fromHeader) {
      authorizeSystemAction(
        authorizer,
        resourceMetadata,
        principal,
        permission as RepositoryPermission & SystemPermission,
      )
      return { principal, repository: undefined }
    }
    return { principal, repository: await decide(principal, permission, named) }
  }
  const permissionOf = (need: RepositoryRule, query: Record<string, unknown>): RepositoryPermission =>
    typeof need === 'string'
      ? need
      : 'forForm' in need
        ? need.permission
        : need.permissions[(query[need.query] as string | undefined) ?? need.default]!
  const ruleOf = (need: RepositoryRule) =>
    typeof need === 'string'
      ? need
      : 'forForm' in need
        ? [
            need.permission,
            ...Object.entries(need.forForm).map(([permission, form]) => `system ${permission} (${form})`),
          ].join('; ')
        : Object.entries(need.permissions)
            .map(([value, permission]) => `${permission} (${need.query}=${value})`)
            .join(' or ')
  // Every permission of a by-query rule is a read: one scope covers them.
  const scopeOf = (need: RepositoryRule) =>
    scopeNeeded(typeof need === 'string' ? need : 'forForm' in need ? need.permission : need.permissions[need.default]!)
  /** Whether the principal holds each of the rule's form permissions, with its scope. */
  const formPermissions = (need: RepositoryRule, principal: Principal) =>
    typeof need === 'object' && 'forForm' in need
      ? Object.fromEntries(
          Object.keys(need.forForm).map((permission) => [
            permission,
            holdsSystemPermission(authorizer, principal, permission as SystemPermission) &&
              scopeAllows(principal.scopes, scopeNeeded(permission as SystemPermission)),
          ]),
        )
      : {}

  return new Elysia({ name: 'kgs/repository-access' }).macro({
    repository: (need: RepositoryRule) => ({
      detail: {
        ...declared(`repository ${ruleOf(need)}`, scopeOf(need), [400, 401, 403, 404]),
        ...repositoryHeader(true),
      },
      ...authenticatesFirst(authenticator, scopeOf(need)),
      async resolve({ request, params, query }) {
        const { principal, repository } = await authorize(request, params, permissionOf(need, query), false)
        const holds: Partial<Record<SystemPermission, boolean>> = formPermissions(need, principal)
        return { principal, repository: repository!, db: (): Promise<Sql> => repositories.db(repository!), holds }
      },
    }),
    /**
     * For permissions that exist in both domains (job:read, job:cancel): checked in the named
     * repository's domain, or in the system domain when no repository is named.
     */
    repositoryOrSystem: (permission: RepositoryPermission & SystemPermission) => ({
      detail: {
        ...declared(`repository-or-system ${permission}`, scopeNeeded(permission), [400, 401, 403, 404]),
        ...repositoryHeader(false),
      },
      ...authenticatesFirst(authenticator, scopeNeeded(permission)),
      async resolve({ request, params }) {
        return authorize(request, params, permission, true)
      },
    }),
  })
}
