// A worker thread with a postgres.js pool of its own on an embedded database's socket, as job
// workers connect: it connects, says so, and on "go" runs the workload and sends the answers.
import postgres from 'postgres'
import { workload } from './pglite-workload.ts'

declare const self: Worker

export interface WorkerRequest {
  path: string
  source: string
  operations: number
}
export type WorkerReply = { connected: true } | { answers: string[] } | { error: string }

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const { path, source, operations } = event.data
  const sql = postgres({ path, database: 'postgres', user: 'postgres', max: 4, prepare: false, onnotice: () => {} })
  const reply = (message: WorkerReply) => self.postMessage(message)
  try {
    await sql`SELECT 1`
    const go = new Promise((resolve) => (self.onmessage = resolve))
    reply({ connected: true })
    await go
    reply({ answers: await workload(sql, source, operations) })
  } catch (error) {
    reply({ error: String(error) })
  } finally {
    await sql.end()
  }
}
