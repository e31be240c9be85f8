// readDocument in a child process of its own, which is what the ingest job calls: pdf.js leaves
// far more garbage than a document's text, which the allocator keeps and the server would keep
// for good; and a document that makes the parser crash, run away or blow up its memory takes
// down only the child. The child (kgs's hidden command READ_DOCUMENT_COMMAND) reads one request
// on stdin and writes one answer on stdout, each a frame: a 4-byte length, that much JSON, then
// binary parts (the document's bytes; the images' bytes) whose lengths the JSON gives. This side
// kills it at the reader's time limit (with a margin: the reader checks its own between pages)
// and when its resident memory, read from /proc every few milliseconds where there is one (Linux),
// passes `maxMemoryBytes`; either is the document's refusal. A child that cannot be started is
// kgs's failure (a plain error: the job retries).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { runtime } from '../runtime/index.ts'
import { type DocumentInput, readDocument } from './read.ts'
import {
  DEFAULT_READ_LIMITS,
  DocumentRefused,
  type DocumentImage,
  type ParsedDocument,
  type ReadLimits,
  type RefusalCode,
} from './types.ts'

/** The hidden command of src/main.ts that serves one read. */
export const READ_DOCUMENT_COMMAND = '__read-document'

/** Past the reader's own time limit, for the child's start and a page that never ends. */
const KILL_MARGIN_MS = 5_000
/**
 * The environment the child gets: what a runtime needs to start (its caches, temporary files,
 * locale), not the server's settings and secrets, which reading a document never needs.
 */
const CHILD_ENVIRONMENT =
  /^(PATH|HOME|TMPDIR|TMP|TEMP|LANG|LC_[A-Z]+|TZ|XDG_CACHE_HOME|DENO_DIR|BUN_RUNTIME_TRANSPILER_CACHE_PATH)$/

/** How often the child's resident memory is read. */
const MEMORY_POLL_MS = 10

interface Request {
  contentType?: string
  fileName?: string
  url?: string
  limits: Partial<ReadLimits>
}

type Answer =
  | { document: Omit<ParsedDocument, 'images'> & { images: (Omit<DocumentImage, 'data'> & { dataBytes?: number })[] } }
  | { refused: { code: RefusalCode; message: string } }
  | { error: string }

/** What the child answered, with its peak resident memory in bytes (for the log). */
export interface ChildRead {
  document: ParsedDocument
  peakRssBytes: number
}

/** A frame's pieces, written one after the other (not joined: a long document's answer is several megabytes). */
function frame(header: unknown, parts: Uint8Array[]): Uint8Array[] {
  const json = Buffer.from(JSON.stringify(header))
  const length = Buffer.alloc(4)
  length.writeUInt32BE(json.byteLength)
  return [length, json, ...parts]
}

/** Writes the pieces to `stream`; resolves once the last is handed to the system. */
function writeAll(stream: NodeJS.WritableStream, pieces: Uint8Array[]): Promise<void> {
  return new Promise((resolve, reject) => {
    pieces.forEach((piece, i) =>
      stream.write(piece, i < pieces.length - 1 ? undefined : (error) => (error ? reject(error) : resolve())),
    )
  })
}

function unframe<T>(data: Buffer): { header: T; rest: Buffer } {
  const length = data.readUInt32BE(0)
  return {
    header: JSON.parse(data.toString('utf8', 4, 4 + length)) as T,
    rest: data.subarray(4 + length),
  }
}

/** A field of /proc/<pid>/status in bytes, or undefined where /proc does not say (or the process has exited). */
function procStatusBytes(pid: number | 'self', field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}

/** This process's peak resident memory: Linux carries the peak of the process that spawned this one into resourceUsage's maxRSS (kilobytes) across exec, not into VmHWM. */
const peakResidentBytes = () => procStatusBytes('self', 'VmHWM') ?? process.resourceUsage().maxRSS * 1024

export async function readDocumentInChild(
  input: DocumentInput,
  options: { limits?: Partial<ReadLimits>; maxMemoryBytes: number; signal?: AbortSignal },
): Promise<ChildRead> {
  const limits = options.limits ?? {}
  const timeMs = limits.timeMs ?? DEFAULT_READ_LIMITS.timeMs
  const [command, ...args] = runtime.kgsCommand()
  const request: Request = { contentType: input.contentType, fileName: input.fileName, url: input.url, limits }
  options.signal?.throwIfAborted()
  return new Promise<ChildRead>((resolve, reject) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => CHILD_ENVIRONMENT.test(name)))
    const child = spawn(command!, [...args, READ_DOCUMENT_COMMAND], { stdio: ['pipe', 'pipe', 'pipe'], env })
    const out: Buffer[] = []
    let stderr = ''
    let killedFor: DocumentRefused | Error | undefined
    let peakRss = 0
    let settled = false
    const kill = (why: DocumentRefused | Error) => {
      killedFor ??= why
      child.kill('SIGKILL')
    }
    const timer = setTimeout(
      () => kill(new DocumentRefused('timeout', `reading the document took longer than ${timeMs} ms`)),
      timeMs + KILL_MARGIN_MS,
    )
    const watch = setInterval(() => {
      const rss = child.pid === undefined ? undefined : procStatusBytes(child.pid, 'VmRSS')
      if (rss === undefined) return
      peakRss = Math.max(peakRss, rss)
      if (rss > options.maxMemoryBytes)
        kill(
          new DocumentRefused(
            'too_much_memory',
            `reading the document took more than the memory limit of ${options.maxMemoryBytes} bytes`,
          ),
        )
    }, MEMORY_POLL_MS)
    const onAbort = () => kill(new Error('the read was cancelled'))
    options.signal?.addEventListener('abort', onAbort, { once: true })
    const finish = (outcome: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      clearInterval(watch)
      options.signal?.removeEventListener('abort', onAbort)
      outcome()
    }
    // A child that could not be started (no such executable, no processes left) is kgs's failure.
    child.on('error', (error) =>
      finish(() => reject(new Error(`could not start the document reader: ${error.message}`))),
    )
    child.stdout!.on('data', (chunk: Buffer) => out.push(chunk))
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-2000)
    })
    // It may die before reading it all: the exit says why.
    child.stdin!.on('error', () => {})
    void writeAll(child.stdin!, frame(request, [input.bytes])).then(
      () => child.stdin!.end(),
      () => {},
    )
    child.on('close', (code, signal) =>
      finish(() => {
        if (killedFor) return reject(killedFor)
        const data = Buffer.concat(out)
        if (code !== 0 || data.byteLength < 4) {
          const how = signal ? `was killed (${signal})` : `exited with code ${code}`
          const said = stderr.trim().split('\n').at(-1)
          return reject(
            new DocumentRefused(
              'crashed',
              `the process reading the document ${how} before it answered${said ? `: ${said}` : ''}`,
            ),
          )
        }
        const { header, rest } = unframe<Answer & { peakRssBytes: number }>(data)
        if ('refused' in header) return reject(new DocumentRefused(header.refused.code, header.refused.message))
        if ('error' in header) return reject(new Error(header.error))
        let at = 0
        const images = header.document.images.map(({ dataBytes, ...image }) => {
          if (dataBytes === undefined) return image
          const data = new Uint8Array(rest.buffer, rest.byteOffset + at, dataBytes)
          at += dataBytes
          return { ...image, data }
        })
        resolve({
          document: { ...header.document, images },
          peakRssBytes: Math.max(peakRss, header.peakRssBytes),
        })
      }),
    )
  })
}

/** The child's side: one request from stdin, its answer on stdout; the exit code is 0 whenever an answer was written. */
export async function serveReadDocument(): Promise<number> {
  // Orphaned (the server was killed): nobody waits for the answer. pdf.js's pages may keep this
  // timer waiting until the read ends; the time limit bounds it all the same.
  const parent = process.ppid
  runtime.unref(setInterval(() => process.ppid !== parent && process.exit(1), 1000))
  const { header: request, rest } = unframe<Request>(Buffer.from(await new Response(runtime.stdin()).arrayBuffer()))
  // A plain Uint8Array: pdf.js refuses a Buffer.
  const bytes = new Uint8Array(rest.buffer, rest.byteOffset, rest.byteLength)
  let answer: Answer
  const parts: Uint8Array[] = []
  try {
    const document = await readDocument(
      { bytes, contentType: request.contentType, fileName: request.fileName, url: request.url },
      request.limits,
    )
    const images = document.images.map(({ data, ...image }) => {
      if (!data) return image
      parts.push(data)
      return { ...image, dataBytes: data.byteLength }
    })
    answer = { document: { ...document, images } }
  } catch (error) {
    answer =
      error instanceof DocumentRefused
        ? { refused: { code: error.code, message: error.message } }
        : { error: (error as Error).message ?? String(error) }
  }
  // What pdf.js left is garbage now: collected, its memory holds the answer instead of more.
  runtime.gc(true)
  const peakRssBytes = peakResidentBytes()
  await writeAll(process.stdout, frame({ ...answer, peakRssBytes }, parts))
  return 0
}
