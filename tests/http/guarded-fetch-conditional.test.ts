// Conditional requests through guardedFetch: the validators a caller holds are sent, and a 304
// is an answer only to a request that sent them (to any other it is an HTTP error, as before).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { guardedFetch, GuardedFetchError, type GuardedFetchOptions } from '../../src/http/guarded-fetch.ts'
import { rejectionOf } from '../helpers/promises.ts'

const ETAG = '"v7"'
const MODIFIED = 'Wed, 01 May 2024 10:00:00 GMT'
let server: ReturnType<typeof Bun.serve>
let url: string
const seen: { ifNoneMatch: string | null; ifModifiedSince: string | null }[] = []

beforeAll(() => {
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const ifNoneMatch = request.headers.get('if-none-match')
      const ifModifiedSince = request.headers.get('if-modified-since')
      seen.push({ ifNoneMatch, ifModifiedSince })
      if (new URL(request.url).pathname === '/always-304' || ifNoneMatch === ETAG)
        return new Response(null, { status: 304, headers: { etag: ETAG } })
      return new Response('fresh', { headers: { etag: ETAG, 'last-modified': MODIFIED } })
    },
  })
  url = `http://127.0.0.1:${server.port}`
})
afterAll(() => server.stop(true))

const options: GuardedFetchOptions = {
  maxBytes: 1000,
  timeoutMs: 5000,
  allowedAddresses: ['127.0.0.1'],
  purpose: 'test',
}
const text = async (body: AsyncIterable<Uint8Array>) => {
  let out = ''
  for await (const chunk of body) out += new TextDecoder().decode(chunk)
  return out
}

describe('conditional requests', () => {
  test('without validators: no conditional headers, the body, notModified false', async () => {
    const fetched = await guardedFetch(`${url}/doc`, options)
    expect(fetched.notModified).toBe(false)
    expect(await text(fetched.body)).toBe('fresh')
    expect(seen.at(-1)).toEqual({ ifNoneMatch: null, ifModifiedSince: null })
  })

  test('with validators: both sent; a 304 is notModified with an empty body', async () => {
    const fetched = await guardedFetch(`${url}/doc`, {
      ...options,
      conditional: { etag: ETAG, lastModified: MODIFIED },
    })
    expect(fetched.notModified).toBe(true)
    expect(await text(fetched.body)).toBe('')
    expect(seen.at(-1)).toEqual({ ifNoneMatch: ETAG, ifModifiedSince: MODIFIED })
    const changed = await guardedFetch(`${url}/doc`, { ...options, conditional: { etag: '"v6"' } })
    expect(changed.notModified).toBe(false)
    expect(await text(changed.body)).toBe('fresh')
  })

  test('a 304 to a request that sent no validators is an HTTP error', async () => {
    const error = await rejectionOf(guardedFetch(`${url}/always-304`, options))
    expect(error).toBeInstanceOf(GuardedFetchError)
    expect((error as GuardedFetchError).message).toMatch(/HTTP 304/)
  })
})
