// LocalIds: an import's local UUIDs by bundle position, sent to PostgreSQL as array literals.
import { expect, test } from 'bun:test'
import { LocalIds } from '../../../src/bundle/import/import-ids.ts'
import { uuidText } from '../../../src/uuid.ts'

test('a list gives each position its UUID in lower case, NULL where none was set, in the order asked', () => {
  const ids = new LocalIds()
  const first = crypto.randomUUID()
  const far = 'ABCDEF01-2345-6789-ABCD-EF0123456789'
  ids.set(0, first)
  ids.set(5000, far)
  expect(ids.list([5000, 1, 0, 99_999, 0])).toBe(`{${far.toLowerCase()},NULL,${first},NULL,${first}}`)
  expect(ids.list([])).toBe('{}')
})

test('a position set again keeps the later UUID', () => {
  const ids = new LocalIds()
  const later = crypto.randomUUID()
  ids.set(3, crypto.randomUUID())
  ids.set(3, later)
  expect(ids.list([3])).toBe(`{${later}}`)
})

test('uuidText writes the text form of 16 bytes', () => {
  const id = crypto.randomUUID()
  expect(uuidText(Buffer.from(id.replaceAll('-', ''), 'hex'))).toBe(id)
  expect(uuidText(Buffer.concat([Buffer.alloc(3), Buffer.from(id.replaceAll('-', ''), 'hex')]), 3)).toBe(id)
})
