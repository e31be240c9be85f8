// The registry's request and answer shapes, as the OpenAPI document shows them.
import { t } from 'elysia'
import { PageQuery } from '../http/pagination.ts'
import { UUID_PATTERN } from '../uuid.ts'
import { NAME_MAX } from './push-headers.ts'
import { GraphRecord } from './graph-record.ts'
import { VERSIONS_LISTED } from './store.ts'

/** The Go registry's list (docs/spec/bundle.md §7); `graphs` is null when empty, as Go encodes a nil slice. */
export const GoGraphPage = t.Object({ graphs: t.Union([t.Array(GraphRecord), t.Null()]), total: t.Integer() })
export const PushResult = t.Object({ graph_id: t.String({ format: 'uuid' }), new: t.Boolean() })

const headerDoc = (description: string) => t.Optional(t.String({ description }))
const countDoc = (what: string) => headerDoc(`number of ${what} in the bundle (non-negative integer; default 0)`)
// Every push header is optional to the framework: they are checked in the handler, after the
// caller is authenticated, so an anonymous request is a 401 whatever its headers.
export const PushHeaders = t.Object({
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
export const ListQuery = t.Object({
  // Typed here too: the Go form reads limit and refuses cursor itself.
  ...PageQuery.properties,
  offset: t.Optional(
    t.String({
      description:
        "the Go registry's list: answer {graphs, total}, newest first, from this offset (limit then 1-200, else 20)",
    }),
  ),
  // As long as the longest name, so that any name can be searched for.
  q: t.Optional(
    t.String({
      maxLength: NAME_MAX,
      error: `expected at most ${NAME_MAX} characters`,
      description: 'case-insensitive substring of the name or description',
    }),
  ),
  tag: t.Optional(
    t.String({
      maxLength: 100,
      error: 'expected at most 100 characters',
      description: 'only graphs carrying this tag',
    }),
  ),
  name: t.Optional(
    t.String({
      maxLength: NAME_MAX,
      error: `expected at most ${NAME_MAX} characters`,
      description: 'only graphs of exactly this name (its versions)',
    }),
  ),
})
export const GraphParams = t.Object({ id: t.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) })
export const gzipBody = {
  description: 'a gzipped bundle (.json.gz)',
  content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
}
const GraphVersion = t.Object(
  {
    ...GraphRecord.properties,
    version: t.Integer({
      minimum: 1,
      description: 'its rank among the stored graphs of its name, oldest 1 (deleting one renumbers those after it)',
    }),
  },
  { description: 'a stored graph and its version' },
)
export const GraphName = t.Object({
  name: t.String(),
  version_count: t.Integer({ description: 'how many graphs of this name are stored' }),
  versions: t.Array(GraphVersion, {
    description: `the newest ${VERSIONS_LISTED}, newest first; the others: GET /api/v1/graphs?name=`,
  }),
})
export const NamesQuery = t.Object({
  ...PageQuery.properties,
  q: ListQuery.properties.q,
  tag: ListQuery.properties.tag,
  name: ListQuery.properties.name,
})
