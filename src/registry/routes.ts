// The graph registry (docs/spec/bundle.md §7) at /api/v1/graphs: bundles are pushed as raw gzip bodies,
// streamed into blob storage without being parsed or held, indexed in the graphs table, listed,
// streamed back, and deleted by their owner or a sysadmin.
//
// These routes are registered before the JSON body parser (see app.ts): a push body is a
// stream of up to REGISTRY_MAX_BYTES, read here chunk by chunk, and no route here takes JSON.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import { timestampedId } from '../blobs/leftovers.ts'
import type { BlobStore } from '../blobs/store.ts'
import { SERVICE_SUBJECT, authenticatesFirst, forbidden, principalOf, holdsSystemPermission, requireScope, type Authenticator, type Authorizer, type Principal } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import { securityDetail } from '../http/openapi.ts'
import { EmptyUpload, gzipChunks, requestChunks, uploadError, type UploadPace, type UploadRefusals } from '../http/upload.ts'
import { PageQuery, pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { describeError, type Logger } from '../log.ts'
import type { Quotas } from '../quotas.ts'
import { scopeNeeded, type SystemPermission } from '../permissions.ts'
import { graphKey, incomingKey } from './leftovers.ts'
import { COUNT_FIELDS, deleteGraph, findGraphByNameAndHash, getGraph, insertGraph, listGraphs, listGraphsByOffset, type Graph, type GraphCounts } from './store.ts'
import { findUserById } from '../accounts/users.ts'

export interface RegistryRoutesOptions {
  system: Sql
  blobs: BlobStore
  /** Verifies bearer tokens; should accept the service principal's (withServiceTokens). */
  authenticator: Authenticator
  authorizer: Authorizer & { isSysadmin(userId: string): boolean }
  /** Largest bundle stored (REGISTRY_MAX_BYTES). */
  maxBytes: number
  /** Slowest a push may arrive (UPLOAD_MIN_RATE over BODY_TIMEOUT). */
  pace: UploadPace
  /** QUOTA_REGISTRY_*: checked for users' pushes (the server's own, for exports, at the export's request). */
  quotas: Pick<Quotas, 'checkRegistry'>
  log: Logger
}

// ---------------------------------------------------------------------------------------------
// Schemas

const NAME_MAX = 255
const DESCRIPTION_MAX = 10_000
const TAGS_MAX = 64
const TAG_MAX = 100

const GraphRecord = t.Object(
  {
    id: t.String({ format: 'uuid' }),
    name: t.String(),
    description: t.String(),
    owner: t.String({ description: 'the pusher\'s e-mail (for an export: the user who asked for it), or "kgs" for the server\'s own service token alone' }),
    owner_id: t.Union([t.String({ format: 'uuid' }), t.Null()], { description: 'the pusher\'s user id; null for the service token alone' }),
    tags: t.Array(t.String()),
    sha256: t.Union([t.String({ pattern: '^[0-9a-f]{64}$' }), t.Null()], { description: 'canonical hash of the bundle (X-Graph-SHA256); null when the push named none' }),
    schema_version: t.Union([t.Integer(), t.Null()], { description: 'X-Graph-Schema-Version; null when the push named none' }),
    bytes: t.Integer({ description: 'size of the stored .json.gz' }),
    source_count: t.Integer(),
    fact_count: t.Integer(),
    concept_count: t.Integer(),
    summary_count: t.Integer(),
    synthesis_count: t.Integer(),
    report_count: t.Integer(),
    investigation_count: t.Integer(),
    created_at: t.String(),
    updated_at: t.String({ description: 'always created_at: a stored graph never changes' }),
  },
  { description: 'a stored graph bundle (counts as pushed)' },
)
/** The Go registry's list (docs/spec/bundle.md §7); `graphs` is null when empty, as Go encodes a nil slice. */
const GoGraphPage = t.Object({ graphs: t.Union([t.Array(GraphRecord), t.Null()]), total: t.Integer() })
const PushResult = t.Object({ graph_id: t.String({ format: 'uuid' }), new: t.Boolean() })

const headerDoc = (description: string) => t.Optional(t.String({ description }))
const countDoc = (what: string) => headerDoc(`number of ${what} in the bundle (non-negative integer; default 0)`)
// Every push header is optional to the framework: they are checked in the handler, after the
// caller is authenticated, so an anonymous request is a 401 whatever its headers.
const PushHeaders = t.Object({
  'x-graph-name': headerDoc('required: the graph name (raw UTF-8), 1-255 characters'),
  'x-graph-description': headerDoc('raw UTF-8, at most 10,000 characters'),
  'x-graph-tags': headerDoc('JSON array of strings (at most 64, each 1-100 characters)'),
  'x-graph-sha256': headerDoc("the bundle's canonical hash (metadata.sha256), 64 lowercase hex digits"),
  'x-graph-schema-version': headerDoc('the bundle format version (positive integer)'),
  'x-graph-owner': headerDoc('accepted and ignored: the owner is always the authenticated caller'),
  'x-graph-source-count': countDoc('sources'),
  'x-graph-fact-count': countDoc('facts'),
  'x-graph-concept-count': countDoc('concepts'),
  'x-graph-summary-count': countDoc('concept summaries'),
  'x-graph-synthesis-count': countDoc('concept syntheses'),
  'x-graph-report-count': countDoc('reports'),
  'x-graph-investigation-count': countDoc('investigations'),
})
const ListQuery = t.Object({
  // Typed here too: the Go form reads limit and refuses cursor itself.
  ...PageQuery.properties,
  offset: t.Optional(t.String({ description: "the Go registry's list: answer {graphs, total}, newest first, from this offset (limit then 1-200, else 20)" })),
  // As long as the longest name, so that any name can be searched for.
  q: t.Optional(t.String({ maxLength: NAME_MAX, error: `expected at most ${NAME_MAX} characters`, description: 'case-insensitive substring of the name or description' })),
  tag: t.Optional(t.String({ maxLength: 100, error: 'expected at most 100 characters', description: 'only graphs carrying this tag' })),
})
const GraphParams = t.Object({ id: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
const gzipBody = { description: 'a gzipped bundle (.json.gz)', content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } } }

// ---------------------------------------------------------------------------------------------
// Push headers

const utf8 = new TextDecoder('utf-8', { fatal: true })
const CONTROL = /[\u0000-\u001f\u007f]/

export interface PushMetadata extends GraphCounts {
  name: string
  description: string
  tags: string[]
  sha256: string | null
  schema_version: number | null
}

const badHeader = (header: string, expected: string, value?: string) =>
  new HttpError(400, `invalid header: ${header}: ${expected}${value === undefined ? '' : ` (got ${value.length > 40 ? `${value.length} characters` : JSON.stringify(value)})`}`)

/**
 * A header's value as the client's UTF-8. Header bytes reach us as a latin1-decoded string (each
 * byte one character), so the bytes are recovered and decoded again.
 */
function headerText(headers: Headers, header: string): string | undefined {
  const raw = headers.get(header)
  if (raw === null) return undefined
  try {
    return utf8.decode(Buffer.from(raw, 'latin1'))
  } catch {
    throw badHeader(header, 'expected UTF-8 text')
  }
}

function count(headers: Headers, header: string): number {
  const value = headers.get(header)?.trim()
  if (value === undefined || value === '') return 0
  if (!/^[0-9]{1,15}$/.test(value)) throw badHeader(header, 'expected a non-negative integer', value)
  return Number(value)
}

const COUNT_HEADERS: Record<(typeof COUNT_FIELDS)[number], string> = {
  source_count: 'X-Graph-Source-Count',
  fact_count: 'X-Graph-Fact-Count',
  concept_count: 'X-Graph-Concept-Count',
  summary_count: 'X-Graph-Summary-Count',
  synthesis_count: 'X-Graph-Synthesis-Count',
  report_count: 'X-Graph-Report-Count',
  investigation_count: 'X-Graph-Investigation-Count',
}

/** The push headers of docs/spec/bundle.md §7, checked; 400 naming the header otherwise. */
function parsePushHeaders(headers: Headers): PushMetadata {
  const name = headerText(headers, 'X-Graph-Name')?.trim()
  if (!name) throw badHeader('X-Graph-Name', 'required: the graph name')
  if (name.length > NAME_MAX || CONTROL.test(name)) throw badHeader('X-Graph-Name', `expected at most ${NAME_MAX} characters without control characters`, name)

  const description = headerText(headers, 'X-Graph-Description')?.trim() ?? ''
  if (description.length > DESCRIPTION_MAX) throw badHeader('X-Graph-Description', `expected at most ${DESCRIPTION_MAX} characters`, description)

  const tagsText = headerText(headers, 'X-Graph-Tags')
  let tags: string[] = []
  if (tagsText !== undefined && tagsText.trim() !== '') {
    let parsed: unknown
    try {
      parsed = JSON.parse(tagsText)
    } catch {
      parsed = undefined
    }
    const valid = (tag: unknown): tag is string => typeof tag === 'string' && tag.length >= 1 && tag.length <= TAG_MAX && !CONTROL.test(tag)
    if (!Array.isArray(parsed) || !parsed.every(valid)) {
      throw badHeader('X-Graph-Tags', `expected a JSON array of strings of 1-${TAG_MAX} characters`, tagsText)
    }
    tags = [...new Set(parsed)]
    if (tags.length > TAGS_MAX) throw badHeader('X-Graph-Tags', `expected at most ${TAGS_MAX} tags`, tagsText)
  }

  const sha256 = headers.get('X-Graph-SHA256')?.trim() || null
  if (sha256 !== null && !/^[0-9a-f]{64}$/.test(sha256)) throw badHeader('X-Graph-SHA256', 'expected 64 lowercase hexadecimal digits', sha256)

  const version = headers.get('X-Graph-Schema-Version')?.trim() || null
  if (version !== null && !/^[1-9][0-9]{0,8}$/.test(version)) throw badHeader('X-Graph-Schema-Version', 'expected a positive integer', version)

  const counts = Object.fromEntries(COUNT_FIELDS.map((field) => [field, count(headers, COUNT_HEADERS[field])])) as GraphCounts
  return { name, description, tags, sha256, schema_version: version === null ? null : Number(version), ...counts }
}

/** What a push body may be declared as; the bytes must start as gzip in any case. */
const PUSH_CONTENT_TYPES = new Set(['application/gzip', 'application/x-gzip', 'application/octet-stream', ''])

// ---------------------------------------------------------------------------------------------
// The push body

/** How a failed store of a push body is answered. */
const pushRefusals = (maxBytes: number): UploadRefusals => ({
  tooLarge: tooLarge(maxBytes).message,
  notGzip: new HttpError(415, 'request body is not gzip: push a .json.gz bundle'),
  empty: 'request body is empty: push a .json.gz bundle',
})

const tooLarge = (maxBytes: number) => new HttpError(413, `bundle exceeds the registry's limit of ${maxBytes} bytes`)

// ---------------------------------------------------------------------------------------------
// Records

/** The graph record exactly as docs/spec/bundle.md §7 has it, in its order (no storage key). */
function record(g: Graph): Graph {
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    owner: g.owner,
    owner_id: g.owner_id,
    tags: g.tags,
    sha256: g.sha256,
    schema_version: g.schema_version,
    bytes: g.bytes,
    source_count: g.source_count,
    fact_count: g.fact_count,
    concept_count: g.concept_count,
    summary_count: g.summary_count,
    synthesis_count: g.synthesis_count,
    report_count: g.report_count,
    investigation_count: g.investigation_count,
    created_at: g.created_at,
    updated_at: g.updated_at,
  }
}

/** A file name for the download: lowercase ASCII letters and digits joined by '-'; 'graph' if none. */
export function filenameSlug(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 100)
    .replace(/^-+|-+$/g, '')
  return slug || 'graph'
}

// ---------------------------------------------------------------------------------------------
// The Go registry's list (docs/spec/bundle.md §7): ?limit=&offset=, answered {graphs, total}

const GO_DEFAULT_LIMIT = 20
const GO_MAX_LIMIT = 200

/** Go's rule: any integer; one of 0 or less, or over 200, means 20. */
function goLimit(limit: string | undefined): number {
  if (limit === undefined || limit === '') return GO_DEFAULT_LIMIT
  if (!/^-?[0-9]{1,15}$/.test(limit)) throw new HttpError(400, `invalid query: limit: expected an integer (got ${JSON.stringify(limit.slice(0, 20))})`)
  const n = Number(limit)
  return n <= 0 || n > GO_MAX_LIMIT ? GO_DEFAULT_LIMIT : n
}

function goOffset(offset: string): number {
  if (!/^[0-9]{1,15}$/.test(offset)) throw new HttpError(400, `invalid query: offset: expected a non-negative integer (got ${JSON.stringify(offset.slice(0, 20))})`)
  return Number(offset)
}

// ---------------------------------------------------------------------------------------------
// Routes

type RegistryAccess = Extract<SystemPermission, 'registry:push' | 'registry:pull'> | 'owner-or-sysadmin'

export function registryRoutes(options: RegistryRoutesOptions) {
  const { system, blobs, authenticator, authorizer, maxBytes, pace, quotas, log } = options
  const describe = (summary: string, extra: Record<string, unknown> = {}) => ({ tags: ['registry'], summary, ...extra })
  const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }

  /** Deletes blobs of a failed or redundant push; a failure to do so is logged, not raised. */
  const discard = async (...keys: string[]) => {
    for (const key of keys) {
      try {
        await blobs.delete(key)
      } catch (error) {
        log.error('registry: could not delete a blob', { key, ...describeError(error) })
      }
    }
  }

  const access = new Elysia({ name: 'kgs/registry-access' }).macro({
    /** registry:push / registry:pull in the system domain, or (delete) any authenticated user; the route checks ownership. */
    registry: (need: RegistryAccess) => ({
      // Deleting needs write on top of ownership (the route checks both).
      detail: securityDetail(need === 'owner-or-sysadmin' ? 'write' : scopeNeeded(need)),
      ...authenticatesFirst(authenticator, need === 'owner-or-sysadmin' ? 'write' : scopeNeeded(need)),
      async resolve({ request }) {
        const principal = principalOf(request)
        if (need !== 'owner-or-sysadmin') {
          if (!holdsSystemPermission(authorizer, principal, need)) throw forbidden(need)
          requireScope(principal, scopeNeeded(need), authenticator.resourceMetadataUrl)
        }
        return { principal }
      },
    }),
  })

  const push = async ({ request, principal, set }: { request: Request; principal: Principal; set: { status?: number | string; headers: Record<string, string | number> } }) => {
    const metadata = parsePushHeaders(request.headers)
    const owner = await pusher(principal)
    const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
    if (!PUSH_CONTENT_TYPES.has(type)) throw new HttpError(415, `unsupported Content-Type ${JSON.stringify(type)}; expected application/gzip`)
    // A graph already stored under (name, sha256) is not read again (nor its body).
    if (metadata.sha256) {
      const stored = await findGraphByNameAndHash(system, metadata.name, metadata.sha256)
      if (stored) return { graph_id: stored.id, new: false }
    }
    if (owner.owner_id) await quotas.checkRegistry(owner.owner_id)
    const declared = request.headers.get('content-length')
    if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes)
    if (!request.body) throw uploadError(new EmptyUpload(), pushRefusals(maxBytes))

    // 1. The body goes to a temporary key; a put that fails keeps nothing.
    const incoming = incomingKey()
    let bytes: number
    try {
      ;({ bytes } = await blobs.put(incoming, gzipChunks(requestChunks(request.body, pace)), { maxBytes, contentType: 'application/gzip' }))
    } catch (error) {
      await discard(incoming)
      throw uploadError(error, pushRefusals(maxBytes))
    }
    // 2. Complete: to its final key. 3. Only then indexed, so a listed graph is always whole.
    // Timestamped: the sweeper can tell a bundle whose index row is about to be written from one whose never will be.
    const id = timestampedId()
    const key = graphKey(id)
    let inserted: Graph | undefined
    try {
      await blobs.move(incoming, key)
      inserted = await insertGraph(system, { id, ...metadata, ...owner, bytes, storage_key: key })
    } catch (error) {
      await discard(incoming, key)
      throw error
    }
    if (!inserted) {
      // A concurrent push of the same (name, sha256) was indexed first: keep that one.
      await discard(key)
      const stored = await findGraphByNameAndHash(system, metadata.name, metadata.sha256!)
      if (!stored) throw new HttpError(409, 'a graph of this name and sha256 was pushed and deleted meanwhile; push again')
      return { graph_id: stored.id, new: false }
    }
    set.status = 201
    set.headers.location = `/api/v1/graphs/${id}`
    return { graph_id: id, new: true }
  }

  /**
   * Whom a push is recorded as (docs/spec/bundle.md §7): a user by e-mail, with their id; the service
   * token is the user it acts for if any (an export's), else 'kgs'.
   */
  const pusher = async (principal: Principal): Promise<Pick<Graph, 'owner' | 'owner_id'>> => {
    const userId = principal.grants ? principal.onBehalfOf : principal.userId
    if (userId === undefined) return { owner: SERVICE_SUBJECT, owner_id: null }
    const user = await findUserById(system, userId)
    if (!user) throw new HttpError(403, 'permission denied: the account this push is made for no longer exists')
    return { owner: user.email, owner_id: user.id }
  }

  const find = async (id: string) => {
    const graph = await getGraph(system, id.toLowerCase())
    if (!graph) throw new HttpError(404, 'graph not found')
    return graph
  }

  return new Elysia({ name: 'kgs/registry' })
    .use(access)
    .use(pagination)
    .post('/api/v1/graphs', push, {
      registry: 'registry:push',
      headers: PushHeaders,
      response: { 200: PushResult, 201: PushResult, ...errors, 408: ErrorBody, 409: ErrorBody, 413: ErrorBody, 415: ErrorBody },
      detail: describe(
        'Push a bundle: the body (gzip) is streamed to storage, never parsed. 201 {graph_id, new: true}; 200 {graph_id, new: false} when (name, sha256) is already stored, and nothing is stored',
        { requestBody: { required: true, ...gzipBody } },
      ),
    })
    .get(
      '/api/v1/graphs',
      async ({ query, page }) => {
        if (query.offset !== undefined) {
          if (query.cursor !== undefined) throw new HttpError(400, 'invalid query: cursor: not with offset, which asks for the Go form of the list')
          // As Go's registry: a tag, when given, is the only filter.
          const filter = query.tag ? { tag: query.tag } : { q: query.q || undefined }
          const { graphs, total } = await listGraphsByOffset(system, filter, goLimit(query.limit), goOffset(query.offset))
          return { graphs: graphs.length > 0 ? graphs.map(record) : null, total }
        }
        // paginatedUnless: a page is asked for exactly when offset is not.
        const rows = await listGraphs(system, { q: query.q || undefined, tag: query.tag }, page!.limit, page!.after)
        return rows.map((g) => ({ ...record(g), page_key: g.page_key }))
      },
      {
        registry: 'registry:pull',
        paginatedUnless: 'offset',
        query: ListQuery,
        response: { 200: t.Union([t.Array(GraphRecord), GoGraphPage]), ...errors },
        detail: describe(
          'Stored graphs, oldest first, paged (Link: rel="next"); ?q= matches name or description, ?tag= one tag. With ?offset= (the Go client\'s form): {graphs, total}, newest first, limit 1-200 (else 20), tag alone when given',
        ),
      },
    )
    .get('/api/v1/graphs/:id', async ({ params }) => record(await find(params.id)), {
      registry: 'registry:pull',
      params: GraphParams,
      response: { 200: GraphRecord, ...errors },
      detail: describe('A stored graph'),
    })
    .get(
      '/api/v1/graphs/:id/bundle',
      async ({ params }) => {
        const graph = await find(params.id)
        const body = await blobs.responseBody(graph.storage_key)
        if (!body) throw new Error(`registry: the blob of graph ${graph.id} (${graph.storage_key}) is missing`)
        return new Response(body, {
          headers: {
            'content-type': 'application/gzip',
            'content-length': String(graph.bytes),
            'content-disposition': `attachment; filename="${filenameSlug(graph.name)}.json.gz"`,
          },
        })
      },
      {
        registry: 'registry:pull',
        params: GraphParams,
        response: errors,
        // Documented by hand: the 200 is not JSON, and documenting it replaces the generated answers.
        detail: describe('Download a stored bundle (streamed, no size limit)', {
          responses: { 200: gzipBody, ...Object.fromEntries(Object.keys(errors).map((status) => [status, { description: 'error', content: { 'application/json': { schema: ErrorBody } } }])) },
        }),
      },
    )
    .delete(
      '/api/v1/graphs/:id',
      async ({ params, principal }) => {
        const graph = await find(params.id)
        // The service principal deletes nothing; users delete their own graphs, sysadmins any.
        const allowed = !principal.grants && (graph.owner_id === principal.userId || authorizer.isSysadmin(principal.userId))
        if (!allowed) throw new HttpError(403, 'permission denied: only the owner of a graph or a sysadmin may delete it')
        requireScope(principal, 'write', authenticator.resourceMetadataUrl)
        // The index row first: from then on no one is handed the blob, which then goes.
        const deleted = await deleteGraph(system, graph.id)
        if (!deleted) throw new HttpError(404, 'graph not found')
        await discard(deleted.storage_key)
        return record(deleted)
      },
      {
        registry: 'owner-or-sysadmin',
        params: GraphParams,
        response: { 200: GraphRecord, ...errors },
        detail: describe('Delete a stored graph (its owner or a sysadmin): the index row, then the bundle; 200 with the deleted record'),
      },
    )
}
