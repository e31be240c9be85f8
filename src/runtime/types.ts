// What kgs needs from the JavaScript runtime beyond web standards and node: modules, in one
// interface with an implementation per runtime (bun.ts, the default and the binary's; deno.ts).
import type { PasswordCost } from '../config.ts'

interface ServeOptions {
  port?: number
  hostname?: string
  /** Listens on this Unix socket instead of a TCP port. */
  unix?: string
  /** The largest request body accepted before any handler sees it (Bun caps it otherwise). */
  maxRequestBodySize?: number
  fetch(request: Request): Response | Promise<Response>
  error?(error: unknown): Response | Promise<Response>
}

interface RuntimeServer {
  /** The TCP port listened on (undefined on a Unix socket). */
  readonly port: number | undefined
  /** The address of the peer that sent `request`, if known. */
  peerAddress(request: Request): string | undefined
  /** Stops listening; `force` also ends the requests in flight. */
  stop(force: boolean): Promise<void>
}

interface WorkerOptions {
  /** A smaller heap, where the runtime offers one. */
  smol?: boolean
  /** Called once when the thread has ended, however it ended (an uncaught error, terminate()). */
  onExit?: () => void
}

/** Connection settings of an S3-compatible bucket (the keys of Config['s3'] but the prefix). */
export interface S3Connection {
  bucket: string
  endpoint?: string
  region?: string
  accessKeyId?: string
  secretAccessKey?: string
}

export interface Runtime {
  readonly name: 'bun' | 'deno'
  serve(options: ServeOptions): RuntimeServer
  /** The file at `path` as a Blob read lazily; rejects (ENOENT) when there is none. */
  openFile(path: string): Promise<Blob>
  /** Collects garbage: fully and synchronously, or else only asks for a collection. */
  gc(full: boolean): void
  sleep(ms: number): Promise<void>
  /** A time-ordered UUID (version 7). */
  uuidv7(): string
  /** Writes to stdout without blocking on a slow reader where the runtime allows. */
  writeStdout(text: string): void
  stdin(): ReadableStream<Uint8Array>
  /** fetch() over a Unix socket (the host part of `url` is ignored). */
  fetchUnix(socket: string, url: string, init: RequestInit): Promise<Response>
  /**
   * The command line that runs this kgs again in a child process, to which a command and its
   * arguments are appended: the binary alone when compiled, the runtime and src/main.ts from source.
   */
  kgsCommand(): string[]
  /** A module worker thread running `url`. */
  startWorker(url: string, options?: WorkerOptions): Worker
  /** Lets the process exit while `handle` (a worker, or a timer: an object on Bun, a number on Deno) is alive. */
  unref(handle: Worker | { unref(): unknown } | number): void
  /** argon2id as a PHC string of this cost (p=1); Bun's blocks its thread (a hashing thread). */
  hashPassword(password: string, cost: PasswordCost): Promise<string>
  /** Verifies an argon2id PHC string from either runtime. */
  verifyPassword(password: string, hash: string): Promise<boolean>
  s3(connection: S3Connection): S3Client
  /** Files embedded in the binary (or read from node_modules and dist/web/ when not compiled), as paths. */
  assets(): Promise<Assets>
  /**
   * Makes sure the web app's files (assets()) exist, for `kgs serve`: the binary carries them; from
   * source, Bun builds them (scripts/build-web.ts) when they are missing or older than src/web/, as
   * `npm start` does first, and answers whether it built; Deno cannot run that build (Bun's bundler)
   * and throws, naming the command, when they are missing.
   */
  prepareWebApp(): Promise<boolean>
  /**
   * Where the native library of an add-on must be loaded from when its package cannot find it
   * itself (in the compiled binary: the embedded one, unpacked into the user's cache once per
   * build); undefined when the package finds its own.
   */
  nativeAddon(name: 'lancedb'): Promise<string | undefined>
  /**
   * Writes the data directory of a fresh embedded database into `dir` (a new directory), as the
   * build made it with initdb; false when this build carries none (from source).
   */
  extractPGliteTemplate(dir: string): Promise<boolean>
}

export interface Assets {
  pgliteWasm: string
  initdbWasm: string
  pgliteData: string
  swaggerBundleJs: string
  swaggerCss: string
  swaggerRedirectJs: string
  swaggerFavicon: string
  /** The web app (src/web/), as scripts/build-web.ts builds it into dist/web/. */
  webAppJs: string
  webAppCss: string
}

/** The part of Bun's S3 client src/blobs/s3.ts uses (fetch-s3.ts implements it where the runtime has none). */
export interface S3Client {
  file(key: string): S3File
  list(options: {
    prefix?: string
    continuationToken?: string
  }): Promise<{ contents?: { key: string; size?: number }[]; isTruncated?: boolean; nextContinuationToken?: string }>
  delete(key: string): Promise<void>
}
export interface S3File {
  write(body: Response, options: { type?: string }): Promise<number>
  bytes(): Promise<Uint8Array>
  stream(): ReadableStream<Uint8Array>
  stat(): Promise<{ size: number; etag?: string; lastModified?: Date; type?: string }>
}
