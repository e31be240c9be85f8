// A repository's sources: the list, one page at a time, and a source's page with its images and
// its parsed text.
import { useEffect, useState } from 'preact/hooks'
import { authorizedFetch } from '../../auth.ts'
import { apiPath, get } from '../../api.ts'
import type { Source, SourceDetail } from '../../types.ts'
import { Link, Markdown, Paged, plural, Show, useLoad } from '../../ui.tsx'
import { Outside } from '../outside.tsx'
import { paths } from '../paths.ts'

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

export function SourcePage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const [loaded] = useLoad(() => get<SourceDetail>(apiPath`/${repo}/sources/${id}`), `${repo}/${id}`)
  return (
    <Show loaded={loaded}>
      {(source) => (
        <article>
          <h1 tabIndex={-1}>{source.parsed_title || 'Source'}</h1>
          <p class="meta">
            <Outside url={source.url} /> · {source.kind} · {plural(source.fact_count, 'fact')} ·{' '}
            <Link href={`${to.base}/facts?source=${source.id}`}>its facts</Link>
          </p>
          <div class="images">
            {source.images.slice(0, 12).map((image) => (
              <StoredImage
                key={image.id}
                path={apiPath`/${repo}/images/${image.id}`}
                alt={image.alt_text || `image ${image.position}`}
              />
            ))}
          </div>
          <Markdown source={source.parsed_markdown} href={to.cited} />
        </article>
      )}
    </Show>
  )
}
