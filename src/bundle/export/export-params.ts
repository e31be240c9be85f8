// The export's parameters: the export_graph job's params, which are also the export route's body.
import { Type, type Static } from '@sinclair/typebox'

const RFC3339 = '^(\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2})(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$'

export const ExportParams = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        // Not blank, no control characters: the name also travels in the X-Graph-Name header.
        pattern: '^[^\\x00-\\x1f\\x7f]*[^\\s\\x00-\\x1f\\x7f][^\\x00-\\x1f\\x7f]*$',
        error: 'expected 1-200 characters, not all blank, without control characters',
        description: "the graph's name; default: the repository's name",
      }),
    ),
    description: Type.Optional(
      Type.String({
        maxLength: 10_000,
        error: 'expected at most 10,000 characters',
        description: "default: the repository's description",
      }),
    ),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 64,
        error: 'expected an array of at most 64 strings of 1-100 characters',
      }),
    ),
    include_bodies: Type.Optional(
      Type.Boolean({ error: 'expected a boolean', description: 'embed stored source bodies (default false)' }),
    ),
    include_images: Type.Optional(
      Type.Boolean({ error: 'expected a boolean', description: 'embed stored source images (default true)' }),
    ),
    exported_at: Type.Optional(
      Type.String({
        pattern: RFC3339,
        error: 'expected an RFC 3339 date-time such as 2026-01-02T03:04:05Z',
        description: 'RFC 3339; the same time and graph give the same sha256 (default: when the export was requested)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type ExportParams = Static<typeof ExportParams>

/**
 * `exported_at` as the bundle writes it (UTC, fraction without trailing zeros, digits beyond
 * milliseconds kept), or undefined when the text is not a valid RFC 3339 date-time.
 */
export function normalizeExportedAt(text: string): string | undefined {
  const match = new RegExp(RFC3339).exec(text)
  if (!match) return undefined
  const [, seconds, fraction = '', zone] = match as unknown as [string, string, string | undefined, string]
  // Date accepts days like February 30 by rolling over: the fields must come back unchanged.
  if (new Date(`${seconds}Z`).toISOString().slice(0, 19) !== seconds) return undefined
  const digits = fraction.slice(1).replace(/0+$/, '')
  return `${new Date(seconds + zone).toISOString().slice(0, 19)}${digits ? `.${digits}` : ''}Z`
}
