// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
// client_id is an https URL with a path registers nothing; kgs fetches the JSON document at that
// URL and takes the client's metadata from it. The fetch is the media fetcher's guarded one
// (public addresses only, the connection pinned to them), with no redirect followed, a small size
// and a short time limit. A document is kept as long as its Cache-Control (or Expires) allows, up
// to a day, in a bounded cache. A row in oauth_clients mirrors it, so that authorizations, codes
// and grants refer to the client like to any other; the document stays the authority.
import type { Sql } from 'postgres'
import type { IncomingHttpHeaders } from 'node:http'
import { guardedFetch, GuardedFetchError } from '../http/guarded-fetch.ts'
import type { Logger } from '../log.ts'
import { checkRegistration, CLIENT_ID_MAX, findClient, type Client, type FoundClient } from './clients.ts'
import { OAuthError } from './errors.ts'

/** Largest document read: the draft suggests 5 KB; real ones are a few hundred bytes. */
export const METADATA_DOCUMENT_MAX_BYTES = 5 * 1024
const CACHE_MAX_ENTRIES = 1000
const CACHE_MAX_SECONDS = 86_400
/** Characters a name shown to the user may not hold: controls, and bidirectional overrides that could reorder the page's text. */
const UNSHOWABLE = /[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/

/** Why a client's metadata document cannot be used; the message is shown to the user or the client. */
export class ClientMetadataError extends Error {}

/**
 * What anyone outside is told of a document not fetched for want of a connection: how its host
 * resolved, or why no connection was made, would map the server's network for them.
 */
const UNREACHABLE_DOCUMENT = 'its metadata document could not be fetched from a public address'

export interface ClientMetadataOptions {
  timeoutMs: number
  /** No address check (CLIENT_METADATA_FETCH_ALLOW_PRIVATE): for a trusted network. */
  allowPrivate: boolean
}

/**
 * Whether a client_id names a metadata document: an https URL with a path other than "/", no
 * fragment, credentials or dot segments, written as a URL parser writes it back (so that the
 * document's client_id can be compared with it exactly).
 */
export function isClientMetadataUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > CLIENT_ID_MAX) return false
  const url = URL.parse(clientId)
  return (
    !!url &&
    url.href === clientId &&
    url.pathname !== '/' &&
    !url.hash &&
    !url.username &&
    !url.password &&
    !/\/\.\.?(?:\/|$)/.test(url.pathname)
  )
}

/** How long a response may be reused, in seconds, by its Cache-Control, else Expires; 0: not at all. */
export function freshSeconds(headers: IncomingHttpHeaders, now = Date.now()): number {
  const directives = (headers['cache-control'] ?? '')
    .toLowerCase()
    .split(',')
    .map((d) => d.trim())
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0
  const maxAge = directives.map((d) => /^max-age=(\d+)$/.exec(d)?.[1]).find((v) => v !== undefined)
  if (maxAge !== undefined) return Math.min(Number(maxAge), CACHE_MAX_SECONDS)
  const expires = Date.parse(headers.expires ?? '')
  const date = Date.parse(headers.date ?? '') || now
  return Number.isNaN(expires) ? 0 : Math.max(0, Math.min(Math.floor((expires - date) / 1000), CACHE_MAX_SECONDS))
}

export class ClientMetadataDocuments {
  private readonly cache = new Map<string, { client: Client; until: number }>()
  private readonly loading = new Map<string, Promise<Client>>()

  constructor(
    private readonly sql: Sql,
    private readonly options: ClientMetadataOptions,
    private readonly log: Logger,
  ) {}

  /**
   * The client `clientId` names: the one its metadata document describes, or a registered one;
   * undefined for an unknown id; first_party for kgs's own, never for a document's. Throws
   * ClientMetadataError when the document cannot be used.
   */
  async find(clientId: string): Promise<FoundClient | undefined> {
    if (isClientMetadataUrl(clientId)) return this.client(clientId)
    return clientId.length <= 64 ? findClient(this.sql, clientId) : undefined
  }

  /** The client of the document at `url`: from the cache while fresh, else fetched, checked and mirrored (one fetch at a time per URL). */
  client(url: string): Promise<Client> {
    const cached = this.cache.get(url)
    if (cached && cached.until > Date.now()) return Promise.resolve(cached.client)
    let pending = this.loading.get(url)
    if (!pending) {
      pending = this.load(url).finally(() => this.loading.delete(url))
      this.loading.set(url, pending)
    }
    return pending
  }

  private async load(url: string): Promise<Client> {
    const { document, seconds } = await fetchDocument(url, this.options, this.log)
    const client = clientOf(url, document)
    await mirror(this.sql, client)
    this.cache.delete(url)
    if (seconds > 0) {
      // The oldest entry makes room: a Map iterates in insertion order.
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!)
      this.cache.set(url, { client, until: Date.now() + seconds * 1000 })
    }
    return client
  }
}

async function fetchDocument(
  url: string,
  options: ClientMetadataOptions,
  log: Logger,
): Promise<{ document: unknown; seconds: number }> {
  let text = ''
  let headers: IncomingHttpHeaders
  try {
    const response = await guardedFetch(url, {
      maxBytes: METADATA_DOCUMENT_MAX_BYTES,
      timeoutMs: options.timeoutMs,
      allowPrivate: options.allowPrivate,
      purpose: 'OAuth client metadata',
      // The document must be at its client_id, not somewhere it points to.
      maxRedirects: 0,
    })
    headers = response.headers
    const type = response.contentType.split(';', 1)[0]!.trim().toLowerCase()
    const decoder = new TextDecoder()
    for await (const chunk of response.body) text += decoder.decode(chunk, { stream: true })
    if (type !== 'application/json')
      throw new ClientMetadataError(
        `its metadata document is served as ${JSON.stringify(type.slice(0, 100) || 'nothing')}, not application/json`,
      )
  } catch (error) {
    if (!(error instanceof GuardedFetchError)) throw error
    if (error.connected) throw new ClientMetadataError(`its metadata document could not be fetched: ${error.message}`)
    log.warn('oauth: a client metadata document could not be fetched before any connection', {
      client_id: url,
      reason: error.message,
    })
    throw new ClientMetadataError(UNREACHABLE_DOCUMENT)
  }
  try {
    return { document: JSON.parse(text), seconds: freshSeconds(headers) }
  } catch {
    throw new ClientMetadataError('its metadata document is not JSON')
  }
}

const isStrings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string')

/** The client a document describes, checked as a registration is (clients.ts) and by the draft's rules. */
function clientOf(url: string, document: unknown): Client {
  const refuse = (why: string) => new ClientMetadataError(`its metadata document ${why}`)
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw refuse('is not a JSON object')
  const fields = document as Record<string, unknown>
  if (fields.client_id !== url)
    throw refuse(
      `names the client_id ${JSON.stringify(String(fields.client_id).slice(0, 200))}, not the URL it was fetched from`,
    )
  if ('client_secret' in fields || 'client_secret_expires_at' in fields)
    throw refuse('holds a client secret, which a public document cannot keep')
  if (!isStrings(fields.redirect_uris) || (fields.redirect_uris as string[]).length === 0)
    throw refuse('has no redirect_uris (a list of URIs)')
  if ((fields.redirect_uris as string[]).length > 10) throw refuse('lists more than 10 redirect_uris')
  for (const name of ['client_name', 'token_endpoint_auth_method', 'scope'] as const) {
    if (fields[name] !== undefined && typeof fields[name] !== 'string')
      throw refuse(`has a ${name} that is not a string`)
  }
  for (const name of ['grant_types', 'response_types'] as const) {
    if (fields[name] !== undefined && !isStrings(fields[name]))
      throw refuse(`has ${name} that are not a list of strings`)
  }
  const name = (fields.client_name as string | undefined)?.trim() ?? ''
  if (name.length > 200 || UNSHOWABLE.test(name))
    throw refuse('has a client_name longer than 200 characters or with control characters')
  // Only public clients: the document is public, so no secret can go with it (private_key_jwt is not supported).
  if ((fields.token_endpoint_auth_method ?? 'none') !== 'none')
    throw refuse(
      `asks for token_endpoint_auth_method ${JSON.stringify(fields.token_endpoint_auth_method)}; only none is supported`,
    )
  try {
    const metadata = checkRegistration({
      redirect_uris: fields.redirect_uris as string[],
      client_name: name,
      grant_types: fields.grant_types as string[] | undefined,
      response_types: fields.response_types as string[] | undefined,
      scope: fields.scope as string | undefined,
    })
    return { client_id: url, client_id_issued_at: 0, ...metadata }
  } catch (error) {
    if (error instanceof OAuthError) throw refuse(`is not acceptable: ${error.description}`)
    throw error
  }
}

/** Writes the client's row (a change of its document updates it). */
async function mirror(sql: Sql, client: Client): Promise<void> {
  await sql`
    INSERT INTO oauth_clients (id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope)
    VALUES (${client.client_id}, NULL, ${client.client_name}, ${client.redirect_uris}, ${client.grant_types}, 'none', ${client.scope})
    ON CONFLICT (id) DO UPDATE SET client_name = EXCLUDED.client_name, redirect_uris = EXCLUDED.redirect_uris, grant_types = EXCLUDED.grant_types, scope = EXCLUDED.scope
    WHERE (oauth_clients.client_name, oauth_clients.redirect_uris, oauth_clients.grant_types, oauth_clients.scope)
      IS DISTINCT FROM (EXCLUDED.client_name, EXCLUDED.redirect_uris, EXCLUDED.grant_types, EXCLUDED.scope)`
}

/** What the consent and sign-in pages name a client by besides its own name: the host its document is served from. */
export function documentHost(clientId: string): string | undefined {
  return isClientMetadataUrl(clientId) ? new URL(clientId).host : undefined
}
