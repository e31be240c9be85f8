// The OpenAPI document's tags say what the routes are, so they cannot drift from them: every
// operation carries exactly one tag, every tag it names is declared with a description, and every
// declared tag is used.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

interface Document {
  tags: { name: string; description: string }[]
  paths: Record<string, Record<string, { tags?: string[] }>>
}

let server: TestServer
let document: Document

beforeAll(async () => {
  server = await startTestServer()
  document = (await (await fetch(`${server.url}/swagger/json`)).json()) as Document
})
afterAll(() => server.stop())

describe(`the OpenAPI tags (${BACKEND})`, () => {
  const operations = () =>
    Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        name: `${method.toUpperCase()} ${path}`,
        tags: operation.tags ?? [],
      })),
    )

  test('every operation has exactly one tag, and it is declared', () => {
    const declared = new Set(document.tags.map((tag) => tag.name))
    const wrong = operations()
      .filter((operation) => operation.tags.length !== 1 || !declared.has(operation.tags[0]!))
      .map((operation) => `${operation.name}: ${operation.tags.join(', ') || 'no tag'}`)
    expect(wrong).toEqual([])
  })

  test('every declared tag is used and described', () => {
    const used = new Set(operations().flatMap((operation) => operation.tags))
    expect(
      document.tags.filter((tag) => !used.has(tag.name) || tag.description.trim() === '').map((tag) => tag.name),
    ).toEqual([])
  })
})
