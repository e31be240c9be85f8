// A repository's concepts: the list, one page at a time (optionally by a name's start), and a
// concept's page with its neighbourhood, related concepts, synthesis and summaries, a link to
// its facts and, opened, its facts with where each came from (facts.tsx).
import { useState } from 'preact/hooks'
import { apiPath, get } from '../../api.ts'
import type { Concept, ConceptDetail, Neighbourhood as NeighbourhoodAnswer } from '../../types.ts'
import { Link, Markdown, Paged, plural, Show, useLoad } from '../../ui.tsx'
import { paths } from '../paths.ts'
import { ConceptFacts } from './facts.tsx'
import { Neighbourhood } from './neighbourhood.tsx'
import { RelatedConcepts } from './related.tsx'

export function Concepts({ repo }: { repo: string }) {
  const to = paths(repo)
  const [prefix, setPrefix] = useState('')
  return (
    <>
      <h1 tabIndex={-1}>Concepts</h1>
      <label>
        Name starts with{' '}
        <input type="search" value={prefix} onInput={(event) => setPrefix((event.target as HTMLInputElement).value)} />
      </label>
      <Paged<Concept>
        path={`${apiPath`/${repo}/concepts`}${prefix ? `?${new URLSearchParams({ prefix })}` : ''}`}
        label="Concepts"
      >
        {(rows) => (
          <ul class="rows">
            {rows.map((concept) => (
              <li key={concept.id}>
                <Link href={to.concept(concept.id)}>{concept.canonical_name}</Link>
                <span class="meta">{concept.context}</span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </>
  )
}

export function ConceptPage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const [loaded] = useLoad(async () => {
    const [concept, around] = await Promise.all([
      get<ConceptDetail>(apiPath`/${repo}/concepts/${id}`),
      get<NeighbourhoodAnswer>(apiPath`/${repo}/concepts/${id}/neighbourhood`),
    ])
    return { concept, around }
  }, `${repo}/${id}`)
  return (
    <Show loaded={loaded}>
      {({ concept, around }) => (
        <article>
          <h1 tabIndex={-1}>{concept.canonical_name}</h1>
          <p class="meta">
            {concept.context} · {plural(concept.fact_count, 'fact')}
          </p>
          {concept.aliases.length > 0 && <p>Also: {concept.aliases.join(', ')}</p>}
          {concept.description && <p>{concept.description}</p>}
          <p>
            <Link href={`${to.base}/facts?concept=${concept.id}`}>The facts linked to it</Link>
          </p>
          <ConceptFacts repo={repo} id={concept.id} to={to} />
          <h2>Neighbourhood</h2>
          <Neighbourhood concept={concept} around={around} href={to.concept} />
          <RelatedConcepts repo={repo} id={concept.id} to={to} />
          {concept.synthesis && (
            <section>
              <h2>Synthesis</h2>
              <Markdown source={concept.synthesis.content} href={to.cited} under={2} />
            </section>
          )}
          {concept.summaries.length > 0 && <h2>Summaries</h2>}
          {concept.summaries.map((summary) => (
            <section key={summary.id} aria-label={`Summary ${summary.sequence_num}`}>
              <Markdown source={summary.content} href={to.cited} under={2} />
            </section>
          ))}
        </article>
      )}
    </Show>
  )
}
