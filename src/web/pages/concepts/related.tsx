// What a concept's page lists from the API's ranked route, a page at a time: the concepts that
// share facts with it.
import { apiPath } from '../../api.ts'
import type { RelatedConcept } from '../../types.ts'
import { Link, Paged, plural } from '../../ui.tsx'
import type { paths } from '../paths.ts'

export function RelatedConcepts({ repo, id, to }: { repo: string; id: string; to: ReturnType<typeof paths> }) {
  return (
    <section aria-labelledby="related">
      <h2 id="related">Related concepts</h2>
      <Paged<RelatedConcept>
        path={apiPath`/${repo}/concepts/${id}/related`}
        label="Related concepts"
        limit={20}
        empty="No concept shares a fact with it."
      >
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
