// The repository roles in words: one line each for the Members page, and the roles a write needs
// for the pages that explain one the person may not make. Each ability claims the permissions it
// stands for, and a role's line is made of its abilities; tests/web/permissions.test.ts checks
// every role's claims against the server's role table (GET /api/v1/admin/permissions), so a line
// says no more and no less than the role carries.

const ABILITIES = {
  read: {
    says: 'reads the graph, its members and its jobs',
    permissions: [
      'repository:read',
      'member:read',
      'source:read',
      'fact:read',
      'concept:read',
      'investigation:read',
      'report:read',
      'job:read',
    ],
  },
  curate: { says: 'writes concepts and reports', permissions: ['concept:write', 'report:write'] },
  export: { says: 'exports the graph to the registry', permissions: ['graph:export'] },
  gather: {
    says: 'writes sources, facts and investigations',
    permissions: ['source:write', 'fact:write', 'investigation:write'],
  },
  import: { says: 'imports graphs', permissions: ['graph:import'] },
  keep: { says: 'renames the repository and cancels its jobs', permissions: ['repository:update', 'job:cancel'] },
  govern: { says: 'manages members and deletes the repository', permissions: ['member:manage', 'repository:delete'] },
} as const

type Ability = keyof typeof ABILITIES
export type RepositoryPermission = (typeof ABILITIES)[Ability]['permissions'][number]

/** The repository roles, strongest first: each can do what the next can, and what it adds. */
const LADDER = [
  { role: 'repoadmin', adds: ['govern'] },
  { role: 'editor', adds: ['gather', 'import', 'keep'] },
  { role: 'curator', adds: ['curate', 'export'] },
  { role: 'viewer', adds: ['read'] },
] as const satisfies readonly { role: string; adds: readonly Ability[] }[]

export type RepositoryRole = (typeof LADDER)[number]['role']
export const REPOSITORY_ROLES: readonly RepositoryRole[] = LADDER.map(({ role }) => role)

/** The abilities of the role at `rung` of LADDER: its own and those of every weaker role. */
const abilitiesAt = (rung: number): Ability[] => LADDER.slice(rung).flatMap(({ adds }) => [...adds])

/** The permissions `role` carries, as its line claims them. */
export function claims(role: RepositoryRole): RepositoryPermission[] {
  return abilitiesAt(REPOSITORY_ROLES.indexOf(role)).flatMap((ability) => [...ABILITIES[ability].permissions])
}

/** "a", "a or b", "a, b or c". */
const either = (words: readonly string[]) =>
  words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`
const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`)
const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/** What each role may do, in one line, strongest first. */
export const ROLE_LINES: readonly { role: RepositoryRole; line: string }[] = LADDER.map(({ role, adds }, rung) => {
  const own = adds.map((ability) => ABILITIES[ability].says)
  const weaker = LADDER[rung + 1]?.role
  const writes = claims(role).some((permission) => !permission.endsWith(':read'))
  return {
    role,
    line: weaker
      ? `Everything ${article(weaker)} can; ${own.join('; ')}.`
      : `${capital(own.join('; '))}${writes ? '' : '; changes nothing'}.`,
  }
})

/** The roles that carry `permission`, weakest first, as a sentence names them: "the editor or repoadmin role". */
export function rolesWith(permission: RepositoryPermission): string {
  const roles = [...REPOSITORY_ROLES].reverse().filter((role) => claims(role).includes(permission))
  return `the ${either(roles)} role`
}
