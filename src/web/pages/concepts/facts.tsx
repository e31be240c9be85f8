// A concept's facts and where each came from (the source's title and the chunk it cites, linked
// to the source's page at that chunk), read when the person opens them: the concept's page
// already reads the concept, its neighbourhood and its related concepts on arrival.
import { useState } from 'preact/hooks'
import { apiPath } from '../../api.ts'
import type { FactDetail } from '../../types.ts'
import { Link, Paged } from '../../ui.tsx'
import type { paths } from '../paths.ts'

function Origins({ fact, to }: { fact: FactDetail; to: ReturnType<typeof paths> }) {
  if (fact.sources.length === 0) return <span class="meta">from no source</span>
  return (
    <ul class="chips origins" aria-label="Where it came from">
      {fact.sources.map((source) => (
        <li key={`${source.id} ${source.chunk_index}`}>
          <Link href={`${to.source(source.id)}#chunk-${source.chunk_index}`}>
            {source.parsed_title || source.url}, chunk {source.chunk_index}
          </Link>
        </li>
      ))}
    </ul>
  )
}

export function ConceptFacts({ repo, id, to }: { repo: string; id: string; to: ReturnType<typeof paths> }) {
  const [open, setOpen] = useState(false)
  return (
    <details class="concept-facts" onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
      <summary>Its facts, and where each came from</summary>
      {open && (
        <Paged<FactDetail> path={apiPath`/${repo}/concepts/${id}/facts`} label="Its facts" limit={20}>
          {(facts) => (
            <ul class="rows">
              {facts.map((fact) => (
                <li key={fact.id}>
                  <Link href={to.fact(fact.id)}>{fact.text}</Link>
                  <Origins fact={fact} to={to} />
                </li>
              ))}
            </ul>
          )}
        </Paged>
      )}
    </details>
  )
}
