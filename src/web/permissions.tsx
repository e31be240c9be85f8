// What the person may do on a page, asked once per page (GET /api/v1/permissions, with
// X-Repository-ID in a repository) and shared through a context by every control that writes:
// a control the person may not use is not shown, and a page whose whole point is such a write
// says instead which role it needs and who grants it. The API judges every request all the same.
// The same answer names the person (the header's e-mail) and, in a repository, which one it is
// (the frame's breadcrumb), so the app opens a page with one such request (startSession), which
// the first page uses instead of asking again; a page reached by a link within the app asks anew.
import type { ComponentChildren } from 'preact'
import { createContext } from 'preact'
import { useContext, useMemo, useState } from 'preact/hooks'
import { ApiError, request } from './api.ts'
import { paths } from './pages/paths.ts'
import { type RepositoryPermission, rolesWith } from './roles.ts'
import type { Permissions } from './types.ts'
import { Link, onNavigate, useLoad } from './ui.tsx'

/** The system permissions a page of the app offers a control for. */
type SystemPermission = 'repository:create'

interface Held {
  /** The repository the permissions are of; none: the system domain's. */
  repo?: string
  /** What the person holds there; undefined until a first answer there is in, or if the API refused to say. */
  permissions?: Set<string>
  /** The answer they are from (in a repository: which one it is). */
  answer?: Permissions
  /** Why the API refused to say. */
  error?: unknown
}

const HeldPermissions = createContext<Held>({})

/** The person's permissions: with `repo`, in the system domain and that repository; without, in every domain. */
const fetchPermissions = (repo?: string) =>
  request<Permissions>('GET', '/api/v1/permissions', undefined, repo ? { 'x-repository-id': repo } : {})

/** The session's answer that no page has used yet, and the repository it is of ('' none); dropped at the first navigation. */
let unused: { repo: string; answer: Permissions } | undefined
onNavigate(() => {
  unused = undefined
})

/** The latest answer in each repository ('' none): what a page shows while its own is on its way. */
const latest = new Map<string, Permissions>()

/**
 * Signs the tab in to the page it opens at (a load, a new tab, back from the sign-in page): the
 * person and their permissions there, in one request, which the first page then uses. Where
 * `repo` is not one the person sees, the answer without it (the page says what is wrong).
 */
export async function startSession(repo: string | undefined): Promise<Permissions> {
  // Whoever was signed in before in this tab: their answers stand in for no one's.
  latest.clear()
  let answer: Permissions
  try {
    answer = await fetchPermissions(repo)
  } catch (error) {
    if (!(repo && error instanceof ApiError && error.status === 404)) throw error
    repo = undefined
    answer = await fetchPermissions()
  }
  unused = { repo: repo ?? '', answer }
  return answer
}

/** The session's answer if no page used it yet and it is of `repo` (none: of every domain), taken. */
function takeUnused(repo?: string): Permissions | undefined {
  if (unused?.repo !== (repo ?? '')) return undefined
  const { answer } = unused
  unused = undefined
  return answer
}

/** The person's permissions (in `repo`, or in every domain) as a page reads them on arrival: the session's if unused, else asked. */
export const readPermissions = (repo?: string): Promise<Permissions> => {
  const held = takeUnused(repo)
  return held ? Promise.resolve(held) : fetchPermissions(repo)
}

/**
 * Reads the person's permissions in `repo` (none: in the system domain) once, for everything
 * inside. Until the answer is in, the latest one there stands in: a row's write bar then opens
 * with the page, sharing its read of the row (api.ts read), and no control blinks.
 */
export function PermissionsOf({ repo, children }: { repo?: string; children: ComponentChildren }) {
  const [taken] = useState(() => takeUnused(repo))
  const [loaded] = useLoad(
    () =>
      (taken ? Promise.resolve(taken) : fetchPermissions(repo)).then((answer) => {
        latest.set(repo ?? '', answer)
        return answer
      }),
    `permissions ${repo ?? ''}`,
  )
  const held = useMemo<Held>(() => {
    if (loaded.state === 'failed') return { repo, error: loaded.error }
    const answer = loaded.state === 'done' ? loaded.value : (taken ?? latest.get(repo ?? ''))
    if (!answer) return { repo }
    // With X-Repository-ID the answer is the system domain and that repository's.
    const mine = answer.permissions.filter(({ domain }) => (repo ? domain !== 'system' : domain === 'system'))
    return { repo, answer, permissions: new Set(mine.map(({ resource, action }) => `${resource}:${action}`)) }
  }, [loaded, repo, taken])
  return <HeldPermissions.Provider value={held}>{children}</HeldPermissions.Provider>
}

/** The answer the permissions here are from, and why there is none if the API refused. */
export function useHeld(): { answer?: Permissions; error?: unknown } {
  const { answer, error } = useContext(HeldPermissions)
  return { answer, error }
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
