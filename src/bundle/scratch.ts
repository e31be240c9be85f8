// Local scratch files of the bundle jobs, under DATA_DIR/tmp: the export's gzip before it is
// pushed, and the import's copy of a registry bundle. Each is named after its job and attempt, so
// a file is known to be garbage once its job is no longer running (a process killed mid-job
// leaves one behind); sweepScratch removes those. Several processes may share a DATA_DIR, hence
// the check against the job table rather than "everything at start-up"; and a file made after
// that check (an attempt that began meanwhile) is left for the next sweep.
import { mkdir, readdir, rm, stat, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { Sql } from 'postgres'

export type ScratchUse = 'export' | 'import'

/** A job's scratch file, or one of the spool files beside it (`.section`, export-prefetch.ts). */
const SCRATCH_NAME =
  /^(export|import)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)\.json\.gz(\.[a-z_]+)?$/

export const scratchDir = (dataDir: string) => join(dataDir, 'tmp')

const fileName = (use: ScratchUse, job: { id: string; attempt: number }) => `${use}-${job.id}-${job.attempt}.json.gz`

/**
 * The scratch file of a job's attempt (its directory created, private to the service's user).
 * The files of the job's earlier attempts (spools included) are removed: an attempt that follows
 * one whose process was killed is the first to know those files are garbage (the sweeps keep the
 * files of a running job).
 */
export async function scratchFile(
  dataDir: string,
  use: ScratchUse,
  job: { id: string; attempt: number },
): Promise<string> {
  const dir = scratchDir(dataDir)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  for (const name of await readdir(dir)) {
    const match = SCRATCH_NAME.exec(name)
    if (match?.[1] === use && match[2] === job.id && Number(match[3]) < job.attempt)
      await rm(join(dir, name), { force: true })
  }
  return join(dir, fileName(use, job))
}

/** Removes the scratch files whose job is not running (finished, queued again, or gone). Returns how many. */
export async function sweepScratch(system: Sql, dataDir: string): Promise<number> {
  const dir = scratchDir(dataDir)
  const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[]
    throw error
  })
  const files = names.flatMap((name) => {
    const match = SCRATCH_NAME.exec(name)
    return match ? [{ name, jobId: match[2]! }] : []
  })
  if (files.length === 0) return 0
  const checkedAt = Date.now()
  const running = new Set(
    (
      await system<
        { id: string }[]
      >`SELECT id FROM jobs WHERE id = ANY(${files.map((file) => file.jobId)}::uuid[]) AND status = 'running'`
    ).map((row) => row.id),
  )
  let removed = 0
  for (const file of files) {
    if (running.has(file.jobId)) continue
    const path = join(dir, file.name)
    const made = await stat(path).then(
      (info) => info.mtimeMs,
      () => Infinity,
    )
    if (made >= checkedAt) continue
    await rm(path, { force: true })
    removed++
  }
  return removed
}

/** Writes all of `data` at `position` (one write may take only part of it). */
export async function writeAll(file: FileHandle, data: Uint8Array, position: number): Promise<void> {
  for (let offset = 0; offset < data.byteLength; ) {
    const { bytesWritten } = await file.write(data, offset, data.byteLength - offset, position + offset)
    offset += bytesWritten
  }
}
