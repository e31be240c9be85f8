// Where the compiled binary keeps the native libraries it carries, so that dlopen can load them
// from a real file: the user's cache directory, not the temporary one (often a tmpfs, that is
// memory, and emptied at every boot). Files are named by their content hash, so a cached copy
// serves every start of the same build and a new build writes its own.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { basename, join } from 'node:path'

function cacheDirectory(): string {
  const home = homedir()
  const base = process.env.XDG_CACHE_HOME || (home ? join(home, process.platform === 'darwin' ? 'Library/Caches' : '.cache') : join(tmpdir(), `kgs-${process.getuid?.() ?? 'user'}`))
  const dir = join(base, 'kgs')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // A library loaded from here runs as this user: nobody else may be able to put one here.
  const stat = statSync(dir)
  if ((stat.mode & 0o022) !== 0 || (process.getuid && stat.uid !== process.getuid())) throw new Error(`cache directory ${dir} must belong to this user and be writable by nobody else`)
  return dir
}

/**
 * A real file with the bytes of `embedded` (`size` of them), named as it is (Bun names embedded
 * files by their content hash); `copy` writes it when the cache has no complete copy yet.
 */
export async function cachedAddon(embedded: string, size: number, copy: (to: string) => Promise<void>): Promise<string> {
  const target = join(cacheDirectory(), basename(embedded))
  if (existsSync(target) && statSync(target).size === size) return target
  // Written aside and renamed: a start that is killed midway, or another process copying at the
  // same time, never leaves a partial library under the real name.
  const staging = `${target}.${randomBytes(6).toString('hex')}.partial`
  try {
    await copy(staging)
    renameSync(staging, target)
  } finally {
    rmSync(staging, { force: true })
  }
  return target
}
