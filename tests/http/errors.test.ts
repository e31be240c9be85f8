// The error model and body parsing of every route, exercised over real HTTP with the same
// plugins the app uses, on a route made for the purpose.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia, t } from 'elysia'
import { bodyParsing, readsForms } from '../../src/http/body.ts'
import { HttpError, errorHandling } from '../../src/http/errors.ts'
import { methodNotAllowedResponder } from '../../src/http/method-not-allowed.ts'
import { createLogger } from '../../src/log.ts'

const LIMIT = 2048
let logged = ''
let server: ReturnType<typeof Bun.serve>
let base = ''

beforeAll(() => {
  const log = createLogger('error', (text) => (logged += text))
  let notAllowed: (r: Request) => Response | undefined = () => undefined
  let forms = new Set<string>()
  const app = new Elysia()
    .use(errorHandling(log, (r) => notAllowed(r)))
    .use(bodyParsing(LIMIT, 30_000, (key) => forms.has(key)))
    .post('/echo', ({ body }) => body, { body: t.Object({ name: t.String({ maxLength: 10 }), count: t.Integer() }) })
    .post('/strict', ({ body }) => body, {
      body: t.Object({
        password: t.String({ minLength: 8, maxLength: 256 }),
        tags: t.Optional(t.Array(t.String(), { maxItems: 3 })),
        on: t.Optional(t.Boolean()),
      }),
    })
    .post('/form', ({ body }) => body, { parse: 'urlencoded', body: t.Object({ grant_type: t.String() }) })
    .get('/crash', () => {
      throw new Error('secret internals: password=hunter2')
    })
    .get('/teapot', () => {
      throw new HttpError(418, 'short and stout', { 'x-extra': 'yes' })
    })
  notAllowed = methodNotAllowedResponder(app.routes)
  forms = new Set(app.routes.filter(readsForms).map((route) => `${route.method} ${route.path}`))
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch })
  base = `http://127.0.0.1:${server.port}`
})
afterAll(() => server.stop(true))

const post = (
  path: string,
  body: RequestInit['body'],
  type: string | null = 'application/json',
  extra: Record<string, string> = {},
) => fetch(base + path, { method: 'POST', body, headers: { ...(type ? { 'content-type': type } : {}), ...extra } })

async function expectError(res: Response, status: number, message: string | RegExp) {
  expect(res.status).toBe(status)
  const body = (await res.json()) as Record<string, unknown>
  expect(Object.keys(body)).toEqual(['error'])
  if (typeof message === 'string') expect(body.error).toBe(message)
  else expect(body.error).toMatch(message)
}

describe('request bodies', () => {
  test('a valid body passes through', async () => {
    const res = await post('/echo', JSON.stringify({ name: 'ada', count: 3 }))
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ name: 'ada', count: 3 })
  })

  test('missing field names the field', async () => {
    await expectError(await post('/echo', JSON.stringify({ name: 'ada' })), 400, /^invalid body: count: .*\(missing\)$/)
  })

  test('wrong type names the field and what was found', async () => {
    await expectError(
      await post('/echo', JSON.stringify({ name: 'ada', count: 'three' })),
      400,
      'invalid body: count: expected an integer (got "three")',
    )
  })

  test('a body that is not an object', async () => {
    await expectError(
      await post('/echo', JSON.stringify([1, 2])),
      400,
      /^invalid body: count: expected an integer \(missing\)$/,
    )
  })

  test('an over-long field', async () => {
    await expectError(
      await post('/echo', JSON.stringify({ name: 'x'.repeat(11), count: 1 })),
      400,
      'invalid body: name: expected at most 10 characters (got "xxxxxxxxxxx")',
    )
  })

  // Sentences made from the schema's keywords, not TypeBox's "Expected string length greater or equal to 8".
  test('a schema without an error of its own reads as a sentence; a secret is described, not echoed', async () => {
    await expectError(
      await post('/strict', JSON.stringify({ password: 'short' })),
      400,
      'invalid body: password: expected 8 to 256 characters (got 5 characters)',
    )
    await expectError(
      await post('/strict', JSON.stringify({ password: 42 })),
      400,
      'invalid body: password: expected 8 to 256 characters (got number)',
    )
    await expectError(
      await post('/strict', JSON.stringify({})),
      400,
      'invalid body: password: expected 8 to 256 characters (missing)',
    )
    await expectError(
      await post('/strict', JSON.stringify({ password: 'long enough', tags: ['a', 'b', 'c', 'd'] })),
      400,
      'invalid body: tags: expected a list of at most 3 items (got array)',
    )
    await expectError(
      await post('/strict', JSON.stringify({ password: 'long enough', on: 'yes' })),
      400,
      'invalid body: on: expected true or false (got "yes")',
    )
  })

  test('malformed JSON', async () => {
    await expectError(await post('/echo', '{"name": "ada",'), 400, /^malformed JSON body/)
  })

  test('empty body', async () => {
    await expectError(await post('/echo', ''), 400, 'request body is empty; expected JSON')
  })

  test('invalid UTF-8', async () => {
    await expectError(
      await post('/echo', new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d])),
      400,
      'request body is not valid UTF-8',
    )
  })

  test('body over the limit with Content-Length: 413', async () => {
    await expectError(
      await post('/echo', JSON.stringify({ name: 'a', count: 1, pad: 'x'.repeat(LIMIT) })),
      413,
      `request body exceeds the limit of ${LIMIT} bytes`,
    )
  })

  test('chunked body over the limit (no Content-Length): 413', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(1000))
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ === 0) controller.enqueue(new TextEncoder().encode('{"pad":"'))
        else if (sent < 10) controller.enqueue(chunk)
        else controller.close()
      },
    })
    await expectError(await post('/echo', stream), 413, `request body exceeds the limit of ${LIMIT} bytes`)
  })

  test('missing Content-Type: 415', async () => {
    await expectError(await post('/echo', '{}', null), 415, 'missing Content-Type; expected application/json')
  })

  test('unsupported Content-Type: 415', async () => {
    await expectError(
      await post('/echo', 'name=ada', 'text/plain'),
      415,
      'unsupported Content-Type "text/plain"; expected application/json',
    )
  })

  test('form-encoded bodies are parsed for routes that take them', async () => {
    const res = await post('/form', 'grant_type=authorization_code', 'application/x-www-form-urlencoded')
    expect(await res.json()).toEqual({ grant_type: 'authorization_code' })
  })

  test('a form body sent to a JSON route (curl -d) is 415 naming JSON, not a validation error', async () => {
    await expectError(
      await post('/echo', 'name=ada&count=1', 'application/x-www-form-urlencoded'),
      415,
      'unsupported Content-Type "application/x-www-form-urlencoded"; expected application/json',
    )
  })

  test('a route that takes forms names the form type in its 415', async () => {
    await expectError(
      await post('/form', 'grant_type', 'text/plain'),
      415,
      'unsupported Content-Type "text/plain"; expected application/x-www-form-urlencoded',
    )
  })
})

describe('errors', () => {
  test('a thrown exception is a 500 without internals, logged with its stack', async () => {
    await expectError(await fetch(base + '/crash'), 500, 'internal server error')
    await Bun.sleep(0) // the logger flushes on the next turn of the event loop
    await new Promise((resolve) => setImmediate(resolve))
    expect(logged).toContain('secret internals')
    expect(logged).toContain('"stack"')
  })

  test('HttpError carries its status and headers', async () => {
    const res = await fetch(base + '/teapot')
    expect(res.headers.get('x-extra')).toBe('yes')
    await expectError(res, 418, 'short and stout')
  })

  test('wrong method: 405 with Allow', async () => {
    const res = await fetch(base + '/echo')
    expect(res.headers.get('allow')).toBe('POST')
    await expectError(res, 405, 'method GET not allowed on /echo')
  })
})
