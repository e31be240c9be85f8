// Adding and editing a fact: its text, its sources (with chunk indexes) and its concepts.
import { useState } from 'preact/hooks'
import type { Concept, FactDetail, Source } from '../../types.ts'
import { apiPath } from '../../api.ts'
import { value, type Read, WriteError, Pick, Chosen, Editor, useSave, changed, defined, Submit } from './form.tsx'

export function FactEditor({ repo, id }: { repo: string; id: string | undefined }) {
  return (
    <Editor<FactDetail> kind="fact" path={id && apiPath`/${repo}/facts/${id}`}>
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
  const initialSources = fact?.sources.map((s) => ({
    source_id: s.id,
    chunk_index: s.chunk_index,
    name: s.parsed_title || s.url,
  }))
  const initialConcepts = fact?.concepts.map((c) => ({ concept_id: c.id, name: c.canonical_name }))
  const [sources, setSources] = useState<FactSourceLink[]>(initialSources ?? [])
  const [concepts, setConcepts] = useState<FactConceptLink[]>(initialConcepts ?? [])
  const [prefix, setPrefix] = useState('')
  const { error, busy, save } = useSave(repo, 'fact', read)
  const links = <T extends object>(rows: T[], keys: (keyof T)[]) =>
    rows.map((row) => Object.fromEntries(keys.map((key) => [key, row[key]])))
  const submit = (event: Event) =>
    save(
      event,
      defined({
        text: changed(fact?.text, text),
        status: changed(fact?.status, status),
        sources: changed(
          initialSources && links(initialSources, ['source_id', 'chunk_index']),
          links(sources, ['source_id', 'chunk_index']),
        ),
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
          <option value="stale">stale</option>
        </select>
      </label>
      <fieldset>
        <legend>Sources</legend>
        <Chosen<FactSourceLink>
          label="Its sources"
          empty="No sources yet."
          rows={sources}
          name={(s) => s.name}
          onChange={setSources}
        >
          {(source, i) => (
            <label>
              Chunk
              <input
                type="number"
                min={0}
                value={source.chunk_index}
                onInput={(event) =>
                  setSources(sources.map((s, j) => (j === i ? { ...s, chunk_index: Number(value(event)) || 0 } : s)))
                }
              />
            </label>
          )}
        </Chosen>
        <Pick<Source>
          label="Source"
          action="Add the source"
          path={apiPath`/${repo}/sources`}
          name={(s) => s.parsed_title || s.url}
          onPick={(s) => setSources([...sources, { source_id: s.id, chunk_index: 0, name: s.parsed_title || s.url }])}
        />
      </fieldset>
      <fieldset>
        <legend>Concepts</legend>
        <Chosen<FactConceptLink>
          label="Its concepts"
          empty="No concepts yet."
          rows={concepts}
          name={(c) => c.name}
          onChange={setConcepts}
        />
        <label>
          Concepts whose name starts with
          <input type="search" value={prefix} onInput={(event) => setPrefix(value(event))} />
        </label>
        <Pick<Concept>
          label="Concept"
          action="Add the concept"
          path={`${apiPath`/${repo}/concepts`}${prefix ? `?${new URLSearchParams({ prefix })}` : ''}`}
          name={(c) => (c.context ? `${c.canonical_name} (${c.context})` : c.canonical_name)}
          onPick={(c) =>
            concepts.some((link) => link.concept_id === c.id) ||
            setConcepts([...concepts, { concept_id: c.id, name: c.canonical_name }])
          }
        />
      </fieldset>
      {error !== undefined && <WriteError repo={repo} kind="fact" error={error} reload={reload} />}
      <Submit busy={busy} read={read} />
    </form>
  )
}
