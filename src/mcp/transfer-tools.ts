// The MCP tools that move graphs and follow jobs: export to and import from the registry, browse
// it, follow a job. Each calls the function its REST route calls, with that route's permission.
import { t } from 'elysia'
import { ExportParams } from '../bundle/export/export-params.ts'
import { startExport } from '../bundle/export/export-start.ts'
import { startRegistryImport } from '../bundle/import/import-start.ts'
import { holdsSystemPermission } from '../http/auth.ts'
import { scopeAllows, scopeNeeded } from '../permissions.ts'
import { jobInScope } from '../jobs/jobs.ts'
import { JobBody } from '../jobs/schemas.ts'
import { emailReader, shownOwner } from '../registry/records.ts'
import { listGraphs } from '../registry/store.ts'
import { READS, repositoryTool, systemTool, type Tool } from './tool.ts'
import { preview, RepositoryArgument, Uuid } from './arguments.ts'
import { answerPage, Cursor, Limit, listOutput, pageRequest } from './paging.ts'

const GraphPreview = t.Object({
  id: t.String(),
  name: t.String(),
  description: t.String({ description: 'the first characters' }),
  tags: t.Array(t.String()),
  owner: t.String({
    description: "the pusher's e-mail to the pusher and to holders of user:read, their user id to anyone else",
  }),
  fact_count: t.Integer(),
  concept_count: t.Integer(),
  bytes: t.Integer(),
  created_at: t.String(),
})
const JobAnswer = t.Object({ job: JobBody })

export const TRANSFER_TOOLS: Tool[] = [
  repositoryTool({
    name: 'export_graph',
    title: 'Export to the registry',
    description:
      'Start exporting a repository as a graph bundle pushed to the registry; answers the job to follow with get_job.',
    input: t.Object({ repository: RepositoryArgument, ...ExportParams.properties }, { additionalProperties: false }),
    output: JobAnswer,
    // Adds a graph to the registry (a new record each time), changes nothing in the repository.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    permission: () => 'graph:export',
    async run({ principal, repository, input: { repository: _, ...params }, services }) {
      return { job: await startExport(services, principal, repository, params) }
    },
  }),
  repositoryTool({
    name: 'import_graph',
    title: 'Import from the registry',
    description:
      'Start importing a registry graph (browse_registry gives ids) into a repository; answers the job to follow with get_job.',
    input: t.Object(
      { repository: RepositoryArgument, graph_id: Uuid('the graph, as browse_registry lists it') },
      { additionalProperties: false },
    ),
    output: JobAnswer,
    // Adds the graph's rows to the repository (what it already holds stays); the registry may be another server.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    permission: () => 'graph:import',
    async run({ principal, repository, input, services }) {
      // As the route's rule: the caller also needs registry:pull (and its scope) to import from the registry.
      const mayPull =
        holdsSystemPermission(services.rbac, principal, 'registry:pull') &&
        scopeAllows(principal.scopes, scopeNeeded('registry:pull'))
      return {
        job: await startRegistryImport(
          services,
          principal,
          repository,
          { graph_id: input.graph_id.toLowerCase() },
          mayPull,
        ),
      }
    },
  }),
  repositoryTool({
    name: 'get_job',
    title: 'Follow a job',
    description:
      'The state of a job of a repository (an export, an import, an added source): status, progress, result or error.',
    input: t.Object({ repository: RepositoryArgument, job_id: Uuid('the job') }, { additionalProperties: false }),
    output: JobAnswer,
    annotations: { ...READS, idempotentHint: false },
    permission: () => 'job:read',
    run: async ({ repository, input, services }) => ({
      job: await jobInScope(services.pools.system, input.job_id, repository),
    }),
  }),
  systemTool({
    name: 'browse_registry',
    title: 'Browse the registry',
    description:
      "The graph bundles in this server's registry, optionally matching a text or a tag; importable into a repository.",
    input: t.Object(
      {
        q: t.Optional(t.String({ maxLength: 200, description: 'case-insensitive text in the name or description' })),
        tag: t.Optional(t.String({ maxLength: 100, description: 'graphs with this tag' })),
        limit: Limit,
        cursor: Cursor,
      },
      { additionalProperties: false },
    ),
    output: listOutput(GraphPreview),
    annotations: READS,
    permission: 'registry:pull',
    async run({ principal, input, services }) {
      const request = pageRequest(input)
      const readsEmailOf = emailReader(services.rbac, principal)
      const rows = await listGraphs(
        services.pools.system,
        { q: input.q || undefined, tag: input.tag },
        request.limit,
        request.after,
      )
      return answerPage(rows, request, (g) => ({
        id: g.id,
        name: g.name,
        description: preview(g.description),
        tags: g.tags,
        owner: shownOwner(g, readsEmailOf),
        fact_count: g.fact_count,
        concept_count: g.concept_count,
        bytes: g.bytes,
        created_at: g.created_at,
      }))
    },
  }),
]
