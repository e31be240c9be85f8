// A repository built only through the write API (every kind a bundle carries, media included)
// exports, imports into another repository, and exports again with the same canonical hash: what
// the routes write obeys the rules the import keeps, so nothing changes on the way through.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import type { api, Account } from '../helpers/api.ts'
import { settleJobs, waitForJob } from '../helpers/jobs.ts'

const EXPORTED_AT = '2026-01-02T03:04:05.5Z'
let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let built: { id: string; slug: string }
let copy: { id: string; slug: string }

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner },
    repositories: { built, copy },
  } = await fixture({
    server: { env: { WORKERS: '1' } },
    users: { admin: 'sysadmin', owner: 'member' },
    repositories: { built: { by: 'owner', name: 'Built by hand' }, copy: { by: 'owner', name: 'The copy' } },
  }))
})
afterAll(() => server.stop())

async function create(path: string, body: unknown) {
  const res = await http.post(`/${built.slug}${path}`, body, owner.token)
  expect({ path, status: res.status }).toEqual({ path, status: 201 })
  return res.body.id as string
}

async function runJob(slug: string, path: string, body: unknown) {
  const started = await http.post(`/${slug}/${path}`, body, owner.token)
  expect(started.status).toBe(202)
  const job = await waitForJob(http, `/${slug}/jobs/${started.body.id}`, owner.token)
  expect({ status: job.status, error: job.error }).toEqual({ status: 'succeeded', error: null })
  return job.result as { graph_id: string; sha256: string; counts: Record<string, number>; new: boolean }
}

describe(`a graph built through the write API (${BACKEND})`, () => {
  test('exports, imports elsewhere and exports again with the same canonical hash', async () => {
    const paper = await create('/sources', {
      url: 'https://example.org/paper',
      kind: 'pdf',
      status: 'parsed',
      parsed_title: 'Paper',
      parsed_text: 'Tea and kettles.',
      published_at: '2020-02-02',
    })
    const page = await create('/sources', {
      url: 'https://example.org/page',
      kind: 'web',
      status: 'parsed',
      doi: '10.1/x',
    })
    const body = await http.call('PUT', `/${built.slug}/sources/${paper}/body`, {
      raw: '%PDF-1.7 paper',
      token: owner.token,
      headers: { 'content-type': 'application/pdf' },
    })
    expect(body.status).toBe(200)
    const image = await http.call(
      'POST',
      `/${built.slug}/sources/${paper}/images?kind=page&position=0&page_number=1&alt_text=kettle`,
      {
        raw: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 7]),
        token: owner.token,
        headers: { 'content-type': 'image/png' },
      },
    )
    expect(image.status).toBe(201)
    const tea = await create('/concepts', {
      canonical_name: 'Tea',
      context: 'drinks',
      description: 'an infusion',
      aliases: ['cha'],
    })
    const kettle = await create('/concepts', { canonical_name: 'Kettle' })
    const facts = []
    for (let i = 0; i < 6; i++)
      facts.push(
        await create('/facts', {
          text: `Fact ${i}: tea is brewed in a kettle.`,
          status: i % 2 ? 'stable' : 'new',
          sources: [
            { source_id: paper, chunk_index: i },
            { source_id: page, chunk_index: 0 },
          ],
          concepts: [{ concept_id: tea }, { concept_id: kettle, promptset_hash: 'p' }],
        }),
      )
    const imageFact = await create('/facts', {
      text: 'A kettle on page one.',
      fact_kind: 'image',
      source_image_id: image.body.id,
      sources: [{ source_id: paper }],
    })
    const summary = await create(`/concepts/${tea}/summaries`, {
      sequence_num: 0,
      is_complete: true,
      fact_count: 2,
      content: `Tea is [brewed](<fact:${facts[0]}>) in a [kettle](<concept:${kettle}>).`,
      covered_fact_ids: [facts[0], facts[1]],
      model: 'm1',
    })
    await create('/syntheses', {
      canonical_name: 'Tea',
      content: `![kettle](<fact:${imageFact}>)`,
      covered_summary_ids: [summary],
      covered_concept_ids: [tea],
      embedded_image_fact_ids: [imageFact],
    })
    await create('/investigations', { title: 'Brewing', topic: 'tea', source_ids: [paper, page] })
    const report = await create('/reports', {
      title: 'On tea',
      body_md: `Tea [is brewed](<fact:${facts[2]}>).`,
      status: 'annotated',
      similarity_threshold: 0.7,
      embedded_model: 'm1',
      sentence_count: 2,
      annotations: [
        { sentence_index: 1, sentence_text: 'Second.', fact_id: facts[3], score: 0.5, posture: 'related' },
        { sentence_index: 0, sentence_text: 'Tea is brewed.', fact_id: facts[2], score: 0.9, posture: 'supports' },
      ],
    })
    await create('/reports', { title: 'On kettles', parent_id: report })
    // An edit and a delete on the way: what is exported is what the repository holds.
    expect(
      (
        await http.call('PATCH', `/${built.slug}/facts/${facts[4]}`, {
          body: { text: 'Fact 4: kettles whistle.' },
          token: owner.token,
        })
      ).status,
    ).toBe(200)
    expect((await http.call('DELETE', `/${built.slug}/facts/${facts[5]}`, { token: owner.token })).status).toBe(200)
    // The vectors follow the writes before the export reads them.
    await settleJobs(http, built.slug, owner.token)

    const first = await runJob(built.slug, 'export-graph', {
      name: 'built-by-hand',
      exported_at: EXPORTED_AT,
      include_bodies: true,
    })
    expect(first.counts).toMatchObject({
      sources: 2,
      facts: 6,
      concepts: 2,
      summaries: 1,
      syntheses: 1,
      investigations: 1,
      reports: 2,
    })
    await runJob(copy.slug, 'import-graph', { graph_id: first.graph_id })
    await settleJobs(http, copy.slug, owner.token)
    const second = await runJob(copy.slug, 'export-graph', {
      name: 'built-by-hand',
      exported_at: EXPORTED_AT,
      include_bodies: true,
    })
    expect(second).toMatchObject({ sha256: first.sha256, graph_id: first.graph_id, new: false })
  })
})
