// Slowloris, spoken by hand over TCP: clients that trickle a byte every 200 ms, never idle long
// enough for Bun's idle timeout, are cut off within a bounded time while others are served.
// - Request headers: Bun closes a connection whose headers are not complete within about 10 s
//   (its own, fixed deadline), and one whose unread body trickles on after the answer.
// - JSON and form bodies: BODY_TIMEOUT (1 s here), then 408 {"error"} and the connection closed.
// - Uploads (registry pushes, import uploads, raw or multipart): UPLOAD_MIN_RATE bytes per
//   second over each BODY_TIMEOUT, else 408 and nothing stored; a fair pace goes through. An
//   upload whose client goes away ends its request at once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { api, Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { blobKeys } from '../helpers/blobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { createLogger } from '../../src/log.ts'
import { head, rawRequest, type RawExchange } from './raw-http.ts'

const UPLOAD_MIN_RATE = 2048
/** Generous bounds on when a trickling connection must be gone (the machine is shared). */
const BUN_BOUND_MS = 30_000
/** Below Bun's own 10 s after an answer: a connection gone by then was closed by our 408. */
const OUR_BOUND_MS = 6_000
const TRICKLE_EVERY_MS = 200

let server: TestServer
let http: ReturnType<typeof api>
let member: Account
let sysadmin: Account
let slug: string
/** The server's log: one line per finished request. */
let logged = ''

beforeAll(async () => {
  const slow = await fixture({
    server: {
      env: { BODY_TIMEOUT: '1s', UPLOAD_MIN_RATE: String(UPLOAD_MIN_RATE) },
      log: createLogger('info', (text) => (logged += text)),
    },
    users: { member: 'member', sysadmin: 'sysadmin' },
    repositories: { uploads: { by: 'member', name: 'Slow uploads' } },
  })
  ;({
    server,
    http,
    users: { member, sysadmin },
  } = slow)
  slug = slow.repositories.uploads.slug
})
afterAll(() => server.stop())

/** Starts a trickling request; the exchange ends when the server closes it, or at `giveUpMs`. */
const trickle = (request: string | Uint8Array, body: string | Uint8Array, giveUpMs: number) =>
  rawRequest(server.url, { head: request, trickle: body, everyMs: TRICKLE_EVERY_MS, giveUpMs })

/** Others are served while `slow` connections trickle. */
async function servedMeanwhile(slow: Promise<RawExchange>[]) {
  const [health, me] = await Promise.all([http.get('/healthz'), http.get('/api/v1/users/me', member.token)])
  expect([health.status, me.status]).toEqual([200, 200])
  return Promise.all(slow)
}

const gzipMagic = '\x1f\x8b'
const endless = (n = 100_000) => 'x'.repeat(n)

describe(`slow request headers (${BACKEND})`, () => {
  test('are cut off by Bun, as is an unread body trickling after the answer; others are served meanwhile', async () => {
    const slowHeaders = Array.from({ length: 20 }, () =>
      trickle('GET /healthz HTTP/1.1\r\nHost: localhost\r\n', `X-Slow: ${endless()}`, BUN_BOUND_MS),
    )
    // Anonymous: answered 401 at once, without reading the body the client keeps sending.
    const unread = trickle(
      head('POST', '/api/v1/graphs', { 'content-type': 'application/gzip', 'content-length': '100000' }),
      endless(),
      BUN_BOUND_MS,
    )
    const exchanges = await servedMeanwhile([...slowHeaders, unread])
    for (const exchange of exchanges.slice(0, -1))
      expect({ closedBy: exchange.closedBy, status: exchange.status }).toEqual({
        closedBy: 'server',
        status: undefined,
      })
    expect({ closedBy: exchanges.at(-1)!.closedBy, status: exchanges.at(-1)!.status }).toEqual({
      closedBy: 'server',
      status: 401,
    })
    expect((await http.get('/healthz')).status).toBe(200)
  }, 60_000)
})

describe(`slow JSON and form bodies (${BACKEND})`, () => {
  test('trickled (with a length or chunked) or stalled: 408 {"error"} after BODY_TIMEOUT and the connection closed', async () => {
    const json = { 'content-type': 'application/json' }
    const exchanges = await servedMeanwhile([
      trickle(head('POST', '/api/v1/auth/login', { ...json, 'content-length': '5000' }), endless(5000), OUR_BOUND_MS),
      trickle(
        head('POST', '/api/v1/auth/login', { ...json, 'transfer-encoding': 'chunked' }),
        '1\r\nx\r\n'.repeat(1000),
        OUR_BOUND_MS,
      ),
      trickle(
        head('POST', '/api/v1/oauth/token', {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': '5000',
        }),
        endless(5000),
        OUR_BOUND_MS,
      ),
      trickle(
        head('PUT', `/api/v1/users/${member.id}`, {
          ...json,
          authorization: `Bearer ${member.token}`,
          'content-length': '5000',
        }),
        endless(5000),
        OUR_BOUND_MS,
      ),
      // Nothing at all after the headers, for less than Bun's idle timeout.
      rawRequest(server.url, {
        head: head('POST', '/api/v1/auth/login', { ...json, 'content-length': '100' }),
        giveUpMs: OUR_BOUND_MS,
      }),
    ])
    for (const [i, exchange] of exchanges.entries()) {
      expect({ i, closedBy: exchange.closedBy, status: exchange.status }).toEqual({
        i,
        closedBy: 'server',
        status: 408,
      })
      // The OAuth token endpoint answers in its own error shape.
      const expected =
        i === 2
          ? { error: 'invalid_request', error_description: 'request body not received within 1 s' }
          : { error: 'request body not received within 1 s' }
      expect(exchange.body).toEqual(expected)
    }
  }, 60_000)
})

describe(`slow uploads (${BACKEND})`, () => {
  test('a registry push and an import upload (raw or multipart) slower than UPLOAD_MIN_RATE: 408, closed, nothing stored', async () => {
    const push = head('POST', '/api/v1/graphs', {
      authorization: `Bearer ${sysadmin.token}`,
      'content-type': 'application/gzip',
      'x-graph-name': 'slow',
      'content-length': '100000',
    })
    const upload = head('POST', `/${slug}/import-graph`, {
      authorization: `Bearer ${member.token}`,
      'content-type': 'application/gzip',
      'content-length': '100000',
    })
    const form = head('POST', `/${slug}/import-graph`, {
      authorization: `Bearer ${member.token}`,
      'content-type': 'multipart/form-data; boundary=b',
      'content-length': '100000',
    })
    const part =
      '--b\r\nContent-Disposition: form-data; name="bundle"; filename="b.json.gz"\r\nContent-Type: application/gzip\r\n\r\n'
    const exchanges = await servedMeanwhile([
      trickle(push, gzipMagic + endless(), OUR_BOUND_MS),
      trickle(upload, gzipMagic + endless(), OUR_BOUND_MS),
      trickle(form + part + gzipMagic, endless(), OUR_BOUND_MS),
      // Stalled after its first bytes.
      rawRequest(server.url, { head: push + gzipMagic, giveUpMs: OUR_BOUND_MS }),
    ])
    const message = `the upload arrived slower than ${UPLOAD_MIN_RATE} bytes per second over 1 s and was cut off`
    for (const [i, exchange] of exchanges.entries())
      expect({ i, closedBy: exchange.closedBy, status: exchange.status, body: exchange.body }).toEqual({
        i,
        closedBy: 'server',
        status: 408,
        body: { error: message },
      })
    expect(await blobKeys(server.context.blobs)).toEqual([])
    expect((await http.get('/api/v1/graphs', sysadmin.token)).body).toEqual([])
    expect((await http.get(`/${slug}/jobs`, member.token)).body).toEqual([])
  }, 60_000)

  test('an upload at a fair pace goes through, however many windows it takes', async () => {
    // 16 KiB every 50 ms, about 320 KB/s against a minimum of 2 KB/s, for about 2 s.
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= 40) return controller.close()
        if (sent > 0) await Bun.sleep(50)
        const chunk = new Uint8Array(16 * 1024)
        if (sent++ === 0) chunk.set([0x1f, 0x8b])
        controller.enqueue(chunk)
      },
    })
    const res = await fetch(`${server.url}/api/v1/graphs`, {
      method: 'POST',
      body,
      headers: {
        authorization: `Bearer ${sysadmin.token}`,
        'content-type': 'application/gzip',
        'x-graph-name': 'paced',
      },
      duplex: 'half',
    } as RequestInit)
    expect(res.status).toBe(201)
    const { graph_id } = (await res.json()) as { graph_id: string }
    expect((await http.get(`/api/v1/graphs/${graph_id}`, sysadmin.token)).body.bytes).toBe(40 * 16 * 1024)
  }, 60_000)

  test('an upload whose client goes away midway (raw or multipart) ends its request at once; nothing stored', async () => {
    const finished = () =>
      logged.split('\n').filter((line) => line.includes(`"path":"/${slug}/import-graph","status":400`)).length
    const before = finished()
    const part = '--b\r\nContent-Disposition: form-data; name="bundle"; filename="b.json.gz"\r\n\r\n'
    for (const [type, start] of [
      ['application/gzip', ''],
      ['multipart/form-data; boundary=b', part],
    ]) {
      const request = head('POST', `/${slug}/import-graph`, {
        authorization: `Bearer ${member.token}`,
        'content-type': type!,
        'content-length': '100000',
      })
      // We hang up after half a second, a tenth of the way in.
      expect(
        (await rawRequest(server.url, { head: request + start + gzipMagic + endless(10_000), giveUpMs: 500 })).closedBy,
      ).toBe('client')
    }
    const deadline = Date.now() + OUR_BOUND_MS
    while (finished() < before + 2 && Date.now() < deadline) await Bun.sleep(20)
    expect(finished()).toBe(before + 2)
    expect(await blobKeys(server.context.blobs, 'uploads/')).toEqual([])
  }, 60_000)
})
