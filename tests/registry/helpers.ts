// Shared by the registry tests: pushes over fetch and over a raw socket (header values as raw
// UTF-8 bytes, and uploads cut off midway), small gzip bodies, and waiting on server state.
import { createHash } from 'node:crypto'
import { watch } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { gzipSync } from 'node:zlib'
import { expect } from 'bun:test'
import type { TestServer } from '../helpers/server.ts'
import type { GenerateResult } from '../../scripts/gen-bundle.ts'

export interface Reply {
  status: number
  headers: Headers
  body: any
}

async function reply(res: Response): Promise<Reply> {
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

/** POST /api/v1/graphs with fetch. */
export async function push(
  server: TestServer,
  token: string | undefined,
  body: RequestInit['body'],
  headers: Record<string, string>,
  contentType = 'application/gzip',
): Promise<Reply> {
  const all: Record<string, string> = { ...headers }
  if (contentType) all['content-type'] = contentType
  if (token) all.authorization = `Bearer ${token}`
  const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers: all, body }
  if (body instanceof ReadableStream) init.duplex = 'half'
  return reply(await fetch(server.url + '/api/v1/graphs', init))
}

export async function call(server: TestServer, method: string, path: string, token?: string): Promise<Reply> {
  return reply(await fetch(server.url + path, { method, headers: token ? { authorization: `Bearer ${token}` } : {} }))
}

/** A small valid gzip file, different for every `seed`. */
export const smallBundle = (seed: string) =>
  gzipSync(Buffer.from(JSON.stringify({ schema_version: 2, metadata: { name: seed } })))

/** A valid-looking canonical hash, different for every `seed`. */
export const sha = (seed: string) => createHash('sha256').update(seed).digest('hex')

/** The §7 headers of a generated bundle, as its export would send them. */
export function headersOf(
  bundle: GenerateResult,
  name: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    'x-graph-name': name,
    'x-graph-sha256': bundle.sha256,
    'x-graph-schema-version': '2',
    'x-graph-source-count': String(bundle.counts.sources),
    'x-graph-fact-count': String(bundle.counts.facts),
    'x-graph-concept-count': String(bundle.counts.concepts),
    'x-graph-summary-count': String(bundle.counts.concept_summaries),
    'x-graph-synthesis-count': String(bundle.counts.concept_syntheses),
    'x-graph-report-count': String(bundle.counts.reports),
    'x-graph-investigation-count': String(bundle.counts.investigations),
    ...extra,
  }
}

/** The head of a raw HTTP/1.1 request; header values are written as given, bytes and all. */
function requestHead(server: TestServer, method: string, path: string, headers: [string, string | Buffer][]): Buffer {
  const host = new URL(server.url).host
  const parts: Buffer[] = [Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n`)]
  for (const [name, value] of headers)
    parts.push(
      Buffer.from(`${name}: `),
      typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
      Buffer.from('\r\n'),
    )
  parts.push(Buffer.from('\r\n'))
  return Buffer.concat(parts)
}

async function open(server: TestServer): Promise<Socket> {
  const url = new URL(server.url)
  const socket = connect(Number(url.port), url.hostname)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  return socket
}

/**
 * A request over a plain socket, so header values travel as the raw UTF-8 bytes given (fetch
 * refuses characters beyond latin1). Reads the whole answer (the server closes after it).
 */
export async function rawRequest(
  server: TestServer,
  method: string,
  path: string,
  headers: [string, string | Buffer][],
  body?: Uint8Array,
): Promise<Reply> {
  const socket = await open(server)
  const chunks: Buffer[] = []
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.once('end', resolve)
    socket.once('error', reject)
  })
  const all: [string, string | Buffer][] = body ? [...headers, ['Content-Length', String(body.byteLength)]] : headers
  socket.write(requestHead(server, method, path, all))
  if (body) socket.write(body)
  await ended
  socket.destroy()
  const response = Buffer.concat(chunks)
  const split = response.indexOf('\r\n\r\n')
  const [statusLine, ...lines] = response.subarray(0, split).toString('latin1').split('\r\n')
  const responseHeaders = new Headers(
    lines.map(
      (line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string],
    ),
  )
  let content: Buffer = response.subarray(split + 4)
  if (responseHeaders.get('transfer-encoding') === 'chunked') content = dechunk(content)
  const text = content.toString('utf8')
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers: responseHeaders,
    body: text ? JSON.parse(text) : undefined,
  }
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = []
  let at = 0
  for (;;) {
    const end = data.indexOf('\r\n', at)
    const size = parseInt(data.subarray(at, end).toString('latin1'), 16)
    if (!size) return Buffer.concat(out)
    out.push(data.subarray(end + 2, end + 2 + size))
    at = end + 2 + size + 2
  }
}

/** Starts an upload that declares `declared` bytes and sends only `first`; the caller cuts it off. */
export async function startUpload(
  server: TestServer,
  headers: [string, string][],
  declared: number,
  first: Uint8Array,
): Promise<Socket> {
  const socket = await open(server)
  socket.on('error', () => {})
  socket.write(
    requestHead(server, 'POST', '/api/v1/graphs', [
      ...headers,
      ['Content-Type', 'application/gzip'],
      ['Content-Length', String(declared)],
    ]),
  )
  socket.write(first)
  return socket
}

/** Resolves once `condition` holds, re-checked on every change in `dir` (the server's work there); fails after 10 s. */
export async function whenDirectory(dir: string, condition: () => boolean, what: string): Promise<void> {
  const watcher = watch(dir)
  let timer: Timer | undefined
  try {
    await new Promise<void>((resolve, reject) => {
      const check = () => condition() && resolve()
      watcher.on('change', check)
      watcher.on('error', reject)
      timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 10_000)
      check()
    })
  } finally {
    clearTimeout(timer)
    watcher.close()
  }
}

export function expectRecordShape(record: Record<string, unknown>): void {
  expect(Object.keys(record)).toEqual([
    'id',
    'name',
    'description',
    'owner',
    'owner_id',
    'tags',
    'sha256',
    'schema_version',
    'bytes',
    'source_count',
    'fact_count',
    'concept_count',
    'summary_count',
    'synthesis_count',
    'report_count',
    'investigation_count',
    'created_at',
    'updated_at',
  ])
  expect(record.updated_at).toBe(record.created_at)
}
