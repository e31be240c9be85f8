// Repositories: creation (row, own database, creator as repoadmin), resolution by UUID or slug
// (from memory on the hot path, evicted on every instance when one changes), update, deletion
// (database, role assignments, row).
import { repositoryBlobPrefix, type BlobStore } from '../blobs/store.ts'
import type { Sql } from 'postgres'
import type { EventBus } from '../db/events.ts'
import { ExpiringMap } from '../expiring.ts'
import type { Pools } from '../db/pools.ts'
import { etagOf } from '../http/etag.ts'
import { HttpError } from '../http/errors.ts'
import type { PageKey } from '../db/pages.ts'
import type { Rbac } from '../rbac/rbac.ts'
import { deleteRepository, findRepository, insertRepository, listRepositories, updateRepository } from './store.ts'
import type { Repository, RepositoryRecord } from './schemas.ts'
import {
  COUNTS_CHANGED,
  copiedCounts,
  graphChanged,
  hurryCountsCopy,
  refreshCounts,
  type GraphCounts,
} from './counts.ts'
import type { Logger } from '../log.ts'
import { isUuid } from '../uuid.ts'

export type { Repository }

const REPOSITORY_CHANGED = 'kgs_repository_changed'

/** Top-level names a slug must not take: /{repoID} shares the root with these. */
const RESERVED_SLUGS = new Set([
  'api',
  'app',
  'swagger',
  'registry',
  'healthz',
  'readyz',
  'metrics',
  'assets',
  'static',
  'oauth',
  '.well-known',
  'favicon.ico',
  'robots.txt',
])

const SLUG = /^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$/
const UUID_SHAPED = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i

/**
 * A repository's deletion cannot be undone, so its request must show that the caller means this
 * repository: its slug as `confirm`, or If-Match with its ETag (`*` names no version). A crafted
 * link or a script pointed at the wrong id then deletes nothing. Each one given must hold.
 */
export function confirmDeletion(
  repository: Repository,
  confirm: string | undefined,
  ifMatch: string | undefined,
): void {
  if (confirm === undefined && ifMatch === undefined)
    throw new HttpError(
      428,
      'deleting a repository cannot be undone: confirm it with the body {"confirm": "<its slug>"} or with If-Match: <its ETag>; nothing was deleted',
    )
  if (confirm !== undefined && confirm !== repository.slug)
    throw new HttpError(400, "invalid body: confirm: expected the repository's slug; nothing was deleted")
  const etag = etagOf(repository)
  if (ifMatch !== undefined && !ifMatch.split(',').some((tag) => tag.trim() === etag))
    throw new HttpError(
      412,
      'the repository changed since that ETag was read, or If-Match names none of its versions (If-Match failed); read it again; nothing was deleted',
    )
}

/** Returns the problem with a slug, or undefined if it is acceptable. */
function slugProblem(slug: string): string | undefined {
  if (!SLUG.test(slug)) return 'expected 2–63 characters of a-z, 0-9 and inner hyphens'
  if (UUID_SHAPED.test(slug)) return 'a slug must not look like a UUID'
  if (RESERVED_SLUGS.has(slug)) return `"${slug}" is reserved`
  return undefined
}

/** A slug from a name: "My Papers (2026)" → "my-papers-2026". */
export function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '')
  const slug = base.length >= 2 ? base : `repo-${base || crypto.randomUUID().slice(0, 8)}`
  return slugProblem(slug) ? `${slug.slice(0, 58)}-repo` : slug
}

const CACHE_TTL_MS = 30_000
const CACHE_SIZE = 20_000

export interface RepositoriesOptions {
  system: Sql
  pools: Pools
  rbac: Rbac
  bus: EventBus
  log: Logger
  /** The repository's vectors and blobs go with it. */
  vectors: { dropRepository(repositoryId: string): Promise<void> }
  blobs: Pick<BlobStore, 'deletePrefix'>
  /** Cancels the repository's jobs and waits until none runs (Jobs.stopRepository). */
  stopJobs(repositoryId: string): Promise<void>
  /** Between the starts of two copies of one repository's counts during a burst of writes (counts.ts). */
  countsCopyIntervalMs?: number
}

export class Repositories {
  /** By id and by slug. */
  private readonly cache = new ExpiringMap<string, Repository>(CACHE_SIZE)
  /** Copies of the graph counts by repository id: GET /{repoID} answers with no query. */
  private readonly counts = new ExpiringMap<string, GraphCounts>(CACHE_SIZE)
  /**
   * Bumped whenever a copy is dropped: a read that began before may hold the older figures, and
   * does not cache them.
   */
  private countsEpoch = 0
  /**
   * By repository id: the copy of the counts this instance queued last, settled once it is made
   * (and the cached copy dropped). A read of one repository's record waits for it (what this
   * instance answered a write for, it counts); a list does not (one busy repository would hold it
   * back), so its counts may be one refresh behind.
   */
  private readonly copying = new Map<string, Promise<void>>()

  private constructor(private readonly options: RepositoriesOptions) {}

  static async start(options: RepositoriesOptions): Promise<Repositories> {
    const repositories = new Repositories(options)
    await options.bus.subscribe(REPOSITORY_CHANGED, () => repositories.cache.clear())
    await options.bus.subscribe(COUNTS_CHANGED, (repositoryId) => repositories.dropCounts(repositoryId))
    return repositories
  }

  /** The repository named by a UUID or a slug. */
  async resolve(idOrSlug: string): Promise<Repository | undefined> {
    const key = idOrSlug.toLowerCase()
    const cached = this.cache.get(key)
    if (cached) return cached
    const repository = await findRepository(this.options.system, isUuid(key) ? { id: key } : { slug: key })
    if (repository) {
      const until = Date.now() + CACHE_TTL_MS
      this.cache.set(repository.id, repository, until)
      this.cache.set(repository.slug, repository, until)
    }
    return repository
  }

  async create(
    ownerId: string,
    input: { name: string; slug?: string; description?: string },
  ): Promise<RepositoryRecord> {
    const name = input.name.trim()
    if (!name) throw new HttpError(400, 'invalid body: name: expected a non-empty name')
    const slug = input.slug ?? slugify(name)
    const problem = slugProblem(slug)
    if (problem) throw new HttpError(400, `invalid body: slug: ${problem}`)
    const repository = await insertRepository(this.options.system, {
      id: crypto.randomUUID(),
      name,
      slug,
      description: input.description ?? '',
      ownerId,
    })
    try {
      // Its own database, migrated, before anyone can use it.
      await this.options.pools.forRepository(repository.id)
      await this.options.rbac.assign({ user_id: ownerId, role: 'repoadmin', domain: repository.id })
      await this.counted(repository.id)
    } catch (error) {
      await this.remove(repository.id)
      throw error
    }
    return this.record(ownerId, repository)
  }

  /** A page of the repositories the user sees (Rbac.visibleRepositories), as their records. */
  async list(userId: string, limit: number, after?: PageKey): Promise<(RepositoryRecord & { page_key: PageKey })[]> {
    const visible = this.options.rbac.visibleRepositories(userId)
    const rows = await listRepositories(this.options.system, visible === 'all' ? undefined : [...visible], limit, after)
    const records = []
    // One after the other: a repository not counted since it was migrated opens its database.
    for (const { counts, ...repository } of rows)
      records.push({
        ...repository,
        role: this.options.rbac.roleIn(userId, repository.id),
        counts: counts ?? (await this.counted(repository.id)),
      })
    return records
  }

  /** The repository's record as `userId` sees it: their role in it and its counts. */
  async record(userId: string, repository: Repository): Promise<RepositoryRecord> {
    await this.countsCopied(repository.id)
    let counts = this.counts.get(repository.id)
    if (!counts) {
      const epoch = this.countsEpoch
      counts = (await copiedCounts(this.options.system, repository.id)) ?? (await this.counted(repository.id))
      if (epoch === this.countsEpoch) this.counts.set(repository.id, counts, Date.now() + CACHE_TTL_MS)
    }
    return { ...repository, role: this.options.rbac.roleIn(userId, repository.id), counts }
  }

  /**
   * Queues a copy of the repository's counts after its graph changed (counts.ts): a write answers
   * without waiting for it; the promise, which never rejects, settles once it is made (for the
   * composition root and tests that need the copy itself).
   */
  graphChanged(repositoryId: string): Promise<void> {
    const copied = graphChanged(
      this.options.pools,
      this.options.bus,
      repositoryId,
      this.options.log,
      this.options.countsCopyIntervalMs,
    ).then(() => {
      // At once here; other instances when the event reaches them.
      this.dropCounts(repositoryId)
      if (this.copying.get(repositoryId) === copied) this.copying.delete(repositoryId)
    })
    this.copying.set(repositoryId, copied)
    return copied
  }

  /** Settles once the copy of the counts this instance last queued for the repository is made (at once when none is queued), starting it now if it waits for its time. */
  async countsCopied(repositoryId: string): Promise<void> {
    hurryCountsCopy(repositoryId)
    await this.copying.get(repositoryId)
  }

  /** Makes every copy of counts this instance queued, now (before the process stops). */
  async allCountsCopied(): Promise<void> {
    await Promise.all([...this.copying.keys()].map((repositoryId) => this.countsCopied(repositoryId)))
  }

  /** Counts the repository (its database's figures, copied to the system database). */
  private async counted(repositoryId: string): Promise<GraphCounts> {
    const counts = await refreshCounts(this.options.pools, this.options.bus, repositoryId)
    if (!counts) throw new HttpError(404, 'repository not found')
    this.dropCounts(repositoryId)
    return counts
  }

  private dropCounts(repositoryId: string): void {
    this.countsEpoch++
    this.counts.delete(repositoryId)
  }

  async update(
    repository: Repository,
    changes: { name?: string; slug?: string; description?: string },
  ): Promise<Repository> {
    if (changes.name !== undefined && !changes.name.trim())
      throw new HttpError(400, 'invalid body: name: expected a non-empty name')
    const problem = changes.slug === undefined ? undefined : slugProblem(changes.slug)
    if (problem) throw new HttpError(400, `invalid body: slug: ${problem}`)
    const updated = await this.options.system.begin(async (tx) => {
      const row = await updateRepository(tx, repository.id, { ...changes, name: changes.name?.trim() })
      if (!row) throw new HttpError(404, 'repository not found')
      await this.options.bus.publish(tx, REPOSITORY_CHANGED, repository.id)
      return row
    })
    this.cache.clear()
    return updated
  }

  /** Stops its jobs, then removes the repository's database, its role assignments and its row. */
  async remove(id: string): Promise<void> {
    // A copy still being made would open the database again once it is dropped, and make it anew.
    await this.countsCopied(id)
    await this.options.stopJobs(id)
    await this.options.pools.dropRepository(id)
    await this.options.vectors.dropRepository(id)
    await this.options.blobs.deletePrefix(repositoryBlobPrefix(id))
    await this.options.rbac.removeDomain(id)
    await this.options.system.begin(async (tx) => {
      await deleteRepository(tx, id)
      await this.options.bus.publish(tx, REPOSITORY_CHANGED, id)
    })
    this.cache.clear()
  }
}
