// The pages outside one repository's graph: the repositories, search, export and import, the
// registry's catalogue (users and roles for a sysadmin are users.tsx).
import { useEffect, useState } from 'preact/hooks'
import { get, request } from '../api.ts'
import type { Fact, Graph, Job, Repository } from '../types.ts'
import { ErrorBox, Link, navigate, Paged, shortDate } from '../ui.tsx'
import { paths } from './graph.tsx'

const value = (event: Event) => (event.target as HTMLInputElement).value

export function Repositories() {
  const [name, setName] = useState('')
  const [error, setError] = useState<unknown>()
  const create = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    try {
      const created = await request<Repository>('POST', '/api/v1/repositories', { name })
      navigate(paths(created.slug).base)
    } catch (failure) {
      setError(failure)
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
                <span class="meta">{[repository.role, ...Object.entries(repository.counts ?? {}).map(([kind, n]) => `${n} ${kind}`), repository.description].filter(Boolean).join(' · ')}</span>
              </li>
            ))}
          </ul>
        )}
      </Paged>
      <form onSubmit={create} class="inline">
        <h2>New repository</h2>
        <label>
          Name <input required maxLength={200} value={name} onInput={(event) => setName(value(event))} />
        </label>
        <button type="submit">Create</button>
        {error !== undefined && <ErrorBox error={error} />}
      </form>
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
        <Paged<Hit> path={`/${encodeURIComponent(repo)}/search?${new URLSearchParams(asked)}`} label="Results" limit={RESULTS_PAGE} empty="Nothing found.">
          {(hits) => (
            <ol class="rows" aria-label="Results">
              {hits.map((hit) => (
                <li key={hit.id}>
                  <Link href={hit.fact ? to.fact(hit.id) : to.concept(hit.id)}>
                    <Highlighted text={hit.fact?.text ?? hit.concept?.canonical_name ?? hit.id} query={asked.q} />
                  </Link>
                  <span class="meta">score {hit.score.toFixed(3)}</span>
                </li>
              ))}
            </ol>
          )}
        </Paged>
      )}
    </>
  )
}

/** A job followed until it ends, its progress as a live bar. */
function JobProgress({ repo, job, onDone }: { repo: string; job: Job; onDone?: (job: Job) => void }) {
  const [current, setCurrent] = useState(job)
  useEffect(() => {
    let stopped = false
    const follow = async () => {
      let latest = job
      while (!stopped && (latest.status === 'queued' || latest.status === 'running')) {
        await new Promise((resolve) => setTimeout(resolve, 500))
        latest = await get<Job>(`/${encodeURIComponent(repo)}/jobs/${job.id}`)
        if (!stopped) setCurrent(latest)
      }
      if (!stopped) onDone?.(latest)
    }
    follow().catch((error) => !stopped && setCurrent({ ...job, status: 'failed', error: String(error) }))
    return () => {
      stopped = true
    }
  }, [job.id])
  const percent = current.progress.percent
  return (
    <div class="job">
      <label>
        {current.kind} {current.progress.phase ?? ''} ({current.status})
        <progress max={100} value={percent ?? undefined} aria-valuetext={percent === null ? 'working' : `${Math.round(percent)}%`} />
      </label>
      {current.error && <ErrorBox error={new Error(current.error)} />}
      {current.status === 'succeeded' && <p role="status">Done.</p>}
    </div>
  )
}

export function Transfer({ repo }: { repo: string }) {
  const [job, setJob] = useState<Job>()
  const [error, setError] = useState<unknown>()
  const [graphId, setGraphId] = useState(new URLSearchParams(location.search).get('graph') ?? '')
  const start = async (event: Event, path: string, body: unknown) => {
    event.preventDefault()
    setError(undefined)
    setJob(undefined)
    try {
      setJob(await request<Job>('POST', `/${encodeURIComponent(repo)}${path}`, body))
    } catch (failure) {
      setError(failure)
    }
  }
  return (
    <>
      <h1 tabIndex={-1}>Export and import</h1>
      <form class="inline" onSubmit={(event) => start(event, '/export-graph', {})}>
        <h2>Export to the registry</h2>
        <button type="submit">Export this repository</button>
      </form>
      <form class="inline" onSubmit={(event) => start(event, '/import-graph', { graph_id: graphId })}>
        <h2>Import from the registry</h2>
        <label>
          Graph id <input required value={graphId} onInput={(event) => setGraphId(value(event))} pattern="[0-9a-fA-F-]{36}" />
        </label>
        <button type="submit">Import</button>
      </form>
      {error !== undefined && <ErrorBox error={error} />}
      {job && <JobProgress repo={repo} job={job} />}
    </>
  )
}

export function Registry() {
  return (
    <>
      <h1 tabIndex={-1}>Registry</h1>
      <Paged<Graph> path="/api/v1/graphs" label="Graphs">
        {(rows) => (
          <table>
            <caption class="visually-hidden">Graphs in the registry</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Owner</th>
                <th scope="col">Facts</th>
                <th scope="col">Concepts</th>
                <th scope="col">Sources</th>
                <th scope="col">Pushed</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((graph) => (
                <tr key={graph.id}>
                  <td>
                    {graph.name}
                    <span class="meta"> {graph.id}</span>
                  </td>
                  <td>{graph.owner}</td>
                  <td>{graph.fact_count}</td>
                  <td>{graph.concept_count}</td>
                  <td>{graph.source_count}</td>
                  <td>{shortDate(graph.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Paged>
    </>
  )
}
