// The graph record of docs/spec/bundle.md §7, as the registry answers it: the routes' schema and,
// by Static, the type of the rows its store reads. Apart from schemas.ts so that the store can
// take its type without the routes' other shapes.
import { t } from 'elysia'

export const GraphRecord = t.Object(
  {
    id: t.String({ format: 'uuid' }),
    name: t.String(),
    description: t.String(),
    owner: t.String({
      description:
        'the pusher\'s e-mail (for an export: the user who asked for it) to the pusher and to holders of user:read, their user id to everyone else; "kgs" for the server\'s own service token alone',
    }),
    owner_id: t.Union([t.String({ format: 'uuid' }), t.Null()], {
      description: "the pusher's user id; null for the service token alone",
    }),
    tags: t.Array(t.String()),
    sha256: t.Union([t.String({ pattern: '^[0-9a-f]{64}$' }), t.Null()], {
      description: 'canonical hash of the bundle (X-Graph-SHA256); null when the push named none',
    }),
    schema_version: t.Union([t.Integer(), t.Null()], {
      description: 'X-Graph-Schema-Version; null when the push named none',
    }),
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
