// A fresh PostgreSQL database for one benchmark run or one test server, created through a
// maintenance URL, and dropped afterwards together with the repository databases kgs created
// next to it (named after it: <name>_<repository>).
import postgres from 'postgres'

export interface ScratchDatabase {
  /** The new database's URL (DATABASE_URL of the kgs that uses it). */
  url: string
  /** Drops it and its repository databases, whoever is still connected. */
  drop(): Promise<void>
}

export async function createScratchDatabase(maintenanceUrl: string, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
  const admin = postgres(maintenanceUrl, { max: 1, onnotice: () => {} })
  try {
    await admin`CREATE DATABASE ${admin(name)}`
  } finally {
    await admin.end()
  }
  return databaseAt(maintenanceUrl, name)
}

function databaseAt(maintenanceUrl: string, name: string): ScratchDatabase {
  const url = new URL(maintenanceUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const sql = postgres(maintenanceUrl, { max: 1, onnotice: () => {} })
      try {
        const databases = await sql<
          { datname: string }[]
        >`SELECT datname FROM pg_database WHERE datname = ${name} OR datname LIKE ${name + '\\_%'}`
        for (const { datname } of databases) await sql`DROP DATABASE IF EXISTS ${sql(datname)} WITH (FORCE)`
      } finally {
        await sql.end()
      }
    },
  }
}

/**
 * A database of a name the caller chooses on the server of `maintenanceUrl`, created if it does
 * not exist (`created` says which) and kept after the run: a large fixture filled once and
 * measured again. `drop` removes it as it does a scratch database.
 */
export async function openNamedDatabase(
  maintenanceUrl: string,
  name: string,
): Promise<ScratchDatabase & { created: boolean }> {
  const admin = postgres(maintenanceUrl, { max: 1, onnotice: () => {} })
  let created = false
  try {
    if ((await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`).length === 0) {
      await admin`CREATE DATABASE ${admin(name)}`
      created = true
    }
  } finally {
    await admin.end()
  }
  return { ...databaseAt(maintenanceUrl, name), created }
}

/** The benchmarks' database, on the server of PG_URL (default: the local server's maintenance database). */
export function createBenchDatabase(): Promise<ScratchDatabase> {
  return createScratchDatabase(process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'kgs_bench_')
}
