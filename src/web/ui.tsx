// Small pieces every page uses: in-app links, loading and error states, paged lists.
import type { ComponentChildren, JSX } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { page as fetchPage } from './api.ts'
import { type CitationHref, renderMarkdown, type SentenceLink } from './markdown.ts'
import { appHref } from './routes.ts'

type Listener = () => void
const listeners = new Set<Listener>()
export const onNavigate = (listener: Listener) => {
  listeners.add(listener)
  return () => listeners.delete(listener)
}
export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, '', href)
  else history.pushState(null, '', href)
  for (const listener of listeners) listener()
  // The page changed: focus moves to its heading, as a screen reader expects after a link.
  requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus())
}
addEventListener('popstate', () => {
  for (const listener of listeners) listener()
})

/** What an action did, said on the page it led to (a deleted row's list, a created row's page). */
let told: string | undefined
export const tell = (message: string) => {
  told = message
}

/** The message of the action that led here, once, in a polite live region (keyed by the path: a new page takes it). */
export function Told() {
  const [message] = useState(() => {
    const taken = told
    told = undefined
    return taken
  })
  return message ? (
    <p role="status" class="told">
      {message}
    </p>
  ) : null
}

/** `n` and the noun, singular or plural as `n` says (`plural(1, 'report')`: "1 report"). */
export const plural = (n: number, noun: string, nouns = `${noun}s`) => `${n} ${n === 1 ? noun : nouns}`

/** A link inside the app: a real <a> (keyboard, new tab) that navigates without a reload. */
export function Link({
  href,
  children,
  ...rest
}: { href: string; children: ComponentChildren } & JSX.HTMLAttributes<HTMLAnchorElement>) {
  const click = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    navigate(href)
  }
  return (
    <a href={href} onClick={click} {...rest}>
      {children}
    </a>
  )
}

export function ErrorBox({ error }: { error: unknown }) {
  return (
    <p class="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  )
}

type Loaded<T> = { state: 'loading' } | { state: 'done'; value: T } | { state: 'failed'; error: unknown }

/**
 * Runs `load` whenever `key` changes; `reload` runs it again. What was loaded for another key is
 * never shown: in the render after a change of key (before the effect runs) it is loading.
 */
export function useLoad<T>(load: () => Promise<T>, key: string): [Loaded<T>, () => void] {
  const [loaded, setLoaded] = useState<{ key: string; value: Loaded<T> }>({ key, value: { state: 'loading' } })
  const [round, setRound] = useState(0)
  useEffect(() => {
    let current = true
    setLoaded({ key, value: { state: 'loading' } })
    load().then(
      (value) => current && setLoaded({ key, value: { state: 'done', value } }),
      (error) => current && setLoaded({ key, value: { state: 'failed', error } }),
    )
    return () => {
      current = false
    }
  }, [key, round])
  return [loaded.key === key ? loaded.value : { state: 'loading' }, () => setRound((n) => n + 1)]
}

/** What a load shows: a status while loading, the API's error, or `children` of the value. */
export function Show<T>({ loaded, children }: { loaded: Loaded<T>; children: (value: T) => ComponentChildren }) {
  if (loaded.state === 'loading') return <p aria-live="polite">Loading…</p>
  if (loaded.state === 'failed') return <ErrorBox error={loaded.error} />
  return <>{children(loaded.value)}</>
}

/**
 * A paginated list: one page at a time, never the whole table; Previous and Next, and the list's
 * length where the API says it, when there is more than one page. `empty`: what an empty list says.
 */
export function Paged<T>({
  path,
  label,
  limit,
  empty = 'None yet.',
  children,
}: {
  path: string
  label: string
  limit?: number
  /** A text, or what to show instead of an empty list. */
  empty?: ComponentChildren
  children: (rows: T[]) => ComponentChildren
}) {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined])
  const cursor = cursors[cursors.length - 1]
  useEffect(() => setCursors([undefined]), [path])
  const [loaded] = useLoad(() => fetchPage<T>(path, cursor, limit), `${path} ${cursor ?? ''}`)
  return (
    <Show loaded={loaded}>
      {({ rows, next, total }) => (
        <>
          {rows.length === 0 ? typeof empty === 'string' ? <p>{empty}</p> : empty : children(rows)}
          {(cursors.length > 1 || next) && (
            <nav class="pager" aria-label={`${label} pages`}>
              <button type="button" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
                Previous page
              </button>
              <span>
                Page {cursors.length}
                {total !== undefined && ` · ${total} in all`}
              </span>
              <button type="button" disabled={!next} onClick={() => setCursors([...cursors, next])}>
                Next page
              </button>
            </nav>
          )}
        </>
      )}
    </Show>
  )
}

/**
 * A paginated table (Paged): `caption` names it for screen readers, `columns` head it, and `row`
 * draws each item as its <tr> (with its key).
 */
export function PagedTable<T>({
  caption,
  columns,
  row,
  ...paged
}: {
  path: string
  label: string
  empty?: string
  caption: string
  columns: readonly string[]
  row: (item: T) => ComponentChildren
}) {
  return (
    <Paged<T> {...paged}>
      {(rows) => (
        <table>
          <caption class="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column} scope="col">
                  {column}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>{rows.map(row)}</tbody>
        </table>
      )}
    </Paged>
  )
}

/**
 * Markdown from the graph, rendered inert (markdown.ts) into this element. `under`: the level of
 * the page's heading it sits under (its own headings go below it).
 */
export function Markdown({
  source,
  href,
  links,
  under = 1,
}: {
  source: string
  href: CitationHref
  links?: SentenceLink[]
  under?: number
}) {
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const fragment = renderMarkdown(source, href, links, under)
    // Links within the app (those that route: markdown.ts drops the others) navigate without a reload, as <Link> does.
    for (const anchor of fragment.querySelectorAll<HTMLAnchorElement>('a[href]')) {
      const to = appHref(anchor.getAttribute('href')!)
      if (to)
        anchor.addEventListener('click', (event) => {
          if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return
          event.preventDefault()
          navigate(to)
        })
    }
    ref.current?.replaceChildren(fragment)
  }, [source, links, under])
  return <div class="markdown" ref={ref} />
}

export const shortDate = (iso: string) => iso.slice(0, 10)
