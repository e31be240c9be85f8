// The registry client of the export and import jobs: bundle.md §7 over plain fetch, bodies
// streamed both ways. It talks to REGISTRY_URL (by default this server itself) with
// REGISTRY_TOKEN, or, when that is unset, with a service token the server signs for itself
// (src/http/auth.ts: it may push and pull, nothing else).
import { ConfigError, type Config } from '../config.ts'
import { createServiceTokens } from '../http/auth.ts'
import type { Graph } from './store.ts'
import { statusSummary, withoutUserinfo } from '../redact.ts'

export type GraphRecord = Graph

/** What a push says about the bundle: bundle metadata field names (§2), sent as the §7 headers. */
export interface PushMetadata {
  name: string
  description?: string
  /** Sent for compatibility; the registry records the authenticated caller instead. */
  owner?: string
  tags?: readonly string[]
  sha256?: string
  schema_version?: number
  source_count?: number
  fact_count?: number
  concept_count?: number
  summary_count?: number
  synthesis_count?: number
  report_count?: number
  investigation_count?: number
}

export interface PushResult {
  graph_id: string
  new: boolean
}

/** A file path, bytes, or a byte stream. */
export type PushBody = string | Blob | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>

/** A registry answered with an error (status and its `error` message), or could not be reached. */
export class RegistryError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }

  /** A refusal another attempt cannot change: a client error other than a timeout or rate limit. */
  get final(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 408 && this.status !== 429
  }
}

export interface RegistryClientOptions {
  /** Base URL of the registry's service (routes are at {url}/api/v1/graphs). */
  url: string
  /** Bearer token, or a function giving a current one per request. */
  token: string | (() => Promise<string>)
  fetch?: typeof fetch
}

const COUNT_HEADERS = [
  ['source_count', 'x-graph-source-count'],
  ['fact_count', 'x-graph-fact-count'],
  ['concept_count', 'x-graph-concept-count'],
  ['summary_count', 'x-graph-summary-count'],
  ['synthesis_count', 'x-graph-synthesis-count'],
  ['report_count', 'x-graph-report-count'],
  ['investigation_count', 'x-graph-investigation-count'],
] as const

/**
 * A header value carrying `text` as raw UTF-8 bytes (bundle.md §7). fetch takes header values
 * as byte strings, one character per byte, so the UTF-8 bytes are spelled as latin1
 * characters. Line breaks and other control characters cannot travel in a header: they become
 * spaces.
 */
export function utf8HeaderValue(text: string): string {
  return Buffer.from(text.replace(/[\u0000-\u001f\u007f]+/g, ' '), 'utf8').toString('latin1')
}

/** The §7 push headers for a bundle's metadata. */
export function pushHeaders(metadata: PushMetadata): Record<string, string> {
  const headers: Record<string, string> = { 'x-graph-name': utf8HeaderValue(metadata.name) }
  if (metadata.description) headers['x-graph-description'] = utf8HeaderValue(metadata.description)
  if (metadata.owner) headers['x-graph-owner'] = utf8HeaderValue(metadata.owner)
  if (metadata.tags?.length) headers['x-graph-tags'] = utf8HeaderValue(JSON.stringify(metadata.tags))
  if (metadata.sha256) headers['x-graph-sha256'] = metadata.sha256
  if (metadata.schema_version !== undefined) headers['x-graph-schema-version'] = String(metadata.schema_version)
  for (const [field, header] of COUNT_HEADERS) {
    const value = metadata[field]
    if (value !== undefined) headers[header] = String(value)
  }
  return headers
}

export class RegistryClient {
  private readonly url: string
  private readonly fetch: typeof fetch

  constructor(private readonly options: RegistryClientOptions) {
    this.url = options.url.replace(/\/+$/, '')
    this.fetch = options.fetch ?? fetch
  }

  /**
   * Pushes a bundle: a file path (sent from disk with its length), bytes, or a byte stream
   * (sent chunked as it comes). `new: false` when the registry already holds (name, sha256).
   */
  async push(source: PushBody, metadata: PushMetadata, signal?: AbortSignal): Promise<PushResult> {
    const body = typeof source === 'string' ? await existingFile(source) : source instanceof Blob || source instanceof Uint8Array ? source : toStream(source)
    const response = await this.request('/api/v1/graphs', {
      method: 'POST',
      headers: { 'content-type': 'application/gzip', ...pushHeaders(metadata) },
      body,
      // A stream body goes out as it is read (fetch would otherwise refuse a stream).
      ...(body instanceof ReadableStream ? { duplex: 'half' as const } : {}),
      signal,
    })
    return (await response.json()) as PushResult
  }

  /** The graph record, or undefined if there is no such graph. */
  async get(id: string, signal?: AbortSignal): Promise<GraphRecord | undefined> {
    const response = await this.request(`/api/v1/graphs/${encodeURIComponent(id)}`, { signal }, [404])
    return response.status === 404 ? undefined : ((await response.json()) as GraphRecord)
  }

  /**
   * The graph stored under exactly this name and sha256, if any. The protocol searches by
   * substring (?q=), so the pages of `q=name` are walked and matched exactly here.
   */
  async find(name: string, sha256: string, signal?: AbortSignal): Promise<GraphRecord | undefined> {
    let target: string | undefined = `/api/v1/graphs?${new URLSearchParams({ q: name, limit: '500' })}`
    while (target) {
      const page = await this.list(target, signal)
      const found = page.graphs.find((g) => g.name === name && g.sha256 === sha256)
      if (found) return found
      target = page.next
    }
    return undefined
  }

  /**
   * One page of graphs: by query, or the `next` URL of the previous page. `next` is absent on
   * the last page.
   */
  async list(query: { q?: string; tag?: string; limit?: number; cursor?: string } | string = {}, signal?: AbortSignal): Promise<{ graphs: GraphRecord[]; next?: string }> {
    let target: string
    if (typeof query === 'string') target = query
    else {
      const params = new URLSearchParams()
      for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value))
      target = `/api/v1/graphs${params.size ? `?${params}` : ''}`
    }
    const response = await this.request(target, { signal })
    const link = response.headers.get('link')
    const next = link ? /<([^>]+)>;\s*rel="next"/.exec(link)?.[1] : undefined
    return { graphs: (await response.json()) as GraphRecord[], next: next && new URL(next, response.url || this.url).href }
  }

  /** The bundle's bytes as they arrive (never buffered); RegistryError 404 for an unknown graph. */
  async download(id: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const response = await this.request(`/api/v1/graphs/${encodeURIComponent(id)}/bundle`, { signal })
    if (!response.body) throw new RegistryError(502, 'registry sent no body')
    return response.body
  }

  /** `target`: a path under the registry's URL, or an absolute URL there (a Link). */
  private async request(target: string, init: RequestInit, expected: number[] = []): Promise<Response> {
    const url = target.startsWith('/') ? this.url + target : target
    // The token goes to the registry only, whatever a Link header says.
    if (new URL(url).origin !== new URL(this.url).origin) throw new RegistryError(0, `registry linked to another origin: ${withoutUserinfo(url)}`)
    const token = typeof this.options.token === 'string' ? this.options.token : await this.options.token()
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${token}`)
    let response: Response
    try {
      response = await this.fetch(url, { ...init, headers })
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error
      throw new RegistryError(0, withoutUserinfo(`registry ${this.url} unreachable: ${(error as Error).message}`))
    }
    if (response.ok || expected.includes(response.status)) return response
    // Summarized by its status: a body may quote our request, its token or the URL's userinfo.
    await response.body?.cancel()
    throw new RegistryError(response.status, `registry answered ${statusSummary(response.status)}`)
  }
}

async function existingFile(path: string): Promise<Blob> {
  const file = Bun.file(path)
  if (!(await file.exists())) throw new Error(`no bundle file at ${path}`)
  return file
}

function toStream(source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  if (source instanceof ReadableStream) return source
  const iterator = source[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel(reason) {
      await iterator.return?.(reason)
    },
  })
}

/**
 * The client of this server's configuration: REGISTRY_URL or the server itself (`baseUrl`),
 * with REGISTRY_TOKEN or the server's own service token (signed with the JWT secret, for the
 * issuer `baseUrl`, which is what this server and every instance of its fleet accept).
 */
export function createRegistryClient(config: Pick<Config, 'registryUrl' | 'registryToken' | 'jwtSecret'>, baseUrl: string): RegistryClient {
  if (config.registryToken) return new RegistryClient({ url: config.registryUrl ?? baseUrl, token: config.registryToken })
  // The service token opens this server's registry: it must never be handed to another server.
  if (config.registryUrl && new URL(config.registryUrl).origin !== new URL(baseUrl).origin) {
    throw new ConfigError(`REGISTRY_URL ${withoutUserinfo(config.registryUrl)} is another server than BASE_URL ${withoutUserinfo(baseUrl)}: set REGISTRY_TOKEN (this server's own service token is only sent to itself)`)
  }
  if (!config.jwtSecret) throw new Error('a registry client needs REGISTRY_TOKEN or the JWT secret')
  const service = createServiceTokens({ secret: config.jwtSecret, issuer: baseUrl })
  return new RegistryClient({ url: config.registryUrl ?? baseUrl, token: () => service.token() })
}
