// A push (docs/spec/bundle.md §7): the gzip body is streamed into blob storage without being
// parsed or held, then indexed in the graphs table, so that a listed graph is always whole.
import type { Sql } from 'postgres'
import { timestampedId } from '../blobs/leftovers.ts'
import { discardBlobs, type BlobStore } from '../blobs/store.ts'
import { SERVICE_SUBJECT, type Principal } from '../http/auth.ts'
import { HttpError } from '../http/errors.ts'
import {
  EmptyUpload,
  gzipChunks,
  requestChunks,
  uploadError,
  type UploadPace,
  type UploadRefusals,
} from '../http/upload.ts'
import { findUserById } from '../accounts/users.ts'
import type { Logger } from '../log.ts'
import type { Quotas } from '../quotas.ts'
import { graphKey, incomingKey } from './leftovers.ts'
import { parsePushHeaders } from './push-headers.ts'
import { findGraphByNameAndHash, insertGraph, type Graph } from './store.ts'

export interface PushOptions {
  system: Sql
  blobs: BlobStore
  /** Largest bundle stored (REGISTRY_MAX_BYTES). */
  maxBytes: number
  /** Slowest a push may arrive (UPLOAD_MIN_RATE over BODY_TIMEOUT). */
  pace: UploadPace
  /** QUOTA_REGISTRY_*: checked for users' pushes (the server's own, for exports, at the export's request). */
  quotas: Pick<Quotas, 'checkRegistry'>
  log: Logger
}

/** What a push body may be declared as; the bytes must start as gzip in any case. */
const PUSH_CONTENT_TYPES = new Set(['application/gzip', 'application/x-gzip', 'application/octet-stream', ''])

const tooLarge = (maxBytes: number) => new HttpError(413, `bundle exceeds the registry's limit of ${maxBytes} bytes`)

/** How a failed store of a push body is answered. */
const pushRefusals = (maxBytes: number): UploadRefusals => ({
  tooLarge: tooLarge(maxBytes).message,
  notGzip: new HttpError(415, 'request body is not gzip: push a .json.gz bundle'),
  empty: 'request body is empty: push a .json.gz bundle',
})

/** What the log says when a blob of a failed, redundant or deleted graph could not be deleted. */
export const BLOB_NOT_DELETED = 'registry: could not delete a blob'

/**
 * Whom a push is recorded as (docs/spec/bundle.md §7): a user by e-mail, with their id; the service
 * token is the user it acts for if any (an export's), else 'kgs'.
 */
async function pusher(system: Sql, principal: Principal): Promise<Pick<Graph, 'owner' | 'owner_id'>> {
  const userId = principal.grants ? principal.onBehalfOf : principal.userId
  if (userId === undefined) return { owner: SERVICE_SUBJECT, owner_id: null }
  const user = await findUserById(system, userId)
  if (!user) throw new HttpError(403, 'permission denied: the account this push is made for no longer exists')
  return { owner: user.email, owner_id: user.id }
}

/**
 * Stores the bundle `request` carries for `principal`: the new graph's id, or that of the graph
 * already stored under the same (name, sha256), whose body is then not read.
 */
export async function pushGraph(
  options: PushOptions,
  request: Request,
  principal: Principal,
): Promise<{ graph_id: string; new: boolean }> {
  const { system, blobs, maxBytes, pace, quotas, log } = options
  const discard = (...keys: string[]) => discardBlobs(blobs, log, BLOB_NOT_DELETED, ...keys)
  const metadata = parsePushHeaders(request.headers)
  const owner = await pusher(system, principal)
  const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
  if (!PUSH_CONTENT_TYPES.has(type))
    throw new HttpError(415, `unsupported Content-Type ${JSON.stringify(type)}; expected application/gzip`)
  // A graph already stored under (name, sha256) is not read again (nor its body).
  if (metadata.sha256) {
    const stored = await findGraphByNameAndHash(system, metadata.name, metadata.sha256)
    if (stored) return { graph_id: stored.id, new: false }
  }
  if (owner.owner_id) await quotas.checkRegistry(owner.owner_id)
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  if (!request.body) throw uploadError(new EmptyUpload(), pushRefusals(maxBytes))

  // 1. The body goes to a temporary key; a put that fails keeps nothing.
  const incoming = incomingKey()
  let bytes: number
  try {
    ;({ bytes } = await blobs.put(incoming, gzipChunks(requestChunks(request.body, pace)), {
      maxBytes,
      contentType: 'application/gzip',
    }))
  } catch (error) {
    await discard(incoming)
    throw uploadError(error, pushRefusals(maxBytes))
  }
  // 2. Complete: to its final key. 3. Only then indexed, so a listed graph is always whole.
  // Timestamped: the sweeper can tell a bundle whose index row is about to be written from one whose never will be.
  const id = timestampedId()
  const key = graphKey(id)
  let inserted: Graph | undefined
  try {
    await blobs.move(incoming, key)
    inserted = await insertGraph(system, { id, ...metadata, ...owner, bytes, storage_key: key })
  } catch (error) {
    await discard(incoming, key)
    throw error
  }
  if (!inserted) {
    // A concurrent push of the same (name, sha256) was indexed first: keep that one.
    await discard(key)
    const stored = await findGraphByNameAndHash(system, metadata.name, metadata.sha256!)
    if (!stored)
      throw new HttpError(409, 'a graph of this name and sha256 was pushed and deleted meanwhile; push again')
    return { graph_id: stored.id, new: false }
  }
  return { graph_id: id, new: true }
}
