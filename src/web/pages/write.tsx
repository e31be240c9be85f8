// Writing a repository's graph: add and edit a fact, a concept, a report; delete one with a
// confirmation. Every write goes through the public write API, an edit or a delete with the ETag
// the page read in If-Match, so a row changed meanwhile is the API's 412, shown as such. The
// buttons and forms show where the caller's permissions allow (permissions.tsx); the API judges all the same.
import { useState } from 'preact/hooks'
import { apiPath, read, request } from '../api.ts'
import { Allowed, useCan } from '../permissions.tsx'
import { Link, navigate, tell } from '../ui.tsx'
import { paths } from './paths.ts'
import { Confirm } from '../confirm.tsx'
import { collection, type Kind, WriteError } from './write/form.tsx'
import { FactEditor } from './write/fact.tsx'
import { ConceptEditor } from './write/concept.tsx'
import { ReportEditor } from './write/report.tsx'

const KINDS: Record<string, Kind> = { facts: 'fact', concepts: 'concept', reports: 'report' }

/**
 * The page that writes `tab`'s rows at …/<tab>/new and …/<tab>/<id>/edit, if that is the path:
 * its form where the caller may write the kind, else what that needs (no form to fill in vain).
 */
export function writePage(repo: string, tab: string, id: string | undefined, action: string | undefined) {
  const kind = KINDS[tab]
  if (!kind || !id || (id !== 'new' && action !== 'edit')) return undefined
  const editing = id === 'new' ? undefined : id
  const form =
    kind === 'fact' ? (
      <FactEditor repo={repo} id={editing} />
    ) : kind === 'concept' ? (
      <ConceptEditor repo={repo} id={editing} />
    ) : (
      <ReportEditor repo={repo} id={editing} />
    )
  return (
    <Allowed
      permission={`${kind}:write`}
      doing={editing ? `Editing this ${kind}` : `Adding a ${kind}`}
      heading={editing ? `Edit the ${kind}` : `New ${kind}`}
    >
      {form}
    </Allowed>
  )
}

/** Above a list: "Add a …"; above a row's page: edit and delete it. Only where the caller may write. */
export function WriteBar({ repo, tab, id }: { repo: string; tab: string; id: string | undefined }) {
  const kind = KINDS[tab]
  return kind ? <KindWriteBar repo={repo} tab={tab} kind={kind} id={id} /> : null
}

function KindWriteBar({ repo, tab, kind, id }: { repo: string; tab: string; kind: Kind; id: string | undefined }) {
  const can = useCan()
  if (!can(`${kind}:write`)) return null
  const to = paths(repo)
  if (!id)
    return (
      <p class="actions">
        <Link href={`${to.base}/${tab}/new`}>Add a {kind}</Link>
      </p>
    )
  return (
    <div class="actions">
      <Link href={`${to.base}/${tab}/${id}/edit`}>Edit this {kind}</Link>
      <Delete repo={repo} kind={kind} id={id} />
    </div>
  )
}
/**
 * Delete, after a confirmation, of the row as read when the person asks to delete it (its id as
 * the API answered it, its ETag in If-Match): read then, not as the page opens, so the page
 * arrives with its own reads alone, and the confirmation names the row as it is.
 */
function Delete({ repo, kind, id }: { repo: string; kind: Kind; id: string }) {
  const [row, setRow] = useState<{ value: { id: string }; etag: string }>()
  const [busy, setBusy] = useState<string | false>(false)
  const [error, setError] = useState<unknown>()
  const ask = async () => {
    setError(undefined)
    setBusy('Reading…')
    try {
      setRow(await read<{ id: string }>(apiPath`/${repo}/${collection(kind)}/${id}`))
    } catch (failure) {
      setError(failure)
    }
    setBusy(false)
  }
  const remove = async () => {
    if (!row) return
    setError(undefined)
    setBusy('Deleting…')
    try {
      await request('DELETE', apiPath`/${repo}/${collection(kind)}/${row.value.id}`, undefined, {
        'if-match': row.etag,
      })
      tell(`The ${kind} is deleted.`)
      navigate(`${paths(repo).base}/${collection(kind)}`)
    } catch (failure) {
      setError(failure)
      setBusy(false)
    }
  }
  return (
    <>
      {!row ? (
        <button type="button" class="danger" disabled={busy !== false} onClick={ask}>
          Delete this {kind}
        </button>
      ) : (
        <Confirm
          question={`Delete this ${kind} for good?`}
          action="Yes, delete it"
          busy={busy}
          onConfirm={remove}
          onCancel={() => setRow(undefined)}
        >
          {kind === 'fact'
            ? 'Its links go with it; texts that cite it keep their words.'
            : kind === 'report'
              ? 'Its parts go with it.'
              : 'Its links and summaries go with it.'}
        </Confirm>
      )}
      {error !== undefined && <WriteError repo={repo} kind={kind} error={error} reload={() => location.reload()} />}
    </>
  )
}
