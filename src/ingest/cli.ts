// `kgs ingest <repository> <file|url>…`: each URL, file, or readable file of a folder is added
// as a source, and its ingest_source job followed to its end (then its process_source job, unless
// --no-process), a few at a time; each gets a progress line (a bar redrawn in place on a
// terminal, a line per change otherwise), then a summary. Where the documents go is a target: a running kgs over its API (remoteTarget), or the
// data directory through kgs started in this process (src/local-ingest.ts).
import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, extname, join } from 'node:path'
import type { Job } from '../jobs/schemas.ts'

/** A document named on the command line. */
export type IngestItem =
  | { type: 'url'; name: string; url: string }
  | { type: 'file'; name: string; path: string; contentType: string }
  /** A name that is neither: reported as failed. */
  | { type: 'unreadable'; name: string; reason: string }

/** Where documents are added and their jobs read. */
export interface IngestTarget {
  /** Adds one document; throws an Error whose message says why it was refused. */
  add(item: Exclude<IngestItem, { type: 'unreadable' }>, process: boolean): Promise<{ jobId: string }>
  job(id: string): Promise<Job>
  close(): Promise<void>
}

/** The files a folder contributes, by extension, with the type they are sent as. */
const READABLE: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
}
/** Jobs followed at once: the server's workers run them, this only bounds the polling. */
const CONCURRENCY = 4
const POLL_MS = 100
const BAR_WIDTH = 20

const isUrl = (argument: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(argument)

/** The documents the arguments name: URLs as given, files, and a folder's readable files (recursively, by name). */
export async function expandArguments(args: readonly string[]): Promise<IngestItem[]> {
  const items: IngestItem[] = []
  for (const argument of args) {
    if (isUrl(argument)) {
      items.push({ type: 'url', name: argument, url: argument })
      continue
    }
    const info = await stat(argument).catch(() => undefined)
    if (!info) items.push({ type: 'unreadable', name: argument, reason: 'no such file or folder' })
    else if (info.isDirectory()) {
      const found = (await readdir(argument, { recursive: true, withFileTypes: true }))
        .filter((entry) => entry.isFile() && READABLE[extname(entry.name).toLowerCase()] !== undefined)
        .map((entry) => join(entry.parentPath, entry.name))
        .filter((path) => !path.split(/[\\/]/).some((part) => part.startsWith('.') && part !== '.' && part !== '..'))
        .sort()
      if (found.length === 0)
        items.push({
          type: 'unreadable',
          name: argument,
          reason: 'the folder holds no PDF, HTML, Markdown or text file',
        })
      for (const path of found) items.push(fileItem(path))
    } else items.push(fileItem(argument))
  }
  return items
}

const fileItem = (path: string): IngestItem => ({
  type: 'file',
  name: path,
  path,
  contentType: READABLE[extname(path).toLowerCase()] ?? '',
})

type Outcome = { status: 'added'; detail: string } | { status: 'unchanged' } | { status: 'failed'; reason: string }

/** What the lines are written to: a terminal gets bars redrawn in place. */
interface Output {
  write(text: string): void
  isTTY: boolean
  /** The terminal's width: a bar's line is cut to it, so that redrawing in place counts lines right. */
  columns?: number
}

/** The lines of the documents in progress (a block redrawn at the bottom of a terminal) and those done (printed once). */
class Progress {
  private readonly active = new Map<string, string>()
  private drawn = 0
  private readonly last = new Map<string, string>()
  constructor(private readonly out: Output) {}

  update(name: string, job: Pick<Job, 'status' | 'progress'> | undefined) {
    const phase = job ? (job.status === 'running' ? job.progress.phase || 'running' : job.status) : 'adding'
    if (!this.out.isTTY) {
      // A line per change of phase: what a log or a pipe can follow.
      if (this.last.get(name) !== phase) this.out.write(`${name}: ${phase}\n`)
      this.last.set(name, phase)
      return
    }
    const percent = job?.progress.percent ?? 0
    const filled = Math.round((percent / 100) * BAR_WIDTH)
    const gauge = ` [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${String(Math.round(percent)).padStart(3)}% `
    // Cut to the terminal's width: a wrapped line would break the redrawing. The name goes first,
    // from its start; a phase too long for what is left after the bar is cut at its end.
    const width = Math.max(10, (this.out.columns || 80) - 1)
    const room = width - gauge.length - 1
    const label = phase.length > room ? `${phase.slice(0, Math.max(0, room - 1))}…` : phase
    const line = `${name}${gauge}${label}`
    this.active.set(name, line.length > width ? `…${line.slice(-(width - 1))}` : line)
    this.redraw()
  }

  finish(name: string, outcome: Outcome) {
    const line = `${name}: ${outcome.status === 'added' ? `added (${outcome.detail})` : outcome.status === 'unchanged' ? 'unchanged' : `failed: ${outcome.reason}`}`
    if (!this.out.isTTY) {
      this.out.write(`${line}\n`)
      return
    }
    this.active.delete(name)
    this.clear()
    this.out.write(`${line}\n`)
    this.redraw()
  }

  private clear() {
    if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}A\x1b[J`)
    this.drawn = 0
  }

  private redraw() {
    this.clear()
    for (const line of this.active.values()) this.out.write(`\r\x1b[2K${line}\n`)
    this.drawn = this.active.size
  }
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function ingestOne(
  target: IngestTarget,
  item: IngestItem,
  process: boolean,
  progress: Progress,
): Promise<Outcome> {
  if (item.type === 'unreadable') return { status: 'failed', reason: item.reason }
  progress.update(item.name, undefined)
  let jobId: string
  try {
    ;({ jobId } = await target.add(item, process))
  } catch (error) {
    return { status: 'failed', reason: (error as Error).message }
  }
  const ingested = await follow(target, jobId, item.name, progress)
  if ('reason' in ingested) return { status: 'failed', ...ingested }
  const result = (ingested.result ?? {}) as { status?: string; kind?: string; chunks?: number; process_job_id?: string }
  // The processing the ingest job queued is followed too: in the data directory's kgs, which
  // stops when this command ends, it would otherwise wait for the next server.
  let drawn = ''
  if (result.process_job_id) {
    const processed = await follow(target, result.process_job_id, item.name, progress)
    if ('reason' in processed) return { status: 'failed', reason: `parsed, but not processed: ${processed.reason}` }
    const { facts, concepts } = processed.result as ProcessAnswer
    drawn = `; ${facts.added + facts.merged + facts.unchanged} facts, ${concepts.added + concepts.existing} concepts`
  }
  if (result.status === 'not_modified') return { status: 'unchanged' }
  return { status: 'added', detail: `${result.kind ?? 'source'}, ${result.chunks ?? 0} chunks${drawn}` }
}

/** What of a process_source job's result a line says (extract/process-job.ts). */
interface ProcessAnswer {
  facts: { added: number; merged: number; unchanged: number }
  concepts: { added: number; existing: number }
}

/** Polls the job to its end, its progress shown as the document's: the job when it succeeded, else why not. */
async function follow(
  target: IngestTarget,
  jobId: string,
  name: string,
  progress: Progress,
): Promise<Job | { reason: string }> {
  for (;;) {
    let job: Job
    try {
      job = await target.job(jobId)
    } catch (error) {
      return { reason: `could not follow job ${jobId}: ${(error as Error).message}` }
    }
    if (job.status === 'succeeded') return job
    if (job.status === 'failed' || job.status === 'cancelled') return { reason: job.error ?? job.status }
    progress.update(name, job)
    await wait(POLL_MS)
  }
}

/** Adds every item and follows its job; prints the summary. Answers the exit code: 1 when any failed. */
export async function runIngest(
  target: IngestTarget,
  items: readonly IngestItem[],
  options: { process: boolean; out: Output },
): Promise<number> {
  const progress = new Progress(options.out)
  const outcomes: Outcome[] = new Array(items.length)
  let next = 0
  const runner = async () => {
    for (let i = next++; i < items.length; i = next++) {
      outcomes[i] = await ingestOne(target, items[i]!, options.process, progress)
      progress.finish(items[i]!.name, outcomes[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, runner))
  const count = (status: Outcome['status']) => outcomes.filter((outcome) => outcome.status === status).length
  options.out.write(`\n${count('added')} added, ${count('unchanged')} unchanged, ${count('failed')} failed\n`)
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'failed') options.out.write(`  ${items[i]!.name}: ${outcome.reason}\n`)
  })
  return count('failed') > 0 ? 1 : 0
}

/** A running kgs at `baseUrl`, over its API as `token`'s holder (the token goes in a header and nowhere else). */
export function remoteTarget(baseUrl: string, token: string, repository: string): IngestTarget {
  const base = `${baseUrl.replace(/\/+$/, '')}/${encodeURIComponent(repository)}`
  const request = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
    let response: Response
    try {
      response = await fetch(`${base}${path}`, {
        ...init,
        headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
      })
    } catch (error) {
      throw new Error(`could not reach ${baseUrl}: ${(error as Error).message}`)
    }
    const body = (await response.json().catch(() => undefined)) as { error?: string } | undefined
    if (!response.ok) throw new Error(body?.error ?? `${baseUrl} answered ${response.status}`)
    return body as T
  }
  return {
    async add(item, process) {
      let init: RequestInit
      if (item.type === 'url')
        init = {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ url: item.url, process }),
        }
      else {
        const form = new FormData()
        form.append('process', String(process))
        form.append('file', new File([await readFile(item.path)], basename(item.path), { type: item.contentType }))
        init = { method: 'POST', body: form }
      }
      const answer = await request<{ jobs: { id: string }[] }>('/ingest', init)
      return { jobId: answer.jobs[0]!.id }
    },
    job: (id) => request<Job>(`/jobs/${id}`),
    close: async () => {},
  }
}
