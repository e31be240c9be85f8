// The JSON body of an import from the registry: its schema documents the route and validates
// the body, and a refusal names the form it breaks (the body is read by the route itself, so
// Elysia's validation never sees it).
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { HttpError } from '../../http/errors.ts'
import { UUID_PATTERN } from '../../uuid.ts'

const NAME_MAX = 255
const SHA256_PATTERN = '^[0-9a-f]{64}$'
export const FORMS = `{"graph_id": "<uuid>"} or {"name": "...", "sha256": "<64 hex digits>"}`

export const RegistryImportBody = Type.Union([
  Type.Object(
    { graph_id: Type.String({ pattern: UUID_PATTERN, error: 'expected a UUID' }) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: NAME_MAX,
        pattern: '\\S',
        error: `expected a graph name of 1-${NAME_MAX} characters`,
      }),
      sha256: Type.String({ pattern: SHA256_PATTERN, error: 'expected 64 lowercase hexadecimal digits' }),
    },
    { additionalProperties: false },
  ),
])
export type RegistryImportBody = Static<typeof RegistryImportBody>

const invalid = (problem: string) => new HttpError(400, `invalid body: ${problem}`)

/** The body if it is one of the forms (graph_id in lower case), else 400 with what is wrong. */
export function registryImportParams(body: unknown): RegistryImportBody {
  if (Value.Check(RegistryImportBody, body))
    return 'graph_id' in body ? { graph_id: body.graph_id.toLowerCase() } : body
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid(`expected an object: ${FORMS}`)
  // The form the body means is the one whose fields it has.
  const keys = Object.keys(body)
  const unknown = keys.find((key) => !RegistryImportBody.anyOf.some((form) => Object.hasOwn(form.properties, key)))
  if (unknown !== undefined) throw invalid(`unknown field ${JSON.stringify(unknown)}; expected ${FORMS}`)
  const meant = RegistryImportBody.anyOf.filter((form) => keys.some((key) => Object.hasOwn(form.properties, key)))
  if (meant.length > 1) throw invalid('give graph_id, or name and sha256, not both')
  const problem = meant.length === 1 ? Value.Errors(meant[0]!, body).First() : undefined
  const field = problem?.path.slice(1)
  if (!problem || !field) throw invalid(`expected ${FORMS}`)
  throw invalid(`${field}: ${(problem.schema as { error?: string }).error ?? problem.message}`)
}
