// A repository's members (GET/PUT/DELETE /{repo}/members): who holds which role, and what each
// role may do; a repoadmin (or a sysadmin) adds one by e-mail, changes a role, removes one after
// a confirmation. A refusal (the last repoadmin, an unknown e-mail) is the API's own message.
import { useState } from 'preact/hooks'
import { apiPath, request } from '../api.ts'
import { EmailField, OutcomeLine, RoleSelect, useChanges, useConfirm } from '../changes.tsx'
import { useCan } from '../permissions.tsx'
import { REPOSITORY_ROLES, ROLE_LINES } from '../roles.ts'
import { PagedTable } from '../ui.tsx'

interface Member {
  user_id: string
  email: string
  name: string
  role: string
}

const ROLE_GROUPS = [{ roles: REPOSITORY_ROLES }]

export function Members({ repo }: { repo: string }) {
  const members = apiPath`/${repo}/members`
  const canManage = useCan()('member:manage')
  const { round, outcome, change } = useChanges()
  const [email, setEmail] = useState('')
  const [role, setRole] = useState('viewer')
  const [busy, setBusy] = useState(false)
  /** Sets a member's role (adding them if they are not one yet). */
  const assign = (body: { email: string; role: string }) =>
    change(async () => {
      const member = await request<Member>('PUT', members, body)
      return `${member.email} is now ${member.role}.`
    })
  const add = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    if (await assign({ email, role })) setEmail('')
    setBusy(false)
  }
  const removal = useConfirm(
    (member: Member) => ({ question: `Remove ${member.email} from this repository?`, action: 'Remove' }),
    (member) =>
      change(async () => {
        const removed = await request<Member>('DELETE', apiPath`/${repo}/members/${member.user_id}`)
        return `${removed.email} is no longer a member.`
      }),
  )
  return (
    <>
      <h1 tabIndex={-1}>Members</h1>
      <OutcomeLine outcome={outcome} />
      <PagedTable<Member>
        key={round}
        path={members}
        label="Members"
        caption="Members and their roles"
        columns={['E-mail', 'Name', 'Role', ...(canManage ? ['Remove'] : [])]}
        row={(member) => (
          <tr key={member.user_id}>
            <td>{member.email}</td>
            <td>{member.name}</td>
            <td>
              {canManage ? (
                <RoleSelect
                  value={member.role}
                  groups={ROLE_GROUPS}
                  aria-label={`Role of ${member.email}`}
                  onChoose={(chosen) => assign({ email: member.email, role: chosen })}
                />
              ) : (
                member.role
              )}
            </td>
            {canManage && (
              <td>
                <button type="button" aria-label={`Remove ${member.email}`} onClick={() => removal.ask(member)}>
                  Remove
                </button>
              </td>
            )}
          </tr>
        )}
      />
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
      {removal.question}
      {canManage && (
        <form class="inline" onSubmit={add}>
          <h2>Add a member</h2>
          <EmailField value={email} onInput={setEmail} />
          <label>
            Role{' '}
            <RoleSelect
              value={role}
              groups={ROLE_GROUPS}
              aria-label="Role"
              aria-describedby="chosen-role"
              onChoose={setRole}
            />
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
