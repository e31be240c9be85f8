// The push headers (docs/spec/bundle.md §7): the graph's name, description, tags, hash, format
// version and counts, read from a push's raw header bytes and checked; 400 naming the header otherwise.
import { HttpError } from '../http/errors.ts'
import { COUNT_FIELDS, type GraphCounts } from './store.ts'

export const NAME_MAX = 255
const DESCRIPTION_MAX = 10_000
const TAGS_MAX = 64
const TAG_MAX = 100

const utf8 = new TextDecoder('utf-8', { fatal: true })
const CONTROL = /[\u0000-\u001f\u007f]/

export interface PushMetadata extends GraphCounts {
  name: string
  description: string
  tags: string[]
  sha256: string | null
  schema_version: number | null
}

const badHeader = (header: string, expected: string, value?: string) =>
  new HttpError(
    400,
    `invalid header: ${header}: ${expected}${value === undefined ? '' : ` (got ${value.length > 40 ? `${value.length} characters` : JSON.stringify(value)})`}`,
  )

/**
 * A header's value as the client's UTF-8. Header bytes reach us as a latin1-decoded string (each
 * byte one character), so the bytes are recovered and decoded again.
 */
function headerText(headers: Headers, header: string): string | undefined {
  const raw = headers.get(header)
  if (raw === null) return undefined
  try {
    return utf8.decode(Buffer.from(raw, 'latin1'))
  } catch {
    throw badHeader(header, 'expected UTF-8 text')
  }
}

function count(headers: Headers, header: string): number {
  const value = headers.get(header)?.trim()
  if (value === undefined || value === '') return 0
  if (!/^[0-9]{1,15}$/.test(value)) throw badHeader(header, 'expected a non-negative integer', value)
  return Number(value)
}

const COUNT_HEADERS: Record<(typeof COUNT_FIELDS)[number], string> = {
  source_count: 'X-Graph-Source-Count',
  fact_count: 'X-Graph-Fact-Count',
  concept_count: 'X-Graph-Concept-Count',
  summary_count: 'X-Graph-Summary-Count',
  synthesis_count: 'X-Graph-Synthesis-Count',
  report_count: 'X-Graph-Report-Count',
  investigation_count: 'X-Graph-Investigation-Count',
}

/** The push headers of docs/spec/bundle.md §7, checked; 400 naming the header otherwise. */
export function parsePushHeaders(headers: Headers): PushMetadata {
  const name = headerText(headers, 'X-Graph-Name')?.trim()
  if (!name) throw badHeader('X-Graph-Name', 'required: the graph name')
  if (name.length > NAME_MAX || CONTROL.test(name))
    throw badHeader('X-Graph-Name', `expected at most ${NAME_MAX} characters without control characters`, name)

  const description = headerText(headers, 'X-Graph-Description')?.trim() ?? ''
  if (description.length > DESCRIPTION_MAX)
    throw badHeader('X-Graph-Description', `expected at most ${DESCRIPTION_MAX} characters`, description)

  const tagsText = headerText(headers, 'X-Graph-Tags')
  let tags: string[] = []
  if (tagsText !== undefined && tagsText.trim() !== '') {
    let parsed: unknown
    try {
      parsed = JSON.parse(tagsText)
    } catch {
      parsed = undefined
    }
    const valid = (tag: unknown): tag is string =>
      typeof tag === 'string' && tag.length >= 1 && tag.length <= TAG_MAX && !CONTROL.test(tag)
    if (!Array.isArray(parsed) || !parsed.every(valid)) {
      throw badHeader('X-Graph-Tags', `expected a JSON array of strings of 1-${TAG_MAX} characters`, tagsText)
    }
    tags = [...new Set(parsed)]
    if (tags.length > TAGS_MAX) throw badHeader('X-Graph-Tags', `expected at most ${TAGS_MAX} tags`, tagsText)
  }

  const sha256 = headers.get('X-Graph-SHA256')?.trim() || null
  if (sha256 !== null && !/^[0-9a-f]{64}$/.test(sha256))
    throw badHeader('X-Graph-SHA256', 'expected 64 lowercase hexadecimal digits', sha256)

  const version = headers.get('X-Graph-Schema-Version')?.trim() || null
  if (version !== null && !/^[1-9][0-9]{0,8}$/.test(version))
    throw badHeader('X-Graph-Schema-Version', 'expected a positive integer', version)

  const counts = Object.fromEntries(
    COUNT_FIELDS.map((field) => [field, count(headers, COUNT_HEADERS[field])]),
  ) as GraphCounts
  return { name, description, tags, sha256, schema_version: version === null ? null : Number(version), ...counts }
}
