// The public API as the app calls it: JSON in and out, every error the API's own message.
import { authorized, authorizedFetch } from './auth.ts'

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 409's row that exists already (the write API's existing_id). */
    readonly existingId?: string,
  ) {
    super(message)
  }
}

async function failure(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`
  let existingId: string | undefined
  try {
    const body = await response.json()
    if (typeof body?.error === 'string') message = body.error
    if (typeof body?.existing_id === 'string') existingId = body.existing_id
  } catch {
    // Not JSON: the status line says what there is to say.
  }
  return new ApiError(response.status, message, existingId)
}

/**
 * An API path from a template whose every interpolation is one path segment, encoded: an id from
 * the address bar or a row never adds a segment, and a dot segment (which a URL resolves, encoded
 * or not) is refused. Queries go after it, built by URLSearchParams.
 */
export function apiPath(strings: TemplateStringsArray, ...segments: string[]): string {
  return strings.reduce((path, text, i) => {
    const segment = segments[i - 1]!
    if (segment === '' || segment === '.' || segment === '..') throw new Error(`not an id: "${segment}"`)
    return path + encodeURIComponent(segment) + text
  })
}

/** The answer's body with its ETag (the version a later write names in If-Match). */
export async function versioned<T>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ value: T; etag: string }> {
  const init: RequestInit = { method, headers: { accept: 'application/json', ...headers } }
  if (body !== undefined) init.headers = { ...init.headers, 'content-type': 'application/json' }
  if (body !== undefined) init.body = JSON.stringify(body)
  // no-store: an edit starts from the row as it is now, never from the browser's cache.
  const response = await authorizedFetch(path, { ...init, cache: 'no-store' })
  if (!response.ok) throw await failure(response)
  const text = await response.text()
  return { value: (text ? JSON.parse(text) : undefined) as T, etag: response.headers.get('etag') ?? '' }
}

export const request = async <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  (await versioned<T>(method, path, body, headers)).value

/** GETs in flight, by path: parts of a page that read one path at once share one request. */
const reading = new Map<string, Promise<{ value: unknown; etag: string }>>()

/** GET `path` with its ETag; while a GET of the same path is in flight, its answer. */
export function read<T>(path: string): Promise<{ value: T; etag: string }> {
  let answer = reading.get(path)
  if (!answer) {
    answer = versioned<unknown>('GET', path).finally(() => reading.delete(path))
    reading.set(path, answer)
  }
  return answer as Promise<{ value: T; etag: string }>
}

export const get = async <T>(path: string) => (await read<T>(path)).value

export interface Page<T> {
  rows: T[]
  /** The cursor of the next page (from the Link header), if there is one. */
  next: string | undefined
  /** The list's length, where the API says it (X-Total-Count: ranked lists). */
  total: number | undefined
}

/** One page of a paginated or ranked list (decisions §1: ?limit=, ?cursor=, Link rel="next"). */
export async function page<T>(path: string, cursor: string | undefined, limit = 50): Promise<Page<T>> {
  const url = new URL(path, location.origin)
  url.searchParams.set('limit', String(limit))
  if (cursor) url.searchParams.set('cursor', cursor)
  const response = await authorizedFetch(url.pathname + url.search, { headers: { accept: 'application/json' } })
  if (!response.ok) throw await failure(response)
  const link = response.headers.get('link') ?? ''
  const target = /<([^>]+)>\s*;\s*rel="?next"?/.exec(link)?.[1]
  const total = response.headers.get('x-total-count')
  return {
    rows: (await response.json()) as T[],
    next: target ? (new URL(target, location.origin).searchParams.get('cursor') ?? undefined) : undefined,
    total: total === null ? undefined : Number(total),
  }
}

/**
 * POSTs `file` as the body (a form: as multipart/form-data, the browser choosing the boundary, when
 * `contentType` is undefined), reporting how much of it was sent (fetch reports no upload progress:
 * XMLHttpRequest does); the answer's JSON, or the API's error.
 */
export async function upload<T>(
  path: string,
  file: Blob | FormData,
  contentType: string | undefined,
  onProgress: (sent: number, total: number) => void,
): Promise<T> {
  const answer = await authorized(
    path,
    (url, headers) =>
      new Promise<{ status: number; statusText: string; text: string }>((resolve, reject) => {
        const xhr = new XMLHttpRequest()
        xhr.open('POST', url)
        for (const [name, value] of Object.entries({
          accept: 'application/json',
          ...(contentType === undefined ? {} : { 'content-type': contentType }),
          ...headers,
        }))
          xhr.setRequestHeader(name, value)
        xhr.upload.onprogress = (event) =>
          onProgress(event.loaded, event.lengthComputable || file instanceof FormData ? event.total : file.size)
        xhr.onload = () => resolve({ status: xhr.status, statusText: xhr.statusText, text: xhr.responseText })
        xhr.onerror = () => reject(new Error('The upload was cut off before the server answered; try again.'))
        xhr.send(file)
      }),
  )
  if (answer.status < 200 || answer.status > 299)
    throw await failure(new Response(answer.text, { status: answer.status, statusText: answer.statusText }))
  return JSON.parse(answer.text) as T
}
