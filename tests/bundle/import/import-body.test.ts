// The import route's JSON body is validated by the schema that documents it: a body passes the
// route exactly when it fits that schema (the route's answers are in tests/bundle/import/import.test.ts).
import { describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { RegistryImportBody, registryImportParams } from '../../../src/bundle/import/import-body.ts'

const uuid = 'F0E1D2C3-B4A5-4697-8899-AABBCCDDEEFF'
const sha256 = 'ab'.repeat(32)

describe('the import body', () => {
  const bodies: unknown[] = [
    { graph_id: uuid },
    { graph_id: uuid.toLowerCase() },
    { name: 'physics', sha256 },
    { name: ' x ', sha256 },
    { name: 'x'.repeat(255), sha256 },
    { name: 'x'.repeat(256), sha256 },
    { name: ' \t ', sha256 },
    { name: '', sha256 },
    { name: 'x', sha256: sha256.toUpperCase() },
    { name: 'x' },
    { sha256 },
    { graph_id: 'not-a-uuid' },
    { graph_id: uuid, extra: 1 },
    { graph_id: uuid, name: 'x', sha256 },
    {},
    [],
    'graph',
    null,
  ]

  test('passes exactly the bodies its schema accepts, each refusal a 400 naming the problem', () => {
    for (const body of bodies) {
      let refusal: { status: number; message: string } | undefined
      try {
        registryImportParams(body)
      } catch (error) {
        refusal = { status: (error as { status: number }).status, message: (error as Error).message }
      }
      expect({ body, accepted: refusal === undefined }).toEqual({
        body,
        accepted: Value.Check(RegistryImportBody, body),
      })
      if (refusal) expect(refusal).toEqual({ status: 400, message: expect.stringMatching(/^invalid body: \S/) })
    }
  })

  test('graph_id comes out in lower case; a name and sha256 as given', () => {
    expect(registryImportParams({ graph_id: uuid })).toEqual({ graph_id: uuid.toLowerCase() })
    expect(registryImportParams({ name: ' x ', sha256 })).toEqual({ name: ' x ', sha256 })
  })

  test('a refusal names the field and what it expects', () => {
    const message = (body: unknown) => {
      try {
        registryImportParams(body)
      } catch (error) {
        return (error as Error).message
      }
    }
    expect(message({ name: 'x'.repeat(256), sha256 })).toBe(
      'invalid body: name: expected a graph name of 1-255 characters',
    )
    expect(message({ name: ' \t ', sha256 })).toBe('invalid body: name: expected a graph name of 1-255 characters')
    expect(message({ sha256 })).toBe('invalid body: name: expected a graph name of 1-255 characters')
    expect(message({ graph_id: uuid, extra: 1 })).toBe(
      'invalid body: unknown field "extra"; expected {"graph_id": "<uuid>"} or {"name": "...", "sha256": "<64 hex digits>"}',
    )
    expect(message('graph')).toBe(
      'invalid body: expected an object: {"graph_id": "<uuid>"} or {"name": "...", "sha256": "<64 hex digits>"}',
    )
  })
})
