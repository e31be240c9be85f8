// The paging of the MCP list tools: a limit (10 rows by default, at most 200) and an opaque cursor
// to go on, the same cursors the REST routes use, refused as bad input when they are not ones.
import { t } from 'elysia'
import { Type, type TSchema } from '@sinclair/typebox'
import { HttpError } from '../http/errors.ts'
import { decodeCursor, encodeCursor, encodeOffsetCursor, rankedRangeOf, splitPage } from '../http/pagination.ts'
import type { PageKey, PageRequest, RankedRange } from '../db/pages.ts'
import { RepositoryArgument } from './arguments.ts'

const DEFAULT_LIMIT = 10
const MAX_LIMIT = 200
export const Limit = t.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_LIMIT,
    default: DEFAULT_LIMIT,
    description: `how many (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`,
  }),
)
export const Cursor = t.Optional(
  t.String({ maxLength: 200, description: 'next_cursor of the previous page, to go on' }),
)
export const NextCursor = t.Optional(t.String({ description: 'present when there is more: pass it as cursor' }))

/** A list tool's input: the repository, the page and `filters`. */
export const listInput = <P extends Record<string, TSchema>>(filters: P) =>
  t.Object(
    { repository: RepositoryArgument, ...filters, limit: Limit, cursor: Cursor },
    { additionalProperties: false },
  )
export const listOutput = <T extends TSchema>(item: T) => t.Object({ items: t.Array(item), next_cursor: NextCursor })

export function pageRequest(input: { limit?: number; cursor?: string }): PageRequest {
  try {
    return { limit: input.limit ?? DEFAULT_LIMIT, after: decodeCursor(input.cursor) }
  } catch {
    throw new HttpError(400, 'invalid cursor: pass next_cursor of the previous page as it was')
  }
}

/** The rows of a ranked list (search, related concepts) a call asks for: from its cursor's position, within the list's window. */
export function rankedRange(input: { limit?: number; cursor?: string }, window: number): RankedRange {
  try {
    return rankedRangeOf(input.cursor, input.limit ?? DEFAULT_LIMIT, window)
  } catch {
    throw new HttpError(400, 'invalid cursor: pass next_cursor of the previous page as it was')
  }
}

/** The cursor of the page after `range` of a ranked list of `total` rows, if there is one. */
export function nextRanked(range: RankedRange, total: number, window: number) {
  const end = range.offset + range.limit
  return end < Math.min(total, window) ? { next_cursor: encodeOffsetCursor(end) } : {}
}

/** A store's page (look-ahead row included) as a list tool's answer, each row through `show`. */
export function answerPage<R extends { page_key: PageKey }, T>(
  rows: R[] & { pageLimit?: number },
  request: PageRequest,
  show: (row: Omit<R, 'page_key'>) => T,
) {
  const { shown, next } = splitPage(rows, request.limit)
  return { items: shown.map(show), ...(next ? { next_cursor: encodeCursor(next) } : {}) }
}
