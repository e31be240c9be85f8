// A repository's sources: the list, one page at a time (with "Add a source" for those who may:
// add.tsx), and a source's page with its images, its concepts, its text with the facts drawn
// from each chunk (chunked.tsx), "Process again" (process.tsx) and its chunks as written.
import { useEffect, useState } from 'preact/hooks'
import { authorizedFetch } from '../../auth.ts'
import { apiPath, get } from '../../api.ts'
import { useCan } from '../../permissions.tsx'
import type { Source, SourceChunk, SourceDetail } from '../../types.ts'
import { Link, Paged, plural, Show, useLoad } from '../../ui.tsx'
import { Outside } from '../outside.tsx'
import { paths } from '../paths.ts'
import { ChunkedText, chunkPlace } from './chunked.tsx'
import { ProcessAgain } from './process.tsx'

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

/**
 * The concepts of the source's facts, most facts first: a line under its title, no section
 * heading, since the source's own headings come next at the level below the page's.
 */
function SourceConcepts({ source, to }: { source: SourceDetail; to: ReturnType<typeof paths> }) {
  if (source.concepts.length === 0) return null
  return (
    <section class="source-concepts" aria-label="Its concepts">
      Its concepts:{' '}
      <ul class="chips">
        {source.concepts.map((concept) => (
          <li key={concept.id}>
            <Link href={to.concept(concept.id)}>{concept.canonical_name}</Link>{' '}
            <span class="meta">{plural(concept.facts, 'fact')}</span>
          </li>
        ))}
      </ul>
    </section>
  )
}

/**
 * A source: its title and address, its images, its concepts, "Process again" for who may, and
 * its Markdown chunk by chunk with the facts drawn from each (chunked.tsx). What processing
 * changes (the fact count, the concepts, the facts) is read again once it ends, without the page
 * going back to loading, so what the job said stays on it.
 */
export function SourcePage({ repo, id }: { repo: string; id: string }) {
  const to = paths(repo)
  const key = `${repo}/${id}`
  const [loaded] = useLoad(() => get<SourceDetail>(apiPath`/${repo}/sources/${id}`), key)
  const [reread, setReread] = useState<{ key: string; round: number; source?: SourceDetail }>({ key, round: 0 })
  const round = reread.key === key ? reread.round : 0
  const processed = async () => {
    const source = await get<SourceDetail>(apiPath`/${repo}/sources/${id}`)
    setReread({ key, round: round + 1, source })
  }
  return (
    <Show loaded={loaded}>
      {(first) => {
        const source = (reread.key === key && reread.source) || first
        return (
          <article>
            <h1 tabIndex={-1}>{source.parsed_title || 'Source'}</h1>
            <p class="meta">
              <Outside url={source.url} /> · {source.kind} · {source.status} · {plural(source.fact_count, 'fact')} ·{' '}
              <Link href={`${to.base}/facts?source=${source.id}`}>its facts</Link>
            </p>
            <ProcessAgain repo={repo} source={source} onProcessed={processed} />
            <div class="images">
              {source.images.slice(0, 12).map((image) => (
                <StoredImage
                  key={image.id}
                  path={apiPath`/${repo}/images/${image.id}`}
                  alt={image.alt_text || `image ${image.position}`}
                />
              ))}
            </div>
            <SourceConcepts source={source} to={to} />
            <ChunkedText repo={repo} id={source.id} markdown={source.parsed_markdown} round={round} to={to} />
            <Chunks repo={repo} id={source.id} />
          </article>
        )
      }}
    </Show>
  )
}
