// The content hashes a bundle carries beside its rows (docs/spec/bundle.md §2).
// A fact's content_hash is the graph's own rule (src/graph/rules.ts), which the write API shares.
import { sha256Hex } from '../../graph/rules.ts'

export { factContentHash, normalizeFactText } from '../../graph/rules.ts'

/** A source's `sha256`: hex SHA-256 of url + parsed_text + parsed_markdown + parsed_title. */
export function sourceSha256(source: {
  url: string
  parsed_text?: string
  parsed_markdown?: string
  parsed_title?: string
}): string {
  return sha256Hex(
    source.url + (source.parsed_text ?? '') + (source.parsed_markdown ?? '') + (source.parsed_title ?? ''),
  )
}
