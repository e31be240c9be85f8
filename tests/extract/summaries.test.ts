// Summaries and syntheses written by process_source with the built-in extractor, on the selected
// backend, read back through the API: each concept the job touched has its summary, bullets of
// its most central facts each citing its fact, covering its facts; each concept group (the
// concepts of one name, in any context) one synthesis citing the group's summaries, concepts and
// facts; processing again rewrites the same texts in the same rows.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { Account, api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { waitForJob } from '../helpers/jobs.ts'
import { addProcessed } from '../helpers/processing.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { citedIds } from '../../src/graph/rules.ts'
import { BUILTIN_DESCRIPTION } from '../../src/extract/builtin.ts'
import { BUILTIN_SUMMARY_FACTS } from '../../src/extract/summaries.ts'

const MARKDOWN = `# The Write-Ahead Log

The Write-Ahead Log (WAL) records every change before it reaches the data files. PostgreSQL writes WAL records to disk before it changes the data files.

## Recovery

After a crash, PostgreSQL replays the WAL from the last checkpoint. A checkpoint flushes dirty pages to the data files. Checkpoints happen every five minutes by default.

## More about checkpoints

A checkpoint writes a checkpoint record to the WAL. The checkpointer process runs each checkpoint in the background. A checkpoint may be requested by an administrator. A checkpoint spreads its writes over time. A checkpoint ends with an fsync of the data files.
`

interface Summary {
  id: string
  sequence_num: number
  is_complete: boolean
  fact_count: number
  content: string
  covered_fact_ids: string[]
  model: string
}
interface Synthesis {
  id: string
  canonical_name: string
  content: string
  covered_summary_ids: string[]
  covered_concept_ids: string[]
  model: string
}
interface ConceptDetail {
  id: string
  canonical_name: string
  context: string
  summaries: Summary[]
  synthesis: Synthesis | null
}
interface ProcessResult {
  summaries: number
  syntheses: number
  failed_summaries: unknown[]
  failed_syntheses: unknown[]
}

describe(`summaries and syntheses of the built-in extractor (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }
  let sourceId: string

  beforeAll(async () => {
    ;({
      server,
      http,
      users: { owner },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1' } },
      users: { owner: 'member' },
      repositories: { repo: { by: 'owner', name: 'Summaries' } },
    }))
  })
  afterAll(() => server.stop())

  const finish = (id: string) => waitForJob(http, `/${repo.slug}/jobs/${id}`, owner.token)
  const get = async <T>(path: string) => {
    const res = await http.get<T>(`/${repo.slug}${path}`, owner.token)
    expect(res.status).toBe(200)
    return res.body
  }
  const concepts = async () =>
    Promise.all(
      (await get<{ id: string }[]>('/concepts?limit=100')).map((c) => get<ConceptDetail>(`/concepts/${c.id}`)),
    )
  /** Each concept's facts, by the links the facts list. */
  const factsByConcept = async () => {
    const facts = await Promise.all(
      (await get<{ id: string }[]>(`/facts?source_id=${sourceId}&limit=100`)).map((f) =>
        get<{ id: string; concepts: { id: string }[] }>(`/facts/${f.id}`),
      ),
    )
    const linked = new Map<string, string[]>()
    for (const fact of facts)
      for (const concept of fact.concepts) linked.set(concept.id, [...(linked.get(concept.id) ?? []), fact.id])
    return linked
  }
  const processAgain = async () => {
    const res = await http.post<Job>(`/${repo.slug}/sources/${sourceId}/process`, undefined, owner.token)
    expect(res.status).toBe(202)
    return (await finish(res.body.id)).result as ProcessResult
  }

  test("each concept's summary lists its most central facts, each citing one of the concept's facts, and covers them all", async () => {
    const added = await addProcessed(http, repo.slug, owner.token, 'wal.md', MARKDOWN)
    sourceId = added.sourceId
    const { processed } = added
    expect(processed.status).toBe('succeeded')
    const all = await concepts()
    expect(all.length).toBeGreaterThan(3)
    expect(processed.result).toMatchObject({
      summaries: all.length,
      syntheses: all.length,
      failed_summaries: [],
      failed_syntheses: [],
    })

    const linked = await factsByConcept()
    for (const concept of all) {
      const facts = linked.get(concept.id)!.sort()
      expect(concept.summaries).toHaveLength(1)
      const [summary] = concept.summaries
      expect(summary).toMatchObject({
        sequence_num: 0,
        is_complete: true,
        fact_count: facts.length,
        model: BUILTIN_DESCRIPTION.extractor,
      })
      expect([...summary!.covered_fact_ids].sort()).toEqual(facts)
      // Markdown bullets, one per fact cited, each a citation of one of the concept's facts.
      const bullets = summary!.content.split('\n')
      expect(bullets.length).toBe(Math.min(BUILTIN_SUMMARY_FACTS, facts.length))
      for (const bullet of bullets) expect(bullet).toMatch(/^- \[.+\]\(<fact:[0-9a-f-]{36}>\)$/)
      const cited = citedIds(summary!.content)
      expect(cited.concept).toEqual([])
      expect(new Set(cited.fact).size).toBe(bullets.length)
      for (const id of cited.fact) expect(facts).toContain(id)
      // Every citation resolves, and its link text is the fact's text.
      for (const [, text, id] of summary!.content.matchAll(/\[(.+)\]\(<fact:([0-9a-f-]{36})>\)/g))
        expect((await get<{ text: string }>(`/facts/${id}`)).text).toBe(text!)
    }
    // The concept with more facts than a summary lists: its most central ones, not its first ones.
    const checkpoint = all.find((c) => c.canonical_name === 'checkpoint')!
    expect(linked.get(checkpoint.id)!.length).toBeGreaterThan(BUILTIN_SUMMARY_FACTS)
    expect(checkpoint.summaries[0]!.content).toContain('A checkpoint')
  })

  test('each concept group has one synthesis citing its summaries, its concepts and their facts', async () => {
    for (const concept of await concepts()) {
      expect(concept.synthesis).toMatchObject({
        canonical_name: concept.canonical_name,
        covered_concept_ids: [concept.id],
        covered_summary_ids: concept.summaries.map((s) => s.id),
        model: BUILTIN_DESCRIPTION.extractor,
      })
      const cited = citedIds(concept.synthesis!.content)
      expect(cited.concept).toEqual([concept.id])
      const summarized = new Set(concept.summaries.flatMap((s) => citedIds(s.content).fact))
      expect(cited.fact.length).toBeGreaterThan(0)
      for (const id of cited.fact) expect(summarized.has(id)).toBe(true)
    }
  })

  test('a concept of the same name in another context is of the same group: one synthesis covers both', async () => {
    const created = await http.post<{ id: string }>(
      `/${repo.slug}/concepts`,
      { canonical_name: 'PostgreSQL', context: 'the project' },
      owner.token,
    )
    expect(created.status).toBe(201)
    const fact = await http.post<{ id: string }>(
      `/${repo.slug}/facts`,
      {
        text: 'The PostgreSQL project releases a major version every year.',
        concepts: [{ concept_id: created.body.id }],
      },
      owner.token,
    )
    expect(fact.status).toBe(201)
    const before = await concepts()
    const result = await processAgain()
    expect(result).toMatchObject({ syntheses: before.length - 1, failed_summaries: [], failed_syntheses: [] })
    const after = await concepts()
    const group = after.filter((c) => c.canonical_name === 'PostgreSQL')
    expect(group).toHaveLength(2)
    const [database, project] = [group.find((c) => c.context === '')!, group.find((c) => c.context !== '')!]
    // The database concept was touched and summarized; the project's, written by someone, was not.
    expect(database.summaries).toHaveLength(1)
    expect(project.summaries).toEqual([])
    expect(database.synthesis).toMatchObject({
      covered_concept_ids: [database.id, project.id],
      covered_summary_ids: [database.summaries[0]!.id],
    })
    expect(project.synthesis!.id).toBe(database.synthesis!.id)
    expect(citedIds(database.synthesis!.content).concept).toEqual([database.id, project.id])
    const syntheses = (
      await server.context.pools
        .forRepository(repo.id)
        .then((sql) => sql`SELECT count(*)::int AS n FROM concept_syntheses WHERE lower(canonical_name) = 'postgresql'`)
    )[0]!.n
    expect(syntheses).toBe(1)
  })

  test('processing again rewrites the same summaries and syntheses in the same rows: nothing added', async () => {
    const before = await concepts()
    const result = await processAgain()
    expect(result.summaries).toBe(before.filter((c) => c.summaries.length > 0).length)
    expect(await concepts()).toEqual(before)
  })
})
