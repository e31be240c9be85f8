// Roles and permissions (docs/spec/decisions.md §4), as data: the casbin policies, GET /admin/permissions
// and the route guards are all derived from this table.
export const SYSTEM_DOMAIN = 'system'

export const SYSTEM_PERMISSIONS = [
  'user:read',
  'user:manage',
  'role:read',
  'role:manage',
  'repository:create',
  'job:read',
  'job:cancel',
  'registry:push',
  'registry:pull',
] as const

export const REPOSITORY_PERMISSIONS = [
  'repository:read',
  'repository:update',
  'repository:delete',
  'member:read',
  'member:manage',
  'source:read',
  'fact:read',
  'concept:read',
  'investigation:read',
  'report:read',
  // Create, update and delete of that kind and of what hangs under it (docs/spec/decisions.md §4).
  'source:write',
  'fact:write',
  'concept:write',
  'investigation:write',
  'report:write',
  'graph:export',
  'graph:import',
  'job:read',
  'job:cancel',
] as const

export type SystemPermission = (typeof SYSTEM_PERMISSIONS)[number]
export type RepositoryPermission = (typeof REPOSITORY_PERMISSIONS)[number]
export type Permission = SystemPermission | RepositoryPermission
type DomainKind = 'system' | 'repository'

const READ = REPOSITORY_PERMISSIONS.filter((p) => p.endsWith(':read'))

export interface RoleDefinition {
  domain_kind: DomainKind
  permissions: readonly Permission[]
}

/** sysadmin's own list is the system catalogue; the model also grants it everything everywhere. */
export const ROLES = {
  sysadmin: { domain_kind: 'system', permissions: SYSTEM_PERMISSIONS },
  // docs/spec/decisions.md §2: the registry is the instance's shared catalogue; members browse and import it.
  member: { domain_kind: 'system', permissions: ['repository:create', 'registry:pull'] },
  repoadmin: { domain_kind: 'repository', permissions: REPOSITORY_PERMISSIONS },
  editor: {
    domain_kind: 'repository',
    permissions: REPOSITORY_PERMISSIONS.filter((p) => p !== 'repository:delete' && p !== 'member:manage'),
  },
  // Curates concepts and writes reports over facts others gathered.
  curator: { domain_kind: 'repository', permissions: [...READ, 'graph:export', 'concept:write', 'report:write'] },
  viewer: { domain_kind: 'repository', permissions: READ },
} as const satisfies Record<string, RoleDefinition>

export type Role = keyof typeof ROLES

/** The repository roles, strongest first: each carries every permission of those after it. */
export const REPOSITORY_ROLES = ['repoadmin', 'editor', 'curator', 'viewer'] as const satisfies readonly Role[]
export type RepositoryRole = (typeof REPOSITORY_ROLES)[number]

export function isRole(name: string): name is Role {
  return Object.hasOwn(ROLES, name)
}

export function splitPermission(permission: Permission): [resource: string, action: string] {
  const [resource, action] = permission.split(':') as [string, string]
  return [resource, action]
}

/** `names` as a sentence lists them: "a", "a or b", "a, b or c". */
const either = (names: readonly string[]) =>
  names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`

/** The roles of `kind` that carry `permission`, weakest (fewest permissions) first. */
function rolesCarrying(permission: Permission, kind: DomainKind): Role[] {
  const roles = (Object.keys(ROLES) as Role[]).filter(
    (role) =>
      ROLES[role].domain_kind === kind && (ROLES[role].permissions as readonly Permission[]).includes(permission),
  )
  return roles.sort((a, b) => ROLES[a].permissions.length - ROLES[b].permissions.length)
}

/**
 * The refusal of `permission`, naming the roles that carry it and who grants them, so that the
 * person knows whom to ask: "permission denied: fact:write needs the editor or repoadmin role in
 * this repository; a repoadmin of it can grant it". `repository`: how the sentence names the
 * repository the permission was checked in ("this repository", "repository demo"); absent, the
 * system domain.
 */
export function permissionDenied(permission: Permission, repository?: string): string {
  const roles = rolesCarrying(permission, repository === undefined ? 'system' : 'repository')
  const where =
    repository === undefined
      ? 'on this server; a sysadmin can grant it'
      : `in ${repository}; a repoadmin of it can grant it`
  return `permission denied: ${permission} needs the ${either(roles)} role ${where}`
}

/** OAuth scopes (docs/spec/decisions.md §5): they cap what the user's roles allow, never widen it. */
export const SCOPES = ['read', 'write', 'admin'] as const
export type Scope = (typeof SCOPES)[number]

/** What each scope means, as the OpenAPI document's OAuth flow lists it. */
export const SCOPE_MEANINGS: Record<Scope, string> = {
  read: 'read what your roles let you read',
  write: 'also change it (includes read)',
  admin: 'also manage roles, users and repositories (includes write)',
}

/** Actions that change privileges or destroy a repository: only an `admin` token may take them. */
const ADMIN_SCOPE_ONLY = new Set<Permission>(['role:manage', 'user:manage', 'member:manage', 'repository:delete'])

/**
 * Actions that change nothing, beyond the `:read` ones: browsing and downloading the registry's
 * shared catalogue (an import from it also needs graph:import, which takes the write scope).
 */
const READ_SCOPE_TOO = new Set<Permission>(['registry:pull'])

export function scopeNeeded(permission: Permission): Scope {
  if (ADMIN_SCOPE_ONLY.has(permission)) return 'admin'
  return splitPermission(permission)[1] === 'read' || READ_SCOPE_TOO.has(permission) ? 'read' : 'write'
}

/** Whether a token with `scopes` may use `need`; no scopes (a session token) means no cap. */
export function scopeAllows(scopes: readonly string[] | undefined, need: Scope): boolean {
  if (!scopes || scopes.includes('admin')) return true
  if (need === 'read') return scopes.includes('read') || scopes.includes('write')
  return need === 'write' && scopes.includes('write')
}

/**
 * The refusal of a token whose scopes do not cover `need`, saying what to ask for instead.
 * `what`: the permission, when the refusal knows it.
 */
export function scopeRefused(need: Scope, scopes: readonly string[], what?: Permission): string {
  return `insufficient scope: ${what ?? 'this'} needs a token with the ${need} scope (this one has ${scopes.join(' ') || 'none'}); authorize again with ${need}`
}
