// Where the registry's bundles live in blob storage, and the sweep of what a dying process left
// there: a push's body under INCOMING (died before the move) and a bundle under GRAPHS without
// an index row (died before the insert, or a delete that removed the row but not the blob).
import type { Sql } from 'postgres'
import { isAbandoned, timestampedId } from '../blobs/leftovers.ts'
import type { BlobStore } from '../blobs/store.ts'

const INCOMING = 'registry/incoming/'
const GRAPHS = 'registry/graphs/'

/** Where a push body is written while it arrives; moved to graphKey once complete. */
export const incomingKey = () => `${INCOMING}${timestampedId()}`
export const graphKey = (id: string) => `${GRAPHS}${id}.json.gz`

/** Deletes abandoned pushes and unindexed bundles older than the grace period. Returns how many. */
export async function sweepRegistryLeftovers(system: Sql, blobs: BlobStore, now = Date.now()): Promise<number> {
  const abandoned: string[] = []
  for await (const key of blobs.list(INCOMING)) if (isAbandoned(key, now)) abandoned.push(key)
  const bundles: string[] = []
  for await (const key of blobs.list(GRAPHS)) if (isAbandoned(key, now)) bundles.push(key)
  if (bundles.length > 0) {
    const indexed = new Set(
      (
        await system<
          { storage_key: string }[]
        >`SELECT storage_key FROM graphs WHERE storage_key = ANY(${bundles}::text[])`
      ).map((row) => row.storage_key),
    )
    abandoned.push(...bundles.filter((key) => !indexed.has(key)))
  }
  for (const key of abandoned) await blobs.delete(key)
  return abandoned.length
}
