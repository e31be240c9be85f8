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
import { createHash } from 'node:crypto'
import { CITATION, conceptKey, type CitedKind } from '../../graph/rules.ts'

export { citedIds, type CitedKind } from '../../graph/rules.ts'

/** The namespace of kgs's portable UUIDs (random, fixed forever: changing it breaks every bundle's citations). */
const NAMESPACE = Buffer.from('33dc3f8a50c74c559a9feba8fda4a6eb', 'hex')

function nameBasedUuid(name: string): string {
  const digest = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest()
  digest[6] = (digest[6]! & 0x0f) | 0x50 // version 5
  digest[8] = (digest[8]! & 0x3f) | 0x80 // RFC 9562 variant
  const hex = digest.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** The portable UUID of a fact: from its content hash (what import dedups facts on). */
export function portableFactId(contentHash: string): string {
  return nameBasedUuid(`fact\u0000${contentHash}`)
}

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
export function rewriteCitations(text: string, replacement: (kind: CitedKind, id: string) => string | undefined): RewriteResult {
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
