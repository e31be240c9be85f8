// Repository scoping (docs/spec/decisions.md §2): a route's `repository` rule (http/access.ts)
// names the repository by the :repoID path parameter or the X-Repository-ID header (UUID or
// slug). Here is how it is found: 400 when the two disagree or neither is given; 404 for a
// repository the caller holds no role in, exactly as for one that does not exist.
import type { Pools } from '../db/pools.ts'
import { repositoryAccess } from '../http/access.ts'
import type { Authenticator } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import type { Rbac } from '../rbac/rbac.ts'
import type { Repositories, Repository } from './repositories.ts'

const notFound = () => new HttpError(404, 'repository not found')

/** The repository `fromPath` or `fromHeader` names (UUID or slug), if `userId` may see it: 400 when neither names one or they disagree, else 404. */
export function repositoryFinder(rbac: Pick<Rbac, 'sees'>, repositories: Pick<Repositories, 'resolve'>) {
  return async (userId: string, fromPath: string | undefined, fromHeader: string | null): Promise<Repository> => {
    if (fromPath === undefined && !fromHeader)
      throw new HttpError(400, 'no repository named: put it in the path or the X-Repository-ID header')
    const [byPath, byHeader] = await Promise.all([
      fromPath === undefined ? undefined : repositories.resolve(fromPath),
      fromHeader ? repositories.resolve(fromHeader) : undefined,
    ])
    const visible = (repository: Repository | undefined): repository is Repository =>
      repository !== undefined && rbac.sees(userId, repository.id)
    // Visibility first: comparing first would tell a hidden repository (400) from a missing one (404).
    if ((fromPath !== undefined && !visible(byPath)) || (fromHeader && !visible(byHeader))) throw notFound()
    if (byPath && byHeader && byPath.id !== byHeader.id)
      throw new HttpError(400, 'the path and X-Repository-ID name different repositories')
    return (byPath ?? byHeader)!
  }
}

export function repositoryScope(authenticator: Authenticator, rbac: Rbac, repositories: Repositories, pools: Pools) {
  return repositoryAccess(authenticator, rbac, {
    find: repositoryFinder(rbac, repositories),
    db: (repository) => pools.forRepository(repository.id),
  })
}
