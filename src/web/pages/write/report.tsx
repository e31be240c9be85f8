// Adding and editing a report: its Markdown, its place in the report tree, and annotations that tie
// its sentences to facts.
import { useEffect, useState } from 'preact/hooks'
import { apiPath, get } from '../../api.ts'
import type { Fact, Report, ReportDetail } from '../../types.ts'
import { ErrorBox, Link, Markdown } from '../../ui.tsx'
import { paths } from '../paths.ts'
import { value, type Read, WriteError, Pick, Chosen, Editor, useSave, changed, defined, Submit } from './form.tsx'

export function ReportEditor({ repo, id }: { repo: string; id: string | undefined }) {
  return (
    <Editor<ReportDetail> kind="report" path={id && apiPath`/${repo}/reports/${id}`}>
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

function ReportForm({
  repo,
  read,
  reload,
}: {
  repo: string
  read: Read<ReportDetail> | undefined
  reload: () => void
}) {
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
      get<Report>(apiPath`/${repo}/reports/${report.parent_id}`).then(
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
          path={apiPath`/${repo}/reports`}
          name={(row) => row.title}
          onPick={(row) => {
            setParent({ id: row.id, title: row.title })
            setParentChanged(true)
          }}
        />
      </fieldset>
      <fieldset>
        <legend>Annotations</legend>
        <Chosen<Annotation>
          label="Its annotations"
          empty="No annotations yet."
          rows={annotations}
          name={(a) => `“${a.sentence_text}” → fact ${a.fact_id.slice(0, 8)} (${a.posture || 'related'})`}
          onChange={setAnnotations}
        />
        <Annotate
          repo={repo}
          sentences={sentences}
          onAdd={(annotation) =>
            annotations.some(
              (a) => a.sentence_index === annotation.sentence_index && a.fact_id === annotation.fact_id,
            ) || setAnnotations([...annotations, annotation])
          }
        />
      </fieldset>
      {error !== undefined && <WriteError repo={repo} kind="report" error={error} reload={reload} />}
      <Submit busy={busy} read={read} />
      <section aria-label="Preview">
        <h2>Preview</h2>
        <Markdown source={body} href={to.cited} under={2} />
      </section>
    </form>
  )
}

/** A new annotation: one of the body's sentences, a fact found by searching, and how the fact bears on it. */
function Annotate({
  repo,
  sentences,
  onAdd,
}: {
  repo: string
  sentences: string[]
  onAdd: (annotation: Annotation) => void
}) {
  const [sentence, setSentence] = useState('')
  const [query, setQuery] = useState('')
  const [hits, setHits] = useState<FactHit[]>()
  const [fact, setFact] = useState('')
  const [posture, setPosture] = useState('supports')
  const [error, setError] = useState<unknown>()
  const search = async () => {
    setError(undefined)
    try {
      const found = await get<FactHit[]>(
        `${apiPath`/${repo}/search`}?${new URLSearchParams({ q: query, kind: 'facts', limit: '20' })}`,
      )
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
