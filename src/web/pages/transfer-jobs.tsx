// What the Export and import page and the Registry page share: a transfer job followed to its
// end (a source's page follows its processing the same way), its result in words, and a registry
// graph named by its name and version.
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { apiPath, get } from '../api.ts'
import type { ExportResult, Graph, GraphName, ImportResult, Job } from '../types.ts'
import { ErrorBox, Link, useLoad } from '../ui.tsx'
import { paths } from './paths.ts'

/** The Registry page of one name: its versions. */
const registryHref = (name: string) => `/app/registry?name=${encodeURIComponent(name)}`

const KINDS = [
  ['facts', 'fact'],
  ['concepts', 'concept'],
  ['sources', 'source'],
  ['reports', 'report'],
  ['investigations', 'investigation'],
] as const

export const plural = (n: number, one: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : `${one}s`}`

/** "240 facts, 60 concepts and 30 sources": the counts that are not zero, in words; '' if none is. */
export function counted(counts: Partial<Record<string, number>>): string {
  const parts = KINDS.filter(([kind]) => (counts[kind] ?? 0) > 0).map(([kind, one]) => plural(counts[kind]!, one))
  return parts.length < 2 ? (parts[0] ?? '') : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`
}

/** A time with its hour and minute, in the reader's time zone. */
export const dateTime = (iso: string) =>
  new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' })

const PHASES: Record<string, string> = {
  downloading: 'downloading the bundle',
  reading: 'reading the bundle',
  indexing: 'building the indexes',
  ranking: 'ranking the rows',
  writing: 'writing the bundle',
  pushing: 'sending it to the registry',
}

function state(job: Job): string {
  if (job.status === 'queued') return 'waiting to start'
  if (job.status === 'running') return PHASES[job.progress.phase ?? ''] ?? job.progress.phase ?? 'working'
  return job.status === 'succeeded' ? 'done' : job.status
}

/** A bar whose label says what it measures; `percent` null: not known yet (an indeterminate bar). */
export function ProgressBar({ label, percent }: { label: string; percent: number | null }) {
  const shown = percent === null ? null : Math.round(percent)
  return (
    <div class="job">
      <label>
        {label}
        {shown !== null && ` · ${shown} %`}
        <progress max={100} value={shown ?? undefined} aria-valuetext={shown === null ? 'working' : `${shown}%`} />
      </label>
    </div>
  )
}

/** A job followed until it ends, its progress as a live bar; `children` say what it produced. */
export function JobProgress({
  repo,
  job,
  verb,
  children,
  onEnd,
}: {
  repo: string
  job: Job
  verb: string
  children: (job: Job) => ComponentChildren
  /** Called once the job has ended, whichever way. */
  onEnd?: (job: Job) => void
}) {
  const [current, setCurrent] = useState(job)
  useEffect(() => {
    let stopped = false
    const follow = async () => {
      let latest = job
      while (!stopped && (latest.status === 'queued' || latest.status === 'running')) {
        await new Promise((resolve) => setTimeout(resolve, 500))
        latest = await get<Job>(apiPath`/${repo}/jobs/${job.id}`)
        if (!stopped) setCurrent(latest)
      }
      if (!stopped) onEnd?.(latest)
    }
    follow().catch(
      (error) =>
        !stopped &&
        setCurrent({ ...job, status: 'failed', error: error instanceof Error ? error.message : String(error) }),
    )
    return () => {
      stopped = true
    }
  }, [job.id])
  return (
    <>
      <ProgressBar
        label={`${verb}: ${state(current)}`}
        percent={current.status === 'succeeded' ? 100 : current.progress.percent}
      />
      {current.status === 'failed' && <ErrorBox error={new Error(`${verb} failed: ${current.error}`)} />}
      {current.status === 'cancelled' && <p role="status">{verb} cancelled.</p>}
      {current.status === 'succeeded' && <div role="status">{children(current)}</div>}
    </>
  )
}

/**
 * A registry graph as “name”, version N, linked to its name's versions on the Registry page; its
 * name alone when this registry does not hold it (an export to another, REGISTRY_URL).
 */
export function GraphLink({ id, name }: { id: string; name?: string }) {
  const [loaded] = useLoad(async () => {
    const graph = name ?? (await get<Graph>(apiPath`/api/v1/graphs/${id}`)).name
    const [group] = await get<GraphName[]>(`/api/v1/graphs/names?name=${encodeURIComponent(graph)}`)
    return { name: graph, version: group?.versions.find((version) => version.id === id.toLowerCase())?.version }
  }, id)
  if (loaded.state !== 'done') return <>graph {name ? `“${name}”` : id}</>
  const { version } = loaded.value
  const label = `graph “${loaded.value.name}”${version ? `, version ${version}` : ''}`
  return version ? <Link href={registryHref(loaded.value.name)}>{label}</Link> : label
}

/** An import's result in words: what it added, what was there already, and where to see it. */
export function ImportOutcome({
  job,
  from,
  repo,
  into,
}: {
  job: Job
  from: ComponentChildren
  repo: string
  into?: string
}) {
  const result = job.result as ImportResult
  const added = counted(result.imported)
  const kept = counted(result.reused)
  return (
    <p>
      Imported {added || 'nothing new'} from {from}
      {into && ` into ${into}`}.{kept && ` Already there and kept as they were: ${kept}.`}{' '}
      <Link href={`${paths(repo).base}/facts`}>See the facts{into ? ` of ${into}` : ''}</Link>
    </p>
  )
}

/** An export's result in words, naming and linking the registry graph it made. */
export function ExportOutcome({ job }: { job: Job }) {
  const result = job.result as ExportResult
  const graph = <GraphLink id={result.graph_id} name={result.name} />
  if (!result.new) return <p>The registry holds this export already, as {graph}: nothing new was sent.</p>
  return (
    <p>
      Exported {counted(result.counts) || 'an empty graph'} as {graph}.
    </p>
  )
}
