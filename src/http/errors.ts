// Every error leaves the service as {"error": "..."} with the right status (decisions.md §1),
// whether it came from our code, from Elysia's validation and routing, or from a crash.
import { Elysia, ValidationError } from 'elysia'
import type { Logger } from '../log.ts'
import { describeError } from '../log.ts'
import { requestIdOf } from './request-id.ts'

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

export function errorResponse(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error: message }), {
    status,
    headers: { 'content-type': JSON_CONTENT_TYPE, ...headers },
  })
}

/** "invalid body: email: expected string", naming the first offending field. */
export function validationMessage(error: Pick<ValidationError, 'type' | 'valueError'>): string {
  const where = error.type === 'params' ? 'path parameter' : error.type === 'headers' ? 'header' : error.type
  const first = error.valueError
  if (!first) return `invalid ${where}`
  const field = first.path.replace(/^\//, '').replaceAll('/', '.')
  const found = first.value === undefined ? 'missing' : `got ${describeValue(first.value)}`
  const schema = first.schema as { description?: string; error?: unknown }
  const expected = typeof schema.error === 'string' ? schema.error : first.message.replace(/^Expected /, 'expected ')
  return field ? `invalid ${where}: ${field}: ${expected} (${found})` : `invalid ${where}: ${expected}`
}

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'string') return value.length > 40 ? `string of ${value.length} characters` : JSON.stringify(value)
  return typeof value
}

/** The global error handler. Unknown errors are logged with their stack and answered 500 without it. */
export function errorHandling(log: Logger, methodNotAllowed: (request: Request) => Response | undefined) {
  return new Elysia({ name: 'kgs/errors' }).onError({ as: 'global' }, ({ code, error, request }) => {
    if (error instanceof HttpError) return errorResponse(error.status, error.message, error.headers)
    switch (code) {
      case 'VALIDATION':
        return errorResponse(400, validationMessage(error))
      case 'PARSE':
        return errorResponse(400, 'malformed request body')
      case 'NOT_FOUND':
        return methodNotAllowed(request) ?? errorResponse(404, 'not found')
    }
    log.error('unhandled error', { request_id: requestIdOf(request), ...describeError(error) })
    return errorResponse(500, 'internal server error')
  })
}
