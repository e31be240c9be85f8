// argon2id's cost is configurable (docs/spec/decisions.md §3): a stored hash of another cost,
// higher or lower, keeps verifying and is re-hashed at the configured cost at that user's next
// successful sign-in. Both backends.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { api, expectError, uniqueEmail } from '../helpers/api.ts'
import { runtime } from '../../src/runtime/index.ts'
import type { PasswordCost } from '../../src/config.ts'

const PASSWORD = 'correct horse battery'
/** A server at OWASP's t=1 row (46 MiB), and one at the default (19 MiB, t=2). */
const SERVERS = { 't=1': { PASSWORD_HASH_MEMORY: '46', PASSWORD_HASH_TIME: '1' }, default: {} }

const parameters = (hash: string) => /^\$argon2id\$v=19\$(m=\d+,t=\d+,p=\d+)\$/.exec(hash)?.[1]
const phcOf = (cost: PasswordCost) => `m=${cost.memoryKiB},t=${cost.timeCost},p=1`

for (const [name, env] of Object.entries(SERVERS)) {
  describe(`re-hash at sign-in, server at ${name} (${BACKEND})`, () => {
    let server: TestServer
    let http: ReturnType<typeof api>
    let cost: PasswordCost

    beforeAll(async () => {
      server = await startTestServer({ env })
      http = api(server.url)
      cost = server.context.config.passwordCost
    })
    afterAll(() => server.stop())

    async function storedHash(email: string): Promise<string> {
      const sql = server.systemSql()
      try {
        const [row] = await sql<{ password_hash: string }[]>`SELECT password_hash FROM users WHERE email = ${email}`
        return row!.password_hash
      } finally {
        await sql.end()
      }
    }

    async function setStoredHash(email: string, hash: string): Promise<void> {
      const sql = server.systemSql()
      try {
        await sql`UPDATE users SET password_hash = ${hash} WHERE email = ${email}`
      } finally {
        await sql.end()
      }
    }

    /** An account whose stored hash was made at `stored` (as by a server configured so before). */
    async function accountHashedAt(stored: PasswordCost): Promise<{ email: string; hash: string }> {
      const email = uniqueEmail()
      expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
      const hash = await runtime.hashPassword(PASSWORD, stored)
      await setStoredHash(email, hash)
      return { email, hash }
    }

    test('registration hashes at the configured cost', async () => {
      const email = uniqueEmail()
      expect((await http.post('/api/v1/auth/register', { email, password: PASSWORD })).status).toBe(201)
      expect(parameters(await storedHash(email))).toBe(phcOf(cost))
    })

    // Down: the former default (64 MiB) is costlier than either server's; up: OWASP's t=5 row, 7 MiB, is cheaper in memory.
    for (const [direction, stored] of [
      ['a costlier', { memoryKiB: 65536, timeCost: 2 }],
      ['a cheaper', { memoryKiB: 7 * 1024, timeCost: 5 }],
    ] as const) {
      test(`${direction} stored hash signs in, and is then stored at the configured cost; the next sign-in keeps it`, async () => {
        const { email, hash } = await accountHashedAt(stored)
        expect(parameters(hash)).toBe(phcOf(stored))
        const signIn = await http.post('/api/v1/auth/login', { email, password: PASSWORD })
        expect(signIn.status).toBe(200)
        const rehashed = await storedHash(email)
        expect(parameters(rehashed)).toBe(phcOf(cost))
        expect(await runtime.verifyPassword(PASSWORD, rehashed)).toBe(true)
        // At the configured cost already: the next sign-in writes nothing.
        expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(200)
        expect(await storedHash(email)).toBe(rehashed)
      })
    }

    test('a wrong password re-hashes nothing', async () => {
      const { email, hash } = await accountHashedAt({ memoryKiB: 65536, timeCost: 2 })
      expectError(
        await http.post('/api/v1/auth/login', { email, password: `${PASSWORD}!` }),
        401,
        'invalid credentials',
      )
      expect(await storedHash(email)).toBe(hash)
    })

    test('a hash at the cost configured is left as it is', async () => {
      const { email, hash } = await accountHashedAt(cost)
      expect((await http.post('/api/v1/auth/login', { email, password: PASSWORD })).status).toBe(200)
      expect(await storedHash(email)).toBe(hash)
    })
  })
}
