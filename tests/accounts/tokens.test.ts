// Session tokens: issued and verified through http/tokens.ts; verified tokens are remembered but
// still expire on time.
import { afterEach, expect, test, setSystemTime } from 'bun:test'
import { createSessionTokens } from '../../src/accounts/tokens.ts'

const options = { secret: 'k'.repeat(40), issuer: 'https://kgs.test', ttlSeconds: 60 }

afterEach(() => setSystemTime())

test('a token verifies with its claims; another issuer or secret does not', async () => {
  const tokens = createSessionTokens(options)
  const token = await tokens.issue('user-1', 'session-1')
  expect(await tokens.verify(token)).toMatchObject({
    sub: 'user-1',
    sid: 'session-1',
    iss: 'https://kgs.test',
    typ: 'session',
  })
  expect(await createSessionTokens({ ...options, issuer: 'https://other.test' }).verify(token)).toBeUndefined()
  expect(await createSessionTokens({ ...options, secret: 'x'.repeat(40) }).verify(token)).toBeUndefined()
})

test('a remembered token is refused once it has expired', async () => {
  const tokens = createSessionTokens(options)
  const now = Date.now()
  setSystemTime(new Date(now))
  const token = await tokens.issue('user-1', 'session-1')
  expect(await tokens.verify(token)).toBeDefined()
  expect(await tokens.verify(token)).toBeDefined() // from memory
  setSystemTime(new Date(now + 61_000))
  expect(await tokens.verify(token)).toBeUndefined()
})

test('expiry is capped by notAfter (the end of the session)', async () => {
  const tokens = createSessionTokens(options)
  const notAfter = Math.floor(Date.now() / 1000) + 10
  const claims = await tokens.verify(await tokens.issue('user-1', 'session-1', notAfter))
  expect(claims!.exp).toBe(notAfter)
})
