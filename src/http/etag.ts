// ETags of the API's rows: what a later conditional request names in If-Match.
import { hash } from 'node:crypto'

/** A row's ETag: a hash of the representation the API answers with (strong, quoted). */
export function etagOf(row: unknown): string {
  return `"${hash('sha256', JSON.stringify(row), 'hex').slice(0, 32)}"`
}
