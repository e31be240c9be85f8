// Size limits and malformed framing, spoken by hand over TCP: oversized headers are refused by
// Bun (431, connection closed; its limit is 16 KiB, BUN_OPTIONS=--max-http-header-size raises
// it), bodies past BODY_LIMIT by the route (413 {"error"}), past every route's limit by Bun
// (413, closed), broken lengths and chunking by Bun's parser (400, closed). After each the
// service keeps serving. Also: a request under a short Host header reaches its route.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type api, expectError, type Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { head, rawRequest } from './raw-http.ts'

const BODY_LIMIT = 4096

let server: TestServer
let http: ReturnType<typeof api>
let member: Account

beforeAll(async () => {
  ;({
    server,
    http,
    users: { member },
  } = await fixture({ server: { env: { BODY_LIMIT: String(BODY_LIMIT) } }, users: { member: 'member' } }))
})
afterAll(() => server.stop())

/** A request the server must refuse on its own terms: the status, and the connection closed. */
async function refusedAndClosed(request: string, status: number) {
  const exchange = await rawRequest(server.url, { head: request, giveUpMs: 20_000 })
  expect({ status: exchange.status, closedBy: exchange.closedBy }).toEqual({ status, closedBy: 'server' })
}

async function stillServing() {
  expect((await http.get('/healthz')).status).toBe(200)
  expect((await http.get('/api/v1/users/me', member.token)).status).toBe(200)
}

describe(`header limits (${BACKEND})`, () => {
  test('headers past 16 KiB in all (one long one, thousands of short ones, a long target) are 431 and the connection closed', async () => {
    await refusedAndClosed(head('GET', '/api/v1/users/me', { cookie: 'c'.repeat(20 * 1024) }), 431)
    await refusedAndClosed(
      head('GET', '/api/v1/users/me', Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`x-h${i}`, 'v']))),
      431,
    )
    await refusedAndClosed(head('GET', `/api/v1/users/me?q=${'q'.repeat(100 * 1024)}`), 431)
    await stillServing()
  })

  test('headers under the limit are served', async () => {
    const exchange = await rawRequest(server.url, {
      head: head('GET', '/api/v1/users/me', {
        authorization: `Bearer ${member.token}`,
        cookie: 'c'.repeat(12 * 1024),
        connection: 'close',
      }),
      giveUpMs: 20_000,
    })
    expect(exchange.status).toBe(200)
  })
})

describe(`body limits (${BACKEND})`, () => {
  const login = (body: RequestInit['body']) =>
    fetch(`${server.url}/api/v1/auth/login`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
      duplex: 'half',
    } as RequestInit)

  test('a JSON body past BODY_LIMIT is 413 {"error"}, with a Content-Length or streamed without one', async () => {
    const big = JSON.stringify({ email: 'x@example.com', password: 'p'.repeat(BODY_LIMIT) })
    const declared = await login(big)
    expectError(
      { status: declared.status, body: await declared.json() },
      413,
      `request body exceeds the limit of ${BODY_LIMIT} bytes`,
    )
    const streamed = await login(new Blob([big]).stream())
    expectError(
      { status: streamed.status, body: await streamed.json() },
      413,
      `request body exceeds the limit of ${BODY_LIMIT} bytes`,
    )
    await stillServing()
  })

  test('a body declared past every route limit is refused by Bun before any route (413, closed)', async () => {
    // The server's cap is the largest route limit: 16 GiB by default.
    await refusedAndClosed(
      head('POST', '/api/v1/auth/login', { 'content-type': 'application/json', 'content-length': String(10 ** 12) }),
      413,
    )
    await stillServing()
  })
})

describe(`malformed framing (${BACKEND})`, () => {
  test('lengths that are not one, two lengths, a length with chunking, broken chunks, NUL in a header, garbage: 400 and closed', async () => {
    const post = (headers: Record<string, string>) =>
      head('POST', '/api/v1/auth/login', { 'content-type': 'application/json', ...headers })
    for (const request of [
      `${post({ 'content-length': 'abc' })}{}`,
      `${post({ 'content-length': '-1' })}{}`,
      'POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      `${post({ 'content-length': '2', 'transfer-encoding': 'chunked' })}2\r\n{}\r\n0\r\n\r\n`,
      `${post({ 'transfer-encoding': 'gzip, chunked' })}2\r\n{}\r\n0\r\n\r\n`,
      `${post({ 'transfer-encoding': 'chunked' })}zz\r\n{}\r\n0\r\n\r\n`,
      'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\x00b\r\n\r\n',
      'HELLO\r\n\r\n',
    ]) {
      await refusedAndClosed(request, 400)
    }
    await stillServing()
  })

  test('bytes that are not UTF-8 in the target or a header value reach the routes as replacement characters, never a 5xx', async () => {
    const auth = { authorization: `Bearer ${member.token}`, connection: 'close' }
    const target = await rawRequest(server.url, { head: head('GET', '/\xff\xfe/facts', auth), giveUpMs: 20_000 })
    expect(target.status).toBe(404)
    expect(target.body).toEqual({ error: 'repository not found' })
    const header = await rawRequest(server.url, {
      head: head('GET', '/api/v1/facts', { ...auth, 'x-repository-id': '\x80\xff' }),
      giveUpMs: 20_000,
    })
    expect(header.status).toBe(404)
    expect(header.body).toEqual({ error: 'repository not found' })
  })
})

describe(`hosts (${BACKEND})`, () => {
  test('a request under a short Host header (a container name, a bare port) reaches its route', async () => {
    for (const host of ['kgs', 'a:1', 'x', '[::1]']) {
      const exchange = await rawRequest(server.url, {
        head: `GET /api/v1/users/me HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${member.token}\r\nConnection: close\r\n\r\n`,
        giveUpMs: 20_000,
      })
      expect({ host, status: exchange.status, id: (exchange.body as { id?: string } | undefined)?.id }).toEqual({
        host,
        status: 200,
        id: member.id,
      })
    }
  })
})
