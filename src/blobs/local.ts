// Blobs as files under DATA_DIR/blobs, the key being the relative path. A put writes a temporary
// file in DATA_DIR/blobs/.tmp, fsyncs it and renames it into place: rename within one
// filesystem is atomic, so a reader sees the old blob or the new one, never a partial one.
import { runtime } from '../runtime/index.ts'
import { randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, rmSync, statSync, type Dirent } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import {
  BlobNotFoundError,
  InvalidBlobKeyError,
  assertValidKey,
  assertValidPrefix,
  bodyChunks,
  describeKey,
  isValidKey,
  type BlobBody,
  type BlobStore,
  type PutOptions,
} from './store.ts'

const TEMP_FOLDER = '.tmp'
/** A temporary file this old belongs to a put that died with its process. */
const STALE_TEMP_MS = 24 * 3600 * 1000
const READ_CHUNK_BYTES = 256 * 1024

/** The key names no blob: nothing there, a folder of other keys, or a path through a blob. */
const isAbsent = (error: unknown) =>
  ['ENOENT', 'ENOTDIR', 'EISDIR'].includes((error as NodeJS.ErrnoException).code ?? '')

export class LocalBlobStore implements BlobStore {
  private readonly temp: string

  constructor(readonly root: string) {
    this.temp = join(root, TEMP_FOLDER)
    mkdirSync(this.temp, { recursive: true, mode: 0o700 })
    this.removeStaleTempFiles()
  }

  async put(key: string, body: BlobBody, options: PutOptions = {}): Promise<{ bytes: number }> {
    const path = this.pathOf(key)
    const temp = join(this.temp, randomUUID())
    let bytes = 0
    try {
      const handle = await open(temp, 'wx', 0o600)
      try {
        for await (const chunk of bodyChunks(body, options.maxBytes)) {
          await writeAll(handle, chunk)
          bytes += chunk.byteLength
        }
        await handle.sync()
      } finally {
        await handle.close()
      }
      await mkdir(dirname(path), { recursive: true, mode: 0o700 })
      await rename(temp, path)
    } catch (error) {
      await rm(temp, { force: true })
      throw keyConflictOr(error, key)
    }
    // The rename itself is durable only once its folder is.
    await syncFolder(dirname(path))
    return { bytes }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await (await runtime.openFile(this.pathOf(key))).bytes()
    } catch (error) {
      if (isAbsent(error)) return undefined
      throw error
    }
  }

  async stream(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    let handle: FileHandle
    try {
      handle = await open(this.pathOf(key), 'r')
    } catch (error) {
      if (isAbsent(error)) return undefined
      throw error
    }
    // Reading from the open descriptor: a put or delete meanwhile does not disturb this reader.
    if (!(await handle.stat()).isFile()) {
      await handle.close()
      return undefined
    }
    return fileStream(handle)
  }

  async responseBody(key: string): Promise<Blob | undefined> {
    return (await this.stat(key)) ? await runtime.openFile(this.pathOf(key)) : undefined
  }

  async stat(key: string): Promise<{ bytes: number } | undefined> {
    try {
      const stats = await stat(this.pathOf(key))
      return stats.isFile() ? { bytes: stats.size } : undefined
    } catch (error) {
      if (isAbsent(error)) return undefined
      throw error
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathOf(key))
    } catch (error) {
      if (!isAbsent(error)) throw error
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (prefix === '') throw new InvalidBlobKeyError('refusing to delete every blob (empty prefix)')
    let deleted = 0
    for await (const key of this.list(prefix)) {
      try {
        await unlink(this.pathOf(key))
        deleted++
      } catch (error) {
        if (!isAbsent(error)) throw error
      }
    }
    return deleted
  }

  async move(from: string, to: string): Promise<void> {
    const source = this.pathOf(from)
    const target = this.pathOf(to)
    // rename() would also move a folder, i.e. every key under `from/`.
    if (!(await this.stat(from))) throw new BlobNotFoundError(from)
    try {
      await mkdir(dirname(target), { recursive: true, mode: 0o700 })
      await rename(source, target)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(from)
      throw keyConflictOr(error, to)
    }
    await syncFolder(dirname(target))
  }

  async *list(prefix: string): AsyncGenerator<string> {
    assertValidPrefix(prefix)
    yield* this.walk(prefix.slice(0, prefix.lastIndexOf('/') + 1), prefix)
  }

  /** Keys in `folder` ('' or ending in '/') and below that start with `prefix`, sorted, read lazily. */
  private async *walk(folder: string, prefix: string): AsyncGenerator<string> {
    let entries: Dirent[]
    try {
      entries = await readdir(join(this.root, folder), { withFileTypes: true })
    } catch (error) {
      if (isAbsent(error)) return
      throw error
    }
    // A folder sorts as its name plus '/': exactly where its keys fall among its siblings'.
    const children = entries
      .filter((entry) => (entry.isFile() || entry.isDirectory()) && isValidKey(entry.name))
      .map((entry) => folder + entry.name + (entry.isDirectory() ? '/' : ''))
      .filter((path) => path.startsWith(prefix))
      .sort()
    for (const child of children) {
      if (child.endsWith('/')) yield* this.walk(child, prefix)
      else yield child
    }
  }

  private pathOf(key: string): string {
    assertValidKey(key)
    return join(this.root, key)
  }

  private removeStaleTempFiles(): void {
    const cutoff = Date.now() - STALE_TEMP_MS
    for (const name of readdirSync(this.temp)) {
      const path = join(this.temp, name)
      // Another process sharing the folder may be removing it too.
      const stats = statSync(path, { throwIfNoEntry: false })
      if (stats && stats.mtimeMs < cutoff) rmSync(path, { force: true })
    }
  }
}

/** A path component is a blob, or the target is a folder of other keys (see BlobStore). */
function keyConflictOr(error: unknown, key: string): unknown {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR') {
    return new InvalidBlobKeyError(
      `blob key ${describeKey(key)} conflicts with another blob: a key cannot also be a folder of keys`,
    )
  }
  return error
}

async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let written = 0; written < chunk.byteLength; ) written += (await handle.write(chunk, written)).bytesWritten
}

async function syncFolder(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

function fileStream(handle: FileHandle): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const buffer = new Uint8Array(READ_CHUNK_BYTES)
        const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, null)
        if (bytesRead > 0) return controller.enqueue(buffer.subarray(0, bytesRead))
        await handle.close()
        controller.close()
      } catch (error) {
        await handle.close().catch(() => {})
        throw error
      }
    },
    cancel: () => handle.close(),
  })
}
