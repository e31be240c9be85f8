// What a fact's and a concept's pages list from the API's ranked routes, a page at a time: the
// summaries and reports that cite a fact, and the concepts related to a concept.
import { apiPath } from '../api.ts'
import type { Citation, RelatedConcept } from '../types.ts'
import { Link, Paged, plural } from '../ui.tsx'

/** The app's paths the lists link to (graph.tsx's paths). */
interface To {
  concept(id: string): string
  report(id: string): string
}

export function FactCitations({ repo, id, to }: { repo: string; id: string; to: To }) {
  return (
    <section aria-labelledby="cited-by">
      <h2 id="cited-by">Cited by</h2>
      <Paged<Citation> path={apiPath`/${repo}/facts/${id}/citations`} label="Citations" limit={20} empty="No summary or report cites it.">
        {(rows) => (
          <ul class="rows">
            {rows.map((citation) => (
              <li key={`${citation.kind} ${citation.id}`}>
                {citation.kind === 'summary' ? (
                  <>
                    <Link href={to.concept(citation.concept_id!)}>{citation.title}</Link>
                    <span class="meta">summary {citation.sequence_num}</span>
                  </>
                ) : (
                  <>
                    <Link href={to.report(citation.id)}>{citation.title}</Link>
                    <span class="meta">report · {plural(citation.sentences, 'sentence')}</span>
                  </>
                )}
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </section>
  )
}

export function RelatedConcepts({ repo, id, to }: { repo: string; id: string; to: To }) {
  return (
    <section aria-labelledby="related">
      <h2 id="related">Related concepts</h2>
      <Paged<RelatedConcept> path={apiPath`/${repo}/concepts/${id}/related`} label="Related concepts" limit={20} empty="No concept shares a fact with it.">
        {(rows) => (
          <ul class="rows">
            {rows.map((concept) => (
              <li key={concept.id}>
                <Link href={to.concept(concept.id)}>{concept.canonical_name}</Link>
                <span class="meta">{plural(concept.shared_facts, 'shared fact')}</span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </section>
  )
}
