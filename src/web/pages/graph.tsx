// A repository's graph, read: facts, concepts (with the picture of their neighbourhood),
// sources, investigations and reports. Every list is one page at a time.
import { useEffect, useState } from 'preact/hooks'
import { authorizedFetch } from '../auth.ts'
import { apiPath, get } from '../api.ts'
import type { Concept, ConceptDetail, Fact, FactDetail, Investigation, InvestigationDetail, Neighbourhood as NeighbourhoodAnswer, Report, ReportDetail, Source, SourceDetail } from '../types.ts'
import { Link, Markdown, Paged, plural, Show, shortDate, useLoad } from '../ui.tsx'
import { Neighbourhood } from './neighbourhood.tsx'
import { FactCitations, RelatedConcepts } from './related.tsx'

/** The app's paths of one repository. */
export const paths = (repo: string) => {
  const base = `/app/r/${encodeURIComponent(repo)}`
  return {
    base,
    fact: (id: string) => `${base}/facts/${id}`,
    concept: (id: string) => `${base}/concepts/${id}`,
    source: (id: string) => `${base}/sources/${id}`,
    investigation: (id: string) => `${base}/investigations/${id}`,
    report: (id: string) => `${base}/reports/${id}`,
    cited: (kind: 'fact' | 'concept', id: string) => `${base}/${kind}s/${id}`,
  }
}

export function Facts({ repo, source }: { repo: string; source?: string }) {
  const to = paths(repo)
  const [status, setStatus] = useState('')
  const filter = new URLSearchParams({ ...(status ? { status } : {}), ...(source ? { source_id: source } : {}) }).toString()
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

/** An image kgs stores, fetched with the token (an <img src> could not send it) and shown from a blob: URL. */
function StoredImage({ path, alt }: { path: string; alt: string }) {
  const [url, setUrl] = useState<string>()
  useEffect(() => {
    let objectUrl: string | undefined
    authorizedFetch(path).then(async (response) => {
      if (response.ok) setUrl((objectUrl = URL.createObjectURL(await response.blob())))
    })
    return () => objectUrl && URL.revokeObjectURL(objectUrl)
  }, [path])
  return url ? <img src={url} alt={alt} /> : null
}

/** An outside address shown as text with a link that leaves the app (no referrer, no opener). */
const Outside = ({ url, label }: { url: string; label?: string }) =>
  /^https?:\/\//i.test(url) ? (
    <a href={url} rel="noopener noreferrer nofollow" target="_blank">
      {label || url}
    </a>
  ) : (
    <span>{label || url}</span>
  )

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
                  <Link href={to.source(source.id)}>{source.parsed_title || source.url}</Link> (chunk {source.chunk_index}) · <Outside url={source.url} label="original" />
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

export function Concepts({ repo }: { repo: string }) {
  const to = paths(repo)
  const [prefix, setPrefix] = useState('')
  return (
    <>
      <h1 tabIndex={-1}>Concepts</h1>
      <label>
        Name starts with <input type="search" value={prefix} onInput={(event) => setPrefix((event.target as HTMLInputElement).value)} />
      </label>
      <Paged<Concept> path={`${apiPath`/${repo}/concepts`}${prefix ? `?${new URLSearchParams({ prefix })}` : ''}`} label="Concepts">
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
    const [concept, around] = await Promise.all([get<ConceptDetail>(apiPath`/${repo}/concepts/${id}`), get<NeighbourhoodAnswer>(apiPath`/${repo}/concepts/${id}/neighbourhood`)])
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
          <h2>Facts</h2>
          <Paged<Fact> path={`${apiPath`/${repo}/facts`}?${new URLSearchParams({ concept: concept.id })}`} label="Facts" limit={20} empty="No fact names it.">
            {(rows) => (
              <ul class="rows">
                {rows.map((fact) => (
                  <li key={fact.id}>
                    <Link href={to.fact(fact.id)}>{fact.text || '(an image fact)'}</Link>
                  </li>
                ))}
              </ul>
            )}
          </Paged>
        </article>
      )}
    </Show>
  )
}

export function Sources({ repo }: { repo: string }) {
  const to = paths(repo)
  return (
    <>
      <h1 tabIndex={-1}>Sources</h1>
      <Paged<Source> path={apiPath`/${repo}/sources`} label="Sources">
        {(rows) => (
          <ul class="rows">
            {rows.map((source) => (
              <li key={source.id}>
                <Link href={to.source(source.id)}>{source.parsed_title || source.url}</Link>
                <span class="meta">
                  {source.kind} · {source.status}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
    </>
  )
}

export function SourcePage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const [loaded] = useLoad(() => get<SourceDetail>(apiPath`/${repo}/sources/${id}`), `${repo}/${id}`)
  return (
    <Show loaded={loaded}>
      {(source) => (
        <article>
          <h1 tabIndex={-1}>{source.parsed_title || 'Source'}</h1>
          <p class="meta">
            <Outside url={source.url} /> · {source.kind} · {plural(source.fact_count, 'fact')} · <Link href={`${to.base}/facts?source=${source.id}`}>its facts</Link>
          </p>
          <div class="images">
            {source.images.slice(0, 12).map((image) => (
              <StoredImage key={image.id} path={apiPath`/${repo}/images/${image.id}`} alt={image.alt_text || `image ${image.position}`} />
            ))}
          </div>
          <Markdown source={source.parsed_markdown} href={to.cited} />
        </article>
      )}
    </Show>
  )
}

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
    const parent = report.parent_id ? await get<ReportDetail>(apiPath`/${repo}/reports/${report.parent_id}`).catch(() => undefined) : undefined
    return { report, parent }
  }, `${repo}/${id}`)
  return (
    <Show loaded={loaded}>
      {({ report, parent }) => {
        // The best-scored fact of each annotated sentence (annotations come best first).
        const links = new Map<string, { text: string; href: string; title: string }>()
        for (const annotation of report.annotations)
          if (!links.has(annotation.sentence_text))
            links.set(annotation.sentence_text, { text: annotation.sentence_text, href: to.fact(annotation.fact_id), title: `${annotation.posture} · score ${annotation.score.toFixed(2)}` })
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
