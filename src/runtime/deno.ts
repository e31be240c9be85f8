// The Deno implementation of the runtime layer (`deno run -A src/main.ts …`).
import { existsSync, openAsBlob } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { fileURLToPath } from 'node:url'
import { argon2id, argon2Verify } from 'hash-wasm'
import { fetchS3Client } from './fetch-s3.ts'
import { assets } from './node-assets.ts'
import type { Runtime } from './types.ts'

// Only what this file uses of Deno's API, declared here so that tsc (which knows Bun's globals
// only) checks this file too.
interface DenoServer {
  addr: { port?: number }
  shutdown(): Promise<void>
}
interface DenoServeInfo {
  remoteAddr: { hostname?: string }
}
type DenoHandler = (request: Request, info: DenoServeInfo) => Response | Promise<Response>
declare const Deno: {
  serve(options: {
    port?: number
    hostname?: string
    path?: string
    transport?: 'unix'
    onListen?: () => void
    onError?: (error: unknown) => Response | Promise<Response>
    handler: DenoHandler
  }): DenoServer
  stdout: { writeSync(bytes: Uint8Array): number }
  stdin: { readable: ReadableStream<Uint8Array> }
  unrefTimer(id: number): void
}

const encoder = new TextEncoder()

/** UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. */
function uuidv7(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  const ms = Date.now()
  for (let i = 0; i < 6; i++) bytes[i] = Math.floor(ms / 2 ** (8 * (5 - i))) % 256
  bytes[6] = 0x70 | (bytes[6]! & 0x0f)
  bytes[8] = 0x80 | (bytes[8]! & 0x3f)
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export const runtime: Runtime = {
  name: 'deno',
  serve(options) {
    const { unix, port, hostname, fetch, error } = options
    // Deno hands the peer's address to the handler, not to the server: kept per request.
    const peers = new WeakMap<Request, string>()
    const handler: DenoHandler = (request, info) => {
      if (info.remoteAddr.hostname !== undefined) peers.set(request, info.remoteAddr.hostname)
      return fetch(request)
    }
    // Deno has no request-body cap of its own: maxRequestBodySize needs no counterpart.
    const onListen = () => {}
    const server =
      unix === undefined
        ? Deno.serve({ port, hostname, onListen, onError: error, handler })
        : Deno.serve({ path: unix, transport: 'unix', onListen, onError: error, handler })
    return {
      port: server.addr.port,
      peerAddress: (request) => peers.get(request),
      // Deno's only stop waits for the requests in flight.
      stop: () => server.shutdown(),
    }
  },
  openFile: (path) => openAsBlob(path),
  // V8 exposes a collector only when started with --expose-gc; otherwise it schedules its own.
  gc: () => (globalThis as { gc?: () => void }).gc?.(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  uuidv7,
  writeStdout(text) {
    let bytes = encoder.encode(text)
    while (bytes.length > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes))
  },
  stdin: () => Deno.stdin.readable,
  fetchUnix(socket, url, init) {
    const { pathname, search } = new URL(url)
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          socketPath: socket,
          path: pathname + search,
          method: init.method ?? 'GET',
          headers: Object.fromEntries(new Headers(init.headers)),
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () =>
            resolve(
              new Response(Buffer.concat(chunks), {
                status: res.statusCode,
                headers: res.headers as Record<string, string>,
              }),
            ),
          )
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.end(typeof init.body === 'string' ? init.body : undefined)
    })
  },
  // As .ci/run starts it: every permission, with the checkout's deno.json (its import map).
  kgsCommand: () => [
    process.execPath,
    'run',
    '-A',
    `--config=${fileURLToPath(new URL('../../deno.json', import.meta.url))}`,
    fileURLToPath(new URL('../main.ts', import.meta.url)),
  ],
  startWorker(url, options = {}) {
    const worker = new Worker(url, { type: 'module' })
    const { onExit } = options
    if (!onExit) return worker
    // Deno's workers have no event for their end: an uncaught error ends one, and so does terminate().
    let ended = false
    const end = () => {
      if (ended) return
      ended = true
      onExit()
    }
    worker.addEventListener('error', end)
    const terminate = worker.terminate.bind(worker)
    worker.terminate = () => {
      terminate()
      end()
    }
    return worker
  },
  unref(handle) {
    // A web Worker in Deno cannot be unreferenced; idle ones end on their own timers.
    if (typeof handle === 'number') Deno.unrefTimer(handle)
  },
  hashPassword: (password, cost) =>
    argon2id({
      password,
      salt: crypto.getRandomValues(new Uint8Array(16)),
      parallelism: 1,
      iterations: cost.timeCost,
      memorySize: cost.memoryKiB,
      hashLength: 32,
      outputType: 'encoded',
    }),
  verifyPassword: (password, hash) => argon2Verify({ password, hash }),
  // Deno has no S3 client of its own.
  s3: fetchS3Client,
  assets: async () => assets,
  async prepareWebApp() {
    const missing = [assets.webAppJs, assets.webAppCss].find((path) => !existsSync(path))
    if (missing)
      throw new Error(`the web app is not built (no ${missing}): build it with \`npm run build:web\` (on Bun) first`)
    return false
  },
  // Deno runs from source: each package loads its add-on from node_modules, and initdb makes the first database.
  nativeAddon: async () => undefined,
  extractPGliteTemplate: async () => false,
}
