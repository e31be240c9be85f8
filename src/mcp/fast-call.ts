// Why this exists: the SDK's handler costs a tools/call about as much CPU as the REST read doing
// the same work (a server and a transport built per request, zod parses of the request and of the
// whole result, an SSE stream for 2025 clients, measured in scripts/bench/mcp.ts), which held
// get_fact on PostgreSQL near 0.3-0.5 of the REST rate below its target (docs/benchmarks.md, "MCP"); using
// the SDK more cheaply (one tool registered, JSON answers) did not close that gap. So the hot case,
// one stateless tools/call of a read-only tool that succeeds, sent as the official clients send
// it, is answered here with the very bytes the SDK answers (fast-call.test.ts sends the same
// requests through both and compares them). Everything else (another method, other headers,
// arguments the tool refuses, a refusal, an error) goes to the SDK; a read may then run twice.
import { isInputRequiredResult, type CallToolResult, type InputRequiredResult } from '@modelcontextprotocol/server'
import type { Principal } from '../http/auth.ts'
import { requestIdOf } from '../http/request-id.ts'
import { SERVER_INFO, type Compiled } from './server.ts'
import type { Tool } from './tool.ts'

const LEGACY = '2025-11-25'
const MODERN = '2026-07-28'
const META = 'io.modelcontextprotocol/'
const MODERN_META = [`${META}protocolVersion`, `${META}clientInfo`, `${META}clientCapabilities`]
/** The headers of the SDK's 2025-era answer to a request: an SSE stream of the one response. */
const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
}
const ENCODER = new TextEncoder()

type Answer = (
  principal: Principal,
  tool: Tool,
  args: Record<string, unknown>,
  requestId: string | undefined,
) => Promise<CallToolResult | InputRequiredResult>

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
const keysWithin = (value: Record<string, unknown>, allowed: readonly string[]) =>
  Object.keys(value).every((key) => allowed.includes(key))
/** Whether `value` passes `schema` (ours check synchronously). */
const fits = (schema: Compiled['input'], value: unknown) => {
  const result = schema['~standard'].validate(value)
  return !(result instanceof Promise) && result.issues === undefined
}

/** The call `body` makes with these headers, if it is one this path answers: which tool, with what, in which revision. */
function qualifying(
  reads: Map<string, Compiled>,
  headers: Headers,
  body: unknown,
): { compiled: Compiled; args: Record<string, unknown>; id: string | number; revision: string } | undefined {
  if (headers.get('content-type') !== 'application/json' || headers.has('mcp-session-id')) return undefined
  const accept = headers.get('accept')
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined
  if (
    !isPlainObject(body) ||
    !keysWithin(body, ['jsonrpc', 'id', 'method', 'params']) ||
    body.jsonrpc !== '2.0' ||
    body.method !== 'tools/call'
  )
    return undefined
  const { id, params } = body
  if (
    !(typeof id === 'string' || Number.isSafeInteger(id)) ||
    !isPlainObject(params) ||
    !isPlainObject(params.arguments)
  )
    return undefined
  const compiled = typeof params.name === 'string' ? reads.get(params.name) : undefined
  if (!compiled) return undefined
  const revision = headers.get('mcp-protocol-version')
  if (revision === LEGACY) {
    if (headers.has('mcp-method') || !keysWithin(params, ['name', 'arguments'])) return undefined
  } else if (revision === MODERN) {
    const meta = params._meta
    if (
      headers.get('mcp-method') !== 'tools/call' ||
      headers.get('mcp-name') !== params.name ||
      !keysWithin(params, ['name', 'arguments', '_meta'])
    )
      return undefined
    if (!isPlainObject(meta) || meta[`${META}protocolVersion`] !== MODERN || !keysWithin(meta, MODERN_META))
      return undefined
  } else return undefined
  return { compiled, args: params.arguments, id: id as string | number, revision }
}

/**
 * The SDK's answer to a qualifying tools/call of `principal` (see above), or undefined for the SDK
 * to answer: the request does not qualify, the arguments or the answer do not fit the tool's
 * schemas, the tool refused or failed (a tool error).
 */
export function fastToolCall(answer: Answer, tools: Compiled[]) {
  /** The read-only tools offered, by name: a call of one can go to the SDK after all, having changed nothing. */
  const reads = new Map(tools.filter((c) => c.tool.annotations.readOnlyHint).map((c) => [c.tool.name, c]))
  return async (request: Request, body: unknown, principal: Principal): Promise<Response | undefined> => {
    const call = qualifying(reads, request.headers, body)
    if (!call) return undefined
    const { compiled, args, id, revision } = call
    if (!fits(compiled.input, args)) return undefined
    const result = await answer(principal, compiled.tool, args, requestIdOf(request))
    if (isInputRequiredResult(result) || result.isError || !fits(compiled.output, result.structuredContent))
      return undefined
    if (revision === LEGACY) {
      const event = ENCODER.encode(`event: message\ndata: ${JSON.stringify({ result, jsonrpc: '2.0', id })}\n\n`)
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(event)
          controller.close()
        },
      })
      return new Response(stream, { status: 200, headers: SSE_HEADERS })
    }
    const modern = { ...result, resultType: 'complete', _meta: { [`${META}serverInfo`]: SERVER_INFO } }
    return new Response(JSON.stringify({ result: modern, jsonrpc: '2.0', id }), {
      status: 200,
      headers: { 'Content-Type': 'application/json' },
    })
  }
}
