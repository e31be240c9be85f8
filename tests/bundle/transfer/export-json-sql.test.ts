// The row JSON PostgreSQL builds for the export is the bundle encoder's, byte for byte: every
// section the database encodes, every field empty, absent and present, with the strings Go
// escapes differently from a plain JSON encoder (HTML-safe < > & U+2028 U+2029, controls).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../../helpers/backend.ts'
import { startTestServer, type TestServer } from '../../helpers/server.ts'
import { ROW_CODECS } from '../../../src/bundle/format/codecs.ts'
import { rowFields } from '../../../src/bundle/format/compile.ts'
import { ROW_SCHEMAS, type RowSection } from '../../../src/bundle/format/schema.ts'
import { rowJsonSql } from '../../../src/bundle/transfer/export-json-sql.ts'

const ENCODED: RowSection[] = ['sources', 'source_images', 'source_bodies', 'facts', 'fact_sources', 'concepts', 'concept_aliases', 'fact_concepts', 'investigations', 'investigation_sources']

const TRICKY = 'a<b>&"c" \\ \n\t\r\b\f\u0001\u001f\u007f \u2028\u2029 é 😀 </script>'
const SQL_TYPES = { integer: 'int8', string: 'text', boolean: 'bool', integers: 'int8[]', strings: 'text[]' } as const

/** Rows of a section: each field empty (or absent), then at a second value, then a third. */
function variants(section: RowSection): Record<string, unknown>[] {
  const values = { integer: [0, 7, -1], string: ['', TRICKY, 'plain'], boolean: [false, true, true], integers: [[], [3, 0, 12], [1]], strings: [[], [TRICKY, ''], ['x']] }
  return [0, 1, 2, 3].map((variant) =>
    Object.fromEntries(
      rowFields(ROW_SCHEMAS[section]).map((field) => {
        const kind = field.kind as keyof typeof values
        // A required field always has a value; variant 3 leaves every optional one out (NULL).
        const value = variant === 3 ? (field.required ? values[kind][1] : null) : values[kind][field.required && variant === 0 ? 1 : variant % 3]
        return [field.name, value]
      }),
    ),
  )
}

describe(`the export's SQL row encoder (${BACKEND})`, () => {
  let server: TestServer
  let sql: ReturnType<TestServer['systemSql']>
  beforeAll(async () => {
    server = await startTestServer()
    sql = server.systemSql()
  })
  afterAll(async () => {
    await sql.end()
    await server.stop()
  })

  test('writes what the bundle encoder writes, for every section it encodes', async () => {
    for (const section of ENCODED) {
      const fields = rowFields(ROW_SCHEMAS[section])
      for (const row of variants(section)) {
        const columns = fields.map((field, i) => `$${i + 1}::${SQL_TYPES[field.kind as keyof typeof SQL_TYPES]} AS "${field.name}"`).join(', ')
        const [result] = await sql.unsafe(
          `SELECT ${rowJsonSql(section)} AS json FROM (SELECT ${columns}) r`,
          fields.map((field) => row[field.name] as never),
        )
        const expected = ROW_CODECS[section].encode(Object.fromEntries(Object.entries(row).map(([key, value]) => [key, value ?? undefined])) as never)
        expect({ section, json: result!.json }).toEqual({ section, json: expected })
      }
    }
  })
})
