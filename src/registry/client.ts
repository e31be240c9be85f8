// The registry client of the export and import jobs: docs/spec/bundle.md §7 over plain fetch, bodies
// streamed both ways. It talks to REGISTRY_URL (by default this server itself) with
// REGISTRY_TOKEN, or, when that is unset, with a service token the server signs for itself
// (src/http/auth.ts: it may push and pull, nothing else).
//
// REGISTRY_URL may be the Go original's registry, whose answers differ from kgs's (§7, taken
// from its real behaviour): lists as {graphs, total} paged by offset, newest first; records
// without bytes or owner_id, zero counts and empty tags left out; errors sometimes text/plain.
// Everything read here is taken in either form.
import { runtime } from '../runtime/index.ts'
import { ConfigError, type Config } from '../config.ts'
import { createServiceTokens } from '../http/auth.ts'
import { COUNT_FIELDS, type Graph } from './store.ts'
import { statusSummary, withoutUserinfo } from '../redact.ts'

/** A graph record of either registry; what Go's leaves out is null (bytes, owner_id) or empty. */
export interface GraphRecord extends Omit<Graph, 'bytes' | 'updated_at'> {
  bytes: number | null
  updated_at: string
}

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
export type PushBody = string | Blob | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>

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
  /**
   * Bearer token, or a function giving a current one per request, acting for the user a push
   * is made for (an export's). A fixed token (REGISTRY_TOKEN) pushes as its own identity.
   */
  token: string | ((onBehalfOf?: string) => Promise<string>)
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
 * A header value carrying `text` as raw UTF-8 bytes (docs/spec/bundle.md §7). fetch takes header values
 * as byte strings, one character per byte, so the UTF-8 bytes are spelled as latin1
 * characters. Line breaks and other control characters cannot travel in a header: they become
 * spaces.
 */
function utf8HeaderValue(text: string): string {
  return Buffer.from(text.replace(/[\u0000-\u001f\u007f]+/g, ' '), 'utf8').toString('latin1')
}

/** The §7 push headers for a bundle's metadata. */
function pushHeaders(metadata: PushMetadata): Record<string, string> {
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

const malformed = (what: string) => new RegistryError(502, `registry sent a malformed ${what}`)
const text = (value: unknown, fallback: string) => (typeof value === 'string' ? value : fallback)
const numberOr = <T>(value: unknown, fallback: T) =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback

/** A record as kgs's registry has it (same fields, same order), from either registry's answer. */
function graphRecord(raw: unknown): GraphRecord {
  const g = (raw ?? {}) as Record<string, unknown>
  if (typeof g.id !== 'string' || typeof g.name !== 'string') throw malformed('graph record')
  const created = text(g.created_at, '')
  const counts = Object.fromEntries(COUNT_FIELDS.map((field) => [field, numberOr(g[field], 0)]))
  return {
    id: g.id,
    name: g.name,
    description: text(g.description, ''),
    owner: text(g.owner, ''),
    owner_id: typeof g.owner_id === 'string' ? g.owner_id : null,
    tags: Array.isArray(g.tags) ? g.tags.filter((tag): tag is string => typeof tag === 'string') : [],
    sha256: typeof g.sha256 === 'string' && g.sha256 !== '' ? g.sha256 : null,
    schema_version: numberOr(g.schema_version, null),
    bytes: numberOr(g.bytes, null),
    ...(counts as Pick<GraphRecord, (typeof COUNT_FIELDS)[number]>),
    created_at: created,
    updated_at: text(g.updated_at, created),
  }
}

/** A page of graphs, from kgs's list (an array, next page in Link) or Go's ({graphs, total}, by offset). */
function graphPage(body: unknown, response: Response, requested: URL): { graphs: GraphRecord[]; next?: URL } {
  if (Array.isArray(body)) {
    const link = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
    return { graphs: body.map(graphRecord), next: link === undefined ? undefined : new URL(link, requested) }
  }
  const { graphs, total } = (body ?? {}) as { graphs?: unknown; total?: unknown }
  if (!(graphs === null || Array.isArray(graphs)) || typeof total !== 'number') throw malformed('list of graphs')
  const records = (graphs ?? []).map(graphRecord)
  const offset = Number(requested.searchParams.get('offset') ?? 0) + records.length
  if (records.length === 0 || offset >= total) return { graphs: records }
  const next = new URL(requested)
  next.searchParams.set('offset', String(offset))
  return { graphs: records, next }
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
  async push(
    source: PushBody,
    metadata: PushMetadata,
    { signal, onBehalfOf }: { signal?: AbortSignal; onBehalfOf?: string } = {},
  ): Promise<PushResult> {
    const body =
      typeof source === 'string'
        ? await existingFile(source)
        : source instanceof Blob || source instanceof Uint8Array
          ? source
          : toStream(source)
    const response = await this.request(
      '/api/v1/graphs',
      {
        method: 'POST',
        headers: { 'content-type': 'application/gzip', ...pushHeaders(metadata) },
        body,
        // A stream body goes out as it is read (fetch would otherwise refuse a stream).
        ...(body instanceof ReadableStream ? { duplex: 'half' as const } : {}),
        signal,
      },
      [],
      onBehalfOf,
    )
    const result = (await response.json()) as Partial<PushResult>
    if (typeof result.graph_id !== 'string' || typeof result.new !== 'boolean') throw malformed('push result')
    return { graph_id: result.graph_id, new: result.new }
  }

  /** The graph record, or undefined if there is no such graph. */
  async get(id: string, signal?: AbortSignal): Promise<GraphRecord | undefined> {
    const response = await this.request(`/api/v1/graphs/${encodeURIComponent(id)}`, { signal }, [404])
    return response.status === 404 ? undefined : graphRecord(await response.json())
  }

  /**
   * The graph stored under exactly this name and sha256, if any. The protocol searches by
   * substring (?q=), so the pages of `q=name` are walked and matched exactly here. 200 a page:
   * within both registries' limits (Go's takes 200 at most, and more as 20).
   */
  async find(name: string, sha256: string, signal?: AbortSignal): Promise<GraphRecord | undefined> {
    let target: string | undefined = `/api/v1/graphs?${new URLSearchParams({ q: name, limit: '200' })}`
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
   * the last page. Against a Go registry, pages go by offset, newest first.
   */
  async list(
    query: { q?: string; tag?: string; limit?: number; cursor?: string } | string = {},
    signal?: AbortSignal,
  ): Promise<{ graphs: GraphRecord[]; next?: string }> {
    let target: string
    if (typeof query === 'string') target = query
    else {
      const params = new URLSearchParams()
      for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value))
      target = `/api/v1/graphs${params.size ? `?${params}` : ''}`
    }
    const response = await this.request(target, { signal })
    const { graphs, next } = graphPage(await response.json(), response, new URL(response.url || this.resolve(target)))
    return { graphs, next: next?.href }
  }

  /** The bundle's bytes as they arrive (never buffered); RegistryError 404 for an unknown graph. */
  async download(id: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const response = await this.request(`/api/v1/graphs/${encodeURIComponent(id)}/bundle`, { signal })
    if (!response.body) throw new RegistryError(502, 'registry sent no body')
    return response.body
  }

  /** `target`: a path under the registry's URL, or an absolute URL there (a Link). */
  private resolve(target: string): string {
    return target.startsWith('/') ? this.url + target : target
  }

  private async request(
    target: string,
    init: RequestInit,
    expected: number[] = [],
    onBehalfOf?: string,
  ): Promise<Response> {
    const url = this.resolve(target)
    // The token goes to the registry only, whatever a Link header says.
    if (new URL(url).origin !== new URL(this.url).origin)
      throw new RegistryError(0, `registry linked to another origin: ${withoutUserinfo(url)}`)
    const token = typeof this.options.token === 'string' ? this.options.token : await this.options.token(onBehalfOf)
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
  return await runtime.openFile(path).catch(() => Promise.reject(new Error(`no bundle file at ${path}`)))
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
export function createRegistryClient(
  config: Pick<Config, 'registryUrl' | 'registryToken' | 'jwtSecret'>,
  baseUrl: string,
): RegistryClient {
  if (config.registryToken)
    return new RegistryClient({ url: config.registryUrl ?? baseUrl, token: config.registryToken })
  // The service token opens this server's registry: it must never be handed to another server.
  if (config.registryUrl && new URL(config.registryUrl).origin !== new URL(baseUrl).origin) {
    throw new ConfigError(
      `REGISTRY_URL ${withoutUserinfo(config.registryUrl)} is another server than BASE_URL ${withoutUserinfo(baseUrl)}: set REGISTRY_TOKEN (this server's own service token is only sent to itself)`,
    )
  }
  if (!config.jwtSecret) throw new Error('a registry client needs REGISTRY_TOKEN or the JWT secret')
  const service = createServiceTokens({ secret: config.jwtSecret, issuer: baseUrl })
  return new RegistryClient({ url: config.registryUrl ?? baseUrl, token: (onBehalfOf) => service.token(onBehalfOf) })
}

declare module '../jobs/kinds.ts' {
  interface JobServices {
    /** The registry exports push to and imports pull from. */
    registry: RegistryClient
  }
}
