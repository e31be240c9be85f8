// Compiles a row schema (src/bundle/schema.ts) into two specialised functions: an encoder that
// writes a row as Go would, and a validator that checks one parsed row. A bundle holds millions
// of rows; a generic walk over the schema for every value would cost more than the JSON work
// itself, so each schema becomes straight-line code once, at start-up. The generated code
// only ever contains the schema's own property names, never input.
import { OptionalKind, type TObject, type TSchema } from '@sinclair/typebox'
import { encodeFloat64, encodeString } from './json.ts'
import type { RowSection } from './schema.ts'

type FieldKind = 'integer' | 'number' | 'string' | 'boolean' | 'integers' | 'strings'

export interface Field {
  name: string
  kind: FieldKind
  required: boolean
  minimum?: number
  minLength?: number
  values?: readonly string[]
  default?: unknown
  ref?: RowSection
  position: boolean
  /** Go's omitempty on an int reference: absent = 0 where row 0 exists (schema.ts). */
  zeroOmitted: boolean
}

/** Checks a reference from the row being validated; returns a problem, or undefined when it holds. */
export type ReferenceCheck = (section: RowSection, index: number, field: string) => string | undefined
/** Whether row 0 of a section exists for the row being validated, or may (its section is still to come). */
export type ZeroExists = (section: RowSection) => boolean

export interface RowCodec<T> {
  /** The row as compact JSON with Go's rules; empty optional fields omitted. */
  encode(row: T): string
  /**
   * Checks a parsed row in place: fills the defaults of tolerated omissions, treats `null` in
   * an optional field as absent, and returns the first problem (or undefined).
   */
  validate(
    row: Record<string, unknown>,
    position: number,
    reference: ReferenceCheck,
    zeroExists?: ZeroExists,
  ): string | undefined
}

function fieldKind(name: string, schema: TSchema): FieldKind {
  if (schema.type === 'array') {
    const items = (schema as TSchema & { items: TSchema }).items
    if (items.type === 'integer') return 'integers'
    if (items.type === 'string') return 'strings'
  } else if (['integer', 'number', 'string', 'boolean'].includes(schema.type as string)) {
    return schema.type as FieldKind
  }
  throw new Error(`bundle schema: field ${name} has a type the codec does not know`)
}

/** A row schema's fields in key order, as the codecs see them. */
export function rowFields(schema: TObject): Field[] {
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    kind: fieldKind(name, property),
    required: !(OptionalKind in property),
    minimum: property.minimum as number | undefined,
    minLength: property.minLength as number | undefined,
    values: property.enum as string[] | undefined,
    default: property.default,
    ref: (property['x-ref'] ?? (property.type === 'array' ? property.items['x-ref'] : undefined)) as
      | RowSection
      | undefined,
    position: property['x-position'] === true,
    zeroOmitted: property['x-zero-omitted'] === true,
  }))
}

const prop = (name: string) => `r[${JSON.stringify(name)}]`

function encodeValue(field: Field, value: string): string {
  switch (field.kind) {
    case 'integer':
      return `'' + ${value}`
    case 'number':
      return `f64(${value})`
    case 'string':
      return `str(${value})`
    case 'boolean':
      return `(${value} ? 'true' : 'false')`
    case 'integers':
      return `'[' + ${value}.join(',') + ']'`
    case 'strings':
      return `'[' + ${value}.map(str).join(',') + ']'`
  }
}

function encoderSource(list: Field[]): string {
  const lines = [`let s = '{'`]
  list.forEach((field, i) => {
    const key = JSON.stringify(`${i === 0 ? '' : ','}${JSON.stringify(field.name)}:`)
    const value =
      field.default === undefined ? prop(field.name) : `(${prop(field.name)} ?? ${JSON.stringify(field.default)})`
    if (field.required) {
      lines.push(`s += ${key} + ${encodeValue(field, value)}`)
    } else {
      // Go's omitempty: '', 0, false and empty arrays are left out (so is null/undefined here).
      const present = field.kind === 'integers' || field.kind === 'strings' ? `${value} && ${value}.length > 0` : value
      lines.push(`if (${present}) s += ${key} + ${encodeValue(field, value)}`)
    }
  })
  lines.push(`return s + '}'`)
  return lines.join('\n')
}

const TYPE_NAMES: Record<FieldKind, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'a boolean',
  integers: 'an array of integers',
  strings: 'an array of strings',
}

function typeTest(kind: FieldKind, value: string): string {
  switch (kind) {
    case 'integer':
      return `Number.isSafeInteger(${value})`
    case 'number':
      return `typeof ${value} === 'number'`
    case 'string':
      return `typeof ${value} === 'string'`
    case 'boolean':
      return `typeof ${value} === 'boolean'`
    case 'integers':
      return `Array.isArray(${value}) && ${value}.every(Number.isSafeInteger)`
    case 'strings':
      return `Array.isArray(${value}) && ${value}.every((x) => typeof x === 'string')`
  }
}

function validatorSource(list: Field[]): string {
  const lines = ['let v']
  for (const field of list) {
    const name = JSON.stringify(field.name)
    const problem = (text: string) => `return ${JSON.stringify(`${field.name} ${text}`)}`
    lines.push(`v = ${prop(field.name)}`)
    if (field.required && field.default === undefined) {
      lines.push(`if (v === undefined || v === null) ${problem('is required')}`)
    } else if (field.zeroOmitted) {
      const zero = `zeroExists(${JSON.stringify(field.ref)}) ? 0 : undefined`
      lines.push(`if (v === undefined || v === null) { ${prop(field.name)} = ${zero} } else {`)
    } else {
      // A producer's null means "left out"; a tolerated omission takes its default.
      const absent =
        field.default === undefined
          ? `if (v === null) ${prop(field.name)} = undefined`
          : `${prop(field.name)} = v = ${JSON.stringify(field.default)}`
      lines.push(`if (v === undefined || v === null) { ${absent} } else {`)
    }
    lines.push(`if (!(${typeTest(field.kind, 'v')})) ${problem(`must be ${TYPE_NAMES[field.kind]}`)}`)
    if (field.minimum !== undefined) {
      const test = field.kind === 'integers' ? `v.some((x) => x < ${field.minimum})` : `v < ${field.minimum}`
      lines.push(`if (${test}) ${problem(`must be at least ${field.minimum}`)}`)
    }
    if (field.minLength) lines.push(`if (v.length < ${field.minLength}) ${problem('must not be empty')}`)
    if (field.values) {
      lines.push(
        `if (!${JSON.stringify(field.values)}.includes(v)) return ${JSON.stringify(`${field.name} must be one of ${field.values.join(', ')}, not `)} + JSON.stringify(v)`,
      )
    }
    if (field.position)
      lines.push(
        `if (v !== position) return ${JSON.stringify(`${field.name} is `)} + v + ' but the row is at position ' + position`,
      )
    if (field.ref) {
      const check = (value: string) => `p = reference(${JSON.stringify(field.ref)}, ${value}, ${name}); if (p) return p`
      if (field.kind === 'integers') lines.push(`for (const x of v) { let p; ${check('x')} }`)
      else lines.push(`if (v >= 0) { let p; ${check('v')} }`)
    }
    if (!(field.required && field.default === undefined)) lines.push('}')
  }
  lines.push('return undefined')
  return lines.join('\n')
}

export function compileRowCodec<T>(schema: TObject): RowCodec<T> {
  const list = rowFields(schema)
  if (!list[0]?.required) throw new Error('bundle schema: the first field of a row must be required')
  const encode = new Function('str', 'f64', `return function encodeRow(r) {\n${encoderSource(list)}\n}`)(
    encodeString,
    encodeFloat64,
  )
  const validate = new Function(
    `return function validateRow(r, position, reference, zeroExists) {\n${validatorSource(list)}\n}`,
  )()
  return { encode, validate }
}
