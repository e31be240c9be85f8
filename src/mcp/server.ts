// The MCP server one request is answered by (the endpoint is stateless: every request gets a
// fresh one, for the caller its token names): the tools of tools.ts, each behind the check of
// what it needs, the resources their answers link to, and the instructions a model reads first.
// Whether a call may act is decided by the functions the API's rules call (http/access.ts:
// repositoryActions, authorizeSystemAction), from the permission each tool declares; a refusal
// becomes a tool error here, in the same words.
import {
  CLIENT_CAPABILITIES_META_KEY,
  inputRequired,
  inputResponse,
  McpServer,
  ResourceTemplate,
  type CallToolResult,
  type InputRequiredResult,
  type ReadResourceResult,
  type ServerContext,
} from '@modelcontextprotocol/server'
import { authorizeSystemAction, repositoryActions } from '../http/access.ts'
import type { Principal } from '../http/auth.ts'
import { HttpError, knownFailure } from '../http/errors.ts'
import { describeError } from '../log.ts'
import type { RepositoryPermission } from '../permissions.ts'
import { repositoryFinder } from '../repositories/scope.ts'
import type { Repository } from '../repositories/repositories.ts'
import { getConcept, getFact, getReport } from '../graph/store.ts'
import { ExistingRow } from '../graph/write/common.ts'
import type { McpToolProfile } from '../config-variables.ts'
import { VERSION } from '../version.ts'
import { UUID_PATTERN } from '../uuid.ts'
import type { ToolServices } from './services.ts'
import { standardSchema } from './standard-schema.ts'
import type { Tool } from './tool.ts'
import { TOOLS } from './tools.ts'

const INSTRUCTIONS = `kgs holds knowledge graphs, one per repository. Start with list_repositories: every other tool takes a repository (its UUID or slug), and your role there decides what you may do.
In a repository, sources (documents) yield facts (short statements citing their sources); facts are grouped into concepts, each with aliases, summaries and a synthesis that cite facts as [text](<fact:UUID>). Investigations gather sources around a question; reports are written answers whose sentences are annotated with the facts that support them.
To answer a question, use search (facts by default, or concepts), then get_fact or get_concept for the whole. Lists come 10 at a time: pass next_cursor to go on. Tool results link to kgs:// resources you may read to attach a fact, a concept or a report.`

const UUID = new RegExp(UUID_PATTERN)

/** Who answers (the SDK's serverInfo; the 2026-07-28 revision repeats it in every result's _meta). */
export const SERVER_INFO = { name: 'kgs', version: VERSION }

/** A tool error the model can act on: what went wrong, in words (not an HTTP or protocol error). */
const toolError = (message: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text: message }] })

export interface Compiled {
  tool: Tool
  input: ReturnType<typeof standardSchema>
  output: ReturnType<typeof standardSchema>
}

/** The SDK's form of each tool's schemas, compiled once for the process, by name: tools/list answers in this order. */
export const COMPILED: Compiled[] = TOOLS.map((tool) => ({
  tool,
  input: standardSchema(tool.input),
  output: standardSchema(tool.output),
})).sort((a, b) => (a.tool.name < b.tool.name ? -1 : 1))

/** The tools of a profile (MCP_TOOLS): read-only, changing something, or all. */
export const toolsOf = (profile: McpToolProfile): Compiled[] =>
  profile === 'all' ? COMPILED : COMPILED.filter((c) => c.tool.annotations.readOnlyHint === (profile === 'read'))

/**
 * Whether a tools/call can ask the person (a 2026-07-28 request of a client declaring elicitation:
 * that revision's multi-round-trip input_required, which needs no session; the stateless
 * 2025-11-25 endpoint cannot, see newServer), and what the person answered, on the call's retry.
 */
interface Asking {
  canAsk: boolean
  responses: Record<string, unknown> | undefined
}

const askingOf = (ctx: ServerContext): Asking => {
  const envelope = ctx.mcpReq.envelope as Record<string, { elicitation?: unknown } | undefined> | undefined
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY]
  return { canAsk: capabilities?.elicitation !== undefined, responses: ctx.mcpReq.inputResponses }
}

/** The form asking the person: one yes/no, all an answer can say (its other fields are never read). */
const CONFIRM_FORM = {
  type: 'object' as const,
  properties: { confirm: { type: 'boolean' as const, title: 'Confirm', description: 'yes: do it' } },
  required: ['confirm'],
}

/** What the person did, by the answer's action, when it is no yes (an accepted form whose confirm is not true). */
const NOT_CONFIRMED = { decline: 'declined', cancel: 'cancelled', accept: 'did not confirm' } as const

/**
 * Undefined when the person agreed to a destructive call of `tool`: through the host's form where
 * it can ask them (the model's `confirm` is then not enough), else by the call's `confirm: true`.
 * Otherwise what the call answers instead: the question to ask, or a tool error saying why
 * nothing was done.
 */
function confirmed(
  tool: string,
  question: string,
  confirmArgument: boolean,
  asking: Asking | undefined,
): CallToolResult | InputRequiredResult | undefined {
  if (!asking?.canAsk)
    return confirmArgument
      ? undefined
      : toolError(
          `${tool} needs the person's confirmation and this client cannot ask them (no elicitation over this connection): ask them "${question}", then call again with confirm: true`,
        )
  const answered = inputResponse(asking.responses, 'confirm')
  if (answered.kind === 'missing')
    return inputRequired({
      inputRequests: { confirm: inputRequired.elicit({ message: question, requestedSchema: CONFIRM_FORM }) },
    })
  if (answered.kind === 'elicit' && answered.action === 'accept' && answered.content?.confirm === true) return undefined
  const why = answered.kind === 'elicit' ? NOT_CONFIRMED[answered.action] : 'did not confirm'
  return toolError(`not done: the person ${why}; nothing was changed`)
}

/**
 * `resourceMetadata`: the MCP endpoint's protected-resource document, which a refusal for want of
 * scope names (as the API's does; a tool error carries only its words); `tools`: those offered.
 */
export function mcpServerFactory(services: ToolServices, resourceMetadata: string, tools: Compiled[] = COMPILED) {
  const decide = repositoryActions(
    services.rbac,
    repositoryFinder(services.rbac, services.repositories),
    resourceMetadata,
  )

  /**
   * The repository `name` (a tool's argument: UUID or slug) names, if `principal` may take
   * `permission`'s action there: decided as for a REST route, the refusal naming the repository
   * by its slug (a model may have named several).
   */
  const repositoryAction = (principal: Principal, permission: RepositoryPermission, name: string) =>
    decide(principal, permission, { fromPath: name }, (repository) => `repository ${repository.slug}`)

  async function callTool(
    principal: Principal,
    tool: Tool,
    args: Record<string, unknown>,
    asking: Asking | undefined,
  ): Promise<CallToolResult | InputRequiredResult> {
    let output: Record<string, unknown>
    let repository: Repository | undefined
    let input = args
    if (tool.scope === 'repository') {
      repository = await repositoryAction(principal, tool.permission(input), String(input.repository))
      if (tool.confirmation) {
        const { confirm, ...rest } = input
        const unconfirmed = confirmed(tool.name, tool.confirmation(input), confirm === true, asking)
        if (unconfirmed) return unconfirmed
        input = rest
      }
      const db = () => services.pools.forRepository(repository!.id)
      output = await tool.run({ principal, repository, db, input, services })
    } else {
      if (tool.permission !== 'token')
        authorizeSystemAction(services.rbac, resourceMetadata, principal, tool.permission)
      output = await tool.run({ principal, input, services })
    }
    const links = tool.links?.(output, repository) ?? []
    return {
      // Each block's fields in the order the SDK's result schema writes them: fast-call.ts answers them as they are.
      content: [
        { type: 'text', text: JSON.stringify(output) },
        ...links.map((l) => ({ ...l, mimeType: 'application/json', type: 'resource_link' as const })),
      ],
      structuredContent: output,
    }
  }

  /** An unexpected failure, logged with its stack under the request's id: the caller learns only the id (the message may name indexes, paths). */
  function unexpected(error: unknown, requestId: string | undefined, what: Record<string, string>): string {
    services.log.error('mcp: unhandled error', { request_id: requestId, ...what, ...describeError(error) })
    return `internal error; logged as ${requestId}`
  }

  /** A resource read whose unexpected failure answers only the request's id (a JSON-RPC error of that message). */
  const guarded =
    (
      requestId: string | undefined,
      read: (uri: URL, variables: Record<string, unknown>) => Promise<ReadResourceResult>,
    ) =>
    async (uri: URL, variables: Record<string, unknown>): Promise<ReadResourceResult> => {
      try {
        return await read(uri, variables)
      } catch (error) {
        throw (
          knownFailure(error, services.log, requestId) ??
          new Error(unexpected(error, requestId, { resource: uri.href }))
        )
      }
    }

  /** A resource: the same detail its get_ tool answers, read with the same permission. */
  function resource(
    server: McpServer,
    principal: Principal,
    requestId: string | undefined,
    kind: 'facts' | 'concepts' | 'reports',
    read: (repository: Repository, id: string) => Promise<unknown>,
  ) {
    const permission = ({ facts: 'fact:read', concepts: 'concept:read', reports: 'report:read' } as const)[kind]
    server.registerResource(
      kind.slice(0, -1),
      new ResourceTemplate(`kgs://{repository}/${kind}/{id}`, { list: undefined }),
      {
        description: `a ${kind.slice(0, -1)} of a repository, as get_${kind.slice(0, -1)} answers it`,
        mimeType: 'application/json',
      },
      guarded(requestId, async (uri, variables): Promise<ReadResourceResult> => {
        const repository = await repositoryAction(principal, permission, String(variables.repository))
        const id = String(variables.id)
        const row = UUID.test(id) ? await read(repository, id) : undefined
        if (row === undefined) throw new HttpError(404, `${kind.slice(0, -1)} not found`)
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(row) }] }
      }),
    )
  }

  /**
   * What a call of `tool` answers: its result, an elicitation to answer first (`asking`: the
   * request could carry one), or a tool error saying why it was refused.
   */
  async function answer(
    principal: Principal,
    tool: Tool,
    args: Record<string, unknown>,
    requestId: string | undefined,
    asking?: Asking,
  ): Promise<CallToolResult | InputRequiredResult> {
    try {
      return await callTool(principal, tool, args, asking)
    } catch (error) {
      // Refusals are HttpErrors, each of one status (access refused, a repository not found, a quota, a
      // graph write's WriteRefusal: a missing reference, a natural key taken): the model reads why,
      // and the row holding a natural key by its id; anything else is unexpected.
      if (error instanceof ExistingRow) return toolError(`${error.message}: existing id ${error.id}`)
      const known = knownFailure(error, services.log, requestId)
      return toolError(known ? known.message : unexpected(error, requestId, { tool: tool.name }))
    }
  }

  /**
   * A server for one request of `principal`, `message` (the JSON-RPC message it answers, the only
   * one: the endpoint is stateless and JSON-RPC batches are gone from both revisions). A
   * tools/call gets only the tool it calls, a resources/read only the resources, anything else
   * (initialize, tools/list, discovery) everything: registering every tool for one call would be
   * work for nothing, a share of the call's time that grows with the tools.
   */
  const newServer = (principal: Principal, message: unknown, requestId: string | undefined): McpServer => {
    // No legacy shim for input_required: on 2025-11-25 it would send the elicitation on a stream whose
    // answer, a new POST, no stateless server could take up; confirmed() never asks there.
    const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS, inputRequired: { legacyShim: false } })
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown } }
    const called = method === 'tools/call' ? tools.find((c) => c.tool.name === params?.name) : undefined
    for (const { tool, input, output } of called ? [called] : method === 'resources/read' ? [] : tools) {
      server.registerTool(
        tool.name,
        {
          title: tool.title,
          description: tool.description,
          inputSchema: input,
          outputSchema: output,
          annotations: tool.annotations,
        },
        (args, ctx) => answer(principal, tool, args, requestId, askingOf(ctx)),
      )
    }
    if (called) return server
    const db = (repository: Repository) => services.pools.forRepository(repository.id)
    resource(server, principal, requestId, 'facts', async (repository, id) => getFact(await db(repository), id))
    resource(server, principal, requestId, 'concepts', async (repository, id) => getConcept(await db(repository), id))
    resource(server, principal, requestId, 'reports', async (repository, id) => getReport(await db(repository), id))
    return server
  }
  return { newServer, answer }
}
