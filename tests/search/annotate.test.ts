// Annotating a report on the selected backend, over HTTP and with the official MCP client: each
// sentence of its body is linked to the facts most similar to it (the embedder's cosine) at or
// above the threshold, with the score, as `related` annotations, and its status becomes
// `annotated`; running it again replaces them with the same ones, keeping the annotations someone
// judged; a viewer is refused (403, a tool error) with nothing queued or written.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/client'
import type { Sql } from 'postgres'
import { BACKEND } from '../helpers/backend.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import { jobsWhen, waitForJob } from '../helpers/jobs.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Job } from '../../src/jobs/queue.ts'
import { permissionDenied } from '../../src/permissions.ts'
import { ANNOTATION_THRESHOLD } from '../../src/search/annotate-job.ts'

const KETTLE = 'The kettle boils water in three minutes.'
const TEAPOT = 'A teapot brews tea from dried leaves.'
const GLAZE = 'Glazed pots keep no taste of earlier brews.'
/** Three sentences: one saying a fact again, one near another, one like none. */
const BODY = `# Findings

The kettle boils water in three minutes. Penguins in Antarctica eat krill and fish.

A teapot brews tea from leaves.
`

interface Annotation {
  sentence_index: number
  sentence_text: string
  fact_id: string
  score: number
  posture: string
}
interface ReportDetail {
  id: string
  status: string
  similarity_threshold: number | null
  embedded_model: string
  sentence_count: number | null
  annotations: Annotation[]
}

/** The three facts, written and embedded (their writes queue it), and a report of BODY with `annotations` of them. */
async function factsAndReport(
  http: ReturnType<typeof api>,
  slug: string,
  token: string,
  annotations: (facts: Record<string, string>) => Record<string, unknown>[] = () => [],
): Promise<{ facts: Record<string, string>; reportId: string }> {
  const facts: Record<string, string> = {}
  for (const text of [KETTLE, TEAPOT, GLAZE]) {
    const res = await http.post<{ id: string }>(`/${slug}/facts`, { text }, token)
    expect(res.status).toBe(201)
    facts[text] = res.body.id
  }
  // The compaction after the embedding may wait: only the embedding is waited for.
  await jobsWhen(http, slug, token, (jobs) => {
    const embedding = jobs.filter((job) => job.kind === 'embed_changes')
    return embedding.length > 0 && embedding.every((job) => job.status === 'succeeded')
  })
  const report = await http.post<{ id: string }>(
    `/${slug}/reports`,
    { title: 'Findings', body_md: BODY, annotations: annotations(facts) },
    token,
  )
  expect(report.status).toBe(201)
  return { facts, reportId: report.body.id }
}

/** Annotates the report as `token` and answers the ended job. */
async function annotated(http: ReturnType<typeof api>, slug: string, token: string, reportId: string): Promise<Job> {
  const res = await http.post<Job>(`/${slug}/reports/${reportId}/annotate`, undefined, token)
  expect(res.status).toBe(202)
  return waitForJob(http, `/${slug}/jobs/${res.body.id}`, token)
}

describe(`annotating a report (${BACKEND})`, () => {
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let viewer: Account
  let repo: { id: string; slug: string }
  let sql: Sql
  let agent: Client
  let facts: Record<string, string>
  let reportId: string

  beforeAll(async () => {
    ;({
      server,
      http,
      users: { owner, viewer },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1' } },
      users: { admin: 'sysadmin', owner: 'member', viewer: 'member' },
      repositories: { repo: { by: 'owner', name: 'Annotations', roles: { viewer: 'viewer' } } },
    }))
    sql = await server.context.pools.forRepository(repo.id)
    agent = await conversation(`${server.url}/api/v1/mcp`, owner.token)
    ;({ facts, reportId } = await factsAndReport(http, repo.slug, owner.token, (ids) => [
      // Someone's judgement, which the automatic annotation keeps.
      { sentence_index: 1, sentence_text: 'Penguins', fact_id: ids[GLAZE]!, score: 0.1, posture: 'supports' },
    ]))
  })
  afterAll(async () => {
    await agent?.close()
    await server?.stop()
  })

  const report = async () => (await http.get<ReportDetail>(`/${repo.slug}/reports/${reportId}`, owner.token)).body
  const annotateJobs = async () =>
    (await server.context.pools.system`SELECT count(*)::int AS n FROM jobs WHERE kind = 'annotate_report'`)[0]!
      .n as number
  const rows = async () =>
    sql`SELECT sentence_index, fact_id::text, score, posture FROM report_annotations ORDER BY sentence_index, fact_id`

  test('each sentence is linked to its most similar facts at or above the threshold, with the score; the report is annotated', async () => {
    const res = await http.post<Job>(`/${repo.slug}/reports/${reportId}/annotate`, undefined, owner.token)
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ kind: 'annotate_report', status: 'queued' })
    expect(res.headers.get('location')).toBe(`/${repo.id}/jobs/${res.body.id}`)
    const job = await waitForJob(http, `/${repo.slug}/jobs/${res.body.id}`, owner.token)
    expect(job).toMatchObject({
      status: 'succeeded',
      result: {
        report_id: reportId,
        sentences: 3,
        annotated_sentences: 2,
        similarity_threshold: ANNOTATION_THRESHOLD,
        model: 'kgs-hash-v1',
      },
    })

    const annotated = await report()
    expect(annotated).toMatchObject({
      status: 'annotated',
      similarity_threshold: ANNOTATION_THRESHOLD,
      embedded_model: 'kgs-hash-v1',
      sentence_count: 3,
    })
    const related = annotated.annotations.filter((a) => a.posture === 'related')
    expect((job.result as { annotations: number }).annotations).toBe(related.length)
    for (const annotation of related) expect(annotation.score).toBeGreaterThanOrEqual(ANNOTATION_THRESHOLD)
    // The sentence saying a fact again: that fact, at a similarity of 1.
    const kettle = related.find((a) => a.fact_id === facts[KETTLE])!
    expect(kettle).toMatchObject({ sentence_index: 0, sentence_text: KETTLE })
    expect(kettle.score).toBeCloseTo(1, 5)
    // The sentence near a fact: that fact, below 1; the sentence like no fact: nothing automatic.
    const teapot = related.find((a) => a.fact_id === facts[TEAPOT])!
    expect(teapot).toMatchObject({ sentence_index: 2, sentence_text: 'A teapot brews tea from leaves.' })
    expect(teapot.score).toBeLessThan(1)
    expect(related.filter((a) => a.sentence_index === 1)).toEqual([])
    expect(annotated.annotations.filter((a) => a.posture === 'supports')).toEqual([
      { sentence_index: 1, sentence_text: 'Penguins', fact_id: facts[GLAZE]!, score: 0.1, posture: 'supports' },
    ])
  })

  test('annotating again (the header form) replaces the automatic annotations with the same ones: no duplicates', async () => {
    const before = await rows()
    const res = await http.call<Job>('POST', `/api/v1/reports/${reportId}/annotate`, {
      token: owner.token,
      headers: { 'x-repository-id': repo.id },
    })
    expect(res.status).toBe(202)
    expect((await waitForJob(http, `/${repo.slug}/jobs/${res.body.id}`, owner.token)).status).toBe('succeeded')
    expect(await rows()).toEqual(before)
  })

  test('the annotate_report tool queues the same job: followed to its end, the same annotations', async () => {
    const before = await rows()
    const result = await call(agent, 'annotate_report', { repository: repo.slug, report_id: reportId })
    expect(result.isError ?? false).toBe(false)
    const job = result.structuredContent!.job as Job
    expect(job).toMatchObject({ kind: 'annotate_report', repository_id: repo.id })
    expect((await waitForJob(http, `/${repo.slug}/jobs/${job.id}`, owner.token)).status).toBe('succeeded')
    expect(await rows()).toEqual(before)
  })

  test('a viewer is refused, by the route (403) and by the tool, and a report not there is a 404: nothing queued or written', async () => {
    const jobs = await annotateJobs()
    const before = await report()
    expectError(await http.post(`/${repo.slug}/reports/${reportId}/annotate`, undefined, viewer.token), 403)
    const asViewer = await conversation(`${server.url}/api/v1/mcp`, viewer.token)
    try {
      const refused = await call(asViewer, 'annotate_report', { repository: repo.slug, report_id: reportId })
      expect(refused.isError).toBe(true)
      expect(refused.content[0]!.text).toBe(permissionDenied('report:write', `repository ${repo.slug}`))
    } finally {
      await asViewer.close()
    }
    expectError(
      await http.post(`/${repo.slug}/reports/${crypto.randomUUID()}/annotate`, undefined, owner.token),
      404,
      'report not found',
    )
    expect(await annotateJobs()).toBe(jobs)
    expect(await report()).toEqual(before)
  })
})

describe(`annotating a report with an embedding provider (${BACKEND})`, () => {
  let fake: FakeOpenAI
  let server: TestServer
  let http: ReturnType<typeof api>
  let owner: Account
  let repo: { id: string; slug: string }

  beforeAll(async () => {
    fake = startFakeOpenAI()
    ;({
      server,
      http,
      users: { owner },
      repositories: { repo },
    } = await fixture({
      server: { env: { WORKERS: '1', EMBEDDING_URL: fake.url, EMBEDDING_MODEL: 'fake-embedding' } },
      users: { owner: 'member' },
      repositories: { repo: { by: 'owner', name: 'Provider annotations' } },
    }))
  })
  afterAll(async () => {
    await server?.stop()
    await fake?.stop()
  })

  test("the sentences and the facts are compared in the provider's vectors, and the report names its model", async () => {
    const { facts, reportId } = await factsAndReport(http, repo.slug, owner.token)
    const job = await annotated(http, repo.slug, owner.token, reportId)
    expect(job).toMatchObject({ status: 'succeeded', result: { sentences: 3, model: 'fake-embedding' } })
    const report = (await http.get<ReportDetail>(`/${repo.slug}/reports/${reportId}`, owner.token)).body
    expect(report).toMatchObject({ status: 'annotated', embedded_model: 'fake-embedding', sentence_count: 3 })
    const kettle = report.annotations.find((a) => a.fact_id === facts[KETTLE])!
    expect(kettle).toMatchObject({ sentence_index: 0, posture: 'related' })
    expect(kettle.score).toBeCloseTo(1, 5)
    for (const annotation of report.annotations) expect(annotation.score).toBeGreaterThanOrEqual(ANNOTATION_THRESHOLD)
  })
})
