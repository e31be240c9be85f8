// The blob store the configuration names. Apart from store.ts so that the interface there does
// not import its implementations, which import it.
import { join } from 'node:path'
import type { Config } from '../config.ts'
import { LocalBlobStore } from './local.ts'
import { S3BlobStore } from './s3.ts'
import type { BlobStore } from './store.ts'

export function openBlobStore(config: Config): BlobStore {
  return config.s3 ? new S3BlobStore(config.s3) : new LocalBlobStore(join(config.dataDir, 'blobs'))
}
