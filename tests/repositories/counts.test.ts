// A repository record's counts: exact after imports (a re-import that adds nothing adds nothing),
// after a write through the graph's write service, by a route or directly (at /{repoID} of the
// instance that took it at once, in the list once copied), after deletes
// with their cascades and after TRUNCATE, the same in the list, at /{repoID} and under /api/v1;
// writers of one repository never wait for each other on them, nor for their copy.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql, TransactionSql } from 'postgres'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import type { Account, api } from '../helpers/api.ts'
import { uploadBundle } from '../helpers/imports.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import { generateBundle, type GenerateResult } from '../../scripts/gen-bundle.ts'
import { graphWrites } from '../../src/graph/write/service.ts'
import { copiedCounts } from '../../src/repositories/counts.ts'
import { Repositories } from '../../src/repositories/repositories.ts'
import { LocalEventBus } from '../../src/db/events.ts'
import { createLogger } from '../../src/log.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let admin: Account
let repository: { id: string; slug: string }
let bundle: GenerateResult
const dir = mkdtempSync(join(tmpdir(), 'kgs-counts-'))

const COUNTED = ['sources', 'facts', 'concepts', 'reports', 'investigations'] as const

/** The counts as the tables hold them, counted row by row. */
async function counted(): Promise<Record<string, number>> {
  const sql = await server.context.pools.forRepository(repository.id)
  const counts: Record<string, number> = {}
  for (const table of COUNTED) counts[table] = (await sql`SELECT count(*)::int AS n FROM ${sql(table)}`)[0]!.n
  return counts
}

/**
 * Holds, in a transaction of the repository's database, the lock every counts refresh takes
 * first (after `during`, if given, ran in it): no refresh ends until `release`.
 */
async function holdCountsLock(
  sql: Sql,
  during?: (tx: TransactionSql) => Promise<unknown>,
): Promise<{ release(): Promise<void> }> {
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let holding!: () => void
  const entered = new Promise<void>((resolve) => (holding = resolve))
  const busy = sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended('kgs graph counts', 0))`
    await during?.(tx)
    holding()
    await held
  })
  await entered
  return {
    release: async () => {
      release()
      await busy
    },
  }
}

/**
 * The counts every route answers with, after checking they agree. The record first: it waits for
 * a copy this instance queued; the list does not, and asked at the same time could answer the one before.
 */
async function answered(): Promise<Record<string, number>> {
  const atRoot = await http.get(`/${repository.slug}`, owner.token)
  const [byId, byHeader, list] = await Promise.all([
    http.get(`/api/v1/repositories/${repository.id}`, owner.token),
    http.call('GET', '/api/v1/repository', { token: owner.token, headers: { 'x-repository-id': repository.slug } }),
    http.get('/api/v1/repositories', owner.token),
  ])
  const inList = list.body.find((r: { id: string }) => r.id === repository.id)
  expect(byId.body.counts).toEqual(atRoot.body.counts)
  expect(byHeader.body.counts).toEqual(atRoot.body.counts)
  expect(inList.counts).toEqual(atRoot.body.counts)
  return atRoot.body.counts
}

async function importBundle(): Promise<void> {
  const started = await uploadBundle(
    http,
    repository.slug,
    owner.token,
    new Uint8Array(await Bun.file(bundle.path).arrayBuffer()),
  )
  expect(started.status).toBe(202)
  expect((await waitForJob(http, `/${repository.slug}/jobs/${started.body.id}`, owner.token)).status).toBe('succeeded')
  await settleJobs(http, repository.slug, owner.token)
}

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner, admin },
    repositories: { counted: repository },
  } = await fixture({
    server: { env: { WORKERS: '1' } },
    users: { owner: 'member', admin: 'sysadmin' },
    repositories: { counted: { by: 'owner' } },
  }))
  bundle = await generateBundle(join(dir, 'graph.json.gz'), { facts: 800, dimensions: 0 })
})
afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe(`repository counts (${BACKEND})`, () => {
  test('an import counts what it added; importing the same bundle again adds nothing', async () => {
    expect(await answered()).toEqual({ sources: 0, facts: 0, concepts: 0, reports: 0, investigations: 0 })
    await importBundle()
    const expected = Object.fromEntries(COUNTED.map((kind) => [kind, bundle.counts[kind]]))
    expect(expected.facts).toBe(800)
    expect(await counted()).toEqual(expected)
    expect(await answered()).toEqual(expected)
    await importBundle()
    expect(await counted()).toEqual(expected)
    expect(await answered()).toEqual(expected)
  })

  test("a write of the graph's write service queues the counts' copy, which the next read of the record waits for", async () => {
    const before = await answered()
    const created = await http.post(`/${repository.slug}/investigations`, { title: 'written' }, owner.token)
    expect(created.status).toBe(201)
    expect((await http.get(`/${repository.slug}`, owner.token)).body.counts.investigations).toBe(
      before.investigations! + 1,
    )
    // The list reads the copy as it is: made by now.
    expect((await answered()).investigations).toBe(before.investigations! + 1)
  })

  test('a job calling the write service directly (no route, no access rule) gets the same copy', async () => {
    const ctx = server.context
    const writes = graphWrites({
      pools: ctx.pools,
      blobs: ctx.blobs,
      log: createLogger('silent'),
      baseUrl: ctx.baseUrl,
      embeddingChanged: async () => {},
      graphChanged: (repositoryId) => ctx.repositories.graphChanged(repositoryId),
    })
    const before = await answered()
    await writes.createInvestigation(repository.id, { title: 'written by a job' })
    expect((await http.get(`/${repository.slug}`, owner.token)).body.counts.investigations).toBe(
      before.investigations! + 1,
    )
    expect((await answered()).investigations).toBe(before.investigations! + 1)
  })

  test('deletes count with their cascades, and TRUNCATE empties', async () => {
    const sql = await server.context.pools.forRepository(repository.id)
    // A parent report takes its children with it (reports.parent_id ON DELETE CASCADE).
    const [parent] = await sql`SELECT parent_id AS id FROM reports WHERE parent_id IS NOT NULL LIMIT 1`
    await sql`DELETE FROM reports WHERE id = ${parent!.id}`
    await sql`DELETE FROM sources WHERE id IN (SELECT id FROM sources ORDER BY created_at LIMIT 3)`
    await sql`DELETE FROM facts WHERE id IN (SELECT id FROM facts ORDER BY created_at LIMIT 7)`
    await server.context.repositories.graphChanged(repository.id)
    const afterDeletes = await counted()
    expect(afterDeletes.facts).toBe(793)
    expect(afterDeletes.reports).toBeLessThan(bundle.counts.reports - 1)
    expect(await answered()).toEqual(afterDeletes)
    await sql`TRUNCATE concepts CASCADE`
    await server.context.repositories.graphChanged(repository.id)
    expect(await answered()).toEqual({ ...afterDeletes, concepts: 0 })
  })

  test('change rows are summed as they are, and folded into one a kind once there are over 1,000', async () => {
    const sql = await server.context.pools.forRepository(repository.id)
    const changeRows = async () => (await sql`SELECT count(*)::int AS n FROM graph_count_changes`)[0]!.n as number
    // A thousand statements' worth of changes that cancel out.
    await sql`INSERT INTO graph_count_changes (kind, delta) SELECT 'investigations', CASE WHEN n % 2 = 0 THEN 1 ELSE -1 END FROM generate_series(1, 1002) n`
    await server.context.repositories.graphChanged(repository.id)
    expect(await changeRows()).toBeLessThanOrEqual(COUNTED.length)
    expect(await answered()).toEqual(await counted())
    const folded = await changeRows()
    for (let i = 0; i < 3; i++)
      await sql`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, 'one statement each')`
    await server.context.repositories.graphChanged(repository.id)
    // Read without a write: each statement's row is still there.
    expect(await changeRows()).toBe(folded + 3)
    expect(await answered()).toEqual(await counted())
  })

  test('a repository not counted since its migration is counted at its first read', async () => {
    const system = server.systemSql()
    try {
      await system`DELETE FROM repository_counts WHERE repository_id = ${repository.id}`
      const expected = await counted()
      expect(await answered()).toEqual(expected)
      expect(await system`SELECT 1 FROM repository_counts WHERE repository_id = ${repository.id}`).toHaveLength(1)
    } finally {
      await system.end()
    }
  })

  test("a sysadmin's record says role null; the owner's repoadmin", async () => {
    expect((await http.get(`/${repository.slug}`, admin.token)).body.role).toBeNull()
    expect((await http.get(`/${repository.slug}`, owner.token)).body.role).toBe('repoadmin')
  })

  // The embedded database is one session: its transactions take turns whatever the schema.
  test.skipIf(BACKEND === 'embedded')(
    'two open transactions writing one repository do not wait for each other on the counts',
    async () => {
      const sql = await server.context.pools.forRepository(repository.id)
      let releaseFirst!: () => void
      const held = new Promise<void>((resolve) => (releaseFirst = resolve))
      let firstWrote!: () => void
      const wrote = new Promise<void>((resolve) => (firstWrote = resolve))
      const first = sql.begin(async (tx) => {
        await tx`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, 'first')`
        firstWrote()
        await held
      })
      await wrote
      // Would wait for the first transaction's end if both updated one counter row.
      await sql.begin(async (tx) => {
        await tx`SET LOCAL lock_timeout = '2s'`
        await tx`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, 'second')`
      })
      releaseFirst()
      await first
      await server.context.repositories.graphChanged(repository.id)
      expect(await answered()).toEqual(await counted())
    },
  )

  // The embedded database is one session: the held lock would hold back the writes themselves.
  test.skipIf(BACKEND === 'embedded')(
    'writes answer before their copy is made, and a burst of them makes one copy in flight and one pending',
    async () => {
      const sql = await server.context.pools.forRepository(repository.id)
      const listener = server.systemSql()
      const copies: string[] = []
      let sentinel!: () => void
      const heard = new Promise<void>((resolve) => (sentinel = resolve))
      try {
        await listener.listen('kgs_repository_counts', (payload) =>
          payload === 'sentinel' ? sentinel() : copies.push(payload),
        )
        const [source] = await sql`SELECT id FROM sources LIMIT 1`
        // Every refresh of the repository takes this lock first: none can end while it is held.
        const lock = await holdCountsLock(sql)
        const before = await counted()
        const written = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            http.post(
              `/${repository.slug}/facts`,
              { text: `Burst fact ${i} ${crypto.randomUUID()}`, sources: [{ source_id: source!.id }] },
              owner.token,
            ),
          ),
        )
        expect(written.map((res) => res.status)).toEqual(Array(20).fill(201))
        await lock.release()
        expect((await http.get(`/${repository.slug}`, owner.token)).body.counts).toEqual({
          ...before,
          facts: before.facts! + 20,
        })
        expect(await answered()).toEqual({ ...before, facts: before.facts! + 20 })
        await listener`SELECT pg_notify('kgs_repository_counts', 'sentinel')`
        await heard
        expect(copies.filter((id) => id === repository.id).length).toBeLessThanOrEqual(2)
      } finally {
        await listener.end()
      }
    },
  )

  test('changes made while a copy runs are copied an interval after its start, or at once for a reader of the record and at a stop', async () => {
    const { pools, rbac, vectors, blobs } = server.context
    // Its own Repositories, with an interval no test outlasts: a copy made in time was started early.
    const paced = await Repositories.start({
      system: pools.system,
      pools,
      rbac,
      bus: new LocalEventBus(),
      log: createLogger('silent'),
      vectors,
      blobs,
      stopJobs: async () => {},
      countsCopyIntervalMs: 3_600_000,
    })
    const sql = await pools.forRepository(repository.id)
    const settledYet = async (copy: Promise<void>) => {
      let settled = false
      void copy.then(() => (settled = true))
      for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve))
      return settled
    }

    /** A copy queued while another runs, after a write only it can count: still waiting for its time. */
    const pendingAfterWrite = async (title: string) => {
      const running = paced.graphChanged(repository.id)
      // It starts in a microtask (and cannot end before its queries are answered); asked before, it would be shared.
      await Promise.resolve()
      const pending = paced.graphChanged(repository.id)
      await running
      await sql`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, ${title})`
      expect(await settledYet(pending)).toBe(false)
      // Wrapped: an async function's answer would be the copy's settling.
      return { pending }
    }

    const { pending } = await pendingAfterWrite('while a copy is pending')
    const now = await counted()
    expect<Record<string, number> | undefined>(await copiedCounts(pools.system, repository.id)).toEqual({
      ...now,
      investigations: now.investigations! - 1,
    })
    expect<Record<string, number>>(
      (await paced.record(owner.id, (await paced.resolve(repository.id))!)).counts,
    ).toEqual(now)
    expect(await settledYet(pending)).toBe(true)

    const { pending: pendingAtStop } = await pendingAfterWrite('before a stop')
    await paced.allCountsCopied()
    expect(await settledYet(pendingAtStop)).toBe(true)
    expect<Record<string, number> | undefined>(await copiedCounts(pools.system, repository.id)).toEqual(await counted())
  })

  test("a refresh waiting on the repository's database holds nothing of the system database", async () => {
    const sql = await server.context.pools.forRepository(repository.id)
    // The repository's database kept busy, as a long import keeps it (on the embedded database its
    // open transaction holds back every other statement there).
    const lock = await holdCountsLock(
      sql,
      (tx) => tx`INSERT INTO investigations (id, title) VALUES (${crypto.randomUUID()}, 'while a refresh waits')`,
    )
    const refresh = server.context.repositories.graphChanged(repository.id)
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve))
    // Answered while the refresh waits (a refresh inside a transaction of the system database would hold this back until the release).
    expect((await http.get('/api/v1/repositories', owner.token)).status).toBe(200)
    await lock.release()
    await refresh
    expect(await answered()).toEqual(await counted())
  })
})
