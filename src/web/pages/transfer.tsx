// A repository's Export and import page: an export to the registry (naming the graph it made), an
// import of a bundle file (its upload's progress, then its job's), and an import of a registry
// graph by id (the Registry page's "Import into…" is the other way to one).
import { useState } from 'preact/hooks'
import { apiPath, request, upload } from '../api.ts'
import { Allowed } from '../permissions.tsx'
import type { Job } from '../types.ts'
import { ErrorBox, Link } from '../ui.tsx'
import { ExportOutcome, GraphLink, ImportOutcome, JobProgress, ProgressBar } from './transfer-jobs.tsx'

/** A job a form started, or why it could not start; `busy` while the request is on its way. */
function useStart() {
  const [job, setJob] = useState<Job>()
  const [error, setError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const start = async (send: () => Promise<Job>) => {
    setError(undefined)
    setJob(undefined)
    setBusy(true)
    try {
      setJob(await send())
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }
  return { job, error, busy, start }
}

const importPath = (repo: string) => apiPath`/${repo}/import-graph`

function Export({ repo }: { repo: string }) {
  const { job, error, busy, start } = useStart()
  return (
    <section aria-labelledby="export-heading">
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          void start(() => request<Job>('POST', apiPath`/${repo}/export-graph`, {}))
        }}
      >
        <h2 id="export-heading">Export to the registry</h2>
        <button type="submit" disabled={busy}>
          {busy ? 'Starting the export…' : 'Export this repository'}
        </button>
      </form>
      {error !== undefined && <ErrorBox error={error} />}
      {job && (
        <JobProgress repo={repo} job={job} verb="Export">
          {(done) => <ExportOutcome job={done} />}
        </JobProgress>
      )}
    </section>
  )
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`

function FileImport({ repo }: { repo: string }) {
  const { job, error, busy, start } = useStart()
  const [file, setFile] = useState<File>()
  const [sent, setSent] = useState<{ sent: number; total: number }>()
  const submit = (event: Event) => {
    event.preventDefault()
    if (!file) return
    setSent({ sent: 0, total: file.size })
    void start(async () => {
      try {
        const started = await upload<Job>(importPath(repo), file, 'application/gzip', (bytes, total) =>
          setSent({ sent: bytes, total }),
        )
        // Every byte is in once the server answers, whatever the last progress event said.
        setSent({ sent: file.size, total: file.size })
        return started
      } catch (failure) {
        setSent(undefined)
        throw failure
      }
    })
  }
  return (
    <section aria-labelledby="file-heading">
      <form class="inline" onSubmit={submit}>
        <h2 id="file-heading">Import a bundle file</h2>
        <label>
          Bundle file (.json.gz){' '}
          <input
            type="file"
            required
            accept=".gz,application/gzip"
            onChange={(event) => setFile((event.target as HTMLInputElement).files?.[0])}
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload and import'}
        </button>
      </form>
      {sent && (
        <ProgressBar
          label={`Upload: ${megabytes(sent.sent)} of ${megabytes(sent.total)}`}
          percent={sent.total > 0 ? (100 * sent.sent) / sent.total : null}
        />
      )}
      {error !== undefined && <ErrorBox error={error} />}
      {job && file && (
        <JobProgress repo={repo} job={job} verb="Import">
          {(done) => <ImportOutcome job={done} repo={repo} from={`the file “${file.name}”`} />}
        </JobProgress>
      )}
    </section>
  )
}

function RegistryImport({ repo }: { repo: string }) {
  const { job, error, busy, start } = useStart()
  const [graphId, setGraphId] = useState(new URLSearchParams(location.search).get('graph') ?? '')
  /** The id the running import was started with (the field may change meanwhile). */
  const [asked, setAsked] = useState('')
  return (
    <section aria-labelledby="registry-heading">
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          setAsked(graphId)
          void start(() => request<Job>('POST', importPath(repo), { graph_id: graphId }))
        }}
      >
        <h2 id="registry-heading">Import from the registry</h2>
        <p class="meta">
          Pick a graph on the <Link href="/app/registry">Registry</Link> page and choose “Import into…”, or give its id
          here.
        </p>
        <label>
          {/* A dash in a class is escaped: the pattern attribute is compiled with the v flag. */}
          Graph id{' '}
          <input
            required
            value={graphId}
            onInput={(event) => setGraphId((event.target as HTMLInputElement).value.trim())}
            pattern="[0-9a-fA-F\-]{36}"
            title="a graph id: 36 hexadecimal digits and dashes"
          />
        </label>
        <button type="submit" disabled={busy}>
          Import
        </button>
      </form>
      {error !== undefined && <ErrorBox error={error} />}
      {job && (
        <JobProgress repo={repo} job={job} verb="Import">
          {(done) => <ImportOutcome job={done} repo={repo} from={<GraphLink id={asked} />} />}
        </JobProgress>
      )}
    </section>
  )
}

export function Transfer({ repo }: { repo: string }) {
  return (
    <>
      <h1 tabIndex={-1}>Export and import</h1>
      <Allowed permission="graph:export" doing="Exporting this repository">
        <Export repo={repo} />
      </Allowed>
      <Allowed permission="graph:import" doing="Importing into this repository">
        <FileImport repo={repo} />
        <RegistryImport repo={repo} />
      </Allowed>
    </>
  )
}
