// Job kinds that behave on command, for tests of the job system: loaded into the server's
// worker threads through ServerOptions.jobs.extraKindModules.
import { Type } from '@sinclair/typebox'
import { defineJobKind, PermanentJobError, type JobKind } from '../../src/jobs/kinds.ts'

export const TEST_JOB_KINDS_URL = import.meta.url

const kinds: JobKind[] = [
  // Reports progress and returns its parameters and attempt.
  defineJobKind({
    kind: 'test_echo',
    params: Type.Object({ value: Type.String() }),
    maxAttempts: 1,
    repositoryScoped: true,
    run: async (job) => {
      const sql = await job.repository()
      const [{ facts }] = (await sql`SELECT count(*)::int AS facts FROM facts`) as unknown as [{ facts: number }]
      job.progress({ phase: 'echoing', done: 1, total: 1, bytes: job.params.value.length })
      return { value: job.params.value, attempt: job.attempt, facts }
    },
  }),
  // Reports progress without pause for `ms`, the last report (done = total) as it returns: the
  // heartbeat is in flight at any moment, the final report included.
  defineJobKind({
    kind: 'test_progress',
    params: Type.Object({ ms: Type.Integer() }),
    maxAttempts: 1,
    repositoryScoped: true,
    run: async (job) => {
      const end = performance.now() + job.params.ms
      let done = 0
      while (performance.now() < end) {
        job.progress({ phase: 'counting', done: ++done, total: 0 })
        await new Promise((resolve) => setImmediate(resolve))
      }
      job.progress({ done, total: done })
      return { done }
    },
  }),
  // Fails until attempt `succeed_on`.
  defineJobKind({
    kind: 'test_flaky',
    params: Type.Object({ succeed_on: Type.Integer() }),
    maxAttempts: 3,
    repositoryScoped: true,
    run: async (job) => {
      if (job.attempt < job.params.succeed_on) throw new Error(`flaked on attempt ${job.attempt}`)
      return { attempt: job.attempt }
    },
  }),
  defineJobKind({
    kind: 'test_permanent',
    params: Type.Object({}),
    maxAttempts: 3,
    repositoryScoped: true,
    run: async () => {
      throw new PermanentJobError('input is broken: facts[2]: missing text')
    },
  }),
  // Keeps its thread's event loop busy for `ms` (CPU work: a huge row, a long parse), then
  // returns its attempt.
  defineJobKind({
    kind: 'test_busy',
    params: Type.Object({ ms: Type.Integer() }),
    maxAttempts: 3,
    repositoryScoped: true,
    run: async (job) => {
      const end = performance.now() + job.params.ms
      while (performance.now() < end) Math.sqrt(end)
      return { attempt: job.attempt }
    },
  }),
  // Runs until cancelled; says it is running through its progress phase.
  defineJobKind({
    kind: 'test_block',
    params: Type.Object({}),
    maxAttempts: 1,
    repositoryScoped: true,
    run: (job) =>
      new Promise((_, reject) => {
        job.progress({ phase: 'blocking' })
        job.signal.addEventListener('abort', () => reject(job.signal.reason), { once: true })
      }),
  }),
  // Takes its worker thread down on the first attempt, inside a transaction that wrote a row (a
  // crash mid-job); on the next it succeeds, reporting whether that row survived.
  defineJobKind({
    kind: 'test_crash',
    params: Type.Object({}),
    maxAttempts: 2,
    repositoryScoped: true,
    run: async (job) => {
      const sql = await job.repository()
      if (job.attempt === 1) {
        await sql.begin(async (tx) => {
          await tx`INSERT INTO investigations (id, title) VALUES (${job.id}, 'written before the crash')`
          process.exit(70)
        })
      }
      const [{ survived }] =
        (await sql`SELECT count(*)::int AS survived FROM investigations WHERE id = ${job.id}`) as unknown as [
          { survived: number },
        ]
      return { attempt: job.attempt, survived }
    },
  }),
]
export default kinds
