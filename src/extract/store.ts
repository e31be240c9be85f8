// What the processing of sources reads of them: whether a source can be processed (its parse is
// done) and which of a repository's can. The rows are the ingest feature's (ingest/store.ts);
// what processing writes goes through the graph's write service (graph/write/source-knowledge.ts).
import type { Sql } from 'postgres'
import { PROCESSABLE_SOURCE_STATUSES } from '../graph/rules.ts'

export type Readiness =
  | { ready: true }
  | { ready: false; reason: 'not_found' | 'not_parsed' | 'failed'; message: string }

/** Whether the source can be processed now, and if not why, in words for the person who asked. */
export async function sourceReadiness(sql: Sql, sourceId: string): Promise<Readiness> {
  const [source] = await sql<
    { status: string; status_reason: string }[]
  >`SELECT status, status_reason FROM sources WHERE id = ${sourceId}`
  if (!source) return { ready: false, reason: 'not_found', message: 'source not found' }
  if (PROCESSABLE_SOURCE_STATUSES.includes(source.status)) return { ready: true }
  if (source.status === 'failed')
    return {
      ready: false,
      reason: 'failed',
      message: `the source failed and has nothing to process${source.status_reason ? `: ${source.status_reason}` : ''}; add it again`,
    }
  return {
    ready: false,
    reason: 'not_parsed',
    message: `the source is not parsed yet (its status is ${source.status}); its ingest job processes it once it is, unless told not to`,
  }
}

/** The ids of the repository's sources that can be processed, oldest first. */
export async function processableSources(sql: Sql): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    SELECT id FROM sources WHERE status = ANY(${PROCESSABLE_SOURCE_STATUSES as string[]}::text[]) ORDER BY created_at, id`
  return rows.map((row) => row.id)
}
