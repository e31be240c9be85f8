// The Registry page: the registry's graphs grouped by name, each name with its versions (newest
// first, with their time and counts), and "Import into…" on each version, into a repository the
// person may import into. `?name=` shows one name's versions.
import { useState } from 'preact/hooks'
import { apiPath, page, request } from '../api.ts'
import { readPermissions } from '../permissions.tsx'
import type { GraphName, GraphVersion, Job, Repository } from '../types.ts'
import { ErrorBox, Link, Paged, useLoad } from '../ui.tsx'
import { counted, dateTime, ImportOutcome, JobProgress, plural } from './transfer-jobs.tsx'

/** The most repositories the picker offers: one page of the repositories the person sees. */
const TARGETS_LISTED = 500

/**
 * The repositories the person may import into: those where GET /api/v1/permissions gives them
 * graph:import (a sysadmin: any), among the first TARGETS_LISTED they see.
 */
async function importTargets(): Promise<Repository[]> {
  const [permissions, repositories] = await Promise.all([
    readPermissions(),
    page<Repository>('/api/v1/repositories', undefined, TARGETS_LISTED),
  ])
  const importable = new Set(
    permissions.permissions.filter((p) => p.resource === 'graph' && p.action === 'import').map((p) => p.domain),
  )
  return repositories.rows.filter((repository) => permissions.system_admin || importable.has(repository.id))
}

type Targets = ReturnType<typeof useLoad<Repository[]>>[0]

function ImportInto({ graph, targets, describedBy }: { graph: GraphVersion; targets: Targets; describedBy: string }) {
  const [open, setOpen] = useState(false)
  const [target, setTarget] = useState('')
  const [job, setJob] = useState<{ job: Job; into: Repository }>()
  const [error, setError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  if (!open)
    return (
      <button type="button" aria-describedby={describedBy} onClick={() => setOpen(true)}>
        Import into…
      </button>
    )
  if (targets.state === 'loading') return <p aria-live="polite">Loading your repositories…</p>
  if (targets.state === 'failed') return <ErrorBox error={targets.error} />
  const choices = targets.value
  if (choices.length === 0)
    return <p>You may import into no repository: a repoadmin or an editor of a repository may import into it.</p>
  const into = choices.find((repository) => repository.id === target) ?? choices[0]!
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(undefined)
    setJob(undefined)
    setBusy(true)
    try {
      setJob({ job: await request<Job>('POST', apiPath`/${into.slug}/import-graph`, { graph_id: graph.id }), into })
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <form class="inline" onSubmit={submit} aria-describedby={describedBy}>
        <label>
          Import into{' '}
          <select value={into.id} onChange={(event) => setTarget((event.target as HTMLSelectElement).value)}>
            {choices.map((repository) => (
              <option key={repository.id} value={repository.id}>
                {repository.name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Starting…' : 'Import'}
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Close
        </button>
      </form>
      {error !== undefined && <ErrorBox error={error} />}
      {job && (
        <JobProgress key={job.job.id} repo={job.into.slug} job={job.job} verb="Import">
          {(done) => (
            <ImportOutcome
              job={done}
              repo={job.into.slug}
              into={job.into.name}
              from={`graph “${graph.name}”, version ${graph.version}`}
            />
          )}
        </JobProgress>
      )}
    </>
  )
}

/** The API names another account's graph by its user id only: a UUID says nothing to a person. */
const ownerShown = (graph: { owner: string; owner_id: string | null }) =>
  graph.owner_id !== null && graph.owner === graph.owner_id ? 'pushed by another account' : `pushed by ${graph.owner}`

function Versions({ group, targets }: { group: GraphName; targets: Targets }) {
  const heading = `name-${group.versions[0]?.id ?? group.name}`
  const older = group.version_count - group.versions.length
  return (
    <section aria-labelledby={heading} class="graph-name">
      <h2 id={heading}>{group.name}</h2>
      <p class="meta">
        {plural(group.version_count, 'version')}
        {group.versions[0]?.description && ` · ${group.versions[0].description}`}
      </p>
      <ol class="rows" aria-label={`Versions of ${group.name}`}>
        {group.versions.map((graph) => (
          <li key={graph.id}>
            <span id={`version-${graph.id}`}>
              Version {graph.version} · <time dateTime={graph.created_at}>{dateTime(graph.created_at)}</time>
            </span>
            <span class="meta">
              {[
                counted({ facts: graph.fact_count, concepts: graph.concept_count, sources: graph.source_count }) ||
                  'empty',
                ownerShown(graph),
              ].join(' · ')}
            </span>
            <ImportInto graph={graph} targets={targets} describedBy={`${heading} version-${graph.id}`} />
          </li>
        ))}
      </ol>
      {older > 0 && <p class="meta">{plural(older, 'older version')} not shown.</p>}
    </section>
  )
}

export function Registry() {
  const name = new URLSearchParams(location.search).get('name')
  const [targets] = useLoad(importTargets, 'import targets')
  return (
    <>
      <h1 tabIndex={-1}>Registry</h1>
      {name !== null && (
        <p>
          The versions of “{name}”. <Link href="/app/registry">All graphs</Link>
        </p>
      )}
      <Paged<GraphName>
        path={`/api/v1/graphs/names${name !== null ? `?name=${encodeURIComponent(name)}` : ''}`}
        label="Graphs"
        limit={20}
        empty="No graph in the registry yet: an export of a repository puts one there."
      >
        {(groups) => (
          <>
            {groups.map((group) => (
              <Versions key={group.name} group={group} targets={targets} />
            ))}
          </>
        )}
      </Paged>
    </>
  )
}
