// Small vector tables searched in this process's memory. An exact LanceDB search plans a query and
// reads and decodes the whole vector column every time, several times the cost of a dot product
// per row over the same table held as one Float32Array of unit rows (docs/benchmarks.md, "Design
// figures"). So a table of up to RESIDENT_MAX_FLOATS floats is copied into memory, one version at a time, and
// searched here; larger ones (and those past the memory budget) stay with LanceDB and its index.
//
// A copy is loaded in the background, and until it holds the table's latest version searches go
// to LanceDB. Loading scans the whole table, as much CPU as 10 to 25 LanceDB
// searches (docs/benchmarks.md); and a table being written (an embedding job, an import) has a new
// version every few moments. So a copy is loaded only once LanceDB has answered LOAD_AFTER_MISSES
// searches of the table since its last load: a rarely searched or constantly written table costs
// at most about twice the CPU it would with LanceDB alone (the ski-rental rule).

/** A vector found by a search: its row id and its distance to the query. */
export interface Neighbour {
  id: string
  distance: number
}

/** The largest table held: 8 MiB of float32 (5,461 vectors of 384 dimensions): a search short enough for the event loop. */
export const RESIDENT_MAX_FLOATS = 2 ** 21
/** Searches LanceDB answers for a table before its copy is loaded (again). */
export const LOAD_AFTER_MISSES = 16
/** Memory for resident tables per store, unless VectorStore.open is told otherwise. */
export const DEFAULT_RESIDENT_BYTES = 64 * 2 ** 20

/** One version of a table: its rows scaled to unit length, one after another. */
export interface ResidentTable {
  readonly dimensions: number
  readonly ids: readonly string[]
  readonly units: Float32Array
}

/**
 * Builds a resident table row by row, into one buffer of the table's counted size. A zero vector
 * has no direction, so it is left out: LanceDB's cosine distance to it is NaN, and LanceDB never
 * returns it either.
 */
export class ResidentTableBuilder {
  private readonly units: Float32Array
  private readonly ids: string[] = []

  constructor(
    private readonly dimensions: number,
    rows: number,
  ) {
    this.units = new Float32Array(rows * dimensions)
  }

  add(id: string, vector: Float32Array): void {
    const { dimensions, units } = this
    const offset = this.ids.length * dimensions
    if (offset >= units.length) throw new RangeError(`more rows than the ${units.length / dimensions} counted`)
    let squares = 0
    for (let j = 0; j < dimensions; j++) squares += vector[j]! * vector[j]!
    if (squares === 0) return
    const norm = Math.sqrt(squares)
    for (let j = 0; j < dimensions; j++) units[offset + j] = vector[j]! / norm
    this.ids.push(id)
  }

  finish(): ResidentTable {
    const length = this.ids.length * this.dimensions
    // A copy when zero vectors were left out, so that the memory held is what is counted.
    return {
      dimensions: this.dimensions,
      ids: this.ids,
      units: length === this.units.length ? this.units : this.units.slice(0, length),
    }
  }
}

/**
 * The k rows nearest to `query` by cosine distance, nearest first (rows of equal distance in
 * table order); [] for a zero query. The caller checks the dimension.
 */
export function nearestResident(table: ResidentTable, query: Float32Array, k: number): Neighbour[] {
  const { dimensions, units } = table
  let squares = 0
  for (const x of query) squares += x * x
  if (squares === 0) return []
  const norm = Math.sqrt(squares)
  const unit = Float64Array.from(query, (x) => x / norm)
  const count = Math.min(k, table.ids.length)
  // The best `count` so far, sorted by distance: an insertion into a short sorted list, since few
  // rows of a large table beat the current worst.
  const bestDistance = new Float64Array(count)
  const bestRow = new Int32Array(count)
  let held = 0
  for (let row = 0, offset = 0; row < table.ids.length; row++, offset += dimensions) {
    // Four sums, so that the additions do not wait on each other.
    let s0 = 0
    let s1 = 0
    let s2 = 0
    let s3 = 0
    let j = 0
    for (; j + 3 < dimensions; j += 4) {
      s0 += units[offset + j]! * unit[j]!
      s1 += units[offset + j + 1]! * unit[j + 1]!
      s2 += units[offset + j + 2]! * unit[j + 2]!
      s3 += units[offset + j + 3]! * unit[j + 3]!
    }
    for (; j < dimensions; j++) s0 += units[offset + j]! * unit[j]!
    const distance = 1 - (s0 + s1 + s2 + s3)
    if (held === count && !(distance < bestDistance[count - 1]!)) continue
    let at = held < count ? held++ : count - 1
    for (; at > 0 && bestDistance[at - 1]! > distance; at--) {
      bestDistance[at] = bestDistance[at - 1]!
      bestRow[at] = bestRow[at - 1]!
    }
    bestDistance[at] = distance
    bestRow[at] = row
  }
  // Rounding can put a vector a hair below zero distance from itself.
  return Array.from({ length: held }, (_, i) => ({
    id: table.ids[bestRow[i]!]!,
    distance: Math.max(0, bestDistance[i]!),
  }))
}

/** What a load found: the table at `version`, or undefined when it is too large to hold. */
export interface LoadedTable {
  version: number
  table: ResidentTable | undefined
}

interface Entry extends LoadedTable {
  bytes: number
}

/**
 * The resident copies of one store, at most `budgetBytes` of them, the least recently searched
 * given up first. A table is held at one version; one load per table runs at a time.
 */
export class ResidentTables {
  /** In order of use, the least recent first. */
  private readonly entries = new Map<string, Entry>()
  private readonly loading = new Map<string, Promise<void>>()
  /** Per table: searches LanceDB answered since its last load. */
  private readonly missed = new Map<string, number>()
  private heldBytes = 0

  constructor(private readonly budgetBytes: number) {}

  /** Bytes of vectors held now. */
  get bytes(): number {
    return this.heldBytes
  }

  /** Tables larger than this are not held. */
  get maxFloats(): number {
    return Math.min(RESIDENT_MAX_FLOATS, Math.floor(this.budgetBytes / Float32Array.BYTES_PER_ELEMENT))
  }

  /**
   * The copy of table `name` if it holds `version`, the table's latest. Otherwise undefined, and
   * the search counts as missed: at the LOAD_AFTER_MISSES-th since the table's last load, unless
   * one is under way, `load` starts a load (of the version it then finds). A load that fails leaves
   * the copy as it was.
   */
  lookup(name: string, version: number, load: () => Promise<LoadedTable>): ResidentTable | undefined {
    const held = this.entries.get(name)
    if (held?.version === version) {
      // To the end of the order: the most recently used.
      this.entries.delete(name)
      this.entries.set(name, held)
      return held.table
    }
    if (this.budgetBytes > 0 && !this.loading.has(name)) {
      const missed = (this.missed.get(name) ?? 0) + 1
      this.missed.set(name, missed)
      if (missed < LOAD_AFTER_MISSES) return undefined
      this.missed.delete(name)
      const loaded = load().then(
        (found) => this.hold(name, found),
        () => {},
      )
      this.loading.set(name, loaded)
      void loaded.finally(() => this.loading.delete(name))
    }
    return undefined
  }

  /** Gives up the copy of a table dropped by this store (one dropped by another is given up in its turn). */
  drop(name: string): void {
    const held = this.entries.get(name)
    if (held) this.forget(name, held)
    this.missed.delete(name)
  }

  /** Resolves once no load is under way. */
  async settled(): Promise<void> {
    while (this.loading.size > 0) await Promise.all(this.loading.values())
  }

  private hold(name: string, found: LoadedTable): void {
    const held = this.entries.get(name)
    // A search may have started this load before another's write, and finished after it.
    if (held && held.version >= found.version) return
    if (held) this.forget(name, held)
    const entry: Entry = { ...found, bytes: found.table?.units.byteLength ?? 0 }
    this.entries.set(name, entry)
    this.heldBytes += entry.bytes
    for (const [other, oldest] of this.entries) {
      if (this.heldBytes <= this.budgetBytes) break
      if (oldest !== entry) this.forget(other, oldest)
    }
  }

  private forget(name: string, entry: Entry): void {
    this.entries.delete(name)
    this.heldBytes -= entry.bytes
  }
}
