// The public API as the app calls it: JSON in and out, every error the API's own message.
import { authorizedFetch } from './auth.ts'

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

async function failure(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`
  try {
    const body = await response.json()
    if (typeof body?.error === 'string') message = body.error
  } catch {
    // Not JSON: the status line says what there is to say.
  }
  return new ApiError(response.status, message)
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: { accept: 'application/json' } }
  if (body !== undefined) init.headers = { ...init.headers, 'content-type': 'application/json' }
  if (body !== undefined) init.body = JSON.stringify(body)
  const response = await authorizedFetch(path, init)
  if (!response.ok) throw await failure(response)
  const text = await response.text()
  return (text ? JSON.parse(text) : undefined) as T
}

export const get = <T>(path: string) => request<T>('GET', path)

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
