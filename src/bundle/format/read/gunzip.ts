// The reader's first stage: the compressed bytes in, the decompressed chunks out, with the
// limits on the expanded size and the compression ratio checked on every chunk before anyone
// scans it. zlib's failures become `gzip: …` BundleErrors.
import { createGunzip } from 'node:zlib'
import { GarbageMeter } from '../../../memory.ts'
import { BundleError } from './errors.ts'
import type { ReaderLimits, ReaderStats } from './items.ts'

/** The compression ratio is only judged past this many decompressed bytes. */
const RATIO_GRACE_BYTES = 16 * 1024 ** 2

const GUNZIP_CHUNK = 64 * 1024

function gzipError(problem: string): BundleError {
  return new BundleError(problem, { scope: 'gzip' })
}

function gzipProblem(error: unknown, consumed: number): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | null)?.code
  if (/unexpected end of file/i.test(message) || code === 'Z_BUF_ERROR') return 'truncated (unexpected end of file)'
  if (/incorrect data check/i.test(message)) return 'corrupt data (checksum mismatch)'
  if (/incorrect length check/i.test(message)) return 'corrupt data (length mismatch)'
  if (/incorrect header check|unknown compression method|header/i.test(message)) {
    return consumed <= 10 ? 'not a gzip file' : `corrupt data after a gzip member (${message})`
  }
  return `corrupt data (${message})`
}

/**
 * The decompressed chunks of `source`. A feeder task writes the compressed bytes into gunzip
 * (with backpressure); this generator takes gunzip's output and checks the limits on every
 * chunk before anyone scans it.
 */
export async function* decompress(
  source: AsyncIterable<Uint8Array>,
  limits: ReaderLimits,
  stats: ReaderStats,
): AsyncGenerator<Uint8Array, void, undefined> {
  const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK })
  const input = source[Symbol.asyncIterator]()
  let feedError: unknown
  let stopped = false
  const magic: number[] = []
  const waitDrain = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        gunzip.off('drain', done)
        gunzip.off('close', done)
        resolve()
      }
      gunzip.on('drain', done)
      gunzip.on('close', done)
    })
  const feeding = (async () => {
    try {
      for (;;) {
        const next = await input.next()
        if (next.done || stopped) break
        const chunk = next.value
        if (!(chunk instanceof Uint8Array)) throw new TypeError('the bundle source must yield Uint8Array chunks')
        if (chunk.length === 0) continue
        stats.compressedBytes += chunk.length
        for (let i = 0; magic.length < 2 && i < chunk.length; i++) magic.push(chunk[i]!)
        if (magic.length >= 1 && magic[0] !== 0x1f) throw gzipError('not a gzip file')
        if (magic.length >= 2 && magic[1] !== 0x8b) throw gzipError('not a gzip file')
        // Slices, so that gunzip's consumed-byte count (the ratio check) stays close to the truth.
        for (let i = 0; i < chunk.length && !stopped; i += GUNZIP_CHUNK) {
          if (!gunzip.write(chunk.subarray(i, i + GUNZIP_CHUNK))) await waitDrain()
          if (gunzip.destroyed) stopped = true
        }
        if (stopped) break
      }
      if (!stopped) {
        if (stats.compressedBytes === 0) throw gzipError('empty input (not a gzip file)')
        gunzip.end()
      }
    } catch (error) {
      feedError = error
      gunzip.destroy(error instanceof Error ? error : new Error(String(error)))
    }
  })()
  const garbage = new GarbageMeter()
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      garbage.add(chunk.length)
      const total = stats.decompressedBytes + chunk.length
      if (total > limits.maxDecompressedBytes)
        throw gzipError(`bundle expands past ${limits.maxDecompressedBytes} bytes (limit)`)
      stats.decompressedBytes = total
      if (total >= RATIO_GRACE_BYTES) {
        const consumed = Math.max(1, Math.min(stats.compressedBytes, gunzip.bytesWritten || stats.compressedBytes))
        if (total / consumed > limits.maxCompressionRatio) {
          throw gzipError(
            `bundle expands more than ${limits.maxCompressionRatio} times its compressed size (limit: ${total} bytes from ${consumed})`,
          )
        }
      }
      yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length)
    }
    await feeding
    if (feedError !== undefined) throw feedError
  } catch (error) {
    if (error instanceof BundleError) throw error
    if (feedError !== undefined) throw feedError
    // Only zlib's failures (Z_* codes) are the data's; any other (the runtime's) is reported as itself.
    if (!String((error as { code?: unknown } | null)?.code).startsWith('Z_')) throw error
    throw gzipError(gzipProblem(error, gunzip.bytesWritten || stats.compressedBytes))
  } finally {
    stopped = true
    if (!gunzip.destroyed) gunzip.destroy()
    // Stops a source still being read (a Readable is destroyed); not awaited: a source blocked
    // on the network must not hold the caller.
    try {
      input.return?.()?.catch(() => {})
    } catch {
      // a source that cannot be stopped is left to finish on its own
    }
  }
}
