// What a write of the graph sets off beyond its own transaction, whoever asks for it (the REST
// write routes, the MCP tools): the embedding of written facts and concepts, the deletion of a
// deleted source's stored bytes, and where an image fact's stored image is served.
import type { BlobStore } from '../../blobs/store.ts'
import type { Logger } from '../../log.ts'
import { describeError } from '../../log.ts'
import type { EmbeddedKind } from './common.ts'

export interface WriteEffectsOptions {
  blobs: BlobStore
  log: Logger
  /** The public base URL: an image fact's image_url points at its stored image there. */
  baseUrl: string
  /** Facts or concepts of the repository were written: their vectors are to be brought up to date. */
  changed(repositoryId: string, kinds: readonly EmbeddedKind[]): Promise<void>
}

export interface WriteEffects {
  /** Where this repository serves a stored source image, less the image's id. */
  imageUrlPrefix(repositoryId: string): string
  /** `work`'s answer, once the vectors of `kind` are queued to follow it. */
  after<T>(repositoryId: string, kind: EmbeddedKind, work: Promise<T>): Promise<T>
  /** Deletes a deleted source's stored bytes; a failure is logged, the row is gone either way. */
  deleteBlobs(keys: readonly string[]): Promise<void>
}

export function writeEffects({ blobs, log, baseUrl, changed }: WriteEffectsOptions): WriteEffects {
  return {
    imageUrlPrefix: (repositoryId) => `${baseUrl}/${repositoryId}/images/`,
    after: async (repositoryId, kind, work) => {
      const result = await work
      await changed(repositoryId, [kind])
      return result
    },
    deleteBlobs: async (keys) => {
      for (const key of keys) await blobs.delete(key).catch((error) => log.error('graph: could not delete the bytes of a deleted source', { key, ...describeError(error) }))
    },
  }
}
