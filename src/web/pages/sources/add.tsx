// Adding sources (docs/ingest.md): web addresses, one per line, sent together as one JSON request;
// files dropped or picked, each sent as its own multipart request at once, so that each has its
// own upload bar and a refusal (too large, empty) fails that file alone. The upload goes through
// XMLHttpRequest (api.ts upload): its upload events report the bytes sent, which fetch does not
// (a streamed request body would report what was read from the file, not what reached the server,
// and Chromium only streams over HTTP/2). Each document's ingest_source job is then followed to
// its end: parsed (a link to the source) or failed (the job's reason, in the API's words).
import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { apiPath, get, request, upload } from '../../api.ts'
import { Allowed } from '../../permissions.tsx'
import type { IngestAccepted, Job } from '../../types.ts'
import { ErrorBox, Link } from '../../ui.tsx'
import { paths } from '../paths.ts'
import { ProgressBar } from '../transfer-jobs.tsx'

/** How often a running job is read again. */
const FOLLOW_MS = 500
/** What the file picker offers (a dropped file of another type is sent: the server reads its bytes and says). */
const ACCEPTED = '.pdf,.html,.htm,.md,.markdown,.txt,application/pdf,text/html,text/markdown,text/plain'

/** MEDIA_UPLOAD_MAX_BYTES, as the page says it (http/web-app.ts); 0 if the page does not say. */
const uploadMaxBytes = () =>
  Number(document.querySelector<HTMLMetaElement>('meta[name="kgs-upload-max-bytes"]')?.content) || 0

/** A size in words a person reads: "50 MiB", "300 KiB", "12 bytes". */
function size(bytes: number): string {
  const round = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 1 })
  if (bytes >= 2 ** 20) return `${round(bytes / 2 ** 20)} MiB`
  if (bytes >= 1024) return `${round(bytes / 1024)} KiB`
  return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`
}

/** One document being added: where its job comes from, or why it was not sent. */
interface Addition {
  key: number
  name: string
  /** Sends the document, reporting the upload's bytes; its job. Absent: `refused`. */
  send?: (onSent: (sent: number, total: number) => void) => Promise<IngestAccepted['jobs'][number]>
  refused?: string
}

export function AddSource({ repo }: { repo: string }) {
  return (
    <Allowed permission="source:write" doing="Adding a source" heading="Add a source">
      <AddSourceForms repo={repo} />
    </Allowed>
  )
}

function AddSourceForms({ repo }: { repo: string }) {
  const [additions, setAdditions] = useState<Addition[]>([])
  const counter = useRef(0)
  const add = (more: Omit<Addition, 'key'>[]) =>
    setAdditions((list) => [...list, ...more.map((addition) => ({ ...addition, key: counter.current++ }))])
  return (
    <>
      <h1 tabIndex={-1}>Add a source</h1>
      <p class="meta">
        kgs fetches each address or reads each file, keeps the document and its Markdown, and splits it into chunks that
        facts cite.
      </p>
      <UrlForm repo={repo} add={add} />
      <FileDrop repo={repo} add={add} />
      <section aria-labelledby="additions-heading">
        <h2 id="additions-heading">Added</h2>
        {additions.length === 0 ? (
          <p>Nothing yet.</p>
        ) : (
          <ul class="additions">
            {additions.map((addition) => (
              <AdditionItem key={addition.key} repo={repo} addition={addition} />
            ))}
          </ul>
        )}
      </section>
    </>
  )
}

/** The lines of `text` that are addresses, and the first that is not an http(s) URL. */
function addresses(text: string): { urls: string[]; wrong?: string } {
  const urls: string[] = []
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line) continue
    const url = URL.parse(line)
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) return { urls, wrong: line }
    // As the server names a source by its URL (the fragment dropped), so that its answer's jobs pair with these lines.
    url.hash = ''
    if (!urls.includes(url.href)) urls.push(url.href)
  }
  return { urls }
}

function UrlForm({ repo, add }: { repo: string; add: (more: Omit<Addition, 'key'>[]) => void }) {
  const [text, setText] = useState('')
  const [problem, setProblem] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    const { urls, wrong } = addresses(text)
    if (wrong !== undefined) return setProblem(new Error(`Not an http(s) address: “${wrong}”.`))
    if (urls.length === 0) return setProblem(new Error('Give at least one address.'))
    setProblem(undefined)
    setBusy(true)
    try {
      const { jobs } = await request<IngestAccepted>('POST', apiPath`/${repo}/ingest`, { urls })
      add(jobs.map((job, i) => ({ name: urls[i] ?? job.source_id, send: () => Promise.resolve(job) })))
      setText('')
    } catch (failure) {
      setProblem(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="urls-heading">
      <form class="editor" onSubmit={submit}>
        <h2 id="urls-heading">By address</h2>
        <label for="ingest-urls">Web addresses (a page, a PDF, Markdown or text), one per line</label>
        <textarea
          id="ingest-urls"
          rows={4}
          value={text}
          spellcheck={false}
          aria-invalid={problem !== undefined}
          aria-describedby={problem !== undefined ? 'ingest-urls-problem' : undefined}
          onInput={(event) => setText((event.target as HTMLTextAreaElement).value)}
        />
        <p>
          <button type="submit" disabled={busy}>
            {busy ? 'Adding…' : 'Add these addresses'}
          </button>
        </p>
      </form>
      {problem !== undefined && (
        <div id="ingest-urls-problem">
          <ErrorBox error={problem} />
        </div>
      )}
    </section>
  )
}

function FileDrop({ repo, add }: { repo: string; add: (more: Omit<Addition, 'key'>[]) => void }) {
  const [over, setOver] = useState(false)
  const limit = uploadMaxBytes()
  const addFiles = (files: FileList | null | undefined) => {
    if (!files?.length) return
    add(
      [...files].map((file) => {
        if (limit > 0 && file.size > limit)
          return {
            name: file.name,
            refused: `Not sent: it is ${size(file.size)}, more than the limit of ${size(limit)} a file.`,
          }
        return {
          name: file.name,
          send: async (onSent) => {
            const form = new FormData()
            form.append('file', file, file.name)
            const { jobs } = await upload<IngestAccepted>(apiPath`/${repo}/ingest`, form, undefined, onSent)
            return jobs[0]!
          },
        }
      }),
    )
  }
  return (
    // The whole section takes a drop; the file picker in it is the way with a keyboard.
    <section
      aria-labelledby="files-heading"
      class={over ? 'drop over' : 'drop'}
      onDragOver={(event) => {
        event.preventDefault()
        setOver(true)
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(event) => {
        event.preventDefault()
        setOver(false)
        addFiles(event.dataTransfer?.files)
      }}
    >
      <h2 id="files-heading">Files</h2>
      <p>Drop PDF, HTML, Markdown or text files here, or</p>
      <label>
        Choose files{' '}
        <input
          type="file"
          multiple
          accept={ACCEPTED}
          onChange={(event) => {
            const input = event.target as HTMLInputElement
            addFiles(input.files)
            // The same file chosen again is a new addition.
            input.value = ''
          }}
        />
      </label>
      {limit > 0 && <p class="meta">Each file at most {size(limit)}. Each is sent as soon as it is chosen.</p>}
    </section>
  )
}

/** What a job's phase (ingest-job.ts) reads as. */
function jobWords(job: Job): string {
  if (job.status === 'queued') return 'waiting to start'
  if (job.status === 'running') return job.progress.phase || 'working'
  if (job.status === 'succeeded') return 'parsed'
  return job.status
}

type Progress =
  | { stage: 'refused'; reason: string }
  | { stage: 'uploading'; sent: number; total: number }
  | { stage: 'job'; job: Job; sourceId: string }
  | { stage: 'failed'; reason: string; sourceId?: string }

/** One document: its bar (the upload's bytes, then its job's progress) and, at the end, what came of it. */
function AdditionItem({ repo, addition }: { repo: string; addition: Addition }) {
  const [progress, setProgress] = useState<Progress>(
    addition.refused !== undefined
      ? { stage: 'refused', reason: addition.refused }
      : { stage: 'uploading', sent: 0, total: 0 },
  )
  useEffect(() => {
    const send = addition.send
    if (!send) return
    let stopped = false
    const follow = async () => {
      const started = await send((sent, total) => !stopped && setProgress({ stage: 'uploading', sent, total }))
      let job = await get<Job>(apiPath`/${repo}/jobs/${started.id}`)
      while (!stopped) {
        setProgress(
          job.status === 'failed' || job.status === 'cancelled'
            ? { stage: 'failed', reason: job.error || `the job was ${job.status}`, sourceId: started.source_id }
            : { stage: 'job', job, sourceId: started.source_id },
        )
        if (job.status !== 'queued' && job.status !== 'running') return
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS))
        job = await get<Job>(apiPath`/${repo}/jobs/${started.id}`)
      }
    }
    follow().catch(
      (error) =>
        !stopped && setProgress({ stage: 'failed', reason: error instanceof Error ? error.message : String(error) }),
    )
    return () => {
      stopped = true
    }
  }, [])
  const to = paths(repo)
  let bar: { label: string; percent: number | null }
  let said: ComponentChildren
  switch (progress.stage) {
    case 'refused':
      bar = { label: 'not sent', percent: 0 }
      said = progress.reason
      break
    case 'uploading':
      bar = {
        label: progress.total > 0 ? `uploading, ${size(progress.sent)} of ${size(progress.total)}` : 'sending',
        percent: progress.total > 0 ? (100 * progress.sent) / progress.total : null,
      }
      said = 'Sending…'
      break
    case 'job': {
      const { job } = progress
      const done = job.status === 'succeeded'
      bar = { label: jobWords(job), percent: done ? 100 : job.progress.percent }
      // not_modified: the address answered that the copy parsed before is still current.
      const unchanged = (job.result as { status?: string } | null)?.status === 'not_modified'
      said = done ? (
        <>
          {unchanged ? 'Parsed before, and unchanged since.' : 'Parsed.'}{' '}
          <Link href={to.source(progress.sourceId)}>Open the source</Link>
        </>
      ) : (
        'Reading…'
      )
      break
    }
    case 'failed':
      bar = { label: 'failed', percent: 0 }
      said = (
        <>
          Failed: {progress.reason.replace(/\.$/, '')}.
          {progress.sourceId && (
            <>
              {' '}
              <Link href={to.source(progress.sourceId)}>The source</Link>
            </>
          )}
        </>
      )
  }
  const failed = progress.stage === 'failed' || progress.stage === 'refused'
  return (
    <li class={failed ? 'addition failed' : 'addition'}>
      <ProgressBar label={`${addition.name}: ${bar.label}`} percent={bar.percent} />
      <p role="status">{said}</p>
    </li>
  )
}
