// Vector-table creation locks for stores that stand for several processes: each store's lock on a
// connection of its own to one system database, as each process (or job thread) has. On
// PostgreSQL a scratch database; on the embedded default one cluster, reached through its
// multiplexer's socket as the job threads reach it.
import { join } from 'node:path'
import postgres, { type Sql } from 'postgres'
import { EmbeddedCluster } from '../../src/db/embedded.ts'
import { databaseCreationLock, type CreationLock } from '../../src/vectors/creation-lock.ts'
import { TEST_DATABASE_URL, createTestDatabase, seedEmbeddedTemplate, tempDir } from './backend.ts'

export async function sharedCreationLocks(count: number): Promise<{ locks: CreationLock[]; close(): Promise<void> }> {
  let connect: () => Sql
  let closeDatabase: () => Promise<void>
  if (TEST_DATABASE_URL) {
    const database = await createTestDatabase()
    connect = () => postgres(database.url, { max: 1, onnotice: () => {} })
    closeDatabase = () => database.drop()
  } else {
    const dataDir = tempDir()
    await seedEmbeddedTemplate(dataDir)
    const cluster = EmbeddedCluster.start(join(dataDir, 'pg'))
    const path = await cluster.socketFor('system')
    connect = () => postgres({ path, database: 'postgres', user: 'postgres', max: 1, prepare: false })
    closeDatabase = () => cluster.close()
  }
  const connections = Array.from({ length: count }, connect)
  return {
    locks: connections.map(databaseCreationLock),
    async close() {
      await Promise.all(connections.map((sql) => sql.end()))
      await closeDatabase()
    },
  }
}
