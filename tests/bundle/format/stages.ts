// Inputs for the reader's stages, tested one by one: decompressed text as the chunks the
// gunzip stage would hand over, and a scanner over them.
import { DEFAULT_READER_LIMITS, type BundleItem, type ReaderLimits } from '../../../src/bundle/format/read/items.ts'
import { Scanner } from '../../../src/bundle/format/read/scanner.ts'

/** `text` in chunks of `size` bytes. */
export async function* chunksOf(text: string | Uint8Array, size: number): AsyncGenerator<Uint8Array, void, undefined> {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size)
}

export const limitsWith = (limits: Partial<ReaderLimits> = {}): ReaderLimits => ({
  ...DEFAULT_READER_LIMITS,
  ...limits,
})

export const scannerOf = (text: string, size: number, limits?: Partial<ReaderLimits>) =>
  new Scanner(chunksOf(text, size), limitsWith(limits))

/** Chunk sizes that cut every token somewhere, and one that holds the whole text. */
export const CHUNK_SIZES = [1, 3, 7, 1 << 16]

/** A stage's output flattened, media data read into arrays; stops at the first error, which is returned with the items before it. */
export async function drain(batches: AsyncIterable<BundleItem[]>): Promise<{ items: unknown[]; error?: string }> {
  const items: unknown[] = []
  try {
    for await (const batch of batches) {
      for (const item of batch) {
        if (item.type === 'media' && item.data) {
          const bytes: number[] = []
          for await (const chunk of item.data) bytes.push(...chunk)
          items.push({ ...item, data: bytes })
        } else items.push(item)
      }
    }
  } catch (error) {
    return { items, error: (error as Error).message }
  }
  return { items }
}

/** The message a promise is rejected with. */
export async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('expected a failure')
}
