// Adding and editing a concept: name, context, description and aliases.
import { useState } from 'preact/hooks'
import type { ConceptDetail } from '../../types.ts'
import { apiPath } from '../../api.ts'
import { value, type Read, WriteError, Editor, useSave, changed, defined, Submit } from './form.tsx'

export function ConceptEditor({ repo, id }: { repo: string; id: string | undefined }) {
  return (
    <Editor<ConceptDetail> kind="concept" path={id && apiPath`/${repo}/concepts/${id}`}>
      {(read, reload) => <ConceptForm key={read?.etag} repo={repo} read={read} reload={reload} />}
    </Editor>
  )
}

function ConceptForm({
  repo,
  read,
  reload,
}: {
  repo: string
  read: Read<ConceptDetail> | undefined
  reload: () => void
}) {
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
