// What the person may do on a page, asked once per page (GET /api/v1/permissions, with
// X-Repository-ID in a repository) and shared through a context by every control that writes:
// a control the person may not use is not shown, and a page whose whole point is such a write
// says instead which role it needs and who grants it. The API judges every request all the same.
import type { ComponentChildren } from 'preact'
import { createContext } from 'preact'
import { useContext, useMemo } from 'preact/hooks'
import { request } from './api.ts'
import { paths } from './pages/paths.ts'
import { type RepositoryPermission, rolesWith } from './roles.ts'
import { Link, useLoad } from './ui.tsx'

/** The system permissions a page of the app offers a control for. */
type SystemPermission = 'repository:create'

interface Held {
  /** The repository the permissions are of; none: the system domain's. */
  repo?: string
  /** What the person holds there; undefined while it loads, or if the API refused to say. */
  permissions?: Set<string>
}

const HeldPermissions = createContext<Held>({})

interface PermissionsAnswer {
  permissions: { domain: string; resource: string; action: string }[]
}

/** Reads the person's permissions in `repo` (none: in the system domain) once, for everything inside. */
export function PermissionsOf({ repo, children }: { repo?: string; children: ComponentChildren }) {
  const [loaded] = useLoad(
    () => request<PermissionsAnswer>('GET', '/api/v1/permissions', undefined, repo ? { 'x-repository-id': repo } : {}),
    `permissions ${repo ?? ''}`,
  )
  const held = useMemo<Held>(() => {
    if (loaded.state !== 'done') return { repo }
    // With X-Repository-ID the answer is the system domain and that repository's.
    const mine = loaded.value.permissions.filter(({ domain }) => (repo ? domain !== 'system' : domain === 'system'))
    return { repo, permissions: new Set(mine.map(({ resource, action }) => `${resource}:${action}`)) }
  }, [loaded, repo])
  return <HeldPermissions.Provider value={held}>{children}</HeldPermissions.Provider>
}

/** Whether the person may do `permission` here (false while the permissions load). */
export function useCan(): (permission: RepositoryPermission | SystemPermission) => boolean {
  const { permissions } = useContext(HeldPermissions)
  return (permission) => permissions?.has(permission) ?? false
}

/**
 * `children` where the person may do `permission` in the repository; else a line saying that
 * `doing` ("Adding a fact") needs which role and who grants it, under `heading` if given.
 * Nothing while the permissions load.
 */
export function Allowed({
  permission,
  doing,
  heading,
  children,
}: {
  permission: RepositoryPermission
  doing: string
  heading?: string
  children: ComponentChildren
}) {
  const { repo, permissions } = useContext(HeldPermissions)
  if (!permissions) return null
  if (permissions.has(permission)) return <>{children}</>
  return (
    <>
      {heading && <h1 tabIndex={-1}>{heading}</h1>}
      <p class="refused">
        {doing} needs {rolesWith(permission)} in this repository; a repoadmin of it can grant it.{' '}
        {repo && <Link href={`${paths(repo).base}/members`}>Who is a member, and what each role may do</Link>}
      </p>
    </>
  )
}
