// The reader's gunzip stage: decompressed chunks out, the expansion limits and zlib's failures
// reported as `gzip: …`, the source stopped when the reading stops.
import { describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { decompress } from '../../../src/bundle/format/read/gunzip.ts'
import { newReaderStats } from '../../../src/bundle/format/read/items.ts'
import { chunksOf, failure, limitsWith } from './stages.ts'

async function gunzip(bytes: Uint8Array, size = 1 << 16, limits = limitsWith()) {
  const stats = newReaderStats()
  const parts: Uint8Array[] = []
  for await (const chunk of decompress(chunksOf(bytes, size), limits, stats)) parts.push(Uint8Array.from(chunk))
  return { text: Buffer.concat(parts).toString(), stats }
}

describe('gunzip stage', () => {
  const text = JSON.stringify({ schema_version: 2, rows: Array.from({ length: 2000 }, (_, i) => ({ i })) })
  const gz = gzipSync(text)

  test('yields the decompressed bytes whatever the input chunking, and counts both sides', async () => {
    for (const size of [1, 100, 1 << 16]) {
      const { text: out, stats } = await gunzip(gz, size)
      expect(out).toBe(text)
      expect(stats.compressedBytes).toBe(gz.length)
      expect(stats.decompressedBytes).toBe(Buffer.byteLength(text))
    }
  })

  test('input that is not gzip, empty, truncated or corrupt is a gzip: error', async () => {
    expect(await failure(gunzip(new TextEncoder().encode(text)))).toBe('gzip: not a gzip file')
    expect(await failure(gunzip(new Uint8Array([0x1f, 0x00])))).toBe('gzip: not a gzip file')
    expect(await failure(gunzip(new Uint8Array(0)))).toBe('gzip: empty input (not a gzip file)')
    expect(await failure(gunzip(gz.subarray(0, gz.length - 20)))).toBe('gzip: truncated (unexpected end of file)')
    const corrupt = Uint8Array.from(gz)
    corrupt[corrupt.length - 6] = corrupt[corrupt.length - 6]! ^ 0xff // the CRC
    expect(await failure(gunzip(corrupt))).toBe('gzip: corrupt data (checksum mismatch)')
  })

  test('the expanded size and the compression ratio are limited as bytes arrive', async () => {
    expect(await failure(gunzip(gz, 1 << 16, limitsWith({ maxDecompressedBytes: 1000 })))).toBe(
      'gzip: bundle expands past 1000 bytes (limit)',
    )
    // The ratio is judged only past 16 MiB: zeros compress about a thousand times.
    const bomb = gzipSync(new Uint8Array(17 * 1024 * 1024))
    expect(await failure(gunzip(bomb, 1 << 16, limitsWith({ maxCompressionRatio: 200 })))).toMatch(
      /^gzip: bundle expands more than 200 times its compressed size \(limit: \d+ bytes from \d+\)$/,
    )
    expect((await gunzip(bomb, 1 << 16, limitsWith({ maxCompressionRatio: 5000 }))).stats.decompressedBytes).toBe(
      17 * 1024 * 1024,
    )
  })

  test('stopping the reading stops the source', async () => {
    let stopped = false
    async function* source() {
      try {
        for (let i = 0; i < gz.length; i += 10) yield gz.subarray(i, i + 10)
        for (;;) {
          // a source that never ends
          await new Promise((resolve) => setTimeout(resolve, 1))
          yield new Uint8Array(0)
        }
      } finally {
        stopped = true
      }
    }
    const chunks = decompress(source(), limitsWith(), newReaderStats())
    expect((await chunks.next()).done).toBe(false)
    await chunks.return()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(stopped).toBe(true)
  })
})
