// Every error leaves the service as {"error": "..."} with the right status (docs/spec/decisions.md §1),
// whether it came from our code, from Elysia's validation and routing, or from a crash.
import { Elysia, type ValidationError } from 'elysia'
import type { TSchema } from '@sinclair/typebox'
import type { ValueError } from '@sinclair/typebox/errors'
import type { Logger } from '../log.ts'
import { describeError } from '../log.ts'
import { isDatabaseUnavailable } from '../db/unavailable.ts'
import { ConflictError } from '../db/conflict.ts'
import { requestIdOf } from './request-id.ts'
import { requestPath } from './path.ts'

/**
 * Why a request's body was refused, held back by the body parser (body.ts) until the route has
 * authenticated; the error handler answers with it. Here, not in body.ts, so that body.ts may
 * throw HttpError without a cycle.
 */
export const refusedBodies = new WeakMap<Request, HttpError>()

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Fields the answer carries beside `error` (a 409's existing_id: the row that holds the key). */
    readonly fields: Record<string, string> = {},
  ) {
    super(message)
  }
}

/** What the shared handler would answer a request's failure with, as {"error": message}. */
interface Failure {
  status: number
  message: string
  headers: Record<string, string>
  fields?: Record<string, string>
}

/**
 * How some routes answer their errors in a shape of their own (the OAuth protocol endpoints):
 * the response for `error` (as thrown) or for `failure` (a refused request: an HttpError, a
 * validation or parse error; undefined for any other error), or undefined to leave the error to
 * the shared handler.
 */
export type ErrorShape = (error: unknown, failure: Failure | undefined) => Response | undefined

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

export function errorResponse(
  status: number,
  message: string,
  headers: Record<string, string> = {},
  fields: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ error: message, ...fields }), {
    status,
    headers: { 'content-type': JSON_CONTENT_TYPE, ...headers },
  })
}

/**
 * "invalid body: password: expected a password of 8 to 256 characters (got 5 characters)": the
 * outermost offending field, what it takes (the schema's own `error`, else a sentence made from
 * its keywords, never TypeBox's "Expected string length greater or equal to 8") and what came.
 */
function validationMessage(error: Pick<ValidationError, 'type' | 'valueError' | 'all'>): string {
  const where = error.type === 'params' ? 'path parameter' : error.type === 'headers' ? 'header' : error.type
  // The outermost problem explains the others ("expected object" before "missing property").
  const first = [...(safeAll(error) ?? []), ...(error.valueError ? [error.valueError] : [])].reduce<
    ValueError | undefined
  >((best, e) => (best === undefined || depth(e.path) < depth(best.path) ? e : best), undefined)
  if (!first) return `invalid ${where}`
  const field = first.path.replace(/^\//, '').replaceAll('/', '.')
  const found =
    first.value === undefined
      ? 'missing'
      : `got ${SENSITIVE.test(field) ? shapeOf(first.value) : describeValue(first.value)}`
  const schema = first.schema as TSchema & { error?: unknown }
  const expected =
    typeof schema.error === 'string'
      ? schema.error
      : `expected ${requirement(schema) ?? first.message.replace(/^Expected /, '')}`
  return field ? `invalid ${where}: ${field}: ${expected} (${found})` : `invalid ${where}: ${expected} (${found})`
}

const depth = (path: string) => (path === '' ? 0 : path.split('/').length)

function safeAll(error: Pick<ValidationError, 'all'>): ValueError[] | undefined {
  try {
    return error.all as unknown as ValueError[]
  } catch {
    return undefined
  }
}

const FORMATS: Record<string, string> = {
  email: 'an e-mail address',
  uuid: 'a UUID',
  'date-time': 'an RFC 3339 date-time',
  uri: 'a URL',
}

/** What a schema without an `error` of its own takes, in words; undefined for a kind not described here. */
function requirement(schema: TSchema): string | undefined {
  if (schema.anyOf) return describeUnion(schema.anyOf as TSchema[])
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  switch (schema.type) {
    case 'string': {
      if (schema.format && FORMATS[schema.format]) return FORMATS[schema.format]
      const length = span(schema.minLength, schema.maxLength, 'characters')
      return length ? `${length}` : 'a string'
    }
    case 'integer':
    case 'number': {
      const noun = schema.type === 'integer' ? 'an integer' : 'a number'
      const { minimum: min, maximum: max } = schema as { minimum?: number; maximum?: number }
      if (min !== undefined && max !== undefined) return `${noun} from ${min} to ${max}`
      if (min !== undefined) return `${noun} of at least ${min}`
      return max === undefined ? noun : `${noun} of at most ${max}`
    }
    case 'boolean':
      return 'true or false'
    case 'array': {
      const items = span(schema.minItems, schema.maxItems, 'items')
      return items ? `a list of ${items}` : 'a list'
    }
    case 'object':
      return 'an object'
  }
  return undefined
}

/** "8 to 256 characters", "at most 10 characters", "at least 1 items"; '' without bounds. */
function span(min: number | undefined, max: number | undefined, unit: string): string {
  if (min !== undefined && min > 0 && max !== undefined) return `${min} to ${max} ${unit}`
  if (max !== undefined) return `at most ${max} ${unit}`
  if (min !== undefined && min > 0) return `at least ${min} ${unit}`
  return ''
}

/** Elysia adds string-typed members to numeric unions to coerce query strings; name the real types. */
function describeUnion(members: TSchema[]): string {
  const types = members
    .filter((m) => !(m.type === 'string' && m.format))
    .map((m) => (m.const !== undefined ? JSON.stringify(m.const) : (requirement(m) ?? String(m.type ?? 'value'))))
  return [...new Set(types)].join(' or ')
}

/** Values of these fields are never echoed back, even to their sender. */
const SENSITIVE = /password|secret|token|verifier|code/i

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value
}

/** A sensitive value's shape without its content: a string's length, else its type. */
const shapeOf = (value: unknown) => (typeof value === 'string' ? `${value.length} characters` : typeName(value))

function describeValue(value: unknown): string {
  if (typeof value === 'string') return value.length > 40 ? `${value.length} characters` : JSON.stringify(value)
  return typeName(value)
}

/** PostgreSQL's program_limit_exceeded class (SQLSTATE 54): an index entry, a full-text document, an array too large. */
const isProgramLimit = (error: unknown) =>
  /^54[0-9A-Z]{3}$/.test(String((error as { code?: unknown } | null)?.code ?? ''))

/**
 * A failure whose caller may be told what it was, as the HttpError it means: an HttpError, a
 * store's ConflictError (409), a value past a database limit (400). The size checks
 * (graph/limits.ts) refuse such values first, so one reaching here means a check is missing: it
 * is logged, and PostgreSQL's message, which names indexes, goes to the log only. Undefined for
 * any other failure: unexpected.
 */
export function knownFailure(error: unknown, log: Logger, requestId: string | undefined): HttpError | undefined {
  if (error instanceof HttpError) return error
  if (error instanceof ConflictError) return new HttpError(409, error.message)
  if (!isProgramLimit(error)) return undefined
  log.warn('a value past a database limit', { request_id: requestId, ...describeError(error) })
  return new HttpError(400, 'a value is too large for the database to store or index; shorten the longest text')
}

/**
 * The global error handler. A value past a database limit is 400 (knownFailure), a database that
 * cannot be reached 503; other unknown errors are logged with their stack and answered 500 without it.
 */
export function errorHandling(
  log: Logger,
  methodNotAllowed: (request: Request) => Response | undefined,
  shapeOf: (path: string) => ErrorShape | undefined = () => undefined,
) {
  return new Elysia({ name: 'kgs/errors' }).onError({ as: 'global' }, ({ code, error, request }) => {
    // A body the parser refused, which the route's schema then refused as null: the first refusal is the one to report.
    const id = requestIdOf(request)
    const own =
      (code === 'VALIDATION' && refusedBodies.get(request)) ||
      knownFailure(error, log, id) ||
      knownFailure((error as { cause?: unknown }).cause, log, id)
    const failure: Failure | undefined =
      own instanceof HttpError
        ? { status: own.status, message: own.message, headers: own.headers, fields: own.fields }
        : code === 'VALIDATION'
          ? { status: 400, message: validationMessage(error), headers: {} }
          : code === 'PARSE'
            ? { status: 400, message: 'malformed request body', headers: {} }
            : undefined
    const shaped = shapeOf(requestPath(request))?.(error, failure)
    if (shaped) return shaped
    if (failure) return errorResponse(failure.status, failure.message, failure.headers, failure.fields)
    if (code === 'NOT_FOUND') return methodNotAllowed(request) ?? errorResponse(404, 'not found')
    if (isDatabaseUnavailable(error)) {
      // Expected while PostgreSQL restarts; the client may retry, the pools reconnect by themselves.
      log.warn('database unavailable', { request_id: id, error: (error as Error).message })
      return errorResponse(503, 'database unavailable', { 'retry-after': '1' })
    }
    log.error('unhandled error', { request_id: id, ...describeError(error) })
    return errorResponse(500, 'internal server error')
  })
}
