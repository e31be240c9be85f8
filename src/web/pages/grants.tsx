// The agents the person let in (GET /api/v1/oauth/grants), each revocable after a confirmation:
// its tokens stop working at once. This app's own sign-in is listed too, and revoked by signing out.
import { useState } from 'preact/hooks'
import { apiPath, request } from '../api.ts'
import { clientId } from '../auth.ts'
import { Confirm } from '../confirm.tsx'
import { ErrorBox, Paged, shortDate } from '../ui.tsx'

interface Grant {
  id: string
  client_id: string
  client_name: string
  scope: string
  created_at: string
  expires_at: string
}

export function Grants() {
  const [round, setRound] = useState(0)
  const [outcome, setOutcome] = useState<{ error?: unknown; done?: string }>({})
  const [revoking, setRevoking] = useState<Grant>()
  const revoke = async (grant: Grant) => {
    setRevoking(undefined)
    setOutcome({})
    try {
      const revoked = await request<Grant>('DELETE', apiPath`/api/v1/oauth/grants/${grant.id}`)
      setOutcome({ done: `${revoked.client_name || revoked.client_id} can no longer act for you.` })
    } catch (error) {
      setOutcome({ error })
    }
    setRound((n) => n + 1)
  }
  return (
    <>
      <h1 tabIndex={-1}>Connected agents</h1>
      <p>The applications you let act for you, with what they may do. Revoking one stops its tokens at once.</p>
      {outcome.error !== undefined && <ErrorBox error={outcome.error} />}
      {outcome.done && <p role="status">{outcome.done}</p>}
      <Paged<Grant> key={round} path="/api/v1/oauth/grants" label="Agents" empty="No agent has access.">
        {(rows) => (
          <table>
            <caption class="visually-hidden">Agents with access</caption>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">May</th>
                <th scope="col">Since</th>
                <th scope="col">Until</th>
                <th scope="col">Revoke</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((grant) => (
                <tr key={grant.id}>
                  <td>
                    {grant.client_name || '(unnamed)'}
                    <span class="meta"> {grant.client_id}</span>
                  </td>
                  <td>{grant.scope}</td>
                  <td>{shortDate(grant.created_at)}</td>
                  <td>{shortDate(grant.expires_at)}</td>
                  <td>
                    {grant.client_id === clientId ? (
                      <span class="meta">this app: sign out</span>
                    ) : (
                      <button type="button" aria-label={`Revoke ${grant.client_name || grant.client_id}`} onClick={() => setRevoking(grant)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Paged>
      {revoking && (
        <Confirm question={`Revoke the access of ${revoking.client_name || revoking.client_id}?`} action="Revoke" onConfirm={() => revoke(revoking)} onCancel={() => setRevoking(undefined)} />
      )}
    </>
  )
}
