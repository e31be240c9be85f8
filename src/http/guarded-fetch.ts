// Downloads from an http(s) URL that someone outside named (an image or source body of a graph
// row, an OAuth client's metadata document), without letting that URL reach what the server can
// reach and the public cannot (SSRF): every address of the
// host must be public (addresses.ts), and the connection goes to exactly the addresses that were
// checked. Redirects are followed by hand, each hop checked the same way. Size and time are
// limited, and the body is streamed to the caller, never held.
//
// Pinning: node:http(s) `request` takes a `lookup` function, and Bun honours it (it connects to
// the address lookup hands back; TLS still verifies the certificate against the URL's host
// name). Ours hands back the addresses resolved and checked just before, so a DNS answer that
// changes between the check and the connection (rebinding) changes nothing. An IP literal is
// connected to as is (no lookup), and was checked as such. `agent: false`: a fresh connection per
// request, never a pooled socket from an earlier hop.
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import https from 'node:https'
import { lookup as dnsLookup } from 'node:dns/promises'
import type { LookupAddress } from 'node:dns'
import { isIPv4 } from 'node:net'
import { VERSION } from '../version.ts'
import { nonPublicKind } from './addresses.ts'

/**
 * refused: the URL or an address of its host is not allowed (scheme, credentials, non-public
 * address), at the start or after a redirect; too_large: past maxBytes, by Content-Length or
 * while streaming; timeout: the whole download took longer than timeoutMs; failed: anything
 * else (DNS, connection, TLS, an HTTP error status, too many redirects).
 */
export type FetchFailure = 'refused' | 'failed' | 'too_large' | 'timeout'

export class GuardedFetchError extends Error {
  constructor(
    readonly reason: FetchFailure,
    message: string,
    /**
     * false: no connection to the server was made (the URL or an address refused, the name not
     * resolved, the connect itself failed). Such a message tells how names resolve and what the
     * server can reach, so a caller answering someone outside keeps it to its log.
     */
    readonly connected = true,
  ) {
    super(message)
  }
}

/** Every address a host name resolves to (A and AAAA). */
type Resolver = (hostname: string) => Promise<LookupAddress[]>

export interface GuardedFetchOptions {
  /** Largest body, in bytes. */
  maxBytes: number
  /** Time limit of the whole download: connections, redirects and body. */
  timeoutMs: number
  /** No address check at all (MEDIA_FETCH_ALLOW_PRIVATE): for a trusted network. */
  allowPrivate?: boolean
  /** Addresses let through although not public, exactly as written by the resolver or the URL parser (tests: their loopback server). */
  allowedAddresses?: readonly string[]
  /** DNS (getaddrinfo, as the system would connect) unless given; tests name their hosts. */
  resolve?: Resolver
  /** Stops the download; its reason is thrown as is (not as a GuardedFetchError). */
  signal?: AbortSignal
  /** Who fetches, for the User-Agent: "media fetcher". */
  purpose: string
  /** Redirects followed; MAX_REDIRECTS unless given. */
  maxRedirects?: number
  /** Validators of a copy the caller holds: sent as If-None-Match / If-Modified-Since, and a 304 is then an answer (notModified). */
  conditional?: { etag?: string; lastModified?: string }
}

export interface FetchedBody {
  /** The server answered 304 to a conditional request: the caller's copy is current (the body is empty). */
  notModified: boolean
  /** The Content-Type the server sent, as sent (trimmed): the caller checks it. */
  contentType: string
  /** All the response's headers (Cache-Control, say). */
  headers: IncomingHttpHeaders
  /** Read it to the end or stop early (break, return): either releases the connection. */
  body: AsyncIterable<Uint8Array>
}

export const MAX_REDIRECTS = 5
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

/**
 * Starts downloading `url` and returns once the final response's headers are in; the body then
 * streams through the returned iterable, still under the time and size limits. Throws
 * GuardedFetchError for everything that is the URL's (or its server's) fault.
 */
export async function guardedFetch(url: string, options: GuardedFetchOptions): Promise<FetchedBody> {
  const controller = new AbortController()
  const timer = setTimeout(
    () =>
      controller.abort(
        new GuardedFetchError('timeout', `${describe(url)}: no complete answer within ${options.timeoutMs} ms`),
      ),
    options.timeoutMs,
  )
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal
  let response: IncomingMessage
  try {
    response = await followRedirects(url, options, signal)
  } catch (error) {
    clearTimeout(timer)
    throw signal.aborted ? signal.reason : error
  }
  // From here the response is ours to end: when the body is read, abandoned, or out of time.
  const abort = () => response.destroy(signal.reason)
  signal.addEventListener('abort', abort, { once: true })
  const release = () => {
    clearTimeout(timer)
    signal.removeEventListener('abort', abort)
    response.destroy()
  }
  const declared = Number(response.headers['content-length'])
  if (declared > options.maxBytes) {
    release()
    throw new GuardedFetchError(
      'too_large',
      `${describe(url)}: ${declared} bytes, more than the limit of ${options.maxBytes}`,
    )
  }
  const contentType = response.headers['content-type']?.trim() ?? ''
  return {
    notModified: response.statusCode === 304,
    contentType,
    headers: response.headers,
    body: limitedBody(url, response, options.maxBytes, signal, release),
  }
}

async function followRedirects(
  url: string,
  options: GuardedFetchOptions,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  let target = parseTarget(url)
  for (let redirects = 0; ; redirects++) {
    // DNS may hang too: the time limit covers it.
    const addresses = await untilAborted(checkedAddresses(target, options), signal)
    const response = await get(target, addresses, options, signal)
    const status = response.statusCode ?? 0
    if ((status >= 200 && status < 300) || (status === 304 && options.conditional)) return response
    response.destroy()
    const location = response.headers.location
    if (!REDIRECT_STATUSES.has(status) || !location)
      throw new GuardedFetchError('failed', `${describe(target.href)}: HTTP ${status}`)
    const limit = options.maxRedirects ?? MAX_REDIRECTS
    if (redirects === limit)
      throw new GuardedFetchError(
        'failed',
        limit === 0
          ? `${describe(target.href)}: HTTP ${status}, a redirect (not followed)`
          : `${describe(url)}: more than ${limit} redirects`,
      )
    target = parseTarget(location, target)
  }
}

/** The URL, if it is one we may fetch at all. */
function parseTarget(url: string, base?: URL): URL {
  let target: URL
  try {
    target = new URL(url, base)
  } catch {
    throw new GuardedFetchError('refused', `${describe(url)}: not a URL`, false)
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new GuardedFetchError('refused', `${describe(url)}: only http and https URLs are fetched`, false)
  if (target.username || target.password)
    throw new GuardedFetchError('refused', `${describe(url)}: URLs with credentials are not fetched`, false)
  return target
}

/**
 * The addresses to connect to: the IP literal of the URL (which the URL parser has normalised
 * from any decimal, octal or hex spelling), or every address its host name resolves to. All of
 * them must be allowed, not just one, since the connection may use any.
 */
async function checkedAddresses(target: URL, options: GuardedFetchOptions): Promise<LookupAddress[]> {
  const host = target.hostname
  let addresses: LookupAddress[]
  if (host.startsWith('[')) addresses = [{ address: host.slice(1, -1), family: 6 }]
  else if (isIPv4(host)) addresses = [{ address: host, family: 4 }]
  else {
    try {
      addresses = await (options.resolve ?? systemResolver)(host)
    } catch (error) {
      throw new GuardedFetchError(
        'failed',
        `${describe(target.href)}: cannot resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        false,
      )
    }
    if (addresses.length === 0)
      throw new GuardedFetchError('failed', `${describe(target.href)}: ${host} has no address`, false)
  }
  if (options.allowPrivate) return addresses
  for (const { address } of addresses) {
    if (options.allowedAddresses?.includes(address)) continue
    const kind = nonPublicKind(address)
    if (!kind) continue
    const where =
      addresses.length === 1 && address === host.replace(/^\[|\]$/g, '')
        ? `${host} is`
        : `${host} resolves to ${address},`
    throw new GuardedFetchError('refused', `${describe(target.href)}: ${where} not a public address (${kind})`, false)
  }
  return addresses
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted()
  let abort = () => {}
  const aborted = new Promise<never>((_, reject) => {
    abort = () => reject(signal.reason)
    signal.addEventListener('abort', abort, { once: true })
  })
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', abort))
}

/** One GET, connected to one of `addresses` whatever DNS says by now. */
function get(
  target: URL,
  addresses: LookupAddress[],
  options: GuardedFetchOptions,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const pinned = (_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (lookupOptions.all) callback(null, addresses)
    else callback(null, addresses[0]!.address, addresses[0]!.family)
  }
  return new Promise((resolve, reject) => {
    const request = (target.protocol === 'https:' ? https : http).request(
      target,
      {
        method: 'GET',
        agent: false,
        lookup: pinned as never,
        // Identity: the size limit is on the bytes stored, and a compressed body could expand past it.
        headers: {
          accept: '*/*',
          'accept-encoding': 'identity',
          'user-agent': `kgs/${VERSION} (${options.purpose})`,
          ...conditionalHeaders(options.conditional),
        },
      },
      (response) => {
        signal.removeEventListener('abort', abort)
        resolve(response)
      },
    )
    const abort = () => request.destroy(signal.reason)
    signal.addEventListener('abort', abort, { once: true })
    request.on('error', (error) => {
      signal.removeEventListener('abort', abort)
      // A failed connect names the address it tried; a failure after it (TLS, the answer) is the server's.
      const connected = (error as NodeJS.ErrnoException).syscall !== 'connect'
      reject(
        signal.aborted
          ? signal.reason
          : new GuardedFetchError('failed', `${describe(target.href)}: ${error.message}`, connected),
      )
    })
    request.end()
  })
}

function conditionalHeaders(conditional: GuardedFetchOptions['conditional']): Record<string, string> {
  const headers: Record<string, string> = {}
  if (conditional?.etag) headers['if-none-match'] = conditional.etag
  if (conditional?.lastModified) headers['if-modified-since'] = conditional.lastModified
  return headers
}

async function* limitedBody(
  url: string,
  response: IncomingMessage,
  maxBytes: number,
  signal: AbortSignal,
  release: () => void,
): AsyncGenerator<Uint8Array> {
  let bytes = 0
  try {
    for await (const chunk of response as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength
      if (bytes > maxBytes)
        throw new GuardedFetchError('too_large', `${describe(url)}: more than the limit of ${maxBytes} bytes`)
      yield chunk
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason
    if (error instanceof GuardedFetchError) throw error
    throw new GuardedFetchError('failed', `${describe(url)}: download broke off: ${(error as Error).message}`)
  } finally {
    release()
  }
}

/** A URL for a message: quoted, cut short, without credentials or query (either may carry a secret). */
function describe(url: string): string {
  const parsed = URL.parse(url)
  if (parsed) parsed.username = parsed.password = parsed.search = parsed.hash = ''
  const shown = parsed?.href ?? url
  return JSON.stringify(shown.length > 200 ? `${shown.slice(0, 200)}…` : shown)
}
