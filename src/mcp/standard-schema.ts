// The MCP SDK takes tool schemas as Standard Schema with JSON Schema (what Zod 4, ArkType and
// Valibot implement); kgs's schemas are TypeBox, which is JSON Schema already. This adapter is
// all it takes: the JSON Schema is the TypeBox schema itself, validation its compiled checker.
import type { TObject } from '@sinclair/typebox'
import { TypeCompiler, type ValueError } from '@sinclair/typebox/compiler'
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server'

/**
 * Elysia's t.Integer is `anyOf: [numeric string, integer]` (query strings carry numbers as text);
 * an MCP answer carries real numbers, and hosts' validators do not know the string's format.
 * Elysia's `error` (the message of its 400) is no JSON Schema keyword: strict validators refuse it.
 */
function plainJsonSchema(key: string, value: unknown): unknown {
  if (key === 'error' && typeof value === 'string') return undefined
  const anyOf = (value as { anyOf?: { format?: string; type?: string }[] } | null)?.anyOf
  return anyOf?.length === 2 && anyOf[0]!.format === 'integer' && anyOf[0]!.type === 'string' ? anyOf[1] : value
}

/** An error in words a model can act on: an enumeration (a union of literals) names its values. */
function explain(error: ValueError): string {
  const choices = (error.schema.anyOf as { const?: unknown }[] | undefined)?.map((variant) => variant.const)
  return choices?.length && choices.every((choice) => typeof choice === 'string')
    ? `expected one of ${choices.join(', ')}`
    : error.message
}

/** `schema` (a tool's arguments or answer: always an object) as the SDK's tools take it. */
export function standardSchema(schema: TObject): StandardSchemaWithJSON<Record<string, unknown>> {
  const checker = TypeCompiler.Compile(schema)
  // A plain copy: TypeBox marks its schemas with symbol keys, which JSON Schema has no use for.
  const json = JSON.parse(JSON.stringify(schema), plainJsonSchema) as Record<string, unknown>
  return {
    '~standard': {
      version: 1,
      vendor: 'typebox',
      validate(value) {
        if (checker.Check(value)) return { value }
        return {
          issues: [...checker.Errors(value)].map((error) => ({
            message: `${error.path || '(arguments)'}: ${explain(error)}`,
            path: error.path.split('/').filter(Boolean),
          })),
        }
      },
      jsonSchema: { input: () => json, output: () => json },
    },
  }
}
