// A repository's members (GET/PUT/DELETE /{repo}/members): who holds which role, and what each
// role may do; a repoadmin (or a sysadmin) adds one by e-mail, changes a role, removes one after
// a confirmation. A refusal (the last repoadmin, an unknown e-mail) is the API's own message.
import { useState } from 'preact/hooks'
import { apiPath, request } from '../api.ts'
import { Confirm } from '../confirm.tsx'
import { useCan } from '../permissions.tsx'
import { REPOSITORY_ROLES, ROLE_LINES } from '../roles.ts'
import { ErrorBox, Paged } from '../ui.tsx'

interface Member {
  user_id: string
  email: string
  name: string
  role: string
}

const roleOptions = REPOSITORY_ROLES.map((role) => (
  <option key={role} value={role}>
    {role}
  </option>
))
const selected = (event: Event) => (event.target as HTMLSelectElement).value

export function Members({ repo }: { repo: string }) {
  const members = apiPath`/${repo}/members`
  const canManage = useCan()('member:manage')
  const [round, setRound] = useState(0)
  const [outcome, setOutcome] = useState<{ error?: unknown; done?: string }>({})
  const [removing, setRemoving] = useState<Member>()
  const [email, setEmail] = useState('')
  const [role, setRole] = useState('viewer')
  const [busy, setBusy] = useState(false)
  /** Does one change; the list is read again either way (a refused role change shows the role kept). */
  const change = async (method: 'PUT' | 'DELETE', path: string, body: unknown, done: (member: Member) => string) => {
    setOutcome({})
    try {
      setOutcome({ done: done(await request<Member>(method, path, body)) })
      return true
    } catch (error) {
      setOutcome({ error })
      return false
    } finally {
      setRound((n) => n + 1)
    }
  }
  const add = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    if (await change('PUT', members, { email, role }, (member) => `${member.email} is now ${member.role}.`))
      setEmail('')
    setBusy(false)
  }
  const remove = async (member: Member) => {
    setRemoving(undefined)
    await change(
      'DELETE',
      apiPath`/${repo}/members/${member.user_id}`,
      undefined,
      (removed) => `${removed.email} is no longer a member.`,
    )
  }
  return (
    <>
      <h1 tabIndex={-1}>Members</h1>
      {outcome.error !== undefined && <ErrorBox error={outcome.error} />}
      {outcome.done && <p role="status">{outcome.done}</p>}
      <Paged<Member> key={round} path={members} label="Members">
        {(rows) => (
          <table>
            <caption class="visually-hidden">Members and their roles</caption>
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                {canManage && <th scope="col">Remove</th>}
              </tr>
            </thead>
            <tbody>
              {rows.map((member) => (
                <tr key={member.user_id}>
                  <td>{member.email}</td>
                  <td>{member.name}</td>
                  <td>
                    {canManage ? (
                      <select
                        value={member.role}
                        aria-label={`Role of ${member.email}`}
                        onChange={(event) =>
                          change(
                            'PUT',
                            members,
                            { email: member.email, role: selected(event) },
                            (changed) => `${changed.email} is now ${changed.role}.`,
                          )
                        }
                      >
                        {roleOptions}
                      </select>
                    ) : (
                      member.role
                    )}
                  </td>
                  {canManage && (
                    <td>
                      <button type="button" aria-label={`Remove ${member.email}`} onClick={() => setRemoving(member)}>
                        Remove
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Paged>
      <section aria-labelledby="roles">
        <h2 id="roles">What each role may do</h2>
        <dl class="roles">
          {ROLE_LINES.map(({ role, line }) => (
            <div key={role}>
              <dt>{role}</dt>
              <dd>{line}</dd>
            </div>
          ))}
        </dl>
        <p>
          {canManage
            ? 'You may give and change roles here.'
            : 'A repoadmin of this repository gives and changes roles: ask one of them (see the list above).'}
        </p>
      </section>
      {removing && (
        <Confirm
          question={`Remove ${removing.email} from this repository?`}
          action="Remove"
          onConfirm={() => remove(removing)}
          onCancel={() => setRemoving(undefined)}
        />
      )}
      {canManage && (
        <form class="inline" onSubmit={add}>
          <h2>Add a member</h2>
          <label>
            E-mail{' '}
            <input
              type="email"
              required
              maxLength={254}
              value={email}
              onInput={(event) => setEmail((event.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            Role{' '}
            <select
              value={role}
              aria-label="Role"
              aria-describedby="chosen-role"
              onChange={(event) => setRole(selected(event))}
            >
              {roleOptions}
            </select>
          </label>
          <button type="submit" disabled={busy}>
            {busy ? 'Adding…' : 'Add'}
          </button>
          <p id="chosen-role" class="meta">
            {ROLE_LINES.find((line) => line.role === role)?.line}
          </p>
        </form>
      )}
    </>
  )
}
