// A repository's facts: the list, one page at a time (optionally of one status, source or concept), and a
// fact's page with its sources, its concepts and what cites it.
import { useState } from 'preact/hooks'
import { apiPath, get } from '../../api.ts'
import type { Fact, FactDetail } from '../../types.ts'
import { Link, Paged, Show, shortDate, useLoad } from '../../ui.tsx'
import { Outside } from '../outside.tsx'
import { paths } from '../paths.ts'
import { FactCitations } from './citations.tsx'

/** The facts, optionally only those of one source or linked to one concept (the links of their pages). */
export function Facts({ repo, source, concept }: { repo: string; source?: string; concept?: string }) {
  const to = paths(repo)
  const [status, setStatus] = useState('')
  const filter = new URLSearchParams({
    ...(status ? { status } : {}),
    ...(source ? { source_id: source } : {}),
    ...(concept ? { concept } : {}),
  }).toString()
  return (
    <>
      <h1 tabIndex={-1}>Facts</h1>
      <label>
        Status{' '}
        <select value={status} onChange={(event) => setStatus((event.target as HTMLSelectElement).value)}>
          <option value="">any</option>
          <option value="new">new</option>
          <option value="stable">stable</option>
          <option value="to_delete">to delete</option>
          <option value="stale">stale</option>
        </select>
      </label>
      <Paged<Fact> path={`${apiPath`/${repo}/facts`}${filter ? `?${filter}` : ''}`} label="Facts">
        {(rows) => (
          <ul class="rows">
            {rows.map((fact) => (
              <li key={fact.id}>
                <Link href={to.fact(fact.id)}>{fact.text || '(an image fact)'}</Link>
                <span class="meta">
                  {fact.status} · {shortDate(fact.created_at)}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </>
  )
}

export function FactPage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const [loaded] = useLoad(() => get<FactDetail>(apiPath`/${repo}/facts/${id}`), `${repo}/${id}`)
  return (
    <>
      <h1 tabIndex={-1}>Fact</h1>
      <Show loaded={loaded}>
        {(fact) => (
          <article>
            <p class="fact-text">{fact.text}</p>
            <p class="meta">
              {fact.fact_kind} · {fact.status} · {shortDate(fact.created_at)}
            </p>
            <h2>Sources</h2>
            <ul>
              {fact.sources.map((source) => (
                <li key={`${source.id} ${source.chunk_index}`}>
                  <Link href={to.source(source.id)}>{source.parsed_title || source.url}</Link> (chunk{' '}
                  {source.chunk_index}) · <Outside url={source.url} label="original" />
                </li>
              ))}
            </ul>
            <h2>Concepts</h2>
            <ul class="chips">
              {fact.concepts.map((concept) => (
                <li key={concept.id}>
                  <Link href={to.concept(concept.id)}>{concept.canonical_name}</Link>
                </li>
              ))}
            </ul>
            <FactCitations repo={repo} id={fact.id} to={to} />
          </article>
        )}
      </Show>
    </>
  )
}
