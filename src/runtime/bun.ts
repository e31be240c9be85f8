// The Bun implementation of the runtime layer: the default, and the compiled binary's.
import { assets } from './bun-assets.ts'
import { cachedAddon } from './addon-cache.ts'
import { buildAssets } from './build-assets.ts'
import type { Runtime, S3Client } from './types.ts'
import { createWriteStream } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { pipeline } from 'node:stream/promises'
import { createZstdDecompress } from 'node:zlib'

const enoent = (path: string) =>
  Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT', path })

let stdoutSink: ReturnType<typeof Bun.stdout.writer> | undefined

export const runtime: Runtime = {
  name: 'bun',
  serve(options) {
    const { unix, port, hostname, maxRequestBodySize, fetch, error } = options
    const server =
      unix === undefined
        ? Bun.serve({ port, hostname, maxRequestBodySize, fetch, error })
        : Bun.serve({ unix, maxRequestBodySize, fetch, error })
    return {
      port: server.port,
      peerAddress: (request) => server.requestIP(request)?.address,
      stop: (force) => server.stop(force),
    }
  },
  async openFile(path) {
    const file = Bun.file(path)
    if (!(await file.exists())) throw enoent(path)
    return file
  },
  gc: (full) => Bun.gc(full),
  sleep: (ms) => Bun.sleep(ms),
  uuidv7: () => Bun.randomUUIDv7(),
  writeStdout(text) {
    stdoutSink ??= Bun.stdout.writer()
    stdoutSink.write(text)
    void stdoutSink.flush()
  },
  stdin: () => Bun.stdin.stream(),
  fetchUnix: (socket, url, init) => fetch(url, { ...init, unix: socket }),
  // Only the binary carries build assets; its executable runs its own main.ts.
  kgsCommand: () =>
    buildAssets.webApp ? [process.execPath] : [process.execPath, fileURLToPath(new URL('../main.ts', import.meta.url))],
  startWorker(url, options = {}) {
    const worker = new Worker(url, { smol: options.smol })
    const { onExit } = options
    // Bun's own event: the thread ended, by an uncaught error or terminate().
    if (onExit) worker.addEventListener('close', () => onExit())
    return worker
  },
  unref: (handle) => void (handle as { unref(): void }).unref(),
  // Synchronous on purpose: the hashing thread's lowered priority applies to itself only.
  hashPassword: async (password, cost) =>
    Bun.password.hashSync(password, { algorithm: 'argon2id', memoryCost: cost.memoryKiB, timeCost: cost.timeCost }),
  verifyPassword: async (password, hash) => Bun.password.verifySync(password, hash),
  s3: (connection) => new Bun.S3Client(connection) as unknown as S3Client,
  assets: async () => assets,
  async prepareWebApp() {
    if (buildAssets.webApp) return false
    // Resolved at run time, so that the binary's bundler leaves the build script out: only a
    // source checkout (which has scripts/ and src/web/) ever gets here.
    const script = new URL('../../scripts/build-web.ts', import.meta.url).href
    const { buildWebApp }: typeof import('../../scripts/build-web.ts') = await import(script)
    return buildWebApp({ ifStale: true })
  },
  async nativeAddon(name) {
    const addon = buildAssets[name]
    if (addon === undefined) return undefined
    return cachedAddon(addon.name, addon.size, (to) =>
      pipeline(Bun.file(addon.file).stream(), createZstdDecompress(), createWriteStream(to)),
    )
  },
  async extractPGliteTemplate(dir) {
    if (buildAssets.pgliteTemplate === undefined) return false
    await new Bun.Archive(await Bun.file(buildAssets.pgliteTemplate).bytes()).extract(dir)
    return true
  },
}
