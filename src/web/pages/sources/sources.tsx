// A repository's sources: the list, one page at a time (with "Add a source" for those who may:
// add.tsx), and a source's page with its images, its parsed text and its chunks.
import { useEffect, useState } from 'preact/hooks'
import { authorizedFetch } from '../../auth.ts'
import { apiPath, get } from '../../api.ts'
import { useCan } from '../../permissions.tsx'
import type { Source, SourceChunk, SourceDetail } from '../../types.ts'
import { Link, Markdown, Paged, plural, Show, useLoad } from '../../ui.tsx'
import { Outside } from '../outside.tsx'
import { paths } from '../paths.ts'

export function Sources({ repo }: { repo: string }) {
  const to = paths(repo)
  const can = useCan()
  return (
    <>
      <h1 tabIndex={-1}>Sources</h1>
      {can('source:write') && (
        <p class="actions">
          <Link href={to.source('new')}>Add a source</Link>
        </p>
      )}
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

/**
 * A source's chunks, read when the person opens them: most visits are for the text, and the
 * source's page already reads the source and its images.
 */
function Chunks({ repo, id }: { repo: string; id: string }) {
  const [open, setOpen] = useState(false)
  return (
    <details class="chunks" onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
      <summary>Its chunks, as facts cite them</summary>
      {open && (
        <Paged<SourceChunk>
          path={apiPath`/${repo}/sources/${id}/chunks`}
          label="Chunks"
          limit={10}
          empty="None: kgs has not read this source's document itself (an imported source has none until it is added again)."
        >
          {(chunks) => (
            <ol>
              {chunks.map((chunk) => (
                <li key={chunk.chunk_index}>
                  <p class="meta">{chunkPlace(chunk)}</p>
                  {/* As text: a chunk is the source's Markdown, shown as written. */}
                  <pre>{chunk.text}</pre>
                </li>
              ))}
            </ol>
          )}
        </Paged>
      )}
    </details>
  )
}

/** Where a chunk sits: its headings and, in a PDF, its pages. */
function chunkPlace(chunk: SourceChunk): string {
  const pages =
    chunk.page_start === null
      ? ''
      : chunk.page_end === null || chunk.page_end === chunk.page_start
        ? `page ${chunk.page_start}`
        : `pages ${chunk.page_start}–${chunk.page_end}`
  return [`chunk ${chunk.chunk_index}`, chunk.heading_path.join(' › '), pages].filter(Boolean).join(' · ')
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
          <Chunks repo={repo} id={source.id} />
        </article>
      )}
    </Show>
  )
}
