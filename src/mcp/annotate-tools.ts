// The MCP tool that annotates a report: it queues what the REST route queues
// (search/annotate-start.ts) with the route's permission, and answers the annotate_report job,
// which get_job follows to its end.
import { t } from 'elysia'
import { JobBody } from '../jobs/schemas.ts'
import { startAnnotation } from '../search/annotate-start.ts'
import { RepositoryArgument, Uuid } from './arguments.ts'
import { repositoryTool, type Tool } from './tool.ts'

export const ANNOTATE_TOOLS: Tool[] = [
  repositoryTool({
    name: 'annotate_report',
    title: 'Annotate a report',
    description:
      "Link each sentence of a report to its most similar facts, replacing the report's automatic annotations and marking it annotated; answers the job to follow with get_job.",
    input: t.Object({ repository: RepositoryArgument, report_id: Uuid('the report') }, { additionalProperties: false }),
    output: t.Object({ job: JobBody }),
    // Rerunning replaces the automatic annotations with the same ones; the annotations of another posture are kept.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    permission: () => 'report:write',
    run: async ({ principal, repository, db, input, services }) => ({
      job: await startAnnotation(services, await db(), principal, repository, input.report_id),
    }),
  }),
]
