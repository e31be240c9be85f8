// The MCP server one request is answered by (the endpoint is stateless: every request gets a
// fresh one, for the caller its token names): the tools of tools.ts, each behind the check of
// what it needs (and the person's confirmation, for a destructive one), the resources of
// resources.ts, the prompts and completion, and the instructions a model reads first.
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
import { ExistingRow } from '../graph/write/common.ts'
import type { McpToolProfile } from '../config-variables.ts'
import { VERSION } from '../version.ts'
import type { ToolServices } from './services.ts'
import { standardSchema } from './standard-schema.ts'
import type { Tool } from './tool.ts'
import { TOOLS } from './tools.ts'
import { complete } from './completions.ts'
import { registerPrompts } from './prompts.ts'
import { listResources, RESOURCE_KINDS, type Allowed } from './resources.ts'

const INSTRUCTIONS = `kgs holds knowledge graphs, one per repository. Start with list_repositories: every other tool takes a repository (its UUID or slug), and your role there decides what you may do.
In a repository, sources (documents) yield facts (short statements citing their sources); facts are grouped into concepts, each with aliases, summaries and a synthesis that cite facts as [text](<fact:UUID>). Investigations gather sources around a question; reports are written answers whose sentences are annotated with the facts that support them.
To answer a question, use search (facts by default, or concepts), then get_fact or get_concept for the whole. Lists come 10 at a time: pass next_cursor to go on. Tool results link to kgs:// resources you may read to attach a fact, a concept or a report.`

/**
 * How long a 2026-07-28 host may keep a list's answer (its ttlMs; private: each caller's lists are
 * their own). The tools and templates change only with a new version or MCP_TOOLS, the resources
 * with every write.
 */
const CACHE_HINTS = {
  'tools/list': { ttlMs: 300_000, cacheScope: 'private' },
  'prompts/list': { ttlMs: 300_000, cacheScope: 'private' },
  'resources/templates/list': { ttlMs: 300_000, cacheScope: 'private' },
  'resources/list': { ttlMs: 10_000, cacheScope: 'private' },
} as const

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

  /** `work`, whose unexpected failure answers only the request's id (a JSON-RPC error of that message). */
  async function failing<T>(requestId: string | undefined, what: Record<string, string>, work: () => Promise<T>) {
    try {
      return await work()
    } catch (error) {
      throw knownFailure(error, services.log, requestId) ?? new Error(unexpected(error, requestId, what))
    }
  }

  /** The repository `id` names if `principal` may take `permission`'s action there; a refusal is undefined. */
  const allowedTo =
    (principal: Principal): Allowed =>
    async (permission, id) => {
      try {
        return await repositoryAction(principal, permission, id)
      } catch (error) {
        if (error instanceof HttpError) return undefined
        throw error
      }
    }

  /** The resources (resources.ts), each read with its get tool's permission, and the list of all the caller may read. */
  function resources(server: McpServer, principal: Principal, requestId: string | undefined) {
    for (const kind of RESOURCE_KINDS)
      server.registerResource(
        kind.name,
        new ResourceTemplate(kind.template, { list: undefined }),
        { description: kind.description, mimeType: kind.mimeType },
        (uri, variables): Promise<ReadResourceResult> =>
          failing(requestId, { resource: uri.href }, async () => {
            const repository = await repositoryAction(principal, kind.permission, String(variables.repository))
            const text = await kind.read(await services.pools.forRepository(repository.id), variables as never)
            if (text === undefined) throw new HttpError(404, `${kind.name.replace('_', ' ')} not found`)
            return { contents: [{ uri: uri.href, mimeType: kind.mimeType, text }] }
          }),
      )
    const visible = services.rbac.visibleRepositories(principal.userId)
    // In place of the SDK's own handler, whose list has no pages.
    server.server.setRequestHandler('resources/list', (request) =>
      failing(requestId, { method: 'resources/list' }, () =>
        listResources(services, visible, allowedTo(principal), request.params?.cursor),
      ),
    )
  }

  /** completion/complete (completions.ts), in place of the SDK's, which has no caller to ask about. */
  function completion(server: McpServer, principal: Principal, requestId: string | undefined) {
    const visible = services.rbac.visibleRepositories(principal.userId)
    server.server.registerCapabilities({ completions: {} })
    server.server.setRequestHandler('completion/complete', (request) =>
      failing(requestId, { method: 'completion/complete' }, () =>
        complete(services, visible, allowedTo(principal), request.params),
      ),
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
    const server = new McpServer(SERVER_INFO, {
      instructions: INSTRUCTIONS,
      inputRequired: { legacyShim: false },
      cacheHints: CACHE_HINTS,
    })
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
    resources(server, principal, requestId)
    registerPrompts(server)
    completion(server, principal, requestId)
    return server
  }
  return { newServer, answer }
}
