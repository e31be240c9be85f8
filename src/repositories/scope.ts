// Repository scoping (docs/spec/decisions.md §2): `{ repository: 'fact:read' }` on a route names the
// repository by the :repoID path parameter or the X-Repository-ID header (UUID or slug), after
// authentication. 400 when the two disagree or neither is given; 404 for a repository the caller
// holds no role in, exactly as for one that does not exist; 403 when a role there lacks the
// permission. Routes receive the principal, the repository and its pool.
import { Elysia } from 'elysia'
import type { Sql } from 'postgres'
import type { Pools } from '../db/pools.ts'
import { authenticatesFirst, forbidden, principalOf, requireScope, type Authenticator } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import { repositoryHeader, securityDetail } from '../http/openapi.ts'
import { SYSTEM_DOMAIN, scopeNeeded, type RepositoryPermission, type SystemPermission } from '../permissions.ts'
import type { Rbac } from '../rbac/rbac.ts'
import type { Repositories, Repository } from './repositories.ts'
import { REPOSITORY_HEADER } from '../http/path.ts'

const notFound = () => new HttpError(404, 'repository not found')

export function repositoryScope(authenticator: Authenticator, rbac: Rbac, repositories: Repositories, pools: Pools) {
  /** The repository the request names, if the caller may see it. */
  const resolve = async (userId: string, fromPath: string | undefined, fromHeader: string | null): Promise<Repository> => {
    if (fromPath === undefined && !fromHeader) throw new HttpError(400, 'no repository named: put it in the path or the X-Repository-ID header')
    const [byPath, byHeader] = await Promise.all([
      fromPath === undefined ? undefined : repositories.resolve(fromPath),
      fromHeader ? repositories.resolve(fromHeader) : undefined,
    ])
    const visible = (repository: Repository | undefined): repository is Repository =>
      repository !== undefined && (rbac.isSysadmin(userId) || rbac.rolesOf(userId).some((a) => a.domain === repository.id))
    // Visibility first: comparing first would tell a hidden repository (400) from a missing one (404).
    if ((fromPath !== undefined && !visible(byPath)) || (fromHeader && !visible(byHeader))) throw notFound()
    if (byPath && byHeader && byPath.id !== byHeader.id) throw new HttpError(400, 'the path and X-Repository-ID name different repositories')
    return (byPath ?? byHeader)!
  }

  /** The principal, and the repository (when one is named) in whose domain `permission` was checked. */
  const authorize = async (request: Request, params: unknown, permission: RepositoryPermission, systemFallback: boolean) => {
    const principal = principalOf(request)
    const fromPath = (params as Record<string, string> | undefined)?.repoID
    const fromHeader = request.headers.get(REPOSITORY_HEADER)
    const repository = systemFallback && fromPath === undefined && !fromHeader ? undefined : await resolve(principal.userId, fromPath, fromHeader)
    if (!rbac.can(principal.userId, repository?.id ?? SYSTEM_DOMAIN, permission)) throw forbidden(permission)
    requireScope(principal, scopeNeeded(permission), authenticator.resourceMetadataUrl)
    return { principal, repository }
  }

  return new Elysia({ name: 'kgs/repository-scope' }).macro({
    repository: (permission: RepositoryPermission) => ({
      detail: { ...securityDetail(scopeNeeded(permission)), ...repositoryHeader(true) },
      ...authenticatesFirst(authenticator, scopeNeeded(permission)),
      async resolve({ request, params }) {
        const { principal, repository } = await authorize(request, params, permission, false)
        return { principal, repository: repository!, db: (): Promise<Sql> => pools.forRepository(repository!.id) }
      },
    }),
    /**
     * For permissions that exist in both domains (job:read, job:cancel): checked in the named
     * repository's domain, or in the system domain when no repository is named.
     */
    repositoryOrSystem: (permission: RepositoryPermission & SystemPermission) => ({
      detail: { ...securityDetail(scopeNeeded(permission)), ...repositoryHeader(false) },
      ...authenticatesFirst(authenticator, scopeNeeded(permission)),
      async resolve({ request, params }) {
        return authorize(request, params, permission, true)
      },
    }),
  })
}
