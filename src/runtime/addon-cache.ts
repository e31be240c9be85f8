// Where the compiled binary keeps the native libraries it carries, so that dlopen can load them
// from a real file: the user's cache directory, not the temporary one (often a tmpfs, that is
// memory, and emptied at every boot).
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'

function cacheDirectory(): string {
  const home = homedir()
  const base =
    process.env.XDG_CACHE_HOME ||
    (home
      ? join(home, process.platform === 'darwin' ? 'Library/Caches' : '.cache')
      : join(tmpdir(), `kgs-${process.getuid?.() ?? 'user'}`))
  const dir = join(base, 'kgs')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // A library loaded from here runs as this user: nobody else may be able to put one here.
  const stat = statSync(dir)
  if ((stat.mode & 0o022) !== 0 || (process.getuid && stat.uid !== process.getuid()))
    throw new Error(`cache directory ${dir} must belong to this user and be writable by nobody else`)
  return dir
}

/**
 * The path of the cached library `name` (named by its content hash, so a copy serves every start
 * of one build and another build writes its own), of `size` bytes; `write` makes it when the cache
 * has no complete copy yet.
 */
export async function cachedAddon(name: string, size: number, write: (to: string) => Promise<void>): Promise<string> {
  const target = join(cacheDirectory(), name)
  if (existsSync(target) && statSync(target).size === size) return target
  // Written aside and renamed: a start that is killed midway, or another process writing at the
  // same time, never leaves a partial library under the real name.
  const staging = `${target}.${randomBytes(6).toString('hex')}.partial`
  try {
    await write(staging)
    if (statSync(staging).size !== size)
      throw new Error(`the native library ${name} unpacked to ${statSync(staging).size} bytes, not ${size}`)
    renameSync(staging, target)
  } finally {
    rmSync(staging, { force: true })
  }
  return target
}
