// fetch_media: downloads the images and source bodies of a repository that have an http(s) URL
// but no stored bytes (typically after an import of a bundle without media, docs/spec/bundle.md §5), a few
// at a time, in batches. A medium that cannot be had (refused address, HTTP error, too large,
// too slow) is counted and skipped; only the database or the blob store failing fails the job.
// Running it again fetches what is still missing, and only that.
import { Type } from '@sinclair/typebox'
import type { BlobStore } from '../blobs/store.ts'
import { defineJobKind, type JobServices, type RunningJob } from '../jobs/kinds.ts'
import { guardedFetch, GuardedFetchError, type GuardedFetchOptions } from '../http/guarded-fetch.ts'
import {
  countMissingBodies,
  countMissingImages,
  fetchedBodyKey,
  fetchedImageKey,
  missingBodies,
  missingImages,
  recordFetchedBody,
  recordFetchedImage,
  type MissingMedium,
} from './store.ts'
import { localImageUrl } from './urls.ts'
import { isMediaType } from './types.ts'

const BATCH = 100
/** Downloads at a time: media servers are slow more often than big. */
const PARALLEL = 4
const FIRST_UUID = '00000000-0000-0000-0000-000000000000'

interface PhaseCounts {
  stored: number
  failed: number
  refused: number
}

interface Phase {
  name: string
  count(): Promise<number>
  batch(after: string): Promise<MissingMedium[]>
  /** Downloads and stores one medium; a GuardedFetchError is the medium's fault, anything else the job's. */
  store(medium: MissingMedium): Promise<void>
}

async function fetchMissingMedia(job: RunningJob, { blobs, config, log }: JobServices) {
  const repositoryId = job.repositoryId!
  const sql = await job.repository()
  const options: GuardedFetchOptions = { ...config.mediaFetch, purpose: 'media fetcher', signal: job.signal }
  const images: Phase = {
    name: 'fetching images',
    count: () => countMissingImages(sql),
    batch: (after) => missingImages(sql, after, BATCH),
    async store(image) {
      const storageKey = fetchedImageKey(repositoryId, image.id)
      const { bytes, contentType } = await download(blobs, image.url, storageKey, options)
      await recordFetchedImage(sql, {
        id: image.id,
        storageKey,
        bytes,
        contentType,
        localUrl: localImageUrl(config.baseUrl, repositoryId, image.id),
      })
    },
  }
  const bodies: Phase = {
    name: 'fetching bodies',
    count: () => countMissingBodies(sql),
    batch: (after) => missingBodies(sql, after, BATCH),
    async store(source) {
      const storageKey = fetchedBodyKey(repositoryId, source.id)
      const { bytes, contentType } = await download(blobs, source.url, storageKey, options)
      await recordFetchedBody(sql, { sourceId: source.id, storageKey, bytes, contentType })
    },
  }
  const run = async (phase: Phase): Promise<PhaseCounts> => {
    const counts: PhaseCounts = { stored: 0, failed: 0, refused: 0 }
    let done = 0
    job.progress({ phase: phase.name, done, total: await phase.count() })
    for (let after = FIRST_UUID; ; ) {
      job.signal.throwIfAborted()
      const batch = await phase.batch(after)
      if (batch.length === 0) return counts
      await forEachConcurrently(batch, PARALLEL, async (medium) => {
        try {
          await phase.store(medium)
          counts.stored++
        } catch (error) {
          if (!(error instanceof GuardedFetchError)) throw error
          counts[error.reason === 'refused' ? 'refused' : 'failed']++
          log.debug('medium not fetched', { job: job.id, id: medium.id, reason: error.reason, error: error.message })
        }
        job.progress({ done: ++done })
      })
      after = batch.at(-1)!.id
    }
  }
  return { images: await run(images), bodies: await run(bodies) }
}

/**
 * Streams `url` into the blob store at `key`. A failure of the download while the store reads
 * it reaches us through the store, maybe wrapped: it is recognised by what the body threw.
 */
async function download(
  blobs: BlobStore,
  url: string,
  key: string,
  options: GuardedFetchOptions,
): Promise<{ bytes: number; contentType: string }> {
  const medium = await guardedFetch(url, options)
  // Kept only if it is a media type: it is sent back as a header when the bytes are served.
  const contentType = isMediaType(medium.contentType) ? medium.contentType : ''
  let bodyError: GuardedFetchError | undefined
  async function* body() {
    try {
      yield* medium.body
    } catch (error) {
      if (error instanceof GuardedFetchError) bodyError = error
      throw error
    }
  }
  try {
    const { bytes } = await blobs.put(key, body(), { contentType: contentType || undefined })
    return { bytes, contentType }
  } catch (error) {
    throw bodyError ?? error
  }
}

/** Runs `task` for every item, at most `limit` at once; after a failure starts no more, and throws it once the running ones end. */
async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (!failure && next < items.length) {
      try {
        await task(items[next++]!)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failure) throw failure.error
}

export const fetchMediaJob = defineJobKind({
  kind: 'fetch_media',
  params: Type.Object({}, { additionalProperties: false }),
  maxAttempts: 3,
  repositoryScoped: true,
  run: (job, services) => fetchMissingMedia(job, services),
})
