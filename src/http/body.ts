// Request bodies are read with a byte limit (413 past it, whether or not Content-Length was
// sent) and parsed strictly: invalid UTF-8 or JSON is a 400, never a framework dump.
import { Elysia } from 'elysia'
import { HttpError } from './errors.ts'

const decoder = new TextDecoder('utf-8', { fatal: true })

export async function readBodyLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
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

function decodeText(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes)
  } catch {
    throw new HttpError(400, 'request body is not valid UTF-8')
  }
}

export function parseJsonBody(bytes: Uint8Array): unknown {
  const text = decodeText(bytes)
  if (text.trim() === '') throw new HttpError(400, 'request body is empty; expected JSON')
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new HttpError(400, `malformed JSON body: ${(error as Error).message}`)
  }
}

/** A form body as an object; a repeated parameter is refused (RFC 6749 §3.1 for OAuth requests). */
export function parseFormBody(text: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(fields, key)) throw new HttpError(400, `parameter ${key} appears more than once`)
    fields[key] = value
  }
  return fields
}

/**
 * The body parsers of the API: JSON and form-encoded bodies (OAuth) up to `limit` bytes.
 * Other media types are refused with 415 unless a route brings its own parser.
 */
export function bodyParsing(limit: number) {
  return new Elysia({ name: 'kgs/body' }).onParse({ as: 'global' }, async ({ request }) => {
    const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
    if (type === 'application/json' || type.endsWith('+json')) return parseJsonBody(await readBodyLimited(request, limit))
    if (type === 'application/x-www-form-urlencoded') return parseFormBody(decodeText(await readBodyLimited(request, limit)))
    if (type === '') {
      // A bodiless POST (logout, cancel) needs no Content-Type; a body without one is refused.
      if ((await readBodyLimited(request, limit)).byteLength === 0) return null
      throw new HttpError(415, 'missing Content-Type; expected application/json')
    }
    throw new HttpError(415, `unsupported Content-Type ${JSON.stringify(type)}; expected application/json`)
  })
}
