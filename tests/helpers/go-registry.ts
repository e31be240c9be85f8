// A loopback stand-in for the Go original's registry, answering exactly as docs/spec/bundle.md §7 says
// its real one does, quirks included, so that kgs's registry client is tried against them:
// - push: 201 {graph_id, new: true} always, even for a (name, sha256) it holds (a new record);
//   the owner is the caller's e-mail; schema_version 1 when the push named none;
// - list: ?limit=&offset= only (a cursor is ignored), {graphs: [...] | null, total}, newest
//   first, limit ≤ 0 or > 200 means 20, a tag is the only filter when given;
// - record: Go's struct encoding: no bytes, no owner_id; tags, sha256 and zero counts left out;
// - bundle: the raw bytes with no content type; delete: {"message": "graph deleted"};
// - errors {"error": "..."}, some (401, 403) sent as text/plain the way Go's http.Error does,
//   and its router's plain "404 page not found" for an unknown path.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { COUNT_FIELDS } from '../../src/registry/store.ts'

export interface GoGraph {
  id: string
  name: string
  description: string
  owner: string
  tags: string[]
  sha256: string
  schema_version: number
  counts: Record<(typeof COUNT_FIELDS)[number], number>
  created_at: string
  updated_at: string
  bundle: Uint8Array
}

export interface GoRegistry {
  url: string
  /** Stored graphs, oldest first. */
  graphs: GoGraph[]
  /** Path and query of every request, in order. */
  requests: string[]
  stop(): Promise<void>
}

const COUNT_HEADERS: Record<(typeof COUNT_FIELDS)[number], string> = {
  source_count: 'x-graph-source-count',
  fact_count: 'x-graph-fact-count',
  concept_count: 'x-graph-concept-count',
  summary_count: 'x-graph-summary-count',
  synthesis_count: 'x-graph-synthesis-count',
  report_count: 'x-graph-report-count',
  investigation_count: 'x-graph-investigation-count',
}

const json = (status: number, body: unknown) => Response.json(body, { status })
/** Go's http.Error: the JSON text, but as text/plain. */
const plainError = (status: number, error: string) =>
  new Response(`${JSON.stringify({ error })}\n`, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } })

/** A header's raw UTF-8 bytes as text (they reach the server one latin1 character per byte). */
const header = (request: Request, name: string) => {
  const raw = request.headers.get(name)
  return raw === null ? '' : Buffer.from(raw, 'latin1').toString('utf8')
}
/** Go's strconv.Atoi with the error ignored: 0 for anything but an integer. */
const atoi = (value: string | null) => (value !== null && /^[+-]?[0-9]+$/.test(value) ? Number(value) : 0)

/** The record as Go's encoder writes it: omitempty fields left out when empty or zero. */
function record(g: GoGraph): Record<string, unknown> {
  const out: Record<string, unknown> = { id: g.id, name: g.name, description: g.description, owner: g.owner }
  if (g.tags.length > 0) out.tags = g.tags
  if (g.sha256) out.sha256 = g.sha256
  out.schema_version = g.schema_version
  for (const field of COUNT_FIELDS) if (g.counts[field] !== 0) out[field] = g.counts[field]
  out.created_at = g.created_at
  out.updated_at = g.updated_at
  return out
}

/** Starts the registry; `tokens` maps each accepted bearer token to its user's e-mail. */
export async function startGoRegistry(tokens: Record<string, string>): Promise<GoRegistry> {
  const graphs: GoGraph[] = []
  const requests: string[] = []
  let clock = Date.parse('2026-01-01T00:00:00Z')

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url)
    requests.push(url.pathname + url.search)
    const email = tokens[(request.headers.get('authorization') ?? '').replace(/^Bearer /, '')]
    if (!email) return plainError(401, 'unauthorized')
    const [, id, bundle] = /^\/api\/v1\/graphs(?:\/([^/]+)(\/bundle)?)?$/.exec(url.pathname) ?? []
    if (!url.pathname.startsWith('/api/v1/graphs') || (id === undefined && url.pathname !== '/api/v1/graphs'))
      return new Response('404 page not found\n', {
        status: 404,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      })

    if (id === undefined && request.method === 'POST') {
      const name = header(request, 'x-graph-name')
      if (!name) return json(400, { error: 'X-Graph-Name header is required' })
      const tags = header(request, 'x-graph-tags')
      // Distinct, increasing times: the newest-first order is then the push order reversed.
      const at = new Date((clock += 1000)).toISOString()
      const graph: GoGraph = {
        id: crypto.randomUUID(),
        name,
        description: header(request, 'x-graph-description'),
        owner: email,
        tags: tags ? (JSON.parse(tags) as string[]) : [],
        sha256: header(request, 'x-graph-sha256'),
        schema_version: atoi(request.headers.get('x-graph-schema-version')) || 1,
        counts: Object.fromEntries(
          COUNT_FIELDS.map((field) => [field, atoi(request.headers.get(COUNT_HEADERS[field]))]),
        ) as GoGraph['counts'],
        created_at: at,
        updated_at: at,
        bundle: new Uint8Array(await request.arrayBuffer()),
      }
      graphs.push(graph)
      return json(201, { graph_id: graph.id, new: true })
    }
    if (id === undefined && request.method === 'GET') {
      let limit = atoi(url.searchParams.get('limit'))
      if (limit <= 0 || limit > 200) limit = 20
      const offset = Math.max(0, atoi(url.searchParams.get('offset')))
      const tag = url.searchParams.get('tag') ?? ''
      const q = (url.searchParams.get('q') ?? '').toLowerCase()
      const matching = graphs
        .filter((g) =>
          tag
            ? g.tags.includes(tag)
            : !q || g.name.toLowerCase().includes(q) || g.description.toLowerCase().includes(q),
        )
        .toReversed()
      const page = matching.slice(offset, offset + limit).map(record)
      return json(200, { graphs: page.length > 0 ? page : null, total: matching.length })
    }
    const graph = graphs.find((g) => g.id === id)
    if (request.method === 'GET' && !graph) return json(404, { error: 'graph not found' })
    if (request.method === 'GET' && bundle) return new Response(graph!.bundle)
    if (request.method === 'GET') return json(200, record(graph!))
    if (request.method === 'DELETE' && !bundle) {
      if (!graph) return json(404, { error: 'graph not found' })
      if (graph.owner !== email) return plainError(403, 'forbidden')
      graphs.splice(graphs.indexOf(graph), 1)
      return json(200, { message: 'graph deleted' })
    }
    return plainError(405, 'method not allowed')
  }

  // node:http, not Bun.serve: Bun adds a content type to every answer, and Go's bundle has none.
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const method = req.method ?? 'GET'
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method,
      headers: req.headers as Record<string, string>,
      body: method === 'GET' || method === 'DELETE' ? undefined : Buffer.concat(chunks),
    })
    const response = await handle(request)
    res.writeHead(response.status, Object.fromEntries(response.headers))
    res.end(Buffer.from(await response.arrayBuffer()))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    graphs,
    requests,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
