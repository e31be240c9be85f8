// The MCP endpoint, /api/v1/mcp: Streamable HTTP, stateless (any instance of a fleet answers any
// request; GET and DELETE, the 2025 session operations, are 405), for both protocol revisions in
// use, 2025-11-25 and 2026-07-28, by the official SDK's web-standard handler. In front of it, kgs's
// own rule: the caller's token (OAuth access token for this resource, the API or the base URL, or
// a session token; a 401 names the MCP endpoint's own protected-resource document and asks for
// the write scope), and the
// Origin check the transport requires against DNS rebinding (none, as non-browser hosts send;
// a browser page's must be the service's own or one of MCP_ALLOWED_ORIGINS; else 403).
import { Elysia } from 'elysia'
import { createMcpHandler } from '@modelcontextprotocol/server'
import { accessControl, type OwnerAuthorizer } from '../http/access.ts'
import { principalOf, type Authenticator } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import { requestIdOf } from '../http/request-id.ts'
import { ErrorBody } from '../http/schemas.ts'
import type { McpToolProfile } from '../config-variables.ts'
import type { Logger } from '../log.ts'
import { describeError } from '../log.ts'
import { PROTECTED_RESOURCE_DOCUMENT } from '../oauth/metadata.ts'
import { fastToolCall } from './fast-call.ts'
import { mcpServerFactory, toolsOf } from './server.ts'
import type { ToolServices } from './services.ts'

const MCP_PATH = '/api/v1/mcp'

export interface McpRoutesOptions {
  authenticator: Authenticator
  authorizer: OwnerAuthorizer
  baseUrl: string
  /** Browser origins besides the service's own (MCP_ALLOWED_ORIGINS). */
  allowedOrigins: readonly string[]
  /** Largest request body (BODY_LIMIT). */
  bodyLimit: number
  /** The tools offered (MCP_TOOLS). */
  tools: McpToolProfile
  services: ToolServices
  log: Logger
  /** Whether a plain read's tools/call may skip the SDK (fast-call.ts); false sends all to the SDK (its test compares the two). */
  fastCalls?: boolean
}

export function mcpRoutes(options: McpRoutesOptions) {
  const origins = new Set([new URL(options.baseUrl).origin, ...options.allowedOrigins])
  // The challenge of a 401 here names the MCP endpoint's own document (RFC 9728 §3.3).
  const authenticator: Authenticator = {
    authenticate: options.authenticator.authenticate,
    resourceMetadataUrl: `${options.baseUrl}${PROTECTED_RESOURCE_DOCUMENT}${MCP_PATH}`,
  }
  const tools = toolsOf(options.tools)
  const { newServer, answer } = mcpServerFactory(options.services, authenticator.resourceMetadataUrl, tools)
  const fast = options.fastCalls === false ? undefined : fastToolCall(answer, tools)
  /** The JSON-RPC message of each request being served, for the server built to answer it. */
  const messages = new WeakMap<Request, unknown>()
  const handler = createMcpHandler(
    ({ requestInfo }) => newServer(principalOf(requestInfo!), messages.get(requestInfo!), requestIdOf(requestInfo!)),
    {
      legacy: 'stateless',
      maxRequestBodySize: options.bodyLimit,
      onerror: (error) => options.log.debug('mcp: request refused or failed', describeError(error)),
    },
  )

  const serve = async ({ request, body }: { request: Request; body: unknown }) => {
    const origin = request.headers.get('origin')
    if (origin !== null && !origins.has(origin))
      throw new HttpError(
        403,
        `origin ${origin} may not call the MCP endpoint; the operator can allow it with MCP_ALLOWED_ORIGINS`,
      )
    if (request.method !== 'POST') return handler.fetch(request)
    const answered = await fast?.(request, body, principalOf(request))
    if (answered) return answered
    messages.set(request, body)
    return handler.fetch(request, { parsedBody: body })
  }
  const detail = (summary: string) => ({ tags: ['mcp'], summary })
  const errors = { 401: ErrorBody, 403: ErrorBody }
  return new Elysia({ name: 'kgs/mcp' })
    .use(accessControl(authenticator, options.authorizer, 'mcp'))
    .post(MCP_PATH, serve, {
      auth: 'write',
      response: { ...errors, 400: ErrorBody, 413: ErrorBody, 415: ErrorBody },
      detail: detail(
        'Model Context Protocol (Streamable HTTP, stateless; revisions 2025-11-25 and 2026-07-28): a JSON-RPC request, answered as JSON or an SSE stream',
      ),
    })
    .get(MCP_PATH, serve, {
      auth: 'write',
      response: errors,
      detail: detail('405: the endpoint is stateless and opens no server-to-client stream'),
    })
    .delete(MCP_PATH, serve, {
      auth: 'write',
      response: errors,
      detail: detail('405: the endpoint is stateless and has no session to end'),
    })
}
