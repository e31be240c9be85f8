// "Process again" on a source's page, for those who may draw facts (fact:write): it queues a
// process_source job of the source (POST …/sources/{id}/process), follows it to its end as a live
// bar, says what it produced, and has the page read the source's facts and concepts again.
import { useState } from 'preact/hooks'
import { apiPath, request } from '../../api.ts'
import { useCan } from '../../permissions.tsx'
import type { Job, ProcessResult, SourceDetail } from '../../types.ts'
import { ErrorBox, plural } from '../../ui.tsx'
import { JobProgress } from '../transfer-jobs.tsx'

/** The statuses of a source the API processes (graph/rules.ts PROCESSABLE_SOURCE_STATUSES). */
const PROCESSABLE = ['parsed', 'processed']

/** A processing's result in words: "2 facts added, 1 merged, 3 already there; 1 concept added." */
function processed(result: ProcessResult): string {
  const { facts, concepts } = result
  const parts = [
    plural(facts.added, 'fact') + ' added',
    facts.merged > 0 && `${facts.merged} merged`,
    facts.unchanged > 0 && `${facts.unchanged} already there`,
  ].filter(Boolean)
  return `Processed: ${parts.join(', ')}; ${plural(concepts.added, 'concept')} added.`
}

export function ProcessAgain({
  repo,
  source,
  onProcessed,
}: {
  repo: string
  source: SourceDetail
  /** The job ended: what the page shows of the source is to be read again. */
  onProcessed: () => void
}) {
  const can = useCan()
  const [job, setJob] = useState<Job>()
  const [queuing, setQueuing] = useState(false)
  const [running, setRunning] = useState(false)
  const [error, setError] = useState<unknown>()
  if (!can('fact:write') || !PROCESSABLE.includes(source.status)) return null
  const start = async () => {
    setQueuing(true)
    setError(undefined)
    try {
      setJob(await request<Job>('POST', apiPath`/${repo}/sources/${source.id}/process`))
      setRunning(true)
    } catch (failure) {
      setError(failure)
    } finally {
      setQueuing(false)
    }
  }
  const ended = () => {
    setRunning(false)
    onProcessed()
  }
  return (
    <section class="process" aria-label="Processing">
      <p class="actions">
        <button type="button" onClick={start} disabled={queuing || running}>
          {queuing ? 'Queuing…' : source.status === 'processed' ? 'Process again' : 'Process'}
        </button>
      </p>
      {error !== undefined && <ErrorBox error={error} />}
      {job && (
        <JobProgress key={job.id} repo={repo} job={job} verb="Processing" onEnd={ended}>
          {(done) => <p>{processed(done.result as ProcessResult)}</p>}
        </JobProgress>
      )}
    </section>
  )
}
