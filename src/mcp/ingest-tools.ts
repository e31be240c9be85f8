// The MCP tools that bring knowledge in from documents. add_source adds a document as a source: a
// URL kgs fetches, or a Markdown or plain text given inline (kept as an upload of those bytes,
// under the upload's identity and size limit); process_source draws the facts and concepts of one
// source, or of every parsed source, again. Each calls what its route calls (ingest/add.ts,
// extract/process-start.ts) with the route's permission, and answers the job, which get_job
// follows to its end (its progress, then its result).
import { t } from 'elysia'
import { HttpError } from '../http/errors.ts'
import { startProcessing } from '../extract/process-start.ts'
import { type Addition, queueAdditions, storeDocument, urlAdditions } from '../ingest/add.ts'
import { JobBody } from '../jobs/schemas.ts'
import { RepositoryArgument, Uuid } from './arguments.ts'
import { repositoryTool, type Tool } from './tool.ts'

/** The longest inline text the schema lets through; the bytes are bounded by MEDIA_UPLOAD_MAX_BYTES (and a call by BODY_LIMIT). */
const TEXT_MAX_CHARS = 1_000_000

const FORMATS = { markdown: 'text/markdown; charset=utf-8', text: 'text/plain; charset=utf-8' } as const

export const INGEST_TOOLS: Tool[] = [
  repositoryTool({
    name: 'add_source',
    title: 'Add a source',
    description:
      'Add a document as a source: a URL kgs fetches (web page, PDF, text) or a Markdown/plain text given inline; answers the job to follow with get_job.',
    input: t.Object(
      {
        repository: RepositoryArgument,
        url: t.Optional(
          t.String({ minLength: 1, maxLength: 2000, description: 'an http(s) URL to fetch (give url or text)' }),
        ),
        text: t.Optional(
          t.String({
            minLength: 1,
            maxLength: TEXT_MAX_CHARS,
            description: 'the document itself, Markdown or plain text (give url or text)',
          }),
        ),
        format: t.Optional(
          t.Union([t.Literal('markdown'), t.Literal('text')], {
            default: 'markdown',
            description: "how text is read: markdown (default) or text; a URL's server says what it sends",
          }),
        ),
        process: t.Optional(
          t.Boolean({ description: 'draw facts and concepts once parsed (default true; recorded, not done yet)' }),
        ),
      },
      { additionalProperties: false },
    ),
    output: t.Object({
      job: JobBody,
      source_id: t.String({
        description: 'the source (the same URL or text again: the same source), readable at once with its status',
      }),
    }),
    // The same URL or text again is the same source; a URL is fetched from outside kgs.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    permission: () => 'source:write',
    async run({ principal, repository, input, services }) {
      if ((input.url === undefined) === (input.text === undefined))
        throw new HttpError(400, 'give either url (a document to fetch) or text (the document itself), not both')
      // Before a text is stored: a full queue would only throw it away.
      await services.quotas.checkQueue(repository.id)
      const format = input.format ?? 'markdown'
      const additions: Addition[] =
        input.text === undefined
          ? urlAdditions([input.url!])
          : [
              await storeDocument(services, repository.id, {
                bytes: new TextEncoder().encode(input.text),
                fileName: format === 'markdown' ? 'text.md' : 'text.txt',
                contentType: FORMATS[format],
                maxBytes: services.maxUploadBytes,
                label: 'the text',
              }),
            ]
      const [queued] = await queueAdditions(services, {
        repositoryId: repository.id,
        createdBy: principal.userId,
        additions,
        process: input.process ?? true,
      })
      return queued!
    },
  }),
  repositoryTool({
    name: 'process_source',
    title: 'Process sources',
    description:
      'Draw the facts and concepts of a parsed source (or of every parsed source of a repository), again if done before; answers the job to follow with get_job.',
    input: t.Object(
      {
        repository: RepositoryArgument,
        source_id: t.Optional(Uuid('the source (none: every parsed source of the repository)')),
      },
      { additionalProperties: false },
    ),
    output: t.Object({ job: JobBody }),
    // Processing an unchanged source again adds nothing.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    permission: () => 'fact:write',
    run: async ({ principal, repository, db, input, services }) => ({
      job: await startProcessing(services, await db(), principal, repository, input.source_id?.toLowerCase()),
    }),
  }),
]
