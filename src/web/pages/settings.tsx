// A repository's settings: what it is called and where it lives, and, for whoever may delete it,
// its deletion. That cannot be undone, so the page asks for the repository's slug, typed, and the
// API is sent it as the confirmation it requires ({"confirm": slug}); the id deleted is the one the
// API answered for this page, never a segment of the address.
import { useState } from 'preact/hooks'
import { apiPath, request } from '../api.ts'
import { useCan } from '../permissions.tsx'
import type { Repository } from '../types.ts'
import { ErrorBox, navigate, Show, tell, useLoad } from '../ui.tsx'

const value = (event: Event) => (event.target as HTMLInputElement).value

export function Settings({ repo }: { repo: string }) {
  const can = useCan()
  const [loaded] = useLoad(() => request<Repository>('GET', apiPath`/api/v1/repositories/${repo}`), `settings ${repo}`)
  return (
    <>
      <h1 tabIndex={-1}>Settings</h1>
      <Show loaded={loaded}>
        {(repository) => (
          <>
            <dl>
              <dt>Name</dt>
              <dd>{repository.name}</dd>
              <dt>Slug (its address)</dt>
              <dd>
                <code>{repository.slug}</code>
              </dd>
              <dt>Id</dt>
              <dd>
                <code>{repository.id}</code>
              </dd>
            </dl>
            {can('repository:delete') && <DeleteRepository repository={repository} />}
          </>
        )}
      </Show>
    </>
  )
}

function DeleteRepository({ repository }: { repository: Repository }) {
  const [asking, setAsking] = useState(false)
  const [typed, setTyped] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>()
  const remove = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      await request('DELETE', apiPath`/api/v1/repositories/${repository.id}`, { confirm: typed })
      tell(`The repository ${repository.name} is deleted.`)
      navigate('/app')
    } catch (failure) {
      setError(failure)
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="delete-repository">
      <h2 id="delete-repository">Delete this repository</h2>
      {!asking ? (
        <button type="button" class="danger" onClick={() => setAsking(true)}>
          Delete this repository…
        </button>
      ) : (
        <form onSubmit={remove} aria-label="Delete this repository">
          <fieldset class="confirm">
            <legend>Delete {repository.name} for good?</legend>
            <p>
              Its facts, concepts, sources, investigations, reports, members and jobs go with it. This cannot be undone.
            </p>
            <label>
              Type its slug, <code>{repository.slug}</code>, to confirm
              <input value={typed} autoComplete="off" spellcheck={false} onInput={(event) => setTyped(value(event))} />
            </label>
            <button type="submit" class="danger" disabled={busy || typed !== repository.slug}>
              {busy ? 'Deleting…' : 'Delete the repository'}
            </button>
            <button
              type="button"
              onClick={() => {
                setAsking(false)
                setTyped('')
              }}
            >
              Cancel
            </button>
          </fieldset>
        </form>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </section>
  )
}
