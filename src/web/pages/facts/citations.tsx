// What a fact's page lists from the API's ranked route, a page at a time: the summaries and
// reports that cite the fact.
import { apiPath } from '../../api.ts'
import type { Citation } from '../../types.ts'
import { Link, Paged, plural } from '../../ui.tsx'
import type { paths } from '../paths.ts'

export function FactCitations({ repo, id, to }: { repo: string; id: string; to: ReturnType<typeof paths> }) {
  return (
    <section aria-labelledby="cited-by">
      <h2 id="cited-by">Cited by</h2>
      <Paged<Citation>
        path={apiPath`/${repo}/facts/${id}/citations`}
        label="Citations"
        limit={20}
        empty="No summary or report cites it."
      >
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
