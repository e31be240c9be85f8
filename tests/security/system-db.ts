// A connection to a test server's system database for the length of one callback: the security
// tests read what is stored (digests, lifetimes) and age rows instead of waiting.
import type { TestServer } from '../helpers/server.ts'

export async function withSystemDb<T>(
  server: TestServer,
  fn: (sql: ReturnType<TestServer['systemSql']>) => Promise<T>,
): Promise<T> {
  const sql = server.systemSql()
  try {
    return await fn(sql)
  } finally {
    await sql.end()
  }
}
