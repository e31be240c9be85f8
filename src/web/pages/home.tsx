// The pages outside one repository's graph: the repositories, search, (export and import:
// transfer.tsx; the registry: registry.tsx; users and roles for a sysadmin: users.tsx).
import { useState } from 'preact/hooks'
import { ApiError, apiPath, request } from '../api.ts'
import type { Fact, Repository } from '../types.ts'
import { PermissionsOf, useCan } from '../permissions.tsx'
import { ErrorBox, Link, navigate, Paged, plural, tell } from '../ui.tsx'
import { paths } from './paths.ts'

const value = (event: Event) => (event.target as HTMLInputElement).value

/** A repository's counts as words: "1 report · 2 investigations". */
const NOUNS: Record<string, string> = {
  sources: 'source',
  facts: 'fact',
  concepts: 'concept',
  reports: 'report',
  investigations: 'investigation',
}
const counted = (counts: Record<string, number>) =>
  Object.entries(counts).map(([kind, n]) => (NOUNS[kind] ? plural(n, NOUNS[kind]) : `${n} ${kind}`))

export function Repositories() {
  return (
    <PermissionsOf>
      <RepositoryList />
    </PermissionsOf>
  )
}

function RepositoryList() {
  const can = useCan()
  const [name, setName] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>()
  const create = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    setBusy(true)
    try {
      const created = await request<Repository>('POST', '/api/v1/repositories', { name })
      tell(`The repository ${created.name} is created.`)
      navigate(paths(created.slug).base)
    } catch (failure) {
      // The form asks for a name only: the slug the API derived from it is what is taken.
      setError(
        failure instanceof ApiError && failure.status === 409
          ? new Error(
              'A repository with this name (or one that makes the same address) exists already: choose another name.',
            )
          : failure,
      )
      setBusy(false)
    }
  }
  return (
    <>
      <h1 tabIndex={-1}>Repositories</h1>
      <Paged<Repository> path="/api/v1/repositories" label="Repositories">
        {(rows) => (
          <ul class="rows">
            {rows.map((repository) => (
              <li key={repository.id}>
                <Link href={paths(repository.slug).base}>{repository.name}</Link>
                <span class="meta">
                  {[repository.role, ...counted(repository.counts ?? {}), repository.description]
                    .filter(Boolean)
                    .join(' · ')}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
      {can('repository:create') && (
        <form onSubmit={create} class="inline">
          <h2>New repository</h2>
          <label>
            Name <input required maxLength={200} value={name} onInput={(event) => setName(value(event))} />
          </label>
          <button type="submit" disabled={busy}>
            {busy ? 'Creating…' : 'Create'}
          </button>
          {error !== undefined && <ErrorBox error={error} />}
        </form>
      )}
    </>
  )
}

/** `text` with the query's words marked (as text nodes and <mark> elements: nothing is parsed as HTML). */
function Highlighted({ text, query }: { text: string; query: string }) {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? [])]
  if (words.length === 0) return <>{text}</>
  // Letters and digits only: nothing in a word needs escaping in the pattern.
  const pattern = new RegExp(`(${words.join('|')})`, 'giu')
  return <>{text.split(pattern).map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : part))}</>
}

interface Hit {
  id: string
  /** hybrid: reciprocal rank fusion; keyword: ts_rank; vector: cosine similarity. */
  score: number
  fact?: Fact
  concept?: { id: string; canonical_name: string; context: string }
}

/** What a result's score is, by mode (docs/api.md, Search). */
const SCORE_MEANING = {
  hybrid:
    'Best first. The score fuses the keyword and the meaning rankings: the sum, over the rankings that found the result, of 1 / (60 + its place there); at most about 0.033, for the first in both. When the vectors cannot answer (none made yet, or the embedder fails), the scores are keyword scores.',
  keyword: 'Best first. The score is the full-text rank of the words you typed, from 0 to 1: higher is a closer match.',
  vector:
    "Best first. The score is the cosine similarity of the result's meaning to your query's (1 is the same direction, 0 unrelated).",
}

/** Search results a page at a time (a ranked list: the API's Link and X-Total-Count). */
const RESULTS_PAGE = 20

export function Search({ repo }: { repo: string }) {
  const to = paths(repo)
  const [query, setQuery] = useState(new URLSearchParams(location.search).get('q') ?? '')
  const [kind, setKind] = useState<'facts' | 'concepts'>('facts')
  const [mode, setMode] = useState<'hybrid' | 'keyword' | 'vector'>('hybrid')
  const [asked, setAsked] = useState<{ q: string; kind: string; mode: string }>()
  const run = (event: Event) => {
    event.preventDefault()
    setAsked({ q: query, kind, mode })
  }
  return (
    <>
      <h1 tabIndex={-1}>Search</h1>
      <form aria-label="Search this repository" onSubmit={run} class="inline">
        <label>
          Query <input type="search" required value={query} onInput={(event) => setQuery(value(event))} />
        </label>
        <label>
          In{' '}
          <select value={kind} onChange={(event) => setKind(value(event) as 'facts' | 'concepts')}>
            <option value="facts">facts</option>
            <option value="concepts">concepts</option>
          </select>
        </label>
        <label>
          Mode{' '}
          <select value={mode} onChange={(event) => setMode(value(event) as 'hybrid' | 'keyword' | 'vector')}>
            <option value="hybrid">hybrid</option>
            <option value="keyword">keyword</option>
            <option value="vector">vector</option>
          </select>
        </label>
        <button type="submit">Search</button>
      </form>
      {asked && (
        <Paged<Hit>
          path={`${apiPath`/${repo}/search`}?${new URLSearchParams(asked)}`}
          label="Results"
          limit={RESULTS_PAGE}
          empty="Nothing found."
        >
          {(hits) => (
            <>
              <p class="meta" id="score-meaning">
                {SCORE_MEANING[asked.mode as keyof typeof SCORE_MEANING]}
              </p>
              <ol class="rows" aria-label="Results" aria-describedby="score-meaning">
                {hits.map((hit) => (
                  <li key={hit.id}>
                    <Link href={hit.fact ? to.fact(hit.id) : to.concept(hit.id)}>
                      <Highlighted text={hit.fact?.text ?? hit.concept?.canonical_name ?? hit.id} query={asked.q} />
                    </Link>
                    <span class="meta">score {hit.score.toFixed(3)}</span>
                  </li>
                ))}
              </ol>
            </>
          )}
        </Paged>
      )}
    </>
  )
}
