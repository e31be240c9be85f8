import type { BlobStore } from '../../src/blobs/store.ts'

/** Every key in the store under `prefix` (all of them by default), sorted. */
export async function blobKeys(blobs: BlobStore, prefix = ''): Promise<string[]> {
  const keys: string[] = []
  for await (const key of blobs.list(prefix)) keys.push(key)
  return keys
}
