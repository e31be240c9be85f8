// A row section's JSON built by PostgreSQL, byte for byte what the bundle encoder writes
// (format/compile.ts, format/json.ts): the export reads such rows as bytes and hands them to
// hashing and compression without decoding a field, which is most of what reading rows through
// the driver costs. The expression is generated from the same row schema as the encoder, so the
// key order and Go's omitempty follow the schema in both.
//
// Strings: PostgreSQL's to_json escapes `"`, `\`, \b \f \n \r \t and other controls as
// lowercase \u00xx, as JSON.stringify and Go do; Go's HTML-safe escapes of < > & U+2028 U+2029
// are added here. Text in PostgreSQL is valid UTF-8, so there are no lone surrogates to replace.
// Numbers other than integers are not built here: float8out's spelling is not Go's (1e-07).
import type { TObject } from '@sinclair/typebox'
import { rowFields, type Field } from '../format/compile.ts'
import { ROW_SCHEMAS, type RowSection } from '../format/schema.ts'

/** What Go escapes beyond to_json: each character (as SQL) and its escape. */
const HTML_SAFE: [string, string][] = [
  ["'<'", '\\u003c'],
  ["'>'", '\\u003e'],
  ["'&'", '\\u0026'],
  ['chr(8232)', '\\u2028'],
  ['chr(8233)', '\\u2029'],
]

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`
const column = (name: string) => `r."${name}"`

function jsonString(value: string): string {
  return HTML_SAFE.reduce((sql, [from, to]) => `replace(${sql}, ${from}, ${literal(to)})`, `to_json((${value})::text)::text`)
}

function encodeValue(field: Field, value: string): string {
  switch (field.kind) {
    case 'integer':
      return `(${value})::bigint::text`
    case 'string':
      return jsonString(value)
    case 'boolean':
      return `CASE WHEN ${value} THEN 'true' ELSE 'false' END`
    case 'integers':
      return `'[' || array_to_string(${value}, ',') || ']'`
    case 'strings':
      return `'[' || coalesce((SELECT string_agg(${jsonString('e')}, ',' ORDER BY n) FROM unnest(${value}) WITH ORDINALITY AS u (e, n)), '') || ']'`
    case 'number':
      throw new Error(`bundle schema: ${field.name} is a number, which only the JavaScript encoder writes`)
  }
}

/** Go's omitempty: '', 0, false and empty arrays are left out (so is NULL). */
function present(field: Field, value: string): string {
  switch (field.kind) {
    case 'integer':
      return `coalesce(${value}, 0) <> 0`
    case 'string':
      return `coalesce(${value}, '') <> ''`
    case 'boolean':
      return `coalesce(${value}, false)`
    default:
      return `coalesce(cardinality(${value}), 0) > 0`
  }
}

function rowJsonExpression(schema: TObject): string {
  const parts = rowFields(schema).map((field, i) => {
    if (field.default !== undefined) throw new Error(`bundle schema: ${field.name} has a default, which the SQL encoder does not write`)
    const value = column(field.name)
    const keyed = `${literal(`${i === 0 ? '' : ','}${JSON.stringify(field.name)}:`)} || ${encodeValue(field, value)}`
    return field.required ? keyed : `CASE WHEN ${present(field, value)} THEN ${keyed} ELSE '' END`
  })
  return `'{' || ${parts.join(' || ')} || '}'`
}

const EXPRESSIONS = new Map<RowSection, string>()

/**
 * The SQL expression of a section's row JSON over a subquery aliased `r` whose columns are
 * named as the row's fields (NULL for absent), made once per section. It holds only the
 * schema's own names and constants.
 */
export function rowJsonSql(section: RowSection): string {
  let expression = EXPRESSIONS.get(section)
  if (expression === undefined) EXPRESSIONS.set(section, (expression = rowJsonExpression(ROW_SCHEMAS[section])))
  return expression
}
