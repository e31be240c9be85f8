// Which errors mean "the database cannot be reached" (answered 503) rather than a bug (500).
import { describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts'

const postgresError = (code: string) => new postgres.PostgresError({ code, message: code } as never)

describe('isDatabaseUnavailable', () => {
  test('a refused connection, as postgres.js reports it', async () => {
    const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const port = probe.port!
    await probe.stop(true)
    const sql = postgres({ host: '127.0.0.1', port, max: 1, backoff: () => 0, onnotice: () => {} })
    const error = await sql`SELECT 1`.catch((e: unknown) => e)
    await sql.end({ timeout: 0 })
    expect((error as { code?: string }).code).toBe('ECONNREFUSED')
    expect(isDatabaseUnavailable(error)).toBe(true)
  })

  test('server shutdown, start-up, too many connections and a missing database; not constraint or syntax errors', () => {
    for (const code of ['57P01', '57P02', '57P03', '08006', '08001', '53300', '3D000'])
      expect(isDatabaseUnavailable(postgresError(code))).toBe(true)
    for (const code of ['23505', '42601', '40001', '53100', '22P02'])
      expect(isDatabaseUnavailable(postgresError(code))).toBe(false)
  })

  test("postgres.js's own connection codes; a socket error that did not come from postgres.js is not", () => {
    for (const code of ['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'CONNECTION_ENDED'])
      expect(isDatabaseUnavailable(Object.assign(new Error(code), { code }))).toBe(true)
    expect(isDatabaseUnavailable(Object.assign(new Error('fetch failed'), { code: 'ECONNREFUSED' }))).toBe(false)
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false)
    expect(isDatabaseUnavailable(undefined)).toBe(false)
  })
})
