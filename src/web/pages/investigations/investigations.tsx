// A repository's investigations: the list, one page at a time, and an investigation's page with
// its sources.
import { apiPath, get } from '../../api.ts'
import type { Investigation, InvestigationDetail } from '../../types.ts'
import { Link, Paged, Show, useLoad } from '../../ui.tsx'
import { paths } from '../paths.ts'

export function Investigations({ repo }: { repo: string }) {
  const to = paths(repo)
  return (
    <>
      <h1 tabIndex={-1}>Investigations</h1>
      <Paged<Investigation> path={apiPath`/${repo}/investigations`} label="Investigations">
        {(rows) => (
          <ul class="rows">
            {rows.map((investigation) => (
              <li key={investigation.id}>
                <Link href={to.investigation(investigation.id)}>{investigation.title}</Link>
                <span class="meta">{investigation.topic}</span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </>
  )
}

export function InvestigationPage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const [loaded] = useLoad(() => get<InvestigationDetail>(apiPath`/${repo}/investigations/${id}`), `${repo}/${id}`)
  return (
    <Show loaded={loaded}>
      {(investigation) => (
        <article>
          <h1 tabIndex={-1}>{investigation.title}</h1>
          <p>{investigation.topic}</p>
          <h2>Sources</h2>
          <ul class="rows">
            {investigation.sources.map((source) => (
              <li key={source.id}>
                <Link href={to.source(source.id)}>{source.parsed_title || source.url}</Link>
              </li>
            ))}
          </ul>
        </article>
      )}
    </Show>
  )
}
