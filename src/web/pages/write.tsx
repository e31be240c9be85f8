// Writing a repository's graph: add and edit a fact, a concept, a report; delete one with a
// confirmation. Every write goes through the public write API, an edit or a delete with the ETag
// the page read in If-Match, so a row changed meanwhile is the API's 412, shown as such. The
// buttons show where the caller's permissions (GET /permissions) allow; the API judges all the same.
import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, get, page as fetchPage, request, versioned } from '../api.ts'
import type { Concept, ConceptDetail, Fact, FactDetail, Report, ReportDetail, Source } from '../types.ts'
import { ErrorBox, Link, Markdown, navigate, Show, useLoad } from '../ui.tsx'
import { paths } from './graph.tsx'
import { Confirm } from '../confirm.tsx'

type Kind = 'fact' | 'concept' | 'report'
const KINDS: Record<string, Kind> = { facts: 'fact', concepts: 'concept', reports: 'report' }
const api = (repo: string, path: string) => `/${encodeURIComponent(repo)}${path}`
const value = (event: Event) => (event.target as HTMLInputElement).value
/** The row as read, and the ETag its edit or delete names. */
type Read<T> = { value: T; etag: string }

/** The caller's permissions in the repository ("fact:write", …): none while they load, or if the API refuses them. */
function usePermissions(repo: string): Set<string> {
  const [loaded] = useLoad(() => request<{ permissions: { resource: string; action: string }[] }>('GET', '/api/v1/permissions', undefined, { 'x-repository-id': repo }), `permissions ${repo}`)
  return new Set(loaded.state === 'done' ? loaded.value.permissions.map(({ resource, action }) => `${resource}:${action}`) : [])
}

/** The page that writes `tab`'s rows at …/<tab>/new and …/<tab>/<id>/edit, if that is the path. */
export function writePage(repo: string, tab: string, id: string | undefined, action: string | undefined) {
  const kind = KINDS[tab]
  if (!kind || !id || (id !== 'new' && action !== 'edit')) return undefined
  const editing = id === 'new' ? undefined : id
  if (kind === 'fact') return <FactEditor repo={repo} id={editing} />
  if (kind === 'concept') return <ConceptEditor repo={repo} id={editing} />
  return <ReportEditor repo={repo} id={editing} />
}

/** Above a list: "Add a …"; above a row's page: edit and delete it. Only where the caller may write. */
export function WriteBar({ repo, tab, id }: { repo: string; tab: string; id: string | undefined }) {
  const kind = KINDS[tab]
  return kind ? <KindWriteBar repo={repo} tab={tab} kind={kind} id={id} /> : null
}

function KindWriteBar({ repo, tab, kind, id }: { repo: string; tab: string; kind: Kind; id: string | undefined }) {
  const permissions = usePermissions(repo)
  if (!permissions.has(`${kind}:write`)) return null
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

/** The write's refusal: a 412 says the row changed meanwhile (with a reload), a 409 links the row that exists. */
function WriteError({ repo, kind, error, reload }: { repo: string; kind: Kind; error: unknown; reload?: () => void }) {
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

/** Delete, after a confirmation, with the ETag read when the page opened. */
function Delete({ repo, kind, id }: { repo: string; kind: Kind; id: string }) {
  const path = api(repo, `/${kind}s/${id}`)
  const [read, reread] = useLoad(() => versioned<unknown>('GET', path), path)
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<unknown>()
  const remove = async () => {
    setError(undefined)
    try {
      await request('DELETE', path, undefined, read.state === 'done' ? { 'if-match': read.value.etag } : {})
      navigate(`${paths(repo).base}/${kind}s`)
    } catch (failure) {
      setError(failure)
    }
  }
  return (
    <>
      {!confirming ? (
        <button type="button" class="danger" disabled={read.state !== 'done'} onClick={() => setConfirming(true)}>
          Delete this {kind}
        </button>
      ) : (
        <Confirm question={`Delete this ${kind} for good?`} action="Yes, delete it" onConfirm={remove} onCancel={() => setConfirming(false)}>
          {kind === 'fact' ? 'Its links go with it; texts that cite it keep their words.' : kind === 'report' ? 'Its parts go with it.' : 'Its links and summaries go with it.'}
        </Confirm>
      )}
      {error !== undefined && <WriteError repo={repo} kind={kind} error={error} reload={() => location.reload()} />}
      {read.state === 'failed' && (
        <button type="button" onClick={reread}>
          Read it again
        </button>
      )}
    </>
  )
}

/** A choice among one page of a list at a time (never the whole table), more on request. */
function Pick<T extends { id: string }>({ label, action, path, name, onPick }: { label: string; action: string; path: string; name: (row: T) => string; onPick: (row: T) => void }) {
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

/** Chosen rows, each with its own fields and a Remove button. */
function Chosen<T>({
  label,
  rows,
  name,
  children,
  onChange,
}: {
  label: string
  rows: T[]
  name: (row: T) => string
  children?: (row: T, i: number) => ComponentChildren
  onChange: (rows: T[]) => void
}) {
  if (!rows.length) return <p class="meta">No {label.toLowerCase()} yet.</p>
  return (
    <ul class="rows" aria-label={label}>
      {rows.map((row, i) => (
        <li key={i} class="chosen">
          <span>{name(row)}</span>
          {children?.(row, i)}
          <button type="button" aria-label={`Remove ${name(row)}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
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
function Editor<T>({ kind, path, children }: { kind: Kind; path: string | undefined; children: (read: Read<T> | undefined, reload: () => void) => ComponentChildren }) {
  const [loaded, reload] = useLoad(() => (path ? versioned<T>('GET', path) : Promise.resolve(undefined)), path ?? `new ${kind}`)
  return (
    <>
      <h1 tabIndex={-1}>{path ? `Edit the ${kind}` : `New ${kind}`}</h1>
      <Show loaded={loaded}>{(read) => children(read, reload)}</Show>
    </>
  )
}

/** Sends the form's body: a POST of a new row, or a PATCH with If-Match of the one read; then shows the row. */
function useSave<T extends { id: string }>(repo: string, kind: Kind, read: Read<T> | undefined) {
  const [error, setError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const save = async (event: Event, body: Record<string, unknown>) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      const saved = read ? await request<T>('PATCH', api(repo, `/${kind}s/${read.value.id}`), body, { 'if-match': read.etag }) : await request<T>('POST', api(repo, `/${kind}s`), body)
      navigate(`${paths(repo).base}/${kind}s/${saved.id}`)
    } catch (failure) {
      setError(failure)
      setBusy(false)
    }
  }
  return { error, busy, save }
}

/** `next` when it differs from `before` (an update sends only what changed: lists given replace links). */
const changed = <T,>(before: T | undefined, next: T): T | undefined => (before !== undefined && JSON.stringify(before) === JSON.stringify(next) ? undefined : next)
const defined = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined))

const Submit = ({ busy, read }: { busy: boolean; read: unknown }) => (
  <p>
    <button type="submit" disabled={busy}>
      {read ? 'Save changes' : 'Create'}
    </button>
  </p>
)

function FactEditor({ repo, id }: { repo: string; id: string | undefined }) {
  return (
    <Editor<FactDetail> kind="fact" path={id && api(repo, `/facts/${id}`)}>
      {(read, reload) => <FactForm key={read?.etag} repo={repo} read={read} reload={reload} />}
    </Editor>
  )
}

type FactSourceLink = { source_id: string; chunk_index: number; name: string }
type FactConceptLink = { concept_id: string; name: string }

function FactForm({ repo, read, reload }: { repo: string; read: Read<FactDetail> | undefined; reload: () => void }) {
  const fact = read?.value
  const [text, setText] = useState(fact?.text ?? '')
  const [status, setStatus] = useState(fact?.status ?? 'new')
  const initialSources = fact?.sources.map((s) => ({ source_id: s.id, chunk_index: s.chunk_index, name: s.parsed_title || s.url }))
  const initialConcepts = fact?.concepts.map((c) => ({ concept_id: c.id, name: c.canonical_name }))
  const [sources, setSources] = useState<FactSourceLink[]>(initialSources ?? [])
  const [concepts, setConcepts] = useState<FactConceptLink[]>(initialConcepts ?? [])
  const [prefix, setPrefix] = useState('')
  const { error, busy, save } = useSave(repo, 'fact', read)
  const links = <T extends object>(rows: T[], keys: (keyof T)[]) => rows.map((row) => Object.fromEntries(keys.map((key) => [key, row[key]])))
  const submit = (event: Event) =>
    save(
      event,
      defined({
        text: changed(fact?.text, text),
        status: changed(fact?.status, status),
        sources: changed(initialSources && links(initialSources, ['source_id', 'chunk_index']), links(sources, ['source_id', 'chunk_index'])),
        concepts: changed(initialConcepts && links(initialConcepts, ['concept_id']), links(concepts, ['concept_id'])),
      }),
    )
  return (
    <form onSubmit={submit} class="editor" aria-label={fact ? 'Edit the fact' : 'New fact'}>
      <label>
        Text
        <textarea required rows={4} value={text} onInput={(event) => setText(value(event))} />
      </label>
      <label>
        Status
        <select value={status} onChange={(event) => setStatus(value(event))}>
          <option value="new">new</option>
          <option value="stable">stable</option>
          <option value="to_delete">to delete</option>
        </select>
      </label>
      <fieldset>
        <legend>Sources</legend>
        <Chosen<FactSourceLink> label="Its sources" rows={sources} name={(s) => s.name} onChange={setSources}>
          {(source, i) => (
            <label>
              Chunk
              <input type="number" min={0} value={source.chunk_index} onInput={(event) => setSources(sources.map((s, j) => (j === i ? { ...s, chunk_index: Number(value(event)) || 0 } : s)))} />
            </label>
          )}
        </Chosen>
        <Pick<Source>
          label="Source"
          action="Add the source"
          path={api(repo, '/sources')}
          name={(s) => s.parsed_title || s.url}
          onPick={(s) => setSources([...sources, { source_id: s.id, chunk_index: 0, name: s.parsed_title || s.url }])}
        />
      </fieldset>
      <fieldset>
        <legend>Concepts</legend>
        <Chosen<FactConceptLink> label="Its concepts" rows={concepts} name={(c) => c.name} onChange={setConcepts} />
        <label>
          Concepts whose name starts with
          <input type="search" value={prefix} onInput={(event) => setPrefix(value(event))} />
        </label>
        <Pick<Concept>
          label="Concept"
          action="Add the concept"
          path={api(repo, `/concepts${prefix ? `?prefix=${encodeURIComponent(prefix)}` : ''}`)}
          name={(c) => (c.context ? `${c.canonical_name} (${c.context})` : c.canonical_name)}
          onPick={(c) => concepts.some((link) => link.concept_id === c.id) || setConcepts([...concepts, { concept_id: c.id, name: c.canonical_name }])}
        />
      </fieldset>
      {error !== undefined && <WriteError repo={repo} kind="fact" error={error} reload={reload} />}
      <Submit busy={busy} read={read} />
    </form>
  )
}

function ConceptEditor({ repo, id }: { repo: string; id: string | undefined }) {
  return (
    <Editor<ConceptDetail> kind="concept" path={id && api(repo, `/concepts/${id}`)}>
      {(read, reload) => <ConceptForm key={read?.etag} repo={repo} read={read} reload={reload} />}
    </Editor>
  )
}

function ConceptForm({ repo, read, reload }: { repo: string; read: Read<ConceptDetail> | undefined; reload: () => void }) {
  const concept = read?.value
  const [name, setName] = useState(concept?.canonical_name ?? '')
  const [context, setContext] = useState(concept?.context ?? '')
  const [description, setDescription] = useState(concept?.description ?? '')
  const [aliases, setAliases] = useState((concept?.aliases ?? []).join('\n'))
  const { error, busy, save } = useSave(repo, 'concept', read)
  const aliasList = aliases
    .split('\n')
    .map((alias) => alias.trim())
    .filter(Boolean)
  const submit = (event: Event) =>
    save(
      event,
      defined({
        canonical_name: changed(concept?.canonical_name, name),
        context: changed(concept?.context, context),
        description: changed(concept?.description, description),
        aliases: changed(concept?.aliases, aliasList),
      }),
    )
  return (
    <form onSubmit={submit} class="editor" aria-label={concept ? 'Edit the concept' : 'New concept'}>
      <label>
        Name
        <input required value={name} onInput={(event) => setName(value(event))} />
      </label>
      <label>
        Context
        <input value={context} onInput={(event) => setContext(value(event))} />
      </label>
      <label>
        Description
        <textarea rows={4} value={description} onInput={(event) => setDescription(value(event))} />
      </label>
      <label>
        Aliases, one a line
        <textarea rows={3} value={aliases} onInput={(event) => setAliases(value(event))} />
      </label>
      {error !== undefined && <WriteError repo={repo} kind="concept" error={error} reload={reload} />}
      <Submit busy={busy} read={read} />
    </form>
  )
}

function ReportEditor({ repo, id }: { repo: string; id: string | undefined }) {
  return (
    <Editor<ReportDetail> kind="report" path={id && api(repo, `/reports/${id}`)}>
      {(read, reload) => <ReportForm key={read?.etag} repo={repo} read={read} reload={reload} />}
    </Editor>
  )
}

/** The sentences of a Markdown body an annotation can name: paragraphs split after . ! or ?, list and heading marks dropped. */
const sentencesOf = (markdown: string) =>
  markdown
    .split(/\n\s*\n|(?<=[.!?])\s+/)
    .map((sentence) => sentence.replace(/^\s*(#+|>|[-*+]|\d+\.)\s+/, '').trim())
    .filter(Boolean)

type Annotation = ReportDetail['annotations'][number]
type FactHit = { id: string; fact?: Fact }

function ReportForm({ repo, read, reload }: { repo: string; read: Read<ReportDetail> | undefined; reload: () => void }) {
  const to = paths(repo)
  const report = read?.value
  const [title, setTitle] = useState(report?.title ?? '')
  const [body, setBody] = useState(report?.body_md ?? '')
  const [parent, setParent] = useState<{ id: string; title: string } | null>(null)
  const [parentChanged, setParentChanged] = useState(false)
  const [annotations, setAnnotations] = useState<Annotation[]>(report?.annotations ?? [])
  const { error, busy, save } = useSave(repo, 'report', read)
  // The parent's title, for a report that has one.
  useEffect(() => {
    if (report?.parent_id)
      get<Report>(api(repo, `/reports/${report.parent_id}`)).then(
        (row) => setParent({ id: row.id, title: row.title }),
        () => setParent({ id: report.parent_id!, title: report.parent_id! }),
      )
  }, [])
  const sentences = sentencesOf(body)
  const submit = (event: Event) =>
    save(
      event,
      defined({
        title: changed(report?.title, title),
        body_md: changed(report?.body_md, body),
        parent_id: parentChanged || !report ? (parent?.id ?? null) : undefined,
        annotations: changed(report?.annotations, annotations),
      }),
    )
  return (
    <form onSubmit={submit} class="editor" aria-label={report ? 'Edit the report' : 'New report'}>
      <label>
        Title
        <input required value={title} onInput={(event) => setTitle(value(event))} />
      </label>
      <label>
        Body (Markdown; cite a fact as [words](&lt;fact:its id&gt;))
        <textarea rows={10} value={body} onInput={(event) => setBody(value(event))} />
      </label>
      <fieldset>
        <legend>Parent report</legend>
        <p>
          {parent ? (
            <>
              Part of <Link href={to.report(parent.id)}>{parent.title}</Link>{' '}
              <button
                type="button"
                onClick={() => {
                  setParent(null)
                  setParentChanged(true)
                }}
              >
                Make it a top-level report
              </button>
            </>
          ) : (
            'A top-level report.'
          )}
        </p>
        <Pick<Report>
          label="Parent"
          action="Set the parent"
          path={api(repo, '/reports')}
          name={(row) => row.title}
          onPick={(row) => {
            setParent({ id: row.id, title: row.title })
            setParentChanged(true)
          }}
        />
      </fieldset>
      <fieldset>
        <legend>Annotations</legend>
        <Chosen<Annotation> label="Its annotations" rows={annotations} name={(a) => `“${a.sentence_text}” → fact ${a.fact_id.slice(0, 8)} (${a.posture || 'related'})`} onChange={setAnnotations} />
        <Annotate
          repo={repo}
          sentences={sentences}
          onAdd={(annotation) => annotations.some((a) => a.sentence_index === annotation.sentence_index && a.fact_id === annotation.fact_id) || setAnnotations([...annotations, annotation])}
        />
      </fieldset>
      {error !== undefined && <WriteError repo={repo} kind="report" error={error} reload={reload} />}
      <Submit busy={busy} read={read} />
      <section aria-label="Preview">
        <h2>Preview</h2>
        <Markdown source={body} href={to.cited} />
      </section>
    </form>
  )
}

/** A new annotation: one of the body's sentences, a fact found by searching, and how the fact bears on it. */
function Annotate({ repo, sentences, onAdd }: { repo: string; sentences: string[]; onAdd: (annotation: Annotation) => void }) {
  const [sentence, setSentence] = useState('')
  const [query, setQuery] = useState('')
  const [hits, setHits] = useState<FactHit[]>()
  const [fact, setFact] = useState('')
  const [posture, setPosture] = useState('supports')
  const [error, setError] = useState<unknown>()
  const search = async () => {
    setError(undefined)
    try {
      const found = await get<FactHit[]>(api(repo, `/search?${new URLSearchParams({ q: query, kind: 'facts', limit: '20' })}`))
      setHits(found)
      setFact(found[0]?.id ?? '')
    } catch (failure) {
      setError(failure)
    }
  }
  const index = Number(sentence)
  const add = () => onAdd({ sentence_index: index, sentence_text: sentences[index]!, fact_id: fact, score: 1, posture })
  return (
    <div class="pick">
      <label>
        Sentence
        <select value={sentence} onChange={(event) => setSentence(value(event))}>
          <option value="">Choose…</option>
          {sentences.map((text, i) => (
            <option key={i} value={String(i)}>
              {text}
            </option>
          ))}
        </select>
      </label>
      <label>
        Find the fact
        <input
          type="search"
          value={query}
          onInput={(event) => setQuery(value(event))}
          onKeyDown={(event) => {
            if (event.key !== 'Enter') return
            event.preventDefault()
            void search()
          }}
        />
      </label>
      <button type="button" disabled={!query.trim()} onClick={search}>
        Search facts
      </button>
      {hits && (
        <label>
          Fact
          <select value={fact} onChange={(event) => setFact(value(event))}>
            {hits.length === 0 && <option value="">Nothing found</option>}
            {hits.map((hit) => (
              <option key={hit.id} value={hit.id}>
                {hit.fact?.text ?? hit.id}
              </option>
            ))}
          </select>
        </label>
      )}
      <label>
        Posture
        <select value={posture} onChange={(event) => setPosture(value(event))}>
          <option value="supports">supports</option>
          <option value="contradicts">contradicts</option>
          <option value="related">related</option>
        </select>
      </label>
      <button type="button" disabled={sentence === '' || !fact || !sentences[index]} onClick={add}>
        Annotate the sentence
      </button>
      {error !== undefined && <ErrorBox error={error} />}
    </div>
  )
}
