// The mix of statements several clients run at once against one embedded database in
// tests/db/pglite-server.test.ts (in its thread and in a worker thread's): parameterized
// queries, failing queries and counter transactions, each answer tagged with who asked.
import type { Sql } from 'postgres'

/** Every fourth operation increments shared_counter row 1 in a transaction. */
export const incrementsIn = (operations: number) => Math.ceil(operations / 4)

export function workload(sql: Sql, source: string, operations: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: operations }, (_, i) => {
      const tag = `${source}:${i}`
      if (i % 4 === 0) {
        return sql.begin(async (tx) => {
          const [row] = await tx<{ n: number }[]>`SELECT n FROM shared_counter WHERE id = ${1} FOR UPDATE`
          await tx`UPDATE shared_counter SET n = ${row!.n + 1} WHERE id = ${1}`
          await tx`INSERT INTO marks (v) VALUES (${source})`
          const [{ echo }] = (await tx`SELECT ${tag}::text AS echo`) as unknown as [{ echo: string }]
          return echo
        })
      }
      if (i % 10 === 3)
        return sql`SELECT 1 / ${0}::int AS never`.then(
          () => `${tag} answered`,
          (error: Error) => `${tag} ${error.message}`,
        )
      return sql<{ echo: string; i: number }[]>`SELECT ${tag}::text AS echo, ${i}::int AS i`.then(
        ([row]) => `${row!.echo}${row!.i === i ? '' : ` with i = ${row!.i}`}`,
      )
    }),
  )
}

export function expectedAnswers(source: string, operations: number): string[] {
  return Array.from({ length: operations }, (_, i) =>
    i % 10 === 3 ? `${source}:${i} division by zero` : `${source}:${i}`,
  )
}
