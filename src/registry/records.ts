// A stored graph as the registry answers it, and the paging of the Go registry's list.
import { holdsSystemPermission, type Authorizer, type Principal } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import type { Graph } from './store.ts'

/** Whether the caller may read the e-mail of the user with this id. */
export type ReadsEmailOf = (userId: string) => boolean

/**
 * Who may read a pusher's e-mail: the pusher, or a holder of user:read, as GET /users/{id} has
 * it. Every account may read the registry, and an e-mail is not theirs to see. The service
 * principal (an instance of this deployment: its tokens are signed with the deployment's secret)
 * reads the record as stored, as it pushed it for the user.
 */
export function emailReader(authorizer: Authorizer, principal: Principal): ReadsEmailOf {
  const readsAny = principal.grants !== undefined || holdsSystemPermission(authorizer, principal, 'user:read')
  return (userId) => readsAny || (!principal.grants && principal.userId === userId)
}

/** A graph's owner as the caller may see it: the pusher's e-mail, or for a caller who may not read it their user id. */
export const shownOwner = (g: Pick<Graph, 'owner' | 'owner_id'>, readsEmailOf: ReadsEmailOf) =>
  g.owner_id === null || readsEmailOf(g.owner_id) ? g.owner : g.owner_id

/** The graph record exactly as docs/spec/bundle.md §7 has it, in its order (no storage key), its owner as the caller may see it. */
export function record(g: Graph, readsEmailOf: ReadsEmailOf): Graph {
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    owner: shownOwner(g, readsEmailOf),
    owner_id: g.owner_id,
    tags: g.tags,
    sha256: g.sha256,
    schema_version: g.schema_version,
    bytes: g.bytes,
    source_count: g.source_count,
    fact_count: g.fact_count,
    concept_count: g.concept_count,
    summary_count: g.summary_count,
    synthesis_count: g.synthesis_count,
    report_count: g.report_count,
    investigation_count: g.investigation_count,
    created_at: g.created_at,
    updated_at: g.updated_at,
  }
}

// ---------------------------------------------------------------------------------------------
// The Go registry's list (docs/spec/bundle.md §7): ?limit=&offset=, answered {graphs, total}

const GO_DEFAULT_LIMIT = 20
const GO_MAX_LIMIT = 200

/** Go's rule: any integer; one of 0 or less, or over 200, means 20. */
export function goLimit(limit: string | undefined): number {
  if (limit === undefined || limit === '') return GO_DEFAULT_LIMIT
  if (!/^-?[0-9]{1,15}$/.test(limit))
    throw new HttpError(400, `invalid query: limit: expected an integer (got ${JSON.stringify(limit.slice(0, 20))})`)
  const n = Number(limit)
  return n <= 0 || n > GO_MAX_LIMIT ? GO_DEFAULT_LIMIT : n
}

export function goOffset(offset: string): number {
  if (!/^[0-9]{1,15}$/.test(offset))
    throw new HttpError(
      400,
      `invalid query: offset: expected a non-negative integer (got ${JSON.stringify(offset.slice(0, 20))})`,
    )
  return Number(offset)
}
