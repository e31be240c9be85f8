// Export of a repository as a graph bundle (docs/spec/bundle.md §4): how the file is laid out and
// written, from one snapshot of the repository (export-snapshot.ts) read inside one REPEATABLE
// READ transaction.
//
// The file's metadata holds the canonical hash, which is known only after every row: so the file
// starts with a gzip member of the head alone, stored uncompressed and so of a size known in
// advance; the rows follow as gzip members compressed on threads of their own (gzip-members.ts)
// while the same pass hashes them; and the head's member, written last, fills the room left for
// it. Memory holds the snapshot's batch plus the gzip members in flight.
import { open } from 'node:fs/promises'
import { gzipSync } from 'node:zlib'
import type { Sql, TransactionSql } from 'postgres'
import { VERSION } from '../../version.ts'
import { metered } from '../../memory.ts'
import type { Metadata } from '../format/schema.ts'
import { encodeBodyHashing, encodeFileHead, type BundleContent } from '../format/writer.ts'
import type { ExportCounts } from './export-positions.ts'
import { PREFETCHED_POSITIONS, PREFETCHED_SECTIONS } from './export-sections.ts'
import { Snapshot, type ExportServices, type SnapshotOptions } from './export-snapshot.ts'
import { Prefetch } from './export-prefetch.ts'
import { gzipMembers } from './gzip-members.ts'
import { writeAll } from '../scratch.ts'

export interface ExportOptions extends SnapshotOptions {
  name: string
  description?: string
  tags?: readonly string[]
  /** RFC 3339 UTC as written (normalizeExportedAt). */
  exportedAt: string
  /** PostgreSQL's work_mem for the export's transaction (e.g. '256MB'); unset, the server's own. */
  workMem?: string
  /**
   * Read the facts' links, the summaries and the syntheses ahead on a second connection of `sql`
   * (export-prefetch.ts), which must have one to spare.
   * PostgreSQL only: the embedded database serves one transaction at a time.
   */
  prefetch?: boolean
}

export interface ExportSummary {
  /** As written, with sha256. */
  metadata: Metadata
  counts: ExportCounts
  /** Size of the gzipped file. */
  bytes: number
}

/**
 * zlib's level for the rows' members. Measured on a 100k-fact bundle's JSON (57 MB) in 1 MiB
 * members: level 6 takes 0.81 s of CPU for 1.003 x what gzip -6 makes of the whole, level 4
 * 0.63 s for 1.015 x, level 3 0.56 s for 1.027 x (level 1: 1.5 x). The size target is 1.15 x.
 */
const GZIP_LEVEL = 3

/** A SHA-256 in hex: what the head's room is measured with before the hash is known. */
const UNKNOWN_SHA256 = '0'.repeat(64)

/** The gzip member of the file's head, stored (level 0): its size depends on the head's length only. */
const headMember = (content: BundleContent) => gzipSync(encodeFileHead(content), { level: 0 })

/**
 * Writes the bundle of the repository behind `sql` into the file at `path` (created, or
 * truncated; the caller removes it if this fails), from one snapshot read once.
 */
export async function exportRepository(
  sql: Sql,
  services: ExportServices,
  options: ExportOptions,
  path: string,
): Promise<ExportSummary> {
  const file = await open(path, 'w', 0o600)
  try {
    return await sql.begin('ISOLATION LEVEL REPEATABLE READ', async (tx) => {
      // Every cursor is read to its end: plan for all rows (hash joins), not for the first 10 %.
      await tx`SET LOCAL cursor_tuple_fraction = 1`
      await tx`SET LOCAL jit = off`
      // The ranking's and the link sections' sorts in memory rather than in temporary files.
      if (options.workMem) await tx`SELECT set_config('work_mem', ${options.workMem}, true)`
      const prefetch = options.prefetch
        ? new Prefetch(sql, {
            snapshot: (await tx<{ id: string }[]>`SELECT pg_export_snapshot() AS id`)[0]!.id,
            positions: PREFETCHED_POSITIONS,
            sections: PREFETCHED_SECTIONS,
            path,
            workMem: options.workMem,
            signal: options.signal,
          })
        : undefined
      try {
        return await writeBundle(tx, prefetch)
      } finally {
        await prefetch?.close()
      }
    })
  } finally {
    await file.close()
  }

  async function writeBundle(tx: TransactionSql, prefetch: Prefetch | undefined): Promise<ExportSummary> {
    let bytes = 0
    const snapshot = new Snapshot(tx, services, options, () => bytes, prefetch)
    const { counts, rowTotal, promptsetHashes, vectorKinds } = await snapshot.prepare()
    const vectors = await snapshot.loadVectors(vectorKinds)
    const metadata: Metadata = {
      name: options.name,
      description: options.description || undefined,
      tags: options.tags?.length ? [...options.tags] : undefined,
      okt_version: `kgs/${VERSION}`,
      promptset_hashes: promptsetHashes.length ? promptsetHashes : undefined,
      source_count: counts.sources,
      fact_count: counts.facts,
      concept_count: counts.concepts,
      summary_count: counts.summaries,
      synthesis_count: counts.syntheses,
      report_count: counts.reports,
      investigation_count: counts.investigations,
      exported_at: options.exportedAt,
      ...(vectors > 0
        ? { embedding_model: services.embedder.model, embedding_dimensions: services.embedder.dimensions }
        : {}),
    }

    snapshot.startPhase('writing', rowTotal + vectors)
    const content = snapshot.content(metadata)
    const room = headMember({ ...content, metadata: { ...metadata, sha256: UNKNOWN_SHA256 } }).byteLength
    bytes = room
    const body = encodeBodyHashing(content)
    for await (const member of gzipMembers(metered(body.chunks), { level: GZIP_LEVEL })) {
      await writeAll(file, member, bytes)
      bytes += member.byteLength
    }
    const written: Metadata = { ...metadata, sha256: body.sha256() }
    const head = headMember({ ...content, metadata: written })
    // A stored member's size follows from its content's length, and a SHA-256 is always 64 characters.
    if (head.byteLength !== room)
      throw new Error(`the head took ${head.byteLength} bytes where ${room} were left for it`)
    await writeAll(file, head, 0)
    return { metadata: written, counts, bytes }
  }
}
