// Cursor pagination (docs/spec/decisions.md §1): ?limit= (default 50, max 500) and ?cursor=; the next page
// is announced in a Link header (RFC 8288). Order is (created_at, id); the cursor is opaque to
// clients and carries the last row's key with full timestamp precision.
// A list route says `paginated: true` (the `pagination` macro below) and answers the rows of
// `page` from its store, look-ahead row and page keys included; the macro does the rest.
import { Elysia, t } from 'elysia'
import { HttpError } from './errors.ts'
import { integerQuery } from './openapi.ts'
import type { PageKey, PageRequest, RankedRange } from '../db/pages.ts'

const DEFAULT_LIMIT = 50
const MAX_LIMIT = 500

// limit is checked by parseLimit: Elysia reports a query range error without the field's name.
export const PageQuery = t.Object({
  limit: t.Optional(integerQuery({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'page size' })),
  cursor: t.Optional(t.String({ maxLength: 200, error: 'expected a cursor from a Link header' })),
})

function parseLimit(limit: string | undefined, max: number): number | undefined {
  if (limit === undefined) return undefined
  const n = /^[0-9]{1,4}$/.test(limit) ? Number(limit) : NaN
  if (!(n >= 1 && n <= max))
    throw new HttpError(
      400,
      `invalid query: limit: expected an integer from 1 to ${max} (got ${JSON.stringify(limit.slice(0, 20))})`,
    )
  return n
}

/** What pageKeyColumn writes: anything else would reach PostgreSQL as a cast that fails (a 500). */
const KEY_AT = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$/
const KEY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A real calendar instant: Date.parse alone takes 2020-02-30 (PostgreSQL does not) and year 0. */
function isKeyTime(at: string): boolean {
  const ms = Date.parse(at)
  return (
    KEY_AT.test(at) && at >= '0001' && !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 23) === at.slice(0, 23)
  )
}

export function decodeCursor(cursor: string | undefined): PageKey | undefined {
  if (cursor === undefined) return undefined
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    // reported below, like any other cursor we did not write
  }
  if (Array.isArray(decoded) && decoded.length === 2) {
    const [at, id] = decoded as unknown[]
    if (typeof at === 'string' && typeof id === 'string' && isKeyTime(at) && KEY_ID.test(id)) return { at, id }
  }
  throw new HttpError(400, 'invalid query: cursor: expected a cursor from a Link header')
}

export function encodeCursor(key: PageKey): string {
  return Buffer.from(JSON.stringify([key.at, key.id])).toString('base64url')
}

type Paged = { page_key: PageKey }[] & { pageLimit?: number }

// ---- ranked lists (search, related concepts): ordered by a score, not by (created_at, id), so
// a cursor is a position in the list; the list is cut at a window (its rows past it are not
// served) and says its length in X-Total-Count.

const DEFAULT_RANKED_LIMIT = 10
const MAX_RANKED_LIMIT = 100

const RankedQuery = t.Object({
  limit: t.Optional(
    integerQuery({ minimum: 1, maximum: MAX_RANKED_LIMIT, default: DEFAULT_RANKED_LIMIT, description: 'page size' }),
  ),
  cursor: t.Optional(t.String({ maxLength: 200, error: 'expected a cursor from a Link header' })),
})

/** What a ranked route answers: its page's rows, carrying the list's length (the X-Total-Count header). */
export type RankedPage<T> = T[] & { total: number }

export const rankedPage = <T>(rows: T[], total: number): RankedPage<T> => Object.assign(rows, { total })

/** A ranked list's cursor: the position its next page starts at. */
export const encodeOffsetCursor = (offset: number) => Buffer.from(JSON.stringify({ offset })).toString('base64url')

/** The range of a ranked list's page: `limit` rows from `cursor`'s position (absent: the start) within the window. */
export function rankedRangeOf(cursor: string | undefined, limit: number, window: number): RankedRange {
  if (cursor === undefined) return { offset: 0, limit }
  let offset: unknown
  try {
    offset = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { offset?: unknown }).offset
  } catch {
    // reported below, like any other cursor we did not write
  }
  if (typeof offset === 'number' && Number.isInteger(offset) && offset > 0 && offset < window)
    return { offset, limit: Math.min(limit, window - offset) }
  throw new HttpError(400, 'invalid query: cursor: expected a cursor from a Link header')
}

const rankedRange = (query: { limit?: string; cursor?: string }, window: number) =>
  rankedRangeOf(query.cursor, parseLimit(query.limit, MAX_RANKED_LIMIT) ?? DEFAULT_RANKED_LIMIT, window)

/** Trims nothing (the handler answers its page), but sets X-Total-Count and, when there is a next page, its Link. */
const answerRanked =
  (window: number) =>
  ({
    range,
    response,
    request,
    set: { headers },
  }: {
    range?: RankedRange
    response: unknown
    request: Request
    set: { headers: Record<string, string | number> }
  }) => {
    if (!range || !Array.isArray(response)) return
    const { total } = response as RankedPage<unknown>
    headers['x-total-count'] = total
    const end = range.offset + range.limit
    if (end < Math.min(total, window)) {
      const next = new URL(request.url)
      next.searchParams.set('cursor', encodeOffsetCursor(end))
      headers.link = `<${next.pathname}${next.search}>; rel="next"`
    }
    return [...response]
  }

/**
 * A page of `rows` (a store's answer: look-ahead row and page keys included) as the rows to show,
 * without their keys, and the key after which the next page starts, if there is one. Rows whose
 * list ended the page early (large rows: graph/store.ts PAGE_BYTES) say so in `pageLimit`.
 */
export function splitPage<R extends { page_key: PageKey }>(
  rows: R[] & { pageLimit?: number },
  requested: number,
): { shown: Omit<R, 'page_key'>[]; next?: PageKey } {
  const limit = Math.min(requested, rows.pageLimit ?? requested)
  const more = rows.length > limit
  const shown = more ? rows.slice(0, limit) : rows
  return { shown: shown.map(({ page_key: _, ...row }) => row), ...(more ? { next: shown.at(-1)!.page_key } : {}) }
}

/** Trims the look-ahead row and sets the Link header when there is a next page. */
function trimPage(
  rows: Paged,
  requested: number,
  request: Request,
  headers: Record<string, string | number>,
): object[] {
  const { shown, next } = splitPage(rows, requested)
  if (next) {
    const url = new URL(request.url)
    url.searchParams.set('limit', String(requested))
    url.searchParams.set('cursor', encodeCursor(next))
    headers.link = `<${url.pathname}${url.search}>; rel="next"`
  }
  return shown
}

const pageRequest = (query: { limit?: string; cursor?: string }): PageRequest => ({
  limit: parseLimit(query.limit, MAX_LIMIT) ?? DEFAULT_LIMIT,
  after: decodeCursor(query.cursor),
})

/** What the handler answered, as a page when it is one (an array; see paginatedUnless for the other). */
function answerPage({
  page,
  response,
  request,
  set,
}: {
  page?: PageRequest
  response: unknown
  request: Request
  set: { headers: Record<string, string | number> }
}) {
  if (page && Array.isArray(response)) return trimPage(response as Paged, page.limit, request, set.headers)
}

/**
 * `paginated: true` on a list route: the ?limit= and ?cursor= query parameters (400 for a bad
 * one), the decoded request as `page`, and from the rows the handler answers (store rows with
 * their `page_key`, one more than `page.limit` when there is a next page; rows mapped by the
 * handler keep it) the page and its Link header. The macro comes after the route's authorization macro: a caller learns nothing of the
 * query before it is authorized.
 * `paginatedUnless: 'parameter'`: a list that has a second form, chosen by that query
 * parameter (the registry's Go list, ?offset=), where `page` is undefined and nothing is paged.
 */
export const pagination = new Elysia({ name: 'kgs/pagination' }).macro({
  paginated: {
    query: PageQuery,
    resolve: ({ query }) => ({ page: pageRequest(query) }),
    afterHandle: answerPage,
  },
  paginatedUnless: (parameter: string) => ({
    query: PageQuery,
    resolve: ({ query }) => ({
      page: (query as Record<string, string | undefined>)[parameter] === undefined ? pageRequest(query) : undefined,
    }),
    afterHandle: answerPage,
  }),
  ranked: (window: number) => ({
    query: RankedQuery,
    resolve: ({ query }) => ({ range: rankedRange(query, window) }),
    afterHandle: answerRanked(window),
  }),
})
