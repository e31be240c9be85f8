// What a fact's and a concept's pages list from the API's ranked routes, a page at a time: the
// summaries and reports that cite a fact, and the concepts related to a concept.
import type { Concept } from '../types.ts'
import { Link, Paged } from '../ui.tsx'

interface Citation {
  kind: 'summary' | 'report'
  id: string
  /** The summary's concept's name, or the report's title. */
  title: string
  concept_id: string | null
  sequence_num: number | null
  sentences: number
}

const api = (repo: string, path: string) => `/${encodeURIComponent(repo)}${path}`
/** The app's paths the lists link to (graph.tsx's paths). */
interface To {
  concept(id: string): string
  report(id: string): string
}

export function FactCitations({ repo, id, to }: { repo: string; id: string; to: To }) {
  return (
    <section aria-labelledby="cited-by">
      <h2 id="cited-by">Cited by</h2>
      <Paged<Citation> path={api(repo, `/facts/${id}/citations`)} label="Citations" limit={20} empty="No summary or report cites it.">
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
                    <span class="meta">
                      report · {citation.sentences} {citation.sentences === 1 ? 'sentence' : 'sentences'}
                    </span>
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
      <Paged<Concept & { shared_facts: number }> path={api(repo, `/concepts/${id}/related`)} label="Related concepts" limit={20} empty="No concept shares a fact with it.">
        {(rows) => (
          <ul class="rows">
            {rows.map((concept) => (
              <li key={concept.id}>
                <Link href={to.concept(concept.id)}>{concept.canonical_name}</Link>
                <span class="meta">
                  {concept.shared_facts} shared {concept.shared_facts === 1 ? 'fact' : 'facts'}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </section>
  )
}
