// ExpiringMap: the one mechanism behind the service's caches and revocation sets.
import { afterEach, expect, test, setSystemTime } from 'bun:test'
import { ExpiringMap } from '../src/expiring.ts'

afterEach(() => setSystemTime())

test('an entry lives until its deadline, then is gone', () => {
  const now = Date.now()
  setSystemTime(new Date(now))
  const map = new ExpiringMap<string, number>()
  map.set('a', 1, now + 1000)
  expect(map.get('a')).toBe(1)
  expect(map.has('a')).toBe(true)
  setSystemTime(new Date(now + 1000))
  expect(map.get('a')).toBeUndefined()
  expect(map.has('a')).toBe(false)
})

test('at its bound the oldest entry gives way; setting a key again makes it the newest', () => {
  const until = Date.now() + 60_000
  const map = new ExpiringMap<string, number>(2)
  map.set('a', 1, until)
  map.set('b', 2, until)
  map.set('a', 3, until) // refreshed: b is now the oldest
  map.set('c', 4, until)
  expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([3, undefined, 4])
})

test('prune drops expired entries; delete and clear drop any', () => {
  const now = Date.now()
  setSystemTime(new Date(now))
  const map = new ExpiringMap<string, true>()
  map.set('old', true, now + 10)
  map.set('new', true, now + 10_000)
  map.set('gone', true, now + 10_000)
  setSystemTime(new Date(now + 100))
  map.prune()
  map.delete('gone')
  expect([map.has('old'), map.has('new'), map.has('gone')]).toEqual([false, true, false])
  map.clear()
  expect(map.has('new')).toBe(false)
})
