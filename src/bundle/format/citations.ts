// Citations in summaries, syntheses and reports: `[text](<fact:UUID>)`, `![alt](<fact:UUID>)`,
// `[name](<concept:UUID>)` (docs/spec/bundle.md §2).
//
// A bundle's rows carry positions, not UUIDs, so a UUID inside a citation can only be matched to
// a row if it can be derived from the row. kgs therefore writes citations with *portable* UUIDs:
// name-based (RFC 9562 version 5) UUIDs of what identifies the row across instances, the same
// key the import deduplicates on: a fact's content hash, a concept's name and context. The
// export turns each stored (local) UUID into its portable one, the import turns each portable
// UUID back into the local UUID of the new or reused row. So a bundle does not depend on the
// UUIDs of the instance it came from, an imported repository cites its own rows, and exporting
// it again gives the same canonical hash. A citation that names no row (a portable UUID of a
// fact not in the bundle, or another producer's random UUID) is left as it is and counted.
import { hash } from 'node:crypto'
import { CITATION, conceptKey, type CitedKind } from '../../graph/rules.ts'
import { uuidText } from '../../uuid.ts'

export { citedIds, type CitedKind } from '../../graph/rules.ts'

/** The namespace of kgs's portable UUIDs (random, fixed forever: changing it breaks every bundle's citations). */
const NAMESPACE = Buffer.from('33dc3f8a50c74c559a9feba8fda4a6eb', 'hex')

/** The namespace, then room for the names of most rows (a longer one gets a buffer of its own). */
const NAMED = Buffer.alloc(4096)
NAMESPACE.copy(NAMED)

/**
 * The name-based UUID's bytes (the first 16 of the buffer). One import or export hashes a name
 * per fact and concept: one-shot hashing of one reused buffer.
 */
function nameBasedUuidBytes(name: string): Buffer {
  const most = NAMESPACE.length + name.length * 3 // UTF-8 takes at most 3 bytes per UTF-16 unit
  const named = most <= NAMED.length ? NAMED : Buffer.concat([NAMESPACE, Buffer.alloc(most - NAMESPACE.length)])
  const length = NAMESPACE.length + named.write(name, NAMESPACE.length, 'utf8')
  const digest = hash('sha1', named.subarray(0, length), 'buffer')
  digest[6] = (digest[6]! & 0x0f) | 0x50 // version 5
  digest[8] = (digest[8]! & 0x3f) | 0x80 // RFC 9562 variant
  return digest
}

const nameBasedUuid = (name: string) => uuidText(nameBasedUuidBytes(name))

/** The portable UUID of a fact: from its content hash (what import dedups facts on). */
export function portableFactId(contentHash: string): string {
  return nameBasedUuid(`fact\u0000${contentHash}`)
}

/** portableFactId as bytes: the first 16 of the buffer. */
export const portableFactIdBytes = (contentHash: string): Buffer => nameBasedUuidBytes(`fact\u0000${contentHash}`)

/** The portable UUID of a concept: from its name and context, case-folded (what import dedups concepts on). */
export function portableConceptId(canonicalName: string, context: string): string {
  return nameBasedUuid(`concept\u0000${conceptKey(canonicalName, context)}`)
}

export interface RewriteResult {
  text: string
  /** Citations whose UUID was replaced. */
  rewritten: number
  /** Citations left as they were: `replacement` knew no UUID for them. */
  unresolved: number
}

/** Replaces the UUID of every citation by `replacement(kind, lowercased uuid)`, or leaves it when that gives undefined. */
export function rewriteCitations(
  text: string,
  replacement: (kind: CitedKind, id: string) => string | undefined,
): RewriteResult {
  let rewritten = 0
  let unresolved = 0
  const result = text.replace(CITATION, (whole, kind: CitedKind, id: string) => {
    const to = replacement(kind, id.toLowerCase())
    if (to === undefined) {
      unresolved++
      return whole
    }
    rewritten++
    return `](<${kind}:${to}>)`
  })
  return { text: result, rewritten, unresolved }
}
