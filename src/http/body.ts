// Request bodies are read with a byte limit (413 past it, whether or not Content-Length was
// sent) and a time limit (408 past it, and the connection closed: a client trickling its body
// does not hold the request), and parsed strictly: invalid UTF-8 or JSON is a 400, never a
// framework dump.
import { Elysia } from 'elysia'
import { LATE, within } from './deadline.ts'
import { HttpError, refusedBodies } from './errors.ts'

const decoder = new TextDecoder('utf-8', { fatal: true })

export async function readBodyLimited(request: Request, limit: number, timeoutMs: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
  if (!request.body) return new Uint8Array()
  // A body of declared length (within the limit, and no more can arrive) is read whole by the
  // runtime, under the same time limit: the chunk-by-chunk reader below costs a timer and a
  // stream read per chunk, which most of a small JSON body's cost was.
  if (declared !== null && /^\d+$/.test(declared)) {
    const whole = await within(request.arrayBuffer(), timeoutMs)
    if (whole === LATE) throw tooSlow(timeoutMs)
    return new Uint8Array(whole)
  }
  const reader = request.body.getReader()
  const deadline = performance.now() + timeoutMs
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const next = await within(reader.read(), deadline - performance.now())
    if (next === LATE) {
      reader.cancel().catch(() => {})
      throw tooSlow(timeoutMs)
    }
    const { done, value } = next
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel()
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

const tooLarge = (limit: number) => new HttpError(413, `request body exceeds the limit of ${limit} bytes`)

/** 408, and the connection goes: the rest of a trickled body is not waited for either. */
const tooSlow = (timeoutMs: number) =>
  new HttpError(408, `request body not received within ${timeoutMs / 1000} s`, { connection: 'close' })

function decodeText(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes)
  } catch {
    throw new HttpError(400, 'request body is not valid UTF-8')
  }
}

/**
 * Deepest nesting of a JSON body. The API's bodies need a few levels; thousands would make the
 * validators' error reporting recurse past the stack.
 */
const MAX_JSON_DEPTH = 64

export function parseJsonBody(bytes: Uint8Array): unknown {
  const text = decodeText(bytes)
  if (text.trim() === '') throw new HttpError(400, 'request body is empty; expected JSON')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new HttpError(400, `malformed JSON body: ${(error as Error).message}`)
  }
  checkJsonValue(value, text.includes('\\u0000'))
  return value
}

/**
 * Refuses a value nested deeper than MAX_JSON_DEPTH and, when `nul` says the text may hold one,
 * a string with a NUL character: PostgreSQL text cannot store it, and a query given one fails.
 * Iterative, so that no depth overflows this check itself.
 */
function checkJsonValue(root: unknown, nul: boolean): void {
  if (root === null || typeof root !== 'object') {
    if (nul && typeof root === 'string' && root.includes('\0')) throw noNul()
    return
  }
  const pending: [object, number][] = [[root, 1]]
  while (pending.length > 0) {
    const [value, depth] = pending.pop()!
    if (depth > MAX_JSON_DEPTH)
      throw new HttpError(400, `malformed JSON body: nested deeper than ${MAX_JSON_DEPTH} levels`)
    const isArray = Array.isArray(value)
    if (nul && !isArray && Object.keys(value).some((key) => key.includes('\0'))) throw noNul()
    for (const child of isArray ? value : Object.values(value)) {
      if (child !== null && typeof child === 'object') pending.push([child, depth + 1])
      else if (nul && typeof child === 'string' && child.includes('\0')) throw noNul()
    }
  }
}

const noNul = () => new HttpError(400, 'request body contains a NUL character (\\u0000), which no field accepts')

/** A form body as an object; a repeated parameter is refused (RFC 6749 §3.1 for OAuth requests). */
function parseFormBody(text: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(fields, key)) throw new HttpError(400, `parameter ${key} appears more than once`)
    if (key.includes('\0') || value.includes('\0')) throw noNul()
    fields[key] = value
  }
  return fields
}

/** Whether a route reads form-encoded bodies: it says so with `parse: 'urlencoded'` (the OAuth endpoints). */
export function readsForms(route: { hooks: { parse?: unknown } }): boolean {
  const parsers = route.hooks.parse
  return Array.isArray(parsers) && parsers.some((parser) => (parser as { fn?: unknown }).fn === 'urlencoded')
}

/**
 * The body parser of the API: JSON bodies, and form-encoded ones on the routes that read forms
 * (`formRoute`, keyed "METHOD /path"), up to `limit` bytes arriving within `timeoutMs`. Any
 * other media type is refused with 415 naming the one expected, unless a route brings its own
 * parser.
 *
 * A refused body is not thrown at once: parsing runs before any route hook, and a protected
 * route must answer an anonymous request 401 whatever its body (docs/spec/decisions.md §5a). The parser
 * hands the route a null body instead and the refusal is thrown before the handler (or, when the
 * route's schema refuses the null first, reported by errorHandling in its place).
 */
export function bodyParsing(limit: number, timeoutMs: number, formRoute: (key: string) => boolean) {
  const parse = async (request: Request, route: string) => {
    const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
    const read = () => readBodyLimited(request, limit, timeoutMs)
    const form = formRoute(`${request.method} ${route}`)
    // JSON is read on form routes too, so that the OAuth endpoints answer it with their own errors.
    if (type === 'application/json' || type.endsWith('+json')) return parseJsonBody(await read())
    if (form && type === 'application/x-www-form-urlencoded') return parseFormBody(decodeText(await read()))
    const expected = form ? 'application/x-www-form-urlencoded' : 'application/json'
    if (type === '') {
      // A bodiless POST (logout, cancel) needs no Content-Type; a body without one is refused.
      if ((await read()).byteLength === 0) return null
      throw new HttpError(415, `missing Content-Type; expected ${expected}`)
    }
    throw new HttpError(415, `unsupported Content-Type ${JSON.stringify(type)}; expected ${expected}`)
  }
  return new Elysia({ name: 'kgs/body' })
    .onParse({ as: 'global' }, async ({ request, route }) => {
      try {
        return await parse(request, route)
      } catch (error) {
        if (!(error instanceof HttpError)) throw error
        refusedBodies.set(request, error)
        return null
      }
    })
    .onBeforeHandle({ as: 'global' }, ({ request }) => {
      const refused = refusedBodies.get(request)
      if (refused) throw refused
    })
}
