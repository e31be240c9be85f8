// The Agents page (GET /api/v1/oauth/grants): first this app's own sessions, one per browser:
// this browser's (signed out from here) and any other's, each ended after a confirmation; then the
// agents the person let in, each revocable after a confirmation. Either way its tokens stop
// working at once.
import { apiPath, request } from '../api.ts'
import { signOut } from '../auth.ts'
import { OutcomeLine, useChanges, useConfirm } from '../changes.tsx'
import { navigate, PagedTable, shortDate } from '../ui.tsx'

interface Grant {
  id: string
  client_id: string
  client_name: string
  scope: string
  created_at: string
  expires_at: string
  last_used_at: string
  browser: string | null
  current: boolean
}

const moment = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
const agentName = (grant: Grant) => grant.client_name || grant.client_id
const browserName = (grant: Grant) => grant.browser ?? 'a browser'
/** A session to end or an agent to revoke: the question asked first, and what is said once done. */
interface Revoking {
  grant: Grant
  question: string
  action: string
  done: string
}

export function Grants() {
  const { round, outcome, change } = useChanges()
  const revoking = useConfirm(
    ({ question, action }: Revoking) => ({ question, action }),
    ({ grant, done }) =>
      change(async () => {
        await request<Grant>('DELETE', apiPath`/api/v1/oauth/grants/${grant.id}`)
        return done
      }),
  )
  const out = async () => {
    await signOut()
    navigate('/app', true)
  }
  const endSession = (grant: Grant) =>
    revoking.ask({
      grant,
      question: `End the session in ${browserName(grant)}?`,
      action: 'End',
      done: `The session in ${browserName(grant)} has ended: that browser is signed out.`,
    })
  const revokeAgent = (grant: Grant) =>
    revoking.ask({
      grant,
      question: `Revoke the access of ${agentName(grant)}?`,
      action: 'Revoke',
      done: `${agentName(grant)} can no longer act for you.`,
    })
  return (
    <>
      <h1 tabIndex={-1}>Connected agents</h1>
      <OutcomeLine outcome={outcome} />
      <h2>Where you are signed in</h2>
      <p>This app keeps one session per browser. Ending another browser's signs it out at once.</p>
      <PagedTable<Grant>
        key={`app ${round}`}
        path="/api/v1/oauth/grants?web_app=true"
        label="Sessions"
        empty="No browser is signed in."
        caption="Browsers signed in to this app"
        columns={['Browser', 'Signed in', 'Last used', 'End']}
        row={(grant) => (
          <tr key={grant.id}>
            <td>
              {grant.current ? 'This browser' : 'Another browser'}
              {grant.browser && <span class="meta"> {grant.browser}</span>}
            </td>
            <td>{shortDate(grant.created_at)}</td>
            <td>{moment(grant.last_used_at)}</td>
            <td>
              {grant.current ? (
                <button type="button" onClick={out}>
                  Sign out
                </button>
              ) : (
                <button
                  type="button"
                  aria-label={`End the session in ${browserName(grant)}, last used ${moment(grant.last_used_at)}`}
                  onClick={() => endSession(grant)}
                >
                  End
                </button>
              )}
            </td>
          </tr>
        )}
      />
      <h2>Agents</h2>
      <p>The applications you let act for you, with what they may do. Revoking one stops its tokens at once.</p>
      <PagedTable<Grant>
        key={`agents ${round}`}
        path="/api/v1/oauth/grants?web_app=false"
        label="Agents"
        empty="No agent has access."
        caption="Agents with access"
        columns={['Agent', 'May', 'Since', 'Until', 'Revoke']}
        row={(grant) => (
          <tr key={grant.id}>
            <td>
              {grant.client_name || '(unnamed)'}
              <span class="meta"> {grant.client_id}</span>
            </td>
            <td>{grant.scope}</td>
            <td>{shortDate(grant.created_at)}</td>
            <td>{shortDate(grant.expires_at)}</td>
            <td>
              <button type="button" aria-label={`Revoke ${agentName(grant)}`} onClick={() => revokeAgent(grant)}>
                Revoke
              </button>
            </td>
          </tr>
        )}
      />
      {revoking.question}
    </>
  )
}
