// Creating a vector table, one process at a time. LanceDB creates a table by committing an
// overwrite, and it commits an overwrite on top of any version it finds: a second process that
// creates a table the first has just created (and written to) empties it (seen on Ceph RGW:
// version 1 created, version 2 five rows, version 3 the second creation, the rows gone). So
// every process that shares a vector store creates its tables under a lock that every one of
// them sees: a transaction-scoped advisory lock in the system database they share. On the
// embedded database the job threads reach one PostgreSQL session through the multiplexer, which
// holds the other clients back while a transaction is open; that excludes them as well.
import type { Sql } from 'postgres'

/** Runs `create` while no other holder of the same lock creates the table named `table`. */
export type CreationLock = <T>(table: string, create: () => Promise<T>) => Promise<T>

export function databaseCreationLock(sql: Sql): CreationLock {
  return async <T>(table: string, create: () => Promise<T>) => {
    let created: { value: T } | undefined
    await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`kgs vector table ${table}`}, 0))`
      created = { value: await create() }
    })
    return created!.value
  }
}
