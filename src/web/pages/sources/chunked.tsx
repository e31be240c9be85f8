// A source's Markdown as kgs read it, chunk by chunk, a page of chunks at a time, each with the
// facts drawn from it (what a fact cites as chunk_index): a fact the chunk says word for word is
// highlighted in it, a link to the fact, and every fact of the chunk is listed under it (a model's
// facts are its own words). The chunks and their facts are two requests, the second once the
// first says which chunks are shown. A source kgs has no chunks of (an imported one) shows its
// Markdown whole.
import { useEffect, useMemo } from 'preact/hooks'
import { apiPath, page } from '../../api.ts'
import type { SentenceLink } from '../../markdown.ts'
import type { SourceChunk, SourceFact } from '../../types.ts'
import { Link, Markdown, Paged, plural, Show, useLoad } from '../../ui.tsx'
import type { paths } from '../paths.ts'

/** Chunks a page shows. */
const CHUNKS_PER_PAGE = 10
/** Facts read for a page of chunks (the API's most for a ranked list); past them, the source's facts list has the rest. */
const FACTS_PER_PAGE = 100

/** Where a chunk sits: its headings and, in a PDF, its pages. */
export function chunkPlace(chunk: SourceChunk): string {
  const pages =
    chunk.page_start === null
      ? ''
      : chunk.page_end === null || chunk.page_end === chunk.page_start
        ? `page ${chunk.page_start}`
        : `pages ${chunk.page_start}–${chunk.page_end}`
  return [`chunk ${chunk.chunk_index}`, chunk.heading_path.join(' › '), pages].filter(Boolean).join(' · ')
}

function Chunk({ chunk, facts, to }: { chunk: SourceChunk; facts: SourceFact[]; to: ReturnType<typeof paths> }) {
  const links = useMemo<SentenceLink[]>(
    () => facts.map((fact) => ({ text: fact.text, href: to.fact(fact.id), title: 'A fact drawn from this chunk' })),
    [facts],
  )
  return (
    <section class="chunk" id={`chunk-${chunk.chunk_index}`} aria-label={`Chunk ${chunk.chunk_index}`}>
      <Markdown source={chunk.text} href={to.cited} links={links} />
      {facts.length > 0 && (
        <details class="chunk-facts">
          <summary>{plural(facts.length, 'fact')} drawn from it</summary>
          <ul>
            {facts.map((fact) => (
              <li key={fact.id}>
                <Link href={to.fact(fact.id)}>{fact.text}</Link>
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  )
}

/** A page of chunks with the facts drawn from them, read once the page says which chunks it shows. */
function ChunksWithFacts({
  repo,
  id,
  chunks,
  round,
  to,
}: {
  repo: string
  id: string
  chunks: SourceChunk[]
  round: number
  to: ReturnType<typeof paths>
}) {
  const range = new URLSearchParams({
    chunk_from: String(chunks[0]!.chunk_index),
    chunk_to: String(chunks.at(-1)!.chunk_index),
  })
  const [loaded] = useLoad(
    () => page<SourceFact>(`${apiPath`/${repo}/sources/${id}/facts`}?${range}`, undefined, FACTS_PER_PAGE),
    `${repo}/${id} ${range} ${round}`,
  )
  // A link to one chunk (a concept's page links each fact's) shows it, when it is on this page.
  useEffect(() => {
    if (loaded.state === 'done' && /^#chunk-\d+$/.test(location.hash))
      document.getElementById(location.hash.slice(1))?.scrollIntoView()
  }, [loaded.state])
  return (
    <Show loaded={loaded}>
      {(facts) => {
        const byChunk = new Map<number, SourceFact[]>()
        for (const fact of facts.rows) byChunk.set(fact.chunk_index, [...(byChunk.get(fact.chunk_index) ?? []), fact])
        return (
          <>
            {facts.next && (
              <p class="meta">
                The first {FACTS_PER_PAGE} of the {facts.total} facts drawn from these chunks are marked;{' '}
                <Link href={`${to.base}/facts?source=${id}`}>its facts</Link> lists them all.
              </p>
            )}
            {chunks.map((chunk) => (
              <Chunk key={chunk.chunk_index} chunk={chunk} facts={byChunk.get(chunk.chunk_index) ?? []} to={to} />
            ))}
          </>
        )
      }}
    </Show>
  )
}

export function ChunkedText({
  repo,
  id,
  markdown,
  round,
  to,
}: {
  repo: string
  id: string
  /** The source's whole Markdown, shown when kgs has no chunks of it. */
  markdown: string
  /** Changed: its facts are read again (the source was processed again). */
  round: number
  to: ReturnType<typeof paths>
}) {
  return (
    <Paged<SourceChunk>
      path={apiPath`/${repo}/sources/${id}/chunks`}
      label="The source's chunks"
      limit={CHUNKS_PER_PAGE}
      empty={<Markdown source={markdown} href={to.cited} />}
    >
      {(chunks) => <ChunksWithFacts repo={repo} id={id} chunks={chunks} round={round} to={to} />}
    </Paged>
  )
}
