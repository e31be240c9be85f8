// The SSRF-safe guarded fetch (src/http/guarded-fetch.ts: the media fetcher's and the Client ID Metadata Documents') against loopback test servers, with host names resolved by an
// injected resolver: every non-public address family is refused before any connection (as a
// literal in any spelling, behind a name, after a redirect), the connection goes to the checked
// address, and size and time limits hold while the body streams.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { LookupAddress } from 'node:dns'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  guardedFetch,
  MAX_REDIRECTS,
  GuardedFetchError,
  type GuardedFetchOptions,
  type FetchFailure,
} from '../../src/http/guarded-fetch.ts'
import { nonPublicKind } from '../../src/http/addresses.ts'
import { startCutShortServer } from '../helpers/cut-short.ts'
import { rejectionOf } from '../helpers/promises.ts'

const FIXTURES = join(import.meta.dir, 'fixtures')
const LIMIT = 1000
const IMAGE = Uint8Array.from({ length: 300 }, (_, i) => i % 256)

/** Names the test resolver knows; anything else does not resolve. */
const NAMES: Record<string, string[]> = {
  'media.test': ['127.0.0.1'],
  'internal.example': ['10.0.0.5'],
  'loopback.example': ['127.0.0.1'],
  'metadata.example': ['169.254.169.254'],
  'v6-loopback.example': ['::1'],
  'v6-private.example': ['fd12:3456::5'],
  'v6-link-local.example': ['fe80::1'],
  'v6-metadata.example': ['fd00:ec2::254'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'mixed.example': ['93.184.216.34', '10.0.0.5'],
  'mixed-v6.example': ['2606:4700:4700::1111', 'fe80::1'],
}
const resolve = async (hostname: string): Promise<LookupAddress[]> => {
  const addresses = NAMES[hostname]
  if (!addresses) throw Object.assign(new Error(`no such host ${hostname}`), { code: 'ENOTFOUND' })
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
}

let server: ReturnType<typeof Bun.serve>
let base: string
/** Requests the test server received, as "Host path". */
const hits: string[] = []

beforeAll(() => {
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const url = new URL(request.url)
      hits.push(`${request.headers.get('host')} ${url.pathname}`)
      const hops = /^\/hops\/(\d+)$/.exec(url.pathname)
      if (hops)
        return Number(hops[1]) === 0
          ? new Response('arrived')
          : new Response(null, { status: 302, headers: { location: `/hops/${Number(hops[1]) - 1}` } })
      switch (url.pathname) {
        case '/image.png':
          return new Response(IMAGE, { headers: { 'content-type': 'image/png' } })
        case '/odd-type':
          return new Response('x', { headers: { 'content-type': 'not a media type' } })
        case '/missing':
          return new Response('gone', { status: 404 })
        case '/large':
          return new Response(new Uint8Array(LIMIT + 1))
        case '/growing':
          // Chunked, no Content-Length: the limit must hold while streaming.
          return new Response(new ReadableStream({ pull: (controller) => controller.enqueue(new Uint8Array(400)) }))
        case '/stalling':
          // One chunk, then nothing, forever.
          return new Response(new ReadableStream({ start: (controller) => controller.enqueue(new Uint8Array(10)) }))
        case '/silent':
          return new Promise<Response>(() => {})
        case '/loop':
          return new Response(null, { status: 301, headers: { location: '/loop' } })
        case '/redirect':
          return new Response(null, { status: 307, headers: { location: url.searchParams.get('to')! } })
        default:
          return new Response('unexpected', { status: 500 })
      }
    },
  })
  base = `http://127.0.0.1:${server.port}`
})

afterAll(() => server.stop(true))

const options = (more: Partial<GuardedFetchOptions> = {}): GuardedFetchOptions => ({
  maxBytes: LIMIT,
  timeoutMs: 5000,
  resolve,
  purpose: 'media fetcher',
  ...more,
})
/** The test server's own address, let through so that it can redirect elsewhere. */
const trusted = (more: Partial<GuardedFetchOptions> = {}) => options({ allowedAddresses: ['127.0.0.1'], ...more })

async function read(
  url: string,
  fetchOptions: GuardedFetchOptions,
): Promise<{ contentType: string; bytes: Uint8Array }> {
  const medium = await guardedFetch(url, fetchOptions)
  const chunks: Uint8Array[] = []
  for await (const chunk of medium.body) chunks.push(chunk)
  return { contentType: medium.contentType, bytes: Buffer.concat(chunks) }
}

async function failure(url: string, fetchOptions: GuardedFetchOptions): Promise<GuardedFetchError> {
  try {
    await read(url, fetchOptions)
  } catch (error) {
    expect(error).toBeInstanceOf(GuardedFetchError)
    return error as GuardedFetchError
  }
  throw new Error(`${url} was fetched`)
}

async function expectFailure(url: string, fetchOptions: GuardedFetchOptions, reason: FetchFailure, message?: RegExp) {
  const error = await failure(url, fetchOptions)
  expect({ url, reason: error.reason }).toEqual({ url, reason })
  if (message) expect(error.message).toMatch(message)
}

/** Refused before connecting: the test server sees nothing. */
async function expectRefusedUnseen(url: string, fetchOptions: GuardedFetchOptions, message?: RegExp) {
  const before = hits.length
  await expectFailure(url, fetchOptions, 'refused', message)
  expect(hits.length).toBe(before)
}

describe('address classification', () => {
  test('each non-public family is named; public unicast passes', () => {
    const cases: [string, string | undefined][] = [
      ['0.0.0.0', 'unspecified'],
      ['0.1.2.3', 'unspecified'],
      ['127.0.0.1', 'loopback'],
      ['127.255.255.254', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['100.64.0.1', 'shared (CGNAT)'],
      ['100.127.255.255', 'shared (CGNAT)'],
      ['224.0.0.1', 'multicast'],
      ['239.255.255.250', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['240.0.0.1', 'reserved'],
      ['192.0.0.8', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['192.0.2.1', 'documentation'],
      ['198.51.100.7', 'documentation'],
      ['203.0.113.9', 'documentation'],
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['ff02::1', 'multicast'],
      ['2001:db8::1', 'documentation'],
      ['3fff::1', 'documentation'],
      ['2001::1', 'reserved'],
      ['fec0::1', 'reserved'],
      ['::127.0.0.1', 'reserved'],
      ['::ffff:0:7f00:1', 'reserved'],
      ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
      ['::ffff:7f00:1', 'IPv4-mapped loopback'],
      ['0:0:0:0:0:ffff:a9fe:a9fe', 'IPv4-mapped link-local'],
      ['64:ff9b::10.0.0.1', 'NAT64 private'],
      ['2002:c0a8:101::1', '6to4 private'],
      ['2002:7f00:1::', '6to4 loopback'],
      ['not-an-address', 'unrecognised'],
      ['0177.0.0.1', 'unrecognised'],
      // Public: the edges of the ranges above, and the IPv4-carrying forms of public addresses.
      ['8.8.8.8', undefined],
      ['11.0.0.1', undefined],
      ['100.63.255.255', undefined],
      ['100.128.0.0', undefined],
      ['126.255.255.255', undefined],
      ['172.15.255.255', undefined],
      ['172.32.0.0', undefined],
      ['169.253.255.255', undefined],
      ['223.255.255.255', undefined],
      ['2606:4700:4700::1111', undefined],
      ['2a00:1450:4001:80b::200e', undefined],
      ['::ffff:8.8.8.8', undefined],
      ['64:ff9b::808:808', undefined],
      ['2002:808:808::1', undefined],
    ]
    expect(cases.map(([address]) => [address, nonPublicKind(address)])).toEqual(cases)
  })
})

describe('refused before connecting', () => {
  test('IP literals of every non-public family', async () => {
    const port = server.port
    for (const host of [
      '127.0.0.1',
      '127.0.0.2',
      '0.0.0.0',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.0.10',
      '169.254.169.254',
      '100.100.100.100',
      '224.0.0.251',
      '255.255.255.255',
      '240.1.2.3',
      '192.0.2.10',
      '[::1]',
      '[::]',
      '[fd00::5]',
      '[fe80::1]',
      '[ff02::1]',
      '[2001:db8::5]',
      '[::ffff:127.0.0.1]',
      '[::ffff:10.0.0.5]',
      '[::ffff:169.254.169.254]',
      '[::127.0.0.1]',
      '[64:ff9b::7f00:1]',
      '[2002:7f00:1::]',
    ]) {
      await expectRefusedUnseen(`http://${host}:${port}/image.png`, options(), / is not a public address \(.+\)$/)
    }
  })

  test('numeric spellings the URL parser normalises: decimal, octal, hex, short forms', async () => {
    for (const host of [
      '2130706433',
      '0177.0.0.1',
      '0x7f.0.0.1',
      '0x7f000001',
      '127.1',
      '017700000001',
      '0xa9.0xfe.0xa9.0xfe',
      '2852039166',
    ]) {
      await expectRefusedUnseen(
        `http://${host}:${server.port}/image.png`,
        options(),
        /^"http:\/\/(127\.0\.0\.1|169\.254\.169\.254):\d+\/image\.png": \S+ is not a public address \((loopback|link-local)\)$/,
      )
    }
  })

  test('the metadata address, with any path, and as a name', async () => {
    await expectRefusedUnseen(
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      options(),
      /169\.254\.169\.254 is not a public address \(link-local\)/,
    )
    await expectRefusedUnseen(
      'http://metadata.example/computeMetadata/v1/',
      options(),
      /metadata\.example resolves to 169\.254\.169\.254, not a public address \(link-local\)/,
    )
  })

  test('names resolving to a non-public address, or to one public and one private', async () => {
    const port = server.port
    await expectRefusedUnseen(
      `http://internal.example:${port}/image.png`,
      options(),
      /internal\.example resolves to 10\.0\.0\.5, not a public address \(private\)/,
    )
    await expectRefusedUnseen(
      `http://loopback.example:${port}/image.png`,
      options(),
      /loopback\.example resolves to 127\.0\.0\.1, not a public address \(loopback\)/,
    )
    await expectRefusedUnseen(
      `http://v6-loopback.example:${port}/image.png`,
      options(),
      /resolves to ::1, not a public address \(loopback\)/,
    )
    await expectRefusedUnseen(
      `http://v6-private.example:${port}/image.png`,
      options(),
      /resolves to fd12:3456::5, not a public address \(private\)/,
    )
    await expectRefusedUnseen(
      `http://v6-link-local.example:${port}/image.png`,
      options(),
      /resolves to fe80::1, not a public address \(link-local\)/,
    )
    await expectRefusedUnseen(
      'http://v6-metadata.example/latest/meta-data/',
      options(),
      /resolves to fd00:ec2::254, not a public address \(private\)/,
    )
    await expectRefusedUnseen(
      `http://mixed-v6.example:${port}/image.png`,
      options(),
      /mixed-v6\.example resolves to fe80::1, not a public address \(link-local\)/,
    )
    await expectRefusedUnseen(
      `http://mapped.example:${port}/image.png`,
      options(),
      /resolves to ::ffff:127\.0\.0\.1, not a public address \(IPv4-mapped loopback\)/,
    )
    await expectRefusedUnseen(
      `http://mixed.example:${port}/image.png`,
      options(),
      /mixed\.example resolves to 10\.0\.0\.5, not a public address \(private\)/,
    )
  })

  test('schemes other than http and https, and URLs with credentials', async () => {
    for (const url of [
      'file:///etc/passwd',
      'ftp://media.test/image.png',
      'data:image/png;base64,AAAA',
      'javascript:alert(1)',
      'gopher://media.test/',
      'ws://media.test/',
      'not a url',
      '',
    ]) {
      await expectRefusedUnseen(url, trusted(), /only http and https URLs are fetched|not a URL/)
    }
    for (const url of [
      `http://user:secret@127.0.0.1:${server.port}/image.png`,
      `http://user@media.test:${server.port}/image.png`,
      `https://:secret@media.test/`,
    ]) {
      await expectRefusedUnseen(url, trusted(), /URLs with credentials are not fetched/)
      // Messages end up in logs: they never repeat a credential.
      expect((await failure(url, trusted())).message).not.toMatch(/secret|user/)
    }
  })
})

describe('fetching', () => {
  test('allowPrivate lets loopback through; bytes and media type arrive', async () => {
    const fetched = await read(`${base}/image.png`, options({ allowPrivate: true }))
    expect(fetched).toEqual({ contentType: 'image/png', bytes: IMAGE })
    await expectRefusedUnseen(
      `${base}/image.png`,
      options({ allowPrivate: false }),
      /127\.0\.0\.1 is not a public address \(loopback\)/,
    )
  })

  test('the connection goes to the checked address, with the URL host name in Host', async () => {
    // media.test exists nowhere but in the injected resolver.
    const before = hits.length
    expect((await read(`http://media.test:${server.port}/image.png`, trusted())).bytes).toEqual(IMAGE)
    expect(hits.slice(before)).toEqual([`media.test:${server.port} /image.png`])
  })

  test('a name that rebinds after the check changes nothing: it is resolved once per hop', async () => {
    const answers: string[] = []
    const rebinding = async () => {
      const address = answers.length === 0 ? '127.0.0.1' : '10.0.0.5'
      answers.push(address)
      return [{ address, family: 4 }]
    }
    expect(
      (await read(`http://rebind.example:${server.port}/image.png`, trusted({ resolve: rebinding }))).bytes,
    ).toEqual(IMAGE)
    expect(answers).toEqual(['127.0.0.1'])
  })

  test('the Content-Type comes as sent: the caller judges it', async () => {
    expect(await read(`${base}/odd-type`, trusted())).toEqual({
      contentType: 'not a media type',
      bytes: new TextEncoder().encode('x'),
    })
  })

  test('HTTP errors and unresolvable names fail', async () => {
    await expectFailure(`${base}/missing`, trusted(), 'failed', /: HTTP 404$/)
    await expectFailure(
      `http://nowhere.example:${server.port}/image.png`,
      trusted(),
      'failed',
      /cannot resolve nowhere\.example: ENOTFOUND/,
    )
    await expectFailure(
      `http://media.test:${server.port}/image.png`,
      trusted({ resolve: async () => [] }),
      'failed',
      /media\.test has no address/,
    )
  })

  test('a body cut short fails', async () => {
    const cutShort = startCutShortServer()
    try {
      await expectFailure(`http://127.0.0.1:${cutShort.port}/image.png`, trusted(), 'failed', /download broke off/)
    } finally {
      cutShort.stop(true)
    }
  })

  test('a Content-Length over the limit is refused at once; a body growing past it is cut off', async () => {
    await expectFailure(
      `${base}/large`,
      trusted(),
      'too_large',
      new RegExp(`${LIMIT + 1} bytes, more than the limit of ${LIMIT}$`),
    )
    expect((await read(`${base}/large`, trusted({ maxBytes: LIMIT + 1 }))).bytes.byteLength).toBe(LIMIT + 1)
    await expectFailure(`${base}/growing`, trusted(), 'too_large', new RegExp(`more than the limit of ${LIMIT} bytes$`))
  })

  test('the time limit covers the whole download: no headers, or a body that never ends', async () => {
    await expectFailure(`${base}/silent`, trusted({ timeoutMs: 100 }), 'timeout', /no complete answer within 100 ms/)
    await expectFailure(`${base}/stalling`, trusted({ timeoutMs: 100 }), 'timeout', /no complete answer within 100 ms/)
  })

  test("the caller's signal stops a download with its own reason", async () => {
    const controller = new AbortController()
    const medium = await guardedFetch(`${base}/stalling`, trusted({ signal: controller.signal }))
    const reason = new Error('job cancelled')
    const reading = (async () => {
      for await (const _ of medium.body);
    })()
    controller.abort(reason)
    expect(await rejectionOf(reading)).toBe(reason)
  })
})

describe('redirects', () => {
  test('are followed up to 5 times, each hop checked', async () => {
    const before = hits.length
    expect(new TextDecoder().decode((await read(`${base}/hops/${MAX_REDIRECTS}`, trusted())).bytes)).toBe('arrived')
    expect(hits.length - before).toBe(MAX_REDIRECTS + 1)
    await expectFailure(`${base}/hops/${MAX_REDIRECTS + 1}`, trusted(), 'failed', /more than 5 redirects/)
    await expectFailure(`${base}/loop`, trusted(), 'failed', /more than 5 redirects/)
  })

  test('to a private, loopback or link-local address (IPv4 or IPv6, literal or by name), or another scheme, are refused', async () => {
    const port = server.port
    for (const [to, message] of [
      ['http://internal.example/secret', /internal\.example resolves to 10\.0\.0\.5, not a public address \(private\)/],
      ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is not a public address \(link-local\)/],
      [
        'http://metadata.example/computeMetadata/v1/',
        /metadata\.example resolves to 169\.254\.169\.254, not a public address \(link-local\)/,
      ],
      [`http://127.0.0.2:${port}/image.png`, /127\.0\.0\.2 is not a public address \(loopback\)/],
      [`http://[::1]:${port}/image.png`, /\[::1\] is not a public address \(loopback\)/],
      ['http://[fe80::1]/', /\[fe80::1\] is not a public address \(link-local\)/],
      ['http://[fd00:ec2::254]/latest/meta-data/', /\[fd00:ec2::254\] is not a public address \(private\)/],
      [
        `http://v6-loopback.example:${port}/image.png`,
        /v6-loopback\.example resolves to ::1, not a public address \(loopback\)/,
      ],
      [
        `http://v6-private.example:${port}/image.png`,
        /v6-private\.example resolves to fd12:3456::5, not a public address \(private\)/,
      ],
      [
        `http://[::ffff:127.0.0.2]:${port}/image.png`,
        /\[::ffff:7f00:2\] is not a public address \(IPv4-mapped loopback\)/,
      ],
      [`http://2130706434:${port}/image.png`, /127\.0\.0\.2 is not a public address \(loopback\)/],
      ['file:///etc/passwd', /only http and https URLs are fetched/],
    ] as const) {
      const before = hits.length
      await expectFailure(`${base}/redirect?to=${encodeURIComponent(to)}`, trusted(), 'refused', message)
      // The redirect was requested; its target never was.
      expect(hits.length - before).toBe(1)
    }
  })
})

describe('https', () => {
  test('the certificate is verified against the URL host name, not the pinned address', async () => {
    const tls = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      tls: {
        cert: readFileSync(join(FIXTURES, 'media.test.crt'), 'utf8'),
        key: readFileSync(join(FIXTURES, 'media.test.key'), 'utf8'),
      },
      fetch: (request) => new Response(`secure ${request.headers.get('host')}`),
    })
    try {
      const run = async (trust: boolean) => {
        const child = Bun.spawn(
          [
            process.execPath,
            join(FIXTURES, 'fetch.ts'),
            `https://media.test:${tls.port}/`,
            `https://other.test:${tls.port}/`,
          ],
          {
            env: {
              PATH: process.env.PATH ?? '',
              ...(trust ? { NODE_EXTRA_CA_CERTS: join(FIXTURES, 'media.test.crt') } : {}),
            },
            stdout: 'pipe',
            stderr: 'inherit',
          },
        )
        const lines = (await new Response(child.stdout).text()).trim().split('\n')
        expect(await child.exited).toBe(0)
        return lines.map((line) => JSON.parse(line))
      }
      const [trusted, mismatched] = await run(true)
      expect(trusted).toEqual({ ok: true, text: `secure media.test:${tls.port}` })
      expect(mismatched).toMatchObject({ reason: 'failed', message: expect.stringMatching(/other\.test/) })
      // Without the test certificate trusted, nothing gets through.
      for (const result of await run(false))
        expect(result).toMatchObject({ reason: 'failed', message: expect.stringMatching(/self.signed/) })
    } finally {
      tls.stop(true)
    }
  })
})
