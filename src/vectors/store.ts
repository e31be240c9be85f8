// The vector store: LanceDB at LANCEDB_URI (a directory, or an object-storage URI), one table per
// repository and kind, named `<kind>_<repository uuid hex>`, with the columns `id` (the UUID of
// the fact or concept) and `vector` (fixed-size list of float32, the dimension of the table's
// first upsert). Distances are cosine: 0 for the same direction, up to 2.
//
// Concurrency. Writes to one table are serialized in this process by a promise chain: they apply
// in the order they were issued, and concurrent upserts of a table that does not exist yet create
// it once. Across processes (and across the job worker threads, which open stores of their own)
// LanceDB commits every write optimistically: a write that finds a newer version committed
// meanwhile is checked for conflicts, rebased and retried (merge inserts several times, with
// backoff). Two merge inserts of the same new id touch no common data, so both would insert it;
// declaring `id` the table's (unenforced) primary key makes them conflict and the loser retry as
// an update, so tables are created with that declaration. LanceDB creates a table by committing
// an overwrite, which empties a table another process has just created and written: processes
// create tables under a lock they share (creation-lock.ts), and writes racing a creation retry
// (creating()). Both are tested with several stores on one directory and on Ceph RGW.
//
// Reads open the table afresh, so they see the latest committed version, also of other processes.
// Searches of a small table use a copy of its latest version in memory (resident.ts).
//
// LanceDB itself is loaded, and the connection made, when the store is first used: its native
// library is large, and an instance that never embeds or searches never needs it. In a local
// directory, a table that is not there is known without it: a search or an export of a
// repository without vectors does not load it either.
//
// Staging. A job whose rows commit in a database transaction (an import) must not put their
// vectors where searches see them before that commit: it stages them in tables of its own,
// `staging_<kind>_<job uuid hex>`, and promotes them into the repository's tables after the
// commit (or drops them when the transaction rolls back). Promotion is an upsert, so running it
// again after a crash midway is harmless.
import { runtime } from '../runtime/index.ts'
import type { Connection, Table } from '@lancedb/lancedb'
import type { RecordBatch } from 'apache-arrow'
import { isUuid } from '../uuid.ts'
import type { CreationLock } from './creation-lock.ts'
import {
  batchRows,
  isTableNotFound,
  isUncommittedTable,
  loadLanceDB,
  localDirectory,
  mayHoldTable,
  tableDimensions,
  tableSchema,
  toArrow,
  vectorRows,
  type VectorRow,
} from './lance.ts'
import {
  DEFAULT_RESIDENT_BYTES,
  nearestResident,
  ResidentTableBuilder,
  ResidentTables,
  type LoadedTable,
  type Neighbour,
  type ResidentTable,
} from './resident.ts'

export type VectorKind = 'facts' | 'concepts'
export const VECTOR_KINDS: readonly VectorKind[] = ['facts', 'concepts']

export type { VectorRow }

export class VectorDimensionError extends Error {}

export interface VectorStoreOptions {
  /** Rows from which optimize() builds an ANN index. */
  indexThreshold?: number
  /** Bytes of small tables' vectors held in memory for searches (resident.ts); 0 leaves every search to LanceDB. */
  residentBytes?: number
  /** How LanceDB reaches an object-storage URI (endpoint, region, credentials: config.lancedbStorageOptions). */
  storageOptions?: Record<string, string>
  /**
   * Held while a table is created; processes sharing the store must share it (creation-lock.ts).
   * Without it, only this store's own creations are kept apart.
   */
  creationLock?: CreationLock
}

/** Past this many vectors an exact search is slow enough that an index pays (docs/benchmarks.md). */
const DEFAULT_INDEX_THRESHOLD = 100_000
/** Product quantization trains 256 centroids per sub-vector, so an index needs at least as many rows. */
const MIN_INDEX_ROWS = 256
/** An index search re-ranks k × this candidates by their exact distance (exact search ignores it). */
const REFINE_FACTOR = 5
/** Tries at a write racing other processes to create its table (waits of 50 ms to 0.4 s between them). */
const CREATE_ATTEMPTS = 5
const CREATION_RACE = [
  /^Table '[^']*' exists but could not be loaded/,
  /Retryable commit conflict/,
  /incompatible with concurrent transaction Overwrite/,
]

function canonicalUuid(id: string, what: string): string {
  if (!isUuid(id)) throw new TypeError(`${what} must be a UUID, got ${JSON.stringify(id)}`)
  return id.toLowerCase()
}

function checkedKind(kind: VectorKind): VectorKind {
  if (!VECTOR_KINDS.includes(kind))
    throw new TypeError(`vector kind must be facts or concepts, got ${JSON.stringify(kind)}`)
  return kind
}

/** The only places a table name is made: from a checked kind and a checked UUID. */
function tableName(repositoryId: string, kind: VectorKind): string {
  return `${checkedKind(kind)}_${canonicalUuid(repositoryId, 'repository id').replaceAll('-', '')}`
}

function stagingTableName(jobId: string, kind: VectorKind): string {
  return `staging_${checkedKind(kind)}_${canonicalUuid(jobId, 'job id').replaceAll('-', '')}`
}

function dimensionMismatch(query: Float32Array, what: string, dimensions: number): VectorDimensionError {
  return new VectorDimensionError(
    `a query vector of ${query.length} dimensions cannot search ${what}, which hold ${dimensions}`,
  )
}

/** A search waiting for its table's batch. */
interface PendingSearch {
  vector: Float32Array
  k: number
  what: string
  resolve(neighbours: Neighbour[]): void
  reject(error: unknown): void
}

/** Query vectors in one LanceDB query at most. */
const SEARCH_BATCH = 32
/**
 * LanceDB queries of one table running at once (from this process); more searches wait and batch.
 * Under load a query's time is mostly waiting inside LanceDB (its file reads go through a pool of
 * about 20 threads), not CPU: one query at a time for the whole process doubled the search p99 of
 * scripts/bench/load.ts against 2 to 16 per table (docs/benchmarks.md). 8 lets a table's searches overlap
 * their waits; a pile-up beyond that goes as batches.
 */
const SEARCHES_AT_ONCE = 8

/** A table's searches: those waiting, and how many queries of it run. */
interface TableSearches {
  queued: PendingSearch[]
  running: number
}

/**
 * One query for every search of the batch that fits the table's dimension (the others fail
 * alone), each asking the largest k of the batch; the answers, per search, in batch order.
 */
async function searchTable(table: Table, batch: readonly PendingSearch[]): Promise<(Neighbour[] | undefined)[]> {
  const dimensions = await tableDimensions(table)
  const answers: (Neighbour[] | undefined)[] = batch.map(() => undefined)
  const fitting: number[] = []
  batch.forEach((request, i) => {
    if (request.vector.length === dimensions) fitting.push(i)
    else request.reject(dimensionMismatch(request.vector, request.what, dimensions))
  })
  if (fitting.length === 0) return answers
  let query = table.vectorSearch(batch[fitting[0]!]!.vector)
  for (const i of fitting.slice(1)) query = query.addQueryVector(batch[i]!.vector)
  const limit = Math.max(...fitting.map((i) => batch[i]!.k))
  const rows = (await query
    .distanceType('cosine')
    .refineFactor(REFINE_FACTOR)
    .select(['id', '_distance'])
    .limit(limit)
    .toArray()) as { id: string; _distance: number; query_index?: number }[]
  for (const i of fitting) answers[i] = []
  for (const row of rows) {
    // A query of one vector has no query_index column.
    const answer = answers[fitting[row.query_index ?? 0]!]!
    // float32 arithmetic can put a vector a hair below zero distance from itself.
    answer.push({ id: row.id, distance: Math.max(0, row._distance) })
  }
  return answers.map((answer, i) => answer?.sort((a, b) => a.distance - b.distance).slice(0, batch[i]!.k))
}

export class VectorStore {
  /** Per table: the last write queued in this process (never rejects). */
  private readonly writes = new Map<string, Promise<void>>()
  /** Per table: its searches, while any runs. */
  private readonly searches = new Map<string, TableSearches>()

  private connection: Promise<Connection> | undefined
  /** LANCEDB_URI when it is a directory (no scheme), where each table is `<name>.lance`. */
  private readonly directory: string | undefined

  private constructor(
    private readonly uri: string,
    private readonly storageOptions: Record<string, string> | undefined,
    private readonly indexThreshold: number,
    private readonly resident: ResidentTables,
    private readonly creationLock: CreationLock,
  ) {
    this.directory = localDirectory(uri)
  }

  /** Whether LanceDB has been loaded and connected to (diagnostics, tests). */
  get connected(): boolean {
    return this.connection !== undefined
  }

  static async open(uri: string, options: VectorStoreOptions = {}): Promise<VectorStore> {
    const indexThreshold = options.indexThreshold ?? DEFAULT_INDEX_THRESHOLD
    if (!Number.isInteger(indexThreshold) || indexThreshold < MIN_INDEX_ROWS)
      throw new RangeError(`index threshold must be an integer of at least ${MIN_INDEX_ROWS}, got ${indexThreshold}`)
    const residentBytes = options.residentBytes ?? DEFAULT_RESIDENT_BYTES
    if (!Number.isSafeInteger(residentBytes) || residentBytes < 0)
      throw new RangeError(`resident bytes must be a non-negative integer, got ${residentBytes}`)
    return new VectorStore(
      uri,
      options.storageOptions,
      indexThreshold,
      new ResidentTables(residentBytes),
      options.creationLock ?? ((_table, create) => create()),
    )
  }

  private db(): Promise<Connection> {
    this.connection ??= loadLanceDB().then(({ connect }) => connect(this.uri, { storageOptions: this.storageOptions }))
    this.connection.catch(() => (this.connection = undefined))
    return this.connection
  }

  /** Bytes of vectors this store holds in memory for searches. */
  get residentBytes(): number {
    return this.resident.bytes
  }

  /**
   * Inserts the rows, replacing the vector of an id already stored. The first upsert of a
   * repository and kind creates its table with the dimension of these vectors; later vectors
   * must have the same (VectorDimensionError). Of one id given twice, the last vector wins.
   */
  async upsert(repositoryId: string, kind: VectorKind, rows: readonly VectorRow[]): Promise<void> {
    await this.write(tableName(repositoryId, kind), rows, `the ${kind} of repository ${repositoryId}`, 'merge')
  }

  /**
   * Adds the rows to the staging table of `jobId` (created by the first call, like upsert's
   * tables). An append, not a merge (half the cost): an id staged twice is settled when promoted,
   * the later vector winning.
   */
  async stage(jobId: string, kind: VectorKind, rows: readonly VectorRow[]): Promise<void> {
    await this.write(stagingTableName(jobId, kind), rows, `the staged ${kind} of job ${jobId}`, 'append')
  }

  /**
   * Copies what `jobId` staged of `kind` into the repository's table, `batchSize` vectors per
   * upsert, then drops the staging table; returns how many vectors it copied (0 when nothing was
   * staged). Idempotent: after a crash midway, running it again completes the copy.
   */
  async promoteStaged(jobId: string, repositoryId: string, kind: VectorKind, batchSize = 10_000): Promise<number> {
    const staging = stagingTableName(jobId, kind)
    let promoted = 0
    for await (const rows of this.stream(staging, ['id', 'vector'], batchSize, vectorRows)) {
      await this.upsert(repositoryId, kind, rows)
      promoted += rows.length
    }
    await this.dropNamed(staging)
    return promoted
  }

  /** Drops whatever `jobId` staged (both kinds); idempotent. */
  async dropStaged(jobId: string): Promise<void> {
    await Promise.all(VECTOR_KINDS.map((kind) => this.dropNamed(stagingTableName(jobId, kind))))
  }

  /** Vectors staged by `jobId` (tests, diagnostics). */
  async countStaged(jobId: string, kind: VectorKind): Promise<number> {
    return (await this.withTable(stagingTableName(jobId, kind), (table) => table.countRows())) ?? 0
  }

  /**
   * The k stored vectors nearest to `vector` by cosine distance, nearest first; [] when nothing is
   * stored yet. A zero vector has no direction: it is never found, and finds nothing.
   *
   * A small table is searched in memory once a copy of its latest version is loaded (resident.ts;
   * until then LanceDB answers). Searches of a larger one beyond SEARCHES_AT_ONCE running wait,
   * then go together as one multi-vector LanceDB query: a LanceDB query has a fixed CPU cost
   * before it compares a single vector, which a batch shares (docs/benchmarks.md).
   */
  async search(repositoryId: string, kind: VectorKind, vector: Float32Array, k: number): Promise<Neighbour[]> {
    const name = tableName(repositoryId, kind)
    if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a positive integer, got ${k}`)
    const what = `the ${kind} of repository ${repositoryId}`
    const table = await this.openTable(name)
    if (!table) return []
    let resident: ResidentTable | undefined
    try {
      resident = this.resident.lookup(name, await table.version(), () => this.loadResident(name))
    } finally {
      table.close()
    }
    if (resident) {
      if (vector.length !== resident.dimensions) throw dimensionMismatch(vector, what, resident.dimensions)
      return nearestResident(resident, vector, k)
    }
    return new Promise((resolve, reject) => {
      let searches = this.searches.get(name)
      if (!searches) this.searches.set(name, (searches = { queued: [], running: 0 }))
      searches.queued.push({ vector, k, resolve, reject, what })
      if (searches.running < SEARCHES_AT_ONCE) void this.runSearches(name, searches)
    })
  }

  /** The latest version of table `name`, in memory; too large or gone, no copy. */
  private async loadResident(name: string): Promise<LoadedTable> {
    const table = await this.openTable(name)
    if (!table) throw new Error(`table ${name} is gone`)
    try {
      const version = await table.version()
      const dimensions = await tableDimensions(table)
      const rows = await table.countRows()
      if (rows * dimensions > this.resident.maxFloats) return { version, table: undefined }
      const resident = new ResidentTableBuilder(dimensions, rows)
      for await (const batch of table.query().select(['id', 'vector']))
        for (const row of batchRows(batch)) resident.add(row.id, row.vector)
      return { version, table: resident.finish() }
    } finally {
      table.close()
    }
  }

  /** Waits for the in-memory copies being loaded (close() does too). */
  settled(): Promise<void> {
    return this.resident.settled()
  }

  /** Runs the searches queued for table `name`, a batch at a time, until none is left. */
  private async runSearches(name: string, searches: TableSearches): Promise<void> {
    searches.running++
    while (searches.queued.length > 0) {
      const batch = searches.queued.splice(0, SEARCH_BATCH)
      try {
        const found = await this.withTable(name, (table) => searchTable(table, batch))
        batch.forEach((request, i) => request.resolve(found?.[i] ?? []))
      } catch (error) {
        for (const request of batch) request.reject(error)
      }
    }
    if (--searches.running === 0) this.searches.delete(name)
  }

  /** Removes these ids (unknown ones are ignored). */
  async delete(repositoryId: string, kind: VectorKind, ids: readonly string[]): Promise<void> {
    const name = tableName(repositoryId, kind)
    // Validated UUIDs are hex digits and dashes: nothing in them can leave the quotes.
    const quoted = ids.map((id) => `'${canonicalUuid(id, 'vector id')}'`)
    if (quoted.length === 0) return
    await this.serialized(name, () => this.withTable(name, (table) => table.delete(`id IN (${quoted.join(', ')})`)))
  }

  async count(repositoryId: string, kind: VectorKind): Promise<number> {
    return (await this.withTable(tableName(repositoryId, kind), (table) => table.countRows())) ?? 0
  }

  /** The dimension of the stored vectors; undefined while none are stored. */
  async dimensions(repositoryId: string, kind: VectorKind): Promise<number | undefined> {
    return this.withTable(tableName(repositoryId, kind), tableDimensions)
  }

  /**
   * Every stored vector exactly once, in batches of `batchSize` (the last may be smaller), read
   * from one version of the table as LanceDB streams it: memory holds a batch or two, never the table.
   */
  scan(repositoryId: string, kind: VectorKind, batchSize: number): AsyncGenerator<VectorRow[]> {
    return this.stream(tableName(repositoryId, kind), ['id', 'vector'], batchSize, vectorRows)
  }

  /** Every stored id exactly once, in batches of `batchSize`. */
  ids(repositoryId: string, kind: VectorKind, batchSize: number): AsyncGenerator<string[]> {
    return this.stream(
      tableName(repositoryId, kind),
      ['id'],
      batchSize,
      (batch) => [...batch.getChild('id')!] as string[],
    )
  }

  /** Removes the table of one kind (e.g. before re-embedding with a model of other dimensions). */
  async dropTable(repositoryId: string, kind: VectorKind): Promise<void> {
    await this.dropNamed(tableName(repositoryId, kind))
  }

  /** Removes every vector of the repository (both tables); idempotent. */
  async dropRepository(repositoryId: string): Promise<void> {
    await Promise.all(VECTOR_KINDS.map((kind) => this.dropTable(repositoryId, kind)))
  }

  /**
   * Maintenance, for a job after large writes: compacts the small files every upsert leaves,
   * folds new rows into the index, prunes versions older than LanceDB's default (7 days), and
   * builds a cosine IVF-PQ index once the table holds `indexThreshold` rows. Index building takes
   * a while (about 70 s for 100k 384-d vectors on two cores); this process's writes to the table
   * wait for it, searches do not. Answers whether the table is indexed.
   */
  async optimize(repositoryId: string, kind: VectorKind): Promise<{ indexed: boolean }> {
    const name = tableName(repositoryId, kind)
    const indexed = await this.serialized(name, () =>
      this.withTable(name, async (table) => {
        await table.optimize()
        if ((await table.listIndices()).some((index) => index.columns.includes('vector'))) return true
        if ((await table.countRows()) < this.indexThreshold) return false
        await table.createIndex('vector', { config: (await loadLanceDB()).Index.ivfPq({ distanceType: 'cosine' }) })
        return true
      }),
    )
    return { indexed: indexed ?? false }
  }

  /** Waits for the writes and loads under way, then releases the connection. */
  async close(): Promise<void> {
    await Promise.all([...this.writes.values(), this.resident.settled()])
    const connection = await this.connection?.catch(() => undefined)
    connection?.close()
  }

  /**
   * Writes the rows into table `name`: `merge` replaces the vector of an id already stored,
   * `append` adds them as they are. The first write creates the table with the dimension of its
   * vectors. `what` names the table in errors.
   */
  private async write(name: string, rows: readonly VectorRow[], what: string, mode: 'merge' | 'append'): Promise<void> {
    if (rows.length === 0) return
    const dimensions = rows[0]!.vector.length
    if (dimensions === 0) throw new VectorDimensionError('a vector must have at least one dimension')
    // A merge insert with a repeated source id would insert it twice, so the batch is made unique.
    const latest = new Map<string, Float32Array>()
    for (const { id, vector } of rows) {
      if (vector.length !== dimensions)
        throw new VectorDimensionError(
          `the vectors of one upsert must have one dimension: got ${dimensions} and ${vector.length}`,
        )
      if (!vector.every(Number.isFinite))
        throw new TypeError(`the vector of ${id} has a component that is not a finite number`)
      latest.set(canonicalUuid(id, 'vector id'), vector)
    }
    const data = toArrow(
      [...latest].map(([id, vector]) => ({ id, vector })),
      dimensions,
    )
    await this.serialized(name, () =>
      this.creating(async () => {
        const table = (await this.openTable(name)) ?? (await this.createTable(name, dimensions))
        try {
          const stored = await tableDimensions(table)
          if (stored !== dimensions)
            throw new VectorDimensionError(
              `vectors of ${dimensions} dimensions cannot go into ${what}, which hold ${stored}`,
            )
          if (mode === 'merge')
            await table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(data)
          else await table.add(data)
        } finally {
          table.close()
        }
      }),
    )
  }

  /** Creates the table unless another process has meanwhile (under the creation lock). */
  private createTable(name: string, dimensions: number): Promise<Table> {
    return this.creationLock(
      name,
      async () =>
        (await this.openTable(name)) ??
        (await (await this.db()).createEmptyTable(name, tableSchema(dimensions), { mode: 'create', existOk: true })),
    )
  }

  private serialized<T>(name: string, write: () => Promise<T>): Promise<T> {
    const result = (this.writes.get(name) ?? Promise.resolve()).then(write)
    const settled = result.then(
      () => {},
      () => {},
    )
    this.writes.set(name, settled)
    void settled.then(() => {
      if (this.writes.get(name) === settled) this.writes.delete(name)
    })
    return result
  }

  private async dropNamed(name: string): Promise<void> {
    await this.serialized(name, async () => {
      try {
        await (await this.db()).dropTable(name)
      } catch (error) {
        if (!isTableNotFound(error, name)) throw error
      }
      this.resident.drop(name)
    })
  }

  private async openTable(name: string): Promise<Table | undefined> {
    if (this.directory && !(await mayHoldTable(this.directory, name))) return undefined
    try {
      return await (await this.db()).openTable(name)
    } catch (error) {
      if (isTableNotFound(error, name) || isUncommittedTable(error, name)) return undefined
      throw error
    }
  }

  /**
   * Runs a write that may have to create the table. A write racing a creation (another process's,
   * or one after a drop) fails: with a commit conflict, with a table that "exists but could not be
   * loaded" (its first version not yet committed), or, based on the version the creation replaced,
   * as incompatible with that overwrite. By the next attempt the table exists and the write goes
   * through.
   */
  private async creating(write: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write()
      } catch (error) {
        const race = error instanceof Error && CREATION_RACE.some((pattern) => pattern.test(error.message))
        if (!race || attempt === CREATE_ATTEMPTS) throw error
        await runtime.sleep(25 * 2 ** attempt)
      }
    }
  }

  /** Runs `use` on the table, then closes it; undefined when the table does not exist. */
  private async withTable<T>(name: string, use: (table: Table) => Promise<T>): Promise<T | undefined> {
    const table = await this.openTable(name)
    if (!table) return undefined
    try {
      return await use(table)
    } finally {
      table.close()
    }
  }

  /** Checks the batch size at once, not at the first iteration. */
  private stream<T>(
    name: string,
    columns: string[],
    batchSize: number,
    convert: (batch: RecordBatch) => T[],
  ): AsyncGenerator<T[]> {
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new RangeError(`batch size must be a positive integer, got ${batchSize}`)
    return this.batches(name, columns, batchSize, convert)
  }

  private async *batches<T>(
    name: string,
    columns: string[],
    batchSize: number,
    convert: (batch: RecordBatch) => T[],
  ): AsyncGenerator<T[]> {
    const table = await this.openTable(name)
    if (!table) return
    try {
      let pending: T[] = []
      for await (const batch of table.query().select(columns)) {
        for (const item of convert(batch)) {
          pending.push(item)
          if (pending.length === batchSize) {
            yield pending
            pending = []
          }
        }
      }
      if (pending.length > 0) yield pending
    } finally {
      table.close()
    }
  }
}
