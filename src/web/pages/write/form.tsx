// What the write pages share: the editor frame that reads a row with its ETag, saving with
// If-Match, the refusals shown plainly, and pickers that page through a list.
import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, apiPath, page as fetchPage, request, versioned } from '../../api.ts'
import { ErrorBox, Link, navigate, Show, tell, useLoad } from '../../ui.tsx'
import { paths } from '../paths.ts'

export type Kind = 'fact' | 'concept' | 'report'
/** The API's collection of a kind's rows (`facts`, …). */
export const collection = (kind: Kind) => `${kind}s`
export const value = (event: Event) => (event.target as HTMLInputElement).value
/** The row as read, and the ETag its edit or delete names. */
export type Read<T> = { value: T; etag: string }

/** The write's refusal: a 412 says the row changed meanwhile (with a reload), a 409 links the row that exists. */
export function WriteError({
  repo,
  kind,
  error,
  reload,
}: {
  repo: string
  kind: Kind
  error: unknown
  reload?: () => void
}) {
  if (error instanceof ApiError && error.status === 412)
    return (
      <div class="error" role="alert">
        <p>This {kind} changed since you opened it — reload it, then make your change again.</p>
        <p class="meta">{error.message}</p>
        {reload && (
          <button type="button" onClick={reload}>
            Reload
          </button>
        )}
      </div>
    )
  if (error instanceof ApiError && error.status === 409 && error.existingId)
    return (
      <p class="error" role="alert">
        {error.message} <Link href={`${paths(repo).base}/${kind}s/${error.existingId}`}>Open the existing {kind}</Link>
      </p>
    )
  return <ErrorBox error={error} />
}
/** A choice among one page of a list at a time (never the whole table), more on request. */
export function Pick<T extends { id: string }>({
  label,
  action,
  path,
  name,
  onPick,
}: {
  label: string
  action: string
  path: string
  name: (row: T) => string
  onPick: (row: T) => void
}) {
  const [rows, setRows] = useState<T[]>([])
  const [next, setNext] = useState<string>()
  const [chosen, setChosen] = useState('')
  const [error, setError] = useState<unknown>()
  // The list of the latest path only: an answer for a prefix typed over since is dropped.
  const latest = useRef(path)
  latest.current = path
  const load = (cursor: string | undefined, before: T[]) =>
    fetchPage<T>(path, cursor).then(
      (got) => {
        if (latest.current !== path) return
        setRows([...before, ...got.rows])
        setNext(got.next)
      },
      (failure) => setError(failure),
    )
  useEffect(() => {
    setChosen('')
    setError(undefined)
    void load(undefined, [])
  }, [path])
  const pick = () => {
    const row = rows.find((candidate) => candidate.id === chosen)
    if (row) onPick(row)
  }
  return (
    <div class="pick">
      <label>
        {label}
        <select value={chosen} onChange={(event) => setChosen(value(event))}>
          <option value="">{rows.length ? 'Choose…' : 'None to choose'}</option>
          {rows.map((row) => (
            <option key={row.id} value={row.id}>
              {name(row)}
            </option>
          ))}
        </select>
      </label>
      {next && (
        <button type="button" onClick={() => load(next, rows)}>
          More to choose from
        </button>
      )}
      <button type="button" disabled={!chosen} onClick={pick}>
        {action}
      </button>
      {error !== undefined && <ErrorBox error={error} />}
    </div>
  )
}

/** Chosen rows, each with its own fields and a Remove button; `empty`: what no row says. */
export function Chosen<T>({
  label,
  empty,
  rows,
  name,
  children,
  onChange,
}: {
  label: string
  empty: string
  rows: T[]
  name: (row: T) => string
  children?: (row: T, i: number) => ComponentChildren
  onChange: (rows: T[]) => void
}) {
  if (!rows.length) return <p class="meta">{empty}</p>
  return (
    <ul class="rows" aria-label={label}>
      {rows.map((row, i) => (
        <li key={i} class="chosen">
          <span>{name(row)}</span>
          {children?.(row, i)}
          <button
            type="button"
            aria-label={`Remove ${name(row)}`}
            onClick={() => onChange(rows.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </li>
      ))}
    </ul>
  )
}

/**
 * Loads the row to edit (none for a new one) and shows `form` of it. A reload reads the row, and
 * its ETag, again, and starts the form over from it.
 */
export function Editor<T>({
  kind,
  path,
  children,
}: {
  kind: Kind
  path: string | undefined
  children: (read: Read<T> | undefined, reload: () => void) => ComponentChildren
}) {
  const [loaded, reload] = useLoad(
    () => (path ? versioned<T>('GET', path) : Promise.resolve(undefined)),
    path ?? `new ${kind}`,
  )
  return (
    <>
      <h1 tabIndex={-1}>{path ? `Edit the ${kind}` : `New ${kind}`}</h1>
      <Show loaded={loaded}>{(read) => children(read, reload)}</Show>
    </>
  )
}

/** Sends the form's body: a POST of a new row, or a PATCH with If-Match of the one read; then shows the row. */
export function useSave<T extends { id: string }>(repo: string, kind: Kind, read: Read<T> | undefined) {
  const [error, setError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const save = async (event: Event, body: Record<string, unknown>) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      const saved = read
        ? await request<T>('PATCH', apiPath`/${repo}/${collection(kind)}/${read.value.id}`, body, {
            'if-match': read.etag,
          })
        : await request<T>('POST', apiPath`/${repo}/${collection(kind)}`, body)
      tell(read ? `Your changes to the ${kind} are saved.` : `The ${kind} is created.`)
      navigate(`${paths(repo).base}/${kind}s/${saved.id}`)
    } catch (failure) {
      setError(failure)
      setBusy(false)
    }
  }
  return { error, busy, save }
}

/** `next` when it differs from `before` (an update sends only what changed: lists given replace links). */
export const changed = <T,>(before: T | undefined, next: T): T | undefined =>
  before !== undefined && JSON.stringify(before) === JSON.stringify(next) ? undefined : next
export const defined = (body: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined))

/** The form's button: disabled, and saying what it does, while the write is under way. */
export const Submit = ({ busy, read }: { busy: boolean; read: unknown }) => (
  <p>
    <button type="submit" disabled={busy}>
      {read ? (busy ? 'Saving changes…' : 'Save changes') : busy ? 'Creating…' : 'Create'}
    </button>
  </p>
)
