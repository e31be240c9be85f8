// The LanceDB vector store on a temporary directory: upsert, exact cosine search with the
// built-in kgs-hash-v1, isolation, deletion, dimension checks, concurrent writers (in one store,
// and several stores on one directory as several processes would be), streaming scans, the index,
// and the store the running server is given.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { HashEmbedder } from '../../src/vectors/embedder.ts'
import { LOAD_AFTER_MISSES } from '../../src/vectors/resident.ts'
import { VectorDimensionError, VectorStore, type VectorRow } from '../../src/vectors/store.ts'
import { tempDir } from '../helpers/backend.ts'
import { sharedCreationLocks } from '../helpers/creation-locks.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

const uuid = () => crypto.randomUUID()
const embedder = new HashEmbedder()
const embed = async (text: string) => (await embedder.embed([text]))[0]!
const hex = (repositoryId: string) => repositoryId.replaceAll('-', '')

/** Cosine distance of two unit vectors, in float64. */
function cosineDistance(a: Float32Array, b: Float32Array): number {
  let dot = 0
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!
  return 1 - dot
}

/**
 * Has `searcher` load its in-memory copy of the repository's facts: the searches LanceDB answers
 * before a load starts, then the load.
 */
async function loadCopy(searcher: VectorStore, repositoryId: string): Promise<void> {
  const water = await embed('water')
  for (let i = 0; i < LOAD_AFTER_MISSES; i++) await searcher.search(repositoryId, 'facts', water, 1)
  await searcher.settled()
}

/** Uniform numbers in [-0.5, 0.5) from `seed`, the same each run. */
function seeded(seed: number): () => number {
  return () => ((seed = Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0) / 2 ** 32 - 0.5
}

/** A hit on the vector itself: float32 arithmetic may leave a hair of distance, never a negative one. */
const itself = (id: string) => ({ id, distance: expect.closeTo(0, 6) })

/** The error the promise rejects with, checked for its class and message. */
async function expectRejection(
  promise: Promise<unknown>,
  type: new (message: string) => Error,
  message: string,
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(type)
  expect((error as Error).message).toBe(message)
}

async function collect<T>(batches: AsyncIterable<T[]>): Promise<T[][]> {
  const all: T[][] = []
  for await (const batch of batches) all.push(batch)
  return all
}

const SENTENCES = [
  'Water boils at 100 degrees Celsius at sea level.',
  'The Treaty of Vienna was signed in 1815.',
  'Photosynthesis converts sunlight into chemical energy in plants.',
  'The Pacific Ocean is the largest ocean on Earth.',
  'Mount Everest is the highest mountain above sea level.',
  'Honey bees tell each other where flowers are by dancing.',
]

let dir: string
let store: VectorStore
/** A second store on the same directory, as another process would open it, that leaves every search to LanceDB. */
let lanceOnly: VectorStore

beforeAll(async () => {
  dir = tempDir('kgs-vectors-')
  store = await VectorStore.open(join(dir, 'lance'))
  lanceOnly = await VectorStore.open(join(dir, 'lance'), { residentBytes: 0 })
})

afterAll(async () => {
  await Promise.all([store.close(), lanceOnly.close()])
  rmSync(dir, { recursive: true, force: true })
})

/** The sentences stored as facts of a fresh repository; their ids in order. */
async function storeSentences(repositoryId: string): Promise<string[]> {
  const ids = SENTENCES.map(() => uuid())
  const vectors = await embedder.embed(SENTENCES)
  await store.upsert(
    repositoryId,
    'facts',
    ids.map((id, i) => ({ id, vector: vectors[i]! })),
  )
  return ids
}

describe('VectorStore', () => {
  test('upsert creates the table with the first rows and counts them', async () => {
    const repo = uuid()
    expect(await store.count(repo, 'facts')).toBe(0)
    expect(await store.dimensions(repo, 'facts')).toBeUndefined()
    await store.upsert(repo, 'facts', [])
    expect(existsSync(join(dir, 'lance', `facts_${hex(repo)}.lance`))).toBe(false)

    await storeSentences(repo)
    expect(await store.count(repo, 'facts')).toBe(6)
    expect(await store.dimensions(repo, 'facts')).toBe(384)
    expect(existsSync(join(dir, 'lance', `facts_${hex(repo)}.lance`))).toBe(true)
  })

  test('upserting an existing id replaces its vector; of an id given twice in one batch the last wins', async () => {
    const repo = uuid()
    const [water, treaty] = await storeSentences(repo)
    const old = await embed(SENTENCES[0]!)
    const replacement = await embed('Glaciers move slowly down mountain valleys.')
    await store.upsert(repo, 'facts', [{ id: water!, vector: replacement }])
    expect(await store.count(repo, 'facts')).toBe(6)
    expect((await store.search(repo, 'facts', replacement, 1))[0]).toEqual(itself(water!))
    // The old vector is gone: its own text no longer finds the id at distance 0.
    const byOld = await store.search(repo, 'facts', old, 6)
    expect(byOld.find((n) => n.id === water)!.distance).toBeCloseTo(cosineDistance(old, replacement), 5)
    expect(byOld[0]!.distance).toBeGreaterThan(0.1)

    const last = await embed('The printing press spread across Europe in the 15th century.')
    await store.upsert(repo, 'facts', [
      { id: treaty!, vector: replacement },
      { id: treaty!.toUpperCase(), vector: last },
    ])
    expect(await store.count(repo, 'facts')).toBe(6)
    expect((await store.search(repo, 'facts', last, 1))[0]).toEqual(itself(treaty!))
  })

  test('search returns the exact nearest by cosine distance, nearest first, at most k', async () => {
    const repo = uuid()
    const ids = await storeSentences(repo)
    const vectors = await embedder.embed(SENTENCES)
    for (const [i, sentence] of SENTENCES.entries()) {
      const found = await store.search(repo, 'facts', await embed(sentence), 6)
      expect(found).toHaveLength(6)
      expect(found[0]).toEqual(itself(ids[i]!))
      // Every distance is the exact cosine distance, never below 0, and they ascend.
      expect(Math.min(...found.map((n) => n.distance))).toBeGreaterThanOrEqual(0)
      for (const n of found)
        expect(n.distance).toBeCloseTo(Math.max(0, cosineDistance(vectors[i]!, vectors[ids.indexOf(n.id)]!)), 5)
      expect(found.map((n) => n.distance)).toEqual(found.map((n) => n.distance).toSorted((a, b) => a - b))
    }
    // Paraphrases sharing words find their sentence (kgs-hash-v1 is lexical).
    expect(
      (await store.search(repo, 'facts', await embed('At sea level, water boils at 100 degrees'), 1)).map((n) => n.id),
    ).toEqual([ids[0]!])
    expect((await store.search(repo, 'facts', await embed('bees dance to show where the flowers are'), 2))[0]!.id).toBe(
      ids[5]!,
    )
    expect((await store.search(repo, 'facts', await embed('the largest ocean'), 2))[0]!.id).toBe(ids[3]!)
    expect(await store.search(repo, 'facts', await embed('water'), 3)).toHaveLength(3)
    expect(await store.search(repo, 'facts', await embed('water'), 50)).toHaveLength(6)
    await expectRejection(
      store.search(repo, 'facts', vectors[0]!, 0),
      RangeError,
      'k must be a positive integer, got 0',
    )
  })

  test('searches of one table made at once beyond 8 go as one batch; each gets what it would alone, a misfit fails alone', async () => {
    const repo = uuid()
    await storeSentences(repo)
    const queries = [
      ...SENTENCES.map((sentence, i) => ({ text: sentence, k: 1 + (i % 6) })),
      { text: 'water', k: 50 },
      { text: 'the largest ocean', k: 2 },
    ]
    const vectors = await Promise.all(queries.map((q) => embed(q.text)))
    // One at a time: each search runs as a batch of one (LanceDB's searches: the table is small
    // enough for `store` to search it in memory).
    const alone: Awaited<ReturnType<VectorStore['search']>>[] = []
    for (const [i, q] of queries.entries()) alone.push(await lanceOnly.search(repo, 'facts', vectors[i]!, q.k))
    // All at once, three rounds of them with a vector of the wrong dimension in the middle: the
    // first 8 (SEARCHES_AT_ONCE) run alone, the rest wait and go together.
    const short = Float32Array.of(1, 0, 0)
    const round = () => queries.map((q, i) => lanceOnly.search(repo, 'facts', vectors[i]!, q.k))
    const together = [...round(), ...round()]
    const misfit = lanceOnly.search(repo, 'facts', short, 3)
    together.push(...round())
    const [answers] = await Promise.all([
      Promise.all(together),
      expectRejection(
        misfit,
        VectorDimensionError,
        `a query vector of 3 dimensions cannot search the facts of repository ${repo}, which hold 384`,
      ),
    ])
    for (const [n, answer] of answers.entries()) {
      const i = n % queries.length
      expect(answer).toHaveLength(Math.min(queries[i]!.k, SENTENCES.length))
      expect(answer.map((hit) => hit.id)).toEqual(alone[i]!.map((hit) => hit.id))
      answer.forEach((hit, j) => expect(hit.distance).toBeCloseTo(alone[i]![j]!.distance, 5))
    }
    // Another table's searches are batches of their own: a repository without vectors finds nothing.
    expect(
      await Promise.all([
        lanceOnly.search(uuid(), 'facts', vectors[0]!, 3),
        lanceOnly.search(repo, 'concepts', vectors[0]!, 3),
      ]),
    ).toEqual([[], []])
    expect(lanceOnly.residentBytes).toBe(0)
  })

  test('a small table is searched in memory with the answers LanceDB gives: same ids in the same order, same distances', async () => {
    const repo = uuid()
    const random = seeded(7)
    const rows = Array.from({ length: 700 }, () => ({ id: uuid(), vector: Float32Array.from({ length: 384 }, random) }))
    await store.upsert(repo, 'facts', rows)
    const queries = [
      ...rows.slice(0, 5).map((row) => row.vector),
      ...Array.from({ length: 20 }, () => Float32Array.from({ length: 384 }, random)),
    ]
    await loadCopy(store, repo)
    expect(store.residentBytes).toBeGreaterThanOrEqual(rows.length * 384 * 4)
    for (const [i, query] of queries.entries()) {
      const k = [1, 3, 10, 50, 1000][i % 5]!
      const [inMemory, lance] = await Promise.all([
        store.search(repo, 'facts', query, k),
        lanceOnly.search(repo, 'facts', query, k),
      ])
      expect(inMemory).toHaveLength(Math.min(k, rows.length))
      expect(inMemory.map((n) => n.id)).toEqual(lance.map((n) => n.id))
      inMemory.forEach((n, j) => expect(n.distance).toBeCloseTo(lance[j]!.distance, 5))
    }
  })

  test('a zero vector is never found and finds nothing, in memory and in LanceDB', async () => {
    const repo = uuid()
    const ids = await storeSentences(repo)
    const zero = uuid()
    await store.upsert(repo, 'facts', [{ id: zero, vector: new Float32Array(384) }])
    expect(await store.count(repo, 'facts')).toBe(7)
    await loadCopy(store, repo)
    for (const searcher of [store, lanceOnly]) {
      const all = await searcher.search(repo, 'facts', await embed('water'), 50)
      expect(all.map((n) => n.id).toSorted()).toEqual(ids.toSorted())
      expect(await searcher.search(repo, 'facts', new Float32Array(384), 5)).toEqual([])
    }
  })

  test('in-memory searches see every write at once: of this store, and of another store on the directory', async () => {
    const repo = uuid()
    const ids = await storeSentences(repo)
    const vectors = await embedder.embed(SENTENCES)
    await loadCopy(store, repo)
    const held = store.residentBytes
    expect((await store.search(repo, 'facts', vectors[2]!, 1))[0]).toEqual(itself(ids[2]!))
    // Another process moves a fact elsewhere and deletes one; this store's next searches see both:
    // from LanceDB until the copy of the new version is loaded (the last of these starts that),
    // then from the copy.
    const glacier = await embed('Glaciers move slowly down mountain valleys.')
    await lanceOnly.upsert(repo, 'facts', [{ id: ids[2]!, vector: glacier }])
    await lanceOnly.delete(repo, 'facts', [ids[3]!])
    const seesBoth = async () => {
      expect((await store.search(repo, 'facts', glacier, 1))[0]).toEqual(itself(ids[2]!))
      expect((await store.search(repo, 'facts', vectors[3]!, 6)).map((n) => n.id)).not.toContain(ids[3]!)
    }
    for (let i = 0; i < LOAD_AFTER_MISSES / 2; i++) await seesBoth()
    await store.settled()
    // The copy now holds 5 rows instead of 6.
    expect(store.residentBytes).toBe(held - 384 * 4)
    await seesBoth()
    // And its own write, before its copy is loaded and after.
    await store.upsert(repo, 'facts', [{ id: ids[3]!, vector: vectors[3]! }])
    expect((await store.search(repo, 'facts', vectors[3]!, 1))[0]).toEqual(itself(ids[3]!))
    await loadCopy(store, repo)
    expect(store.residentBytes).toBe(held)
    expect((await store.search(repo, 'facts', vectors[3]!, 1))[0]).toEqual(itself(ids[3]!))
    // A dropped table searches to [] again, and its copy is given up.
    const before = store.residentBytes
    await store.dropRepository(repo)
    expect(store.residentBytes).toBe(before - SENTENCES.length * 384 * 4)
    expect(await store.search(repo, 'facts', vectors[3]!, 1)).toEqual([])
  })

  test('in-memory copies stay within their budget, the least recently searched given up first; a table past it is searched by LanceDB', async () => {
    const tableBytes = SENTENCES.length * 384 * 4
    const budgeted = await VectorStore.open(join(dir, 'lance'), { residentBytes: 2 * tableBytes })
    try {
      const [a, b, c] = [uuid(), uuid(), uuid()]
      const idsOf = new Map<string, string[]>()
      for (const repo of [a, b, c]) idsOf.set(repo, await storeSentences(repo))
      const water = await embed(SENTENCES[0]!)
      const first = async (repo: string) => {
        await loadCopy(budgeted, repo)
        return (await budgeted.search(repo, 'facts', water, 1))[0]
      }
      expect(await first(a)).toEqual(itself(idsOf.get(a)![0]!))
      expect(budgeted.residentBytes).toBe(tableBytes)
      expect(await first(b)).toEqual(itself(idsOf.get(b)![0]!))
      expect(budgeted.residentBytes).toBe(2 * tableBytes)
      // A third table: the least recently searched (a) is given up.
      expect(await first(c)).toEqual(itself(idsOf.get(c)![0]!))
      expect(budgeted.residentBytes).toBe(2 * tableBytes)
      // a again, still right: loaded again, b given up (c was searched later).
      expect(await first(a)).toEqual(itself(idsOf.get(a)![0]!))
      expect(budgeted.residentBytes).toBe(2 * tableBytes)
      // A table larger than the whole budget is left to LanceDB, and nothing held is given up for it.
      const large = uuid()
      const random = seeded(11)
      const rows = Array.from({ length: 20 }, () => ({
        id: uuid(),
        vector: Float32Array.from({ length: 384 }, random),
      }))
      await budgeted.upsert(large, 'facts', rows)
      await loadCopy(budgeted, large)
      expect((await budgeted.search(large, 'facts', rows[4]!.vector, 2))[0]).toEqual(itself(rows[4]!.id))
      expect(budgeted.residentBytes).toBe(2 * tableBytes)
    } finally {
      await budgeted.close()
    }
    await expectRejection(
      VectorStore.open(join(dir, 'lance'), { residentBytes: -1 }),
      RangeError,
      'resident bytes must be a non-negative integer, got -1',
    )
  })

  test('a repository or kind without vectors searches to []', async () => {
    const repo = uuid()
    await storeSentences(repo)
    expect(await store.search(repo, 'concepts', await embed('water'), 5)).toEqual([])
    expect(await store.search(uuid(), 'facts', await embed('water'), 5)).toEqual([])
  })

  test('in a directory, a repository without vectors is read without loading LanceDB; its first table is found', async () => {
    const fresh = await VectorStore.open(join(dir, 'lance'))
    try {
      const repo = uuid()
      expect(await fresh.dimensions(repo, 'facts')).toBeUndefined()
      expect(await fresh.search(repo, 'facts', await embed('water'), 3)).toEqual([])
      expect(await fresh.count(repo, 'concepts')).toBe(0)
      expect(fresh.connected).toBe(false)
      // Written by another store of the directory: this one finds it, through LanceDB.
      await store.upsert(repo, 'facts', [{ id: uuid(), vector: await embed('water') }])
      expect(await fresh.dimensions(repo, 'facts')).toBe(384)
      expect(fresh.connected).toBe(true)
    } finally {
      await fresh.close()
    }
  })

  test('a table directory without a committed version (created elsewhere right now, or left by a crash) reads as empty and is written over', async () => {
    const repo = uuid()
    mkdirSync(join(dir, 'lance', `facts_${hex(repo)}.lance`, 'data'), { recursive: true })
    expect(await store.count(repo, 'facts')).toBe(0)
    expect(await store.search(repo, 'facts', await embed('water'), 3)).toEqual([])
    expect(await store.dimensions(repo, 'facts')).toBeUndefined()
    const ids = await storeSentences(repo)
    expect((await store.search(repo, 'facts', await embed(SENTENCES[1]!), 1))[0]).toEqual(itself(ids[1]!))
  })

  test('repositories and kinds are isolated from each other', async () => {
    const [a, b] = [uuid(), uuid()]
    const shared = uuid()
    const [water, treaty, ocean] = await embedder.embed(SENTENCES.slice(0, 3))
    await store.upsert(a, 'facts', [{ id: shared, vector: water! }])
    await store.upsert(a, 'concepts', [
      { id: shared, vector: treaty! },
      { id: uuid(), vector: ocean! },
    ])
    await store.upsert(b, 'facts', [{ id: shared, vector: ocean! }])
    expect([
      await store.count(a, 'facts'),
      await store.count(a, 'concepts'),
      await store.count(b, 'facts'),
      await store.count(b, 'concepts'),
    ]).toEqual([1, 2, 1, 0])
    expect(await store.search(a, 'facts', water!, 5)).toEqual([itself(shared)])
    expect((await store.search(a, 'concepts', treaty!, 5))[0]).toEqual(itself(shared))
    expect(await store.search(b, 'facts', ocean!, 5)).toEqual([itself(shared)])
  })

  test('delete removes the given ids and ignores unknown ones', async () => {
    const repo = uuid()
    const ids = await storeSentences(repo)
    await store.delete(repo, 'facts', [ids[0]!, ids[2]!.toUpperCase(), uuid()])
    await store.delete(repo, 'facts', [])
    await store.delete(uuid(), 'concepts', [uuid()])
    expect(await store.count(repo, 'facts')).toBe(4)
    const remaining = (await collect(store.ids(repo, 'facts', 10))).flat()
    expect(remaining.toSorted()).toEqual([ids[1]!, ids[3]!, ids[4]!, ids[5]!].toSorted())
    expect((await store.search(repo, 'facts', await embed(SENTENCES[0]!), 6)).map((n) => n.id)).not.toContain(ids[0]!)
  })

  test('dropRepository removes both tables; the repository then searches to [] and may start over', async () => {
    const repo = uuid()
    const other = uuid()
    await storeSentences(repo)
    await storeSentences(other)
    await store.upsert(repo, 'concepts', [{ id: uuid(), vector: await embed('water') }])
    await store.dropRepository(repo)
    expect(existsSync(join(dir, 'lance', `facts_${hex(repo)}.lance`))).toBe(false)
    expect(existsSync(join(dir, 'lance', `concepts_${hex(repo)}.lance`))).toBe(false)
    expect([await store.count(repo, 'facts'), await store.count(repo, 'concepts')]).toEqual([0, 0])
    expect(await store.search(repo, 'facts', await embed('water'), 5)).toEqual([])
    expect(await store.dimensions(repo, 'facts')).toBeUndefined()
    expect(await store.count(other, 'facts')).toBe(6)
    await store.dropRepository(repo)
    // A new model may have other dimensions: the table is made anew.
    await store.upsert(repo, 'facts', [{ id: uuid(), vector: Float32Array.of(1, 0, 0) }])
    expect(await store.dimensions(repo, 'facts')).toBe(3)
  })

  test('dropTable removes one kind only', async () => {
    const repo = uuid()
    await storeSentences(repo)
    await store.upsert(repo, 'concepts', [{ id: uuid(), vector: await embed('water') }])
    await store.dropTable(repo, 'facts')
    expect([await store.count(repo, 'facts'), await store.count(repo, 'concepts')]).toEqual([0, 1])
  })

  test('a vector of another dimension than the table is refused', async () => {
    const repo = uuid()
    await storeSentences(repo)
    const short = Float32Array.of(1, 0, 0)
    await expectRejection(
      store.upsert(repo, 'facts', [{ id: uuid(), vector: short }]),
      VectorDimensionError,
      `vectors of 3 dimensions cannot go into the facts of repository ${repo}, which hold 384`,
    )
    await expectRejection(
      store.search(repo, 'facts', short, 3),
      VectorDimensionError,
      `a query vector of 3 dimensions cannot search the facts of repository ${repo}, which hold 384`,
    )
    expect(await store.count(repo, 'facts')).toBe(6)
    // Within one batch too, before any table is made.
    const fresh = uuid()
    await expectRejection(
      store.upsert(fresh, 'facts', [
        { id: uuid(), vector: await embed('water') },
        { id: uuid(), vector: short },
      ]),
      VectorDimensionError,
      'the vectors of one upsert must have one dimension: got 384 and 3',
    )
    await expectRejection(
      store.upsert(fresh, 'facts', [{ id: uuid(), vector: new Float32Array(0) }]),
      VectorDimensionError,
      'a vector must have at least one dimension',
    )
    const id = uuid()
    await expectRejection(
      store.upsert(fresh, 'facts', [{ id, vector: Float32Array.of(1, Number.NaN) }]),
      TypeError,
      `the vector of ${id} has a component that is not a finite number`,
    )
    expect(await store.dimensions(fresh, 'facts')).toBeUndefined()
  })

  test('concurrent upserts into a table that does not exist yet all land', async () => {
    const repo = uuid()
    const shared = uuid()
    const batches: VectorRow[][] = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => [
        { id: uuid(), vector: await embed(`fact ${i} a`) },
        { id: uuid(), vector: await embed(`fact ${i} b`) },
        { id: shared, vector: await embed(`shared ${i}`) },
      ]),
    )
    await Promise.all(batches.map((rows) => store.upsert(repo, 'facts', rows)))
    const stored = (await collect(store.ids(repo, 'facts', 100))).flat()
    expect(stored.toSorted()).toEqual([...new Set(batches.flat().map((r) => r.id))].toSorted())
    expect(stored).toHaveLength(21)
  })

  test('writes to one table apply in the order they were issued', async () => {
    const repo = uuid()
    const [a, b, c] = [uuid(), uuid(), uuid()]
    const [first, second, other] = await embedder.embed(['first', 'second', 'other'])
    // Issued without waiting: the delete must not find the table missing, nor the second upsert of a lose to the first.
    await Promise.all([
      store.upsert(repo, 'facts', [
        { id: a, vector: first! },
        { id: b, vector: other! },
      ]),
      store.upsert(repo, 'facts', [{ id: a, vector: second! }]),
      store.delete(repo, 'facts', [b]),
      store.upsert(repo, 'facts', [{ id: c, vector: other! }]),
    ])
    const rows = (await collect(store.scan(repo, 'facts', 10))).flat()
    expect(rows.map((r) => r.id).toSorted()).toEqual([a, c].toSorted())
    expect([...rows.find((r) => r.id === a)!.vector]).toEqual([...second!])
  })

  test('several stores on one directory (as several processes, sharing the creation lock) creating a table and inserting the same new ids at once keep every row, each id once', async () => {
    const uri = join(dir, 'lance')
    const shared = await sharedCreationLocks(5)
    const others = await Promise.all(shared.locks.map((creationLock) => VectorStore.open(uri, { creationLock })))
    const unit = (axis: number) => Float32Array.from({ length: 384 }, (_, d) => (d === axis ? 1 : 0))
    // The races do not happen every time: three rounds, each on a new table.
    for (let round = 0; round < 3; round++) {
      const repo = uuid()
      const shared = [uuid(), uuid()]
      const own = others.map(() => uuid())
      // They also race to create the table: every acknowledged row must be there, each id once.
      await Promise.all(
        others.map((other, i) =>
          other.upsert(
            repo,
            'facts',
            [...shared, own[i]!].map((id) => ({ id, vector: unit(i) })),
          ),
        ),
      )
      expect((await collect(store.ids(repo, 'facts', 10))).flat().toSorted()).toEqual([...shared, ...own].toSorted())
    }
    await Promise.all(others.map((other) => other.close()))
    await shared.close()
  })

  test('scan streams every vector exactly once, in batches of the given size', async () => {
    const repo = uuid()
    const rows: VectorRow[] = []
    // Three upserts leave three fragments; batches cut across them.
    for (let part = 0; part < 3; part++) {
      const texts = Array.from({ length: 9 }, (_, i) => `sentence ${part} ${i}`)
      const vectors = await embedder.embed(texts)
      const batch = vectors.map((vector) => ({ id: uuid(), vector }))
      await store.upsert(repo, 'facts', batch)
      rows.push(...batch)
    }
    const batches = await collect(store.scan(repo, 'facts', 10))
    expect(batches.map((b) => b.length)).toEqual([10, 10, 7])
    const scanned = new Map(batches.flat().map((r) => [r.id, r.vector]))
    expect(scanned.size).toBe(27)
    for (const row of rows) expect([...scanned.get(row.id)!]).toEqual([...row.vector])
    expect((await collect(store.ids(repo, 'facts', 4))).map((b) => b.length)).toEqual([4, 4, 4, 4, 4, 4, 3])
    expect(await collect(store.scan(uuid(), 'facts', 10))).toEqual([])
    expect(() => store.scan(repo, 'facts', 0)).toThrow(new RangeError('batch size must be a positive integer, got 0'))
  })

  test('ids that are not UUIDs are refused before anything is named or filtered', async () => {
    const vector = await embed('water')
    await expectRejection(store.count('../../etc', 'facts'), TypeError, 'repository id must be a UUID, got "../../etc"')
    await expectRejection(
      store.search("x' OR 1=1 --", 'facts', vector, 1),
      TypeError,
      `repository id must be a UUID, got "x' OR 1=1 --"`,
    )
    const undashed = uuid().replaceAll('-', '')
    await expectRejection(
      store.upsert(undashed, 'facts', []),
      TypeError,
      `repository id must be a UUID, got "${undashed}"`,
    )
    await expectRejection(
      store.count(uuid(), 'sources' as 'facts'),
      TypeError,
      'vector kind must be facts or concepts, got "sources"',
    )
    expect(() => store.scan('../x', 'facts', 10)).toThrow(new TypeError('repository id must be a UUID, got "../x"'))
    const repo = uuid()
    await expectRejection(
      store.upsert(repo, 'facts', [{ id: "a' OR true", vector }]),
      TypeError,
      `vector id must be a UUID, got "a' OR true"`,
    )
    expect(await store.dimensions(repo, 'facts')).toBeUndefined()
    const [first] = await storeSentences(repo)
    await expectRejection(
      store.delete(repo, 'facts', [`${first}' OR id != '`]),
      TypeError,
      `vector id must be a UUID, got "${first}' OR id != '"`,
    )
    expect(await store.count(repo, 'facts')).toBe(6)
    // Upper-case UUIDs name the same repository.
    expect(await store.count(repo.toUpperCase(), 'facts')).toBe(6)
  })

  test('optimize builds a cosine index once the table passes the threshold; search stays exact for the top hit', async () => {
    const uri = join(dir, 'indexed')
    // Searches of the index, not of an in-memory copy.
    const indexed = await VectorStore.open(uri, { indexThreshold: 300, residentBytes: 0 })
    const repo = uuid()
    // Dense vectors: sparse kgs-hash-v1 ones leave most quantizer clusters empty (LanceDB warns at length).
    const random = seeded(42)
    const vectors = Array.from({ length: 320 }, () => Float32Array.from({ length: 384 }, random))
    const rows = vectors.map((vector) => ({ id: uuid(), vector }))
    await indexed.upsert(repo, 'facts', rows.slice(0, 299))
    expect(await indexed.optimize(repo, 'facts')).toEqual({ indexed: false })
    const indices = join(uri, `facts_${hex(repo)}.lance`, '_indices')
    expect(existsSync(indices) ? readdirSync(indices) : []).toEqual([])
    await indexed.upsert(repo, 'facts', rows.slice(299))
    expect(await indexed.optimize(repo, 'facts')).toEqual({ indexed: true })
    expect(readdirSync(indices)).toHaveLength(1)
    expect(await indexed.optimize(repo, 'facts')).toEqual({ indexed: true })
    for (const i of [0, 150, 319]) {
      const found = await indexed.search(repo, 'facts', vectors[i]!, 3)
      expect(found[0]).toEqual(itself(rows[i]!.id))
      expect(Math.min(...found.map((n) => n.distance))).toBeGreaterThanOrEqual(0)
    }
    expect(await indexed.optimize(uuid(), 'facts')).toEqual({ indexed: false })
    await indexed.close()
    await expectRejection(
      VectorStore.open(uri, { indexThreshold: 10 }),
      RangeError,
      'index threshold must be an integer of at least 256, got 10',
    )
  })

  test('staged vectors reach the repository only when promoted; an id staged twice keeps its later vector', async () => {
    const [repo, job, other] = [uuid(), uuid(), uuid()]
    const vectors = await embedder.embed(SENTENCES)
    const ids = SENTENCES.map(() => uuid())
    await store.stage(
      job,
      'facts',
      ids.slice(0, 4).map((id, i) => ({ id, vector: vectors[i]! })),
    )
    await store.stage(job, 'facts', [
      ...ids.slice(4).map((id, i) => ({ id, vector: vectors[4 + i]! })),
      { id: ids[0]!, vector: vectors[5]! },
    ])
    await store.stage(job, 'concepts', [{ id: ids[0]!, vector: vectors[0]! }])
    expect([await store.countStaged(job, 'facts'), await store.countStaged(job, 'concepts')]).toEqual([7, 1])
    expect(await store.count(repo, 'facts')).toBe(0)
    expect(await store.search(repo, 'facts', vectors[1]!, 3)).toEqual([])

    expect(await store.promoteStaged(job, repo, 'facts', 2)).toBe(7)
    expect([await store.count(repo, 'facts'), await store.countStaged(job, 'facts')]).toEqual([6, 0])
    const stored = new Map((await collect(store.scan(repo, 'facts', 10))).flat().map((r) => [r.id, [...r.vector]]))
    expect(stored.get(ids[0]!)).toEqual([...vectors[5]!])
    expect(stored.get(ids[3]!)).toEqual([...vectors[3]!])
    // Promoting again (a retry after a crash midway) finds nothing left and changes nothing.
    expect(await store.promoteStaged(job, repo, 'facts')).toBe(0)
    expect(await store.count(repo, 'facts')).toBe(6)
    // Dropped unpromoted: the repository never sees them.
    await store.dropStaged(job)
    await store.dropStaged(job)
    expect(await store.countStaged(job, 'concepts')).toBe(0)
    expect(await store.promoteStaged(job, other, 'concepts')).toBe(0)
    expect(await store.count(other, 'concepts')).toBe(0)
    await expectRejection(store.stage('job-1', 'facts', []), TypeError, 'job id must be a UUID, got "job-1"')
  })

  test('close waits for the writes under way', async () => {
    const uri = join(dir, 'closing')
    const closing = await VectorStore.open(uri)
    const repo = uuid()
    const vectors = await embedder.embed(Array.from({ length: 5 }, (_, i) => `write ${i}`))
    // Not awaited: close() finds all five queued.
    const writes = vectors.map((vector) => closing.upsert(repo, 'facts', [{ id: uuid(), vector }]))
    await closing.close()
    await Promise.all(writes)
    const reopened = await VectorStore.open(uri)
    expect(await reopened.count(repo, 'facts')).toBe(5)
    await reopened.close()
  })
})

describe('the running server', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(() => server.stop())

  test('gives its routes and jobs a vector store under DATA_DIR/lance and the kgs-hash-v1 embedder', async () => {
    const { vectors, embedder: configured } = server.context
    expect(configured.model).toBe('kgs-hash-v1')
    const repo = uuid()
    const ids = SENTENCES.map(() => uuid())
    const embedded = await configured.embed(SENTENCES)
    await vectors.upsert(
      repo,
      'concepts',
      ids.map((id, i) => ({ id, vector: embedded[i]! })),
    )
    const [query] = await configured.embed(['Which ocean is the largest?'])
    expect((await vectors.search(repo, 'concepts', query!, 2))[0]!.id).toBe(ids[3]!)
    expect(existsSync(join(server.dataDir, 'lance', `concepts_${hex(repo)}.lance`))).toBe(true)
  })
})
