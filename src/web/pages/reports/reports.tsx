// A repository's reports: the top-level ones, one page at a time, and a report's page: its
// Markdown with each annotated sentence linked to its best fact, its parent and its parts.
import { apiPath, get } from '../../api.ts'
import type { Report, ReportDetail } from '../../types.ts'
import { Link, Markdown, Paged, plural, Show, shortDate, useLoad } from '../../ui.tsx'
import { paths } from '../paths.ts'

export function Reports({ repo }: { repo: string }) {
  const to = paths(repo)
  return (
    <>
      <h1 tabIndex={-1}>Reports</h1>
      <Paged<Report> path={`${apiPath`/${repo}/reports`}?parent_id=none`} label="Reports">
        {(rows) => (
          <ul class="rows">
            {rows.map((report) => (
              <li key={report.id}>
                <Link href={to.report(report.id)}>{report.title}</Link>
                <span class="meta">
                  {report.status} · {shortDate(report.created_at)}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </>
  )
}

export function ReportPage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const [loaded] = useLoad(async () => {
    const report = await get<ReportDetail>(apiPath`/${repo}/reports/${id}`)
    const parent = report.parent_id
      ? await get<ReportDetail>(apiPath`/${repo}/reports/${report.parent_id}`).catch(() => undefined)
      : undefined
    return { report, parent }
  }, `${repo}/${id}`)
  return (
    <Show loaded={loaded}>
      {({ report, parent }) => {
        // The best-scored fact of each annotated sentence (annotations come best first).
        const links = new Map<string, { text: string; href: string; title: string }>()
        for (const annotation of report.annotations)
          if (!links.has(annotation.sentence_text))
            links.set(annotation.sentence_text, {
              text: annotation.sentence_text,
              href: to.fact(annotation.fact_id),
              title: `${annotation.posture} · score ${annotation.score.toFixed(2)}`,
            })
        return (
          <article>
            <nav aria-label="Report tree" class="tree">
              {parent && (
                <p>
                  Part of <Link href={to.report(parent.id)}>{parent.title}</Link>
                </p>
              )}
              {report.children.length > 0 && (
                <>
                  <p>Parts:</p>
                  <ul>
                    {report.children.map((child) => (
                      <li key={child.id}>
                        <Link href={to.report(child.id)}>{child.title}</Link>
                      </li>
                    ))}
                  </ul>
                </>
              )}
            </nav>
            <h1 tabIndex={-1}>{report.title}</h1>
            <p class="meta">
              {report.status} · {plural(report.annotations.length, 'annotation')}
            </p>
            <Markdown source={report.body_md} href={to.cited} links={[...links.values()]} />
          </article>
        )
      }}
    </Show>
  )
}
