// The graph registry (docs/spec/bundle.md §7) at /api/v1/graphs: bundles are pushed as raw gzip bodies,
// streamed into blob storage without being parsed or held (push.ts), indexed in the graphs table,
// listed, streamed back, and deleted by their owner or a sysadmin.
//
// These routes are registered before the JSON body parser (see app.ts): a push body is a
// stream of up to REGISTRY_MAX_BYTES, read by push.ts chunk by chunk, and no route here takes JSON.
import { Elysia, t } from 'elysia'
import { discardBlobs } from '../blobs/store.ts'
import { accessControl, type OwnerAuthorizer } from '../http/access.ts'
import type { Authenticator } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import { pagination } from '../http/pagination.ts'
import { ErrorBody } from '../http/schemas.ts'
import { BLOB_NOT_DELETED, pushGraph, type PushOptions } from './push.ts'
import { emailReader, goLimit, goOffset, record } from './records.ts'
import { GraphRecord } from './graph-record.ts'
import {
  GoGraphPage,
  GraphName,
  GraphParams,
  ListQuery,
  NamesQuery,
  PushHeaders,
  PushResult,
  gzipBody,
} from './schemas.ts'
import { deleteGraph, getGraph, listGraphNames, listGraphs, listGraphsByOffset, VERSIONS_LISTED } from './store.ts'

export interface RegistryRoutesOptions extends PushOptions {
  /** Verifies bearer tokens; should accept the service principal's (withServiceTokens). */
  authenticator: Authenticator
  authorizer: OwnerAuthorizer
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

export function registryRoutes(options: RegistryRoutesOptions) {
  const { system, blobs, authenticator, authorizer, log } = options
  const describe = (summary: string, extra: Record<string, unknown> = {}) => ({ tags: ['registry'], summary, ...extra })
  const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody }

  const find = async (id: string) => {
    const graph = await getGraph(system, id.toLowerCase())
    if (!graph) throw new HttpError(404, 'graph not found')
    return graph
  }
  /** The owner of the graph the path names (null: the service token's); 404 when there is none. */
  const owner = async (params: Record<string, string>) => (await find(params.id!)).owner_id

  return (
    new Elysia({ name: 'kgs/registry' })
      // Its own instance: this authenticator also accepts the service principal's tokens.
      .use(accessControl(authenticator, authorizer, 'registry'))
      .use(pagination)
      .post(
        '/api/v1/graphs',
        async ({ request, principal, set }) => {
          const pushed = await pushGraph(options, request, principal)
          if (pushed.new) {
            set.status = 201
            set.headers.location = `/api/v1/graphs/${pushed.graph_id}`
          }
          return pushed
        },
        {
          permission: 'registry:push',
          headers: PushHeaders,
          // 403 also for a pusher at a QUOTA_REGISTRY_* limit, or acting for an account that is gone.
          response: {
            200: PushResult,
            201: PushResult,
            400: ErrorBody,
            401: ErrorBody,
            403: ErrorBody,
            408: ErrorBody,
            409: ErrorBody,
            413: ErrorBody,
            415: ErrorBody,
          },
          detail: describe(
            'Push a bundle: the body (gzip) is streamed to storage, never parsed. 201 {graph_id, new: true}; 200 {graph_id, new: false} when (name, sha256) is already stored, and nothing is stored',
            { requestBody: { required: true, ...gzipBody } },
          ),
        },
      )
      .get(
        '/api/v1/graphs',
        async ({ query, page, principal }) => {
          const readsEmailOf = emailReader(authorizer, principal)
          if (query.offset !== undefined) {
            if (query.cursor !== undefined)
              throw new HttpError(400, 'invalid query: cursor: not with offset, which asks for the Go form of the list')
            // As Go's registry: a tag, when given, is the only filter.
            const filter = query.tag ? { tag: query.tag } : { q: query.q || undefined, name: query.name }
            const { graphs, total } = await listGraphsByOffset(
              system,
              filter,
              goLimit(query.limit),
              goOffset(query.offset),
            )
            return { graphs: graphs.length > 0 ? graphs.map((g) => record(g, readsEmailOf)) : null, total }
          }
          // paginatedUnless: a page is asked for exactly when offset is not.
          const rows = await listGraphs(
            system,
            { q: query.q || undefined, tag: query.tag, name: query.name },
            page!.limit,
            page!.after,
          )
          return rows.map((g) => ({ ...record(g, readsEmailOf), page_key: g.page_key }))
        },
        {
          permission: 'registry:pull',
          paginatedUnless: 'offset',
          query: ListQuery,
          response: {
            200: t.Union([t.Array(GraphRecord), GoGraphPage]),
            400: ErrorBody,
            401: ErrorBody,
            403: ErrorBody,
          },
          detail: describe(
            'Stored graphs, oldest first, paged (Link: rel="next"); ?q= matches name or description, ?tag= one tag, ?name= one name exactly. With ?offset= (the Go client\'s form): {graphs, total}, newest first, limit 1-200 (else 20), tag alone when given',
          ),
        },
      )
      .get(
        '/api/v1/graphs/names',
        async ({ query, page, principal }) => {
          const readsEmailOf = emailReader(authorizer, principal)
          const names = await listGraphNames(
            system,
            { q: query.q || undefined, tag: query.tag, name: query.name },
            page.limit,
            page.after,
          )
          return names.map(({ versions, ...name }) => ({
            ...name,
            versions: versions.map((v) => ({ ...record(v, readsEmailOf), version: v.version })),
          }))
        },
        {
          permission: 'registry:pull',
          paginated: true,
          query: NamesQuery,
          response: { 200: t.Array(GraphName), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
          detail: describe(
            `The stored graphs grouped by name, each name with its version count and its newest ${VERSIONS_LISTED} versions (newest first); names whose newest version was pushed last first, paged (Link: rel="next"). ?q=, ?tag=, ?name= as the list, a name listed when any of its versions matches`,
          ),
        },
      )
      .get(
        '/api/v1/graphs/:id',
        async ({ params, principal }) => record(await find(params.id), emailReader(authorizer, principal)),
        {
          permission: 'registry:pull',
          params: GraphParams,
          response: { 200: GraphRecord, ...errors },
          detail: describe('A stored graph'),
        },
      )
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
          permission: 'registry:pull',
          params: GraphParams,
          response: errors,
          // Documented by hand: the 200 is not JSON, and documenting it replaces the generated answers.
          detail: describe('Download a stored bundle (streamed, no size limit)', {
            responses: {
              200: gzipBody,
              ...Object.fromEntries(
                Object.keys(errors).map((status) => [
                  status,
                  { description: 'error', content: { 'application/json': { schema: ErrorBody } } },
                ]),
              ),
            },
          }),
        },
      )
      .delete(
        '/api/v1/graphs/:id',
        async ({ params, principal }) => {
          // The index row first: from then on no one is handed the blob, which then goes.
          const deleted = await deleteGraph(system, params.id.toLowerCase())
          if (!deleted) throw new HttpError(404, 'graph not found')
          await discardBlobs(blobs, log, BLOB_NOT_DELETED, deleted.storage_key)
          return record(deleted, emailReader(authorizer, principal))
        },
        {
          // The service principal deletes nothing; users delete their own graphs, sysadmins any.
          owner: {
            or: 'sysadmin',
            scope: 'write',
            of: owner,
            refusal: 'only the owner of a graph or a sysadmin may delete it',
          },
          params: GraphParams,
          response: { 200: GraphRecord, ...errors },
          detail: describe(
            'Delete a stored graph (its owner or a sysadmin): the index row, then the bundle; 200 with the deleted record',
          ),
        },
      )
  )
}
