// The kgs:// resources: a repository's facts, concepts, reports and sources, each read as its get
// tool answers it (a source without its long texts), and a source's Markdown chunk by chunk (what
// a fact cites as chunk_index); resources/list pages through all the caller may read, repository
// after repository. Each is read with the permission its get tool needs, decided by server.ts.
import type { Sql } from 'postgres'
import { HttpError } from '../http/errors.ts'
import { decodeCursor, encodeCursor, splitPage } from '../http/pagination.ts'
import type { PageKey, PageRequest } from '../db/pages.ts'
import type { RepositoryPermission } from '../permissions.ts'
import type { Repository } from '../repositories/repositories.ts'
import { nextRepositoryId } from '../repositories/store.ts'
import {
  getConcept,
  getFact,
  getReport,
  getSource,
  listConcepts,
  listFacts,
  listReports,
  listSources,
} from '../graph/store.ts'
import { sourceChunks } from '../ingest/store.ts'
import { isUuid } from '../uuid.ts'
import { preview } from './arguments.ts'
import type { ToolServices } from './services.ts'

const JSON_TYPE = 'application/json'

/** A resource template: its URI, what it holds, and how a read of it answers (undefined: not found). */
export interface ResourceKind {
  name: string
  template: string
  description: string
  mimeType: string
  permission: RepositoryPermission
  read(sql: Sql, variables: Record<string, string>): Promise<string | undefined>
}

/** A kind resources/list lists: its rows a page at a time, each as a resource. */
interface ListedKind {
  kind: string
  permission: RepositoryPermission
  list(sql: Sql, request: PageRequest): Promise<({ id: string; page_key: PageKey } & Record<string, unknown>)[]>
  name(row: Record<string, unknown>): string
}

const asJson = (row: unknown) => (row === undefined ? undefined : JSON.stringify(row))
const byId =
  <T>(read: (sql: Sql, id: string) => Promise<T | undefined>) =>
  async (sql: Sql, variables: Record<string, string>) =>
    isUuid(variables.id!) ? asJson(await read(sql, variables.id!)) : undefined

/** A source without its parsed texts (up to megabytes: its chunks give them), with how many chunks it has. */
async function sourceResource(sql: Sql, id: string) {
  const source = await getSource(sql, id)
  if (!source) return undefined
  const { parsed_text: _, parsed_markdown: __, ...rest } = source
  return { ...rest, chunk_count: (await sourceChunks(sql, id, { offset: 0, limit: 0 }))!.total }
}

async function chunkResource(sql: Sql, variables: Record<string, string>) {
  const n = Number(variables.n)
  if (!isUuid(variables.id!) || !Number.isSafeInteger(n) || n < 0 || String(n) !== variables.n) return undefined
  return (await sourceChunks(sql, variables.id!, { offset: n, limit: 1 }))?.rows[0]?.text
}

export const RESOURCE_KINDS: ResourceKind[] = [
  {
    name: 'fact',
    template: 'kgs://{repository}/facts/{id}',
    description: 'a fact of a repository, as get_fact answers it',
    mimeType: JSON_TYPE,
    permission: 'fact:read',
    read: byId(getFact),
  },
  {
    name: 'concept',
    template: 'kgs://{repository}/concepts/{id}',
    description: 'a concept of a repository, as get_concept answers it',
    mimeType: JSON_TYPE,
    permission: 'concept:read',
    read: byId(getConcept),
  },
  {
    name: 'report',
    template: 'kgs://{repository}/reports/{id}',
    description: 'a report of a repository, as get_report answers it',
    mimeType: JSON_TYPE,
    permission: 'report:read',
    read: byId(getReport),
  },
  // Before the source's own template, which would otherwise be tried first for a chunk's URI.
  {
    name: 'source_chunk',
    template: 'kgs://{repository}/sources/{id}/chunks/{n}',
    description: "chunk n (from 0) of a source's Markdown: what a fact cites as chunk_index",
    mimeType: 'text/markdown',
    permission: 'source:read',
    read: chunkResource,
  },
  {
    name: 'source',
    template: 'kgs://{repository}/sources/{id}',
    description: 'a source of a repository without its parsed text, with chunk_count: its chunks are …/chunks/{n}',
    mimeType: JSON_TYPE,
    permission: 'source:read',
    read: byId(sourceResource),
  },
]

const LISTED: ListedKind[] = [
  { kind: 'concepts', permission: 'concept:read', list: listConcepts, name: (c) => String(c.canonical_name) },
  { kind: 'reports', permission: 'report:read', list: listReports, name: (r) => String(r.title) },
  {
    kind: 'sources',
    permission: 'source:read',
    list: listSources,
    name: (s) => String(s.parsed_title || s.url),
  },
  { kind: 'facts', permission: 'fact:read', list: listFacts, name: (f) => preview(String(f.text)).slice(0, 80) },
]

const INVALID_CURSOR = 'invalid cursor: pass nextCursor of the previous page as it was'

/** Resources in a page of resources/list: the protocol leaves the size to the server. */
const PAGE = 100
/** Lists (one kind of one repository) a page reads at most: a caller seeing many empty repositories gets shorter pages, each with a cursor. */
const LISTS_PER_PAGE = 20

/** Where a page of resources/list starts: a repository, a kind of it, and the row after which its list goes on. */
interface Position {
  repository: string
  kind: number
  after?: string
}

const encodePosition = (p: Position) =>
  Buffer.from(JSON.stringify([p.repository, p.kind, p.after])).toString('base64url')

function decodePosition(cursor: string): Position {
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    // refused below, as any cursor kgs did not write
  }
  if (Array.isArray(decoded) && decoded.length <= 3) {
    const [repository, kind, after] = decoded as unknown[]
    if (
      typeof repository === 'string' &&
      isUuid(repository) &&
      Number.isInteger(kind) &&
      (kind as number) >= 0 &&
      (kind as number) < LISTED.length &&
      (after === undefined || after === null || typeof after === 'string')
    )
      return { repository, kind: kind as number, after: after ?? undefined }
  }
  throw new HttpError(400, INVALID_CURSOR)
}

/** The repository `id` names if the caller may take `permission`'s action there, else undefined (server.ts decides). */
export type Allowed = (permission: RepositoryPermission, id: string) => Promise<Repository | undefined>

/**
 * A page of resources/list for a caller who sees `visible` (every repository: 'all'): the
 * concepts, reports, sources and facts of each repository whose read permission they hold, in
 * the repositories' id order. A cursor names a repository again, so each page asks `allowed`
 * anew: a cursor naming another repository lists nothing of it.
 */
export async function listResources(
  services: ToolServices,
  visible: 'all' | ReadonlySet<string>,
  allowed: Allowed,
  cursor: string | undefined,
) {
  const only = visible === 'all' ? undefined : [...visible]
  const next = (after: string | undefined) => nextRepositoryId(services.pools.system, only, after)
  let at: Position | undefined = cursor ? decodePosition(cursor) : await following(next, undefined)
  const resources: { uri: string; name: string; mimeType: string }[] = []
  for (let lists = 0; at && resources.length < PAGE && lists < LISTS_PER_PAGE; lists++) {
    const listed = LISTED[at.kind]!
    const repository = await allowed(listed.permission, at.repository)
    if (repository) {
      const request = { limit: PAGE - resources.length, after: pageKey(at.after) }
      const rows = await listed.list(await services.pools.forRepository(repository.id), request)
      const { shown, next: key } = splitPage(rows, request.limit)
      for (const row of shown)
        resources.push({
          uri: `kgs://${repository.id}/${listed.kind}/${row.id}`,
          name: listed.name(row),
          mimeType: JSON_TYPE,
        })
      if (key) {
        at = { ...at, after: encodeCursor(key) }
        continue
      }
    }
    at =
      at.kind + 1 < LISTED.length
        ? { repository: at.repository, kind: at.kind + 1 }
        : await following(next, at.repository)
  }
  return { resources, ...(at ? { nextCursor: encodePosition(at) } : {}) }
}

/** The first list of the repository after `after` (the first one, undefined), if there is one. */
async function following(next: (after: string | undefined) => Promise<string | undefined>, after: string | undefined) {
  const repository = await next(after)
  return repository ? { repository, kind: 0 } : undefined
}

function pageKey(after: string | undefined): PageKey | undefined {
  try {
    return decodeCursor(after)
  } catch {
    throw new HttpError(400, INVALID_CURSOR)
  }
}
