// A sysadmin's users and roles (GET /api/v1/admin/users, PUT/DELETE /api/v1/admin/users/roles):
// users found by e-mail or name, each with their roles by repository name; a role given to a
// user by e-mail, chosen from the roles kgs has (GET /api/v1/admin/permissions), in a repository
// chosen by name. A repository role replaces the user's other role there, as on Members. And the
// accounts a sysadmin makes: one outright (POST /api/v1/admin/users), or an invitation to sign
// up where REGISTRATION=invite (POST /api/v1/admin/invitations).
import { useState } from 'preact/hooks'
import { get, page, request } from '../api.ts'
import { registration } from '../auth.ts'
import { EmailField, OutcomeLine, RoleSelect, useChanges, useConfirm } from '../changes.tsx'
import type { Repository } from '../types.ts'
import { ErrorBox, PagedTable, Show, useLoad } from '../ui.tsx'

interface HeldRole {
  role: string
  domain: string
  repository?: { name: string; slug: string }
}
interface UserRow {
  id: string
  email: string
  name: string
  roles: HeldRole[]
}
interface RoleDefinition {
  role: string
  domain_kind: 'system' | 'repository'
}

/** The repositories the picker offers: one page of the API's largest. */
const PICKER_REPOSITORIES = 500

/** The password rules of src/accounts/passwords.ts (the API refuses any other password with its own message). */
const PASSWORD_MIN = 8
const PASSWORD_MAX = 256

const value = (event: Event) => (event.target as HTMLInputElement | HTMLSelectElement).value
const where = (held: HeldRole) =>
  held.domain === 'system' ? held.role : `${held.role} in ${held.repository?.name ?? held.domain}`

export function Users() {
  const [choices] = useLoad(async () => {
    const [roles, repositories] = await Promise.all([
      get<RoleDefinition[]>('/api/v1/admin/permissions'),
      page<Repository>('/api/v1/repositories', undefined, PICKER_REPOSITORIES),
    ])
    return { roles, repositories: repositories.rows, more: repositories.next !== undefined }
  }, 'choices')
  const [search, setSearch] = useState('')
  const [searched, setSearched] = useState('')
  const { round, outcome, change } = useChanges()
  const [form, setForm] = useState({ email: '', role: '', repository: '' })
  /** Gives (PUT) or takes away (DELETE) a role; `done` says what was done. */
  const changeRole = (method: 'PUT' | 'DELETE', body: unknown, done: string) =>
    change(async () => {
      await request(method, '/api/v1/admin/users/roles', body)
      return done
    })
  const removal = useConfirm(
    ({ user, held }: { user: UserRow; held: HeldRole }) => ({
      question: `Remove ${where(held)} from ${user.email}?`,
      action: 'Remove',
    }),
    ({ user, held }) =>
      changeRole(
        'DELETE',
        { user_id: user.id, role: held.role, domain: held.domain },
        `${user.email} is no longer ${where(held)}.`,
      ),
  )
  const list = `/api/v1/admin/users${searched ? `?${new URLSearchParams({ q: searched })}` : ''}`
  return (
    <>
      <h1 tabIndex={-1}>Users and roles</h1>
      <form
        aria-label="Find users"
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          setSearched(search.trim())
        }}
      >
        <label>
          E-mail or name{' '}
          <input type="search" maxLength={254} value={search} onInput={(event) => setSearch(value(event))} />
        </label>
        <button type="submit">Find</button>
      </form>
      <OutcomeLine outcome={outcome} />
      <PagedTable<UserRow>
        key={`${round} ${list}`}
        path={list}
        label="Users"
        empty={searched ? `No user's e-mail or name contains “${searched}”.` : 'None yet.'}
        caption="Users and their roles"
        columns={['E-mail', 'Name', 'Roles']}
        row={(user) => (
          <tr key={user.id}>
            <td>{user.email}</td>
            <td>{user.name}</td>
            <td>
              <ul class="roles">
                {user.roles.map((held) => (
                  <li key={`${held.role} ${held.domain}`}>
                    {where(held)}{' '}
                    <button
                      type="button"
                      aria-label={`Remove ${where(held)} from ${user.email}`}
                      onClick={() => removal.ask({ user, held })}
                    >
                      Remove
                    </button>
                  </li>
                ))}
              </ul>
            </td>
          </tr>
        )}
      />
      {removal.question}
      <Show loaded={choices}>
        {({ roles, repositories, more }) => {
          const role = roles.find((r) => r.role === form.role)
          const inRepository = role?.domain_kind === 'repository'
          const repository = repositories.find((r) => r.id === form.repository)
          const assign = async (event: Event) => {
            event.preventDefault()
            const body = { email: form.email, role: form.role, domain: inRepository ? form.repository : 'system' }
            const done = `${form.email} is now ${form.role}${inRepository ? ` in ${repository?.name ?? form.repository}` : ''}.`
            if (await changeRole('PUT', body, done)) setForm({ ...form, email: '' })
          }
          return (
            <form class="inline" onSubmit={assign}>
              <h2>Give a role</h2>
              <p class="meta">
                A repository role replaces the role the user held in that repository; a system role is added to their
                others.
              </p>
              <EmailField value={form.email} onInput={(email) => setForm({ ...form, email })} />
              <label>
                Role{' '}
                <RoleSelect
                  required
                  value={form.role}
                  placeholder="Choose a role"
                  groups={(['repository', 'system'] as const).map((kind) => ({
                    label: kind === 'system' ? 'System roles' : 'Repository roles',
                    roles: roles.filter((r) => r.domain_kind === kind).map((r) => r.role),
                  }))}
                  onChoose={(role) => setForm({ ...form, role })}
                />
              </label>
              {inRepository && (
                <label>
                  Repository{' '}
                  <select
                    required
                    value={form.repository}
                    onChange={(event) => setForm({ ...form, repository: value(event) })}
                  >
                    <option value="">Choose a repository</option>
                    {repositories.map((r) => (
                      <option key={r.id} value={r.id}>
                        {r.name} ({r.slug})
                      </option>
                    ))}
                  </select>
                </label>
              )}
              {inRepository && more && (
                <p class="meta">
                  Only the first {PICKER_REPOSITORIES} repositories are offered here; for another, use its Members page.
                </p>
              )}
              <button type="submit">Give the role</button>
            </form>
          )
        }}
      </Show>
      <NewAccount />
    </>
  )
}

/** An account made for someone: outright, or (REGISTRATION=invite) an invitation code for them to sign up with. */
function NewAccount() {
  const [form, setForm] = useState({ email: '', name: '', password: '' })
  const [outcome, setOutcome] = useState<{ error?: unknown; done?: string; code?: string }>({})
  const field = (name: keyof typeof form) => ({
    value: form[name],
    onInput: (event: Event) => setForm({ ...form, [name]: value(event) }),
  })
  const run = async (send: () => Promise<{ done: string; code?: string }>) => {
    setOutcome({})
    try {
      setOutcome(await send())
      setForm({ email: '', name: '', password: '' })
    } catch (error) {
      setOutcome({ error })
    }
  }
  const create = (event: Event) => {
    event.preventDefault()
    void run(async () => {
      const user = await request<{ email: string }>('POST', '/api/v1/admin/users', {
        email: form.email,
        password: form.password,
        ...(form.name ? { name: form.name } : {}),
      })
      return { done: `The account ${user.email} is made: give them the password, and they sign in.` }
    })
  }
  const invite = () =>
    run(async () => {
      const invitation = await request<{ email: string; code: string; expires_at: string }>(
        'POST',
        '/api/v1/admin/invitations',
        { email: form.email },
      )
      return {
        done: `${invitation.email} is invited until ${invitation.expires_at.slice(0, 10)}. Give them this code (it is shown only now):`,
        code: invitation.code,
      }
    })
  return (
    <form class="inline" onSubmit={create}>
      <h2>New account</h2>
      <p class="meta">
        {registration === 'invite'
          ? 'Invite someone: they sign up with the code, for this e-mail address only. Or make the account yourself, with a password you give them.'
          : 'Make an account with a password you give them.'}
      </p>
      <label>
        E-mail <input type="email" required maxLength={254} {...field('email')} />
      </label>
      <label>
        Name <input maxLength={200} {...field('name')} />
      </label>
      <label>
        Password{' '}
        <input
          type="password"
          required
          autoComplete="new-password"
          minLength={PASSWORD_MIN}
          maxLength={PASSWORD_MAX}
          aria-describedby="new-password-rules"
          {...field('password')}
        />
      </label>
      <p id="new-password-rules" class="meta">
        {PASSWORD_MIN} to {PASSWORD_MAX} characters; not needed for an invitation.
      </p>
      <button type="submit">Create the account</button>
      {registration === 'invite' && (
        <button
          type="button"
          onClick={(event) =>
            (
              event.currentTarget.form?.querySelector('input[type=email]') as HTMLInputElement | null
            )?.reportValidity() && invite()
          }
        >
          Invite
        </button>
      )}
      {outcome.error !== undefined && <ErrorBox error={outcome.error} />}
      {outcome.done && (
        <p role="status">
          {outcome.done} {outcome.code && <code>{outcome.code}</code>}
        </p>
      )}
    </form>
  )
}
