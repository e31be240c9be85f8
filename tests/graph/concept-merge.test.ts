// Merging and splitting concepts, over HTTP and with the official MCP client: a merge moves the
// merged concepts' names (as aliases), aliases, fact links and summaries to the concept they merge
// into and rewrites every citation of them (a summary's, a synthesis's text and covered concepts,
// a report's body, the UUID in either case), so that none dangles once they are gone; a split
// moves the links of the facts and the aliases named to a new concept. Each refusal (a stale
// ETag, a concept merged into itself, an unknown id, a fact not linked to it, an alias not its
// own, a taken name) is an {"error"} and leaves every row as it was.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Sql } from 'postgres'
import type { Client } from '@modelcontextprotocol/client'
import { expectError, type Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import type { TestServer } from '../helpers/server.ts'

let server: TestServer
let http: Awaited<ReturnType<typeof fixture>>['http']
let owner: Account
let repo: { id: string; slug: string }
let sql: Sql
let agent: Client

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner },
    repositories: { repo },
  } = await fixture({
    users: { owner: 'member' },
    repositories: { repo: { by: 'owner', name: 'Concept merges' } },
  }))
  sql = await server.context.pools.forRepository(repo.id)
  agent = await conversation(`${server.url}/api/v1/mcp`, owner.token)
})
afterAll(async () => {
  await agent?.close()
  await server?.stop()
})

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  http.call('POST', `/${repo.slug}${path}`, { body, token: owner.token, headers })
const read = (path: string) => http.get(`/${repo.slug}${path}`, owner.token)

async function concept(name: string, aliases: string[] = [], description = ''): Promise<string> {
  const made = await post('/concepts', { canonical_name: name, aliases, description })
  expect(made.status).toBe(201)
  return made.body.id
}

async function fact(text: string, concepts: string[]): Promise<string> {
  const made = await post('/facts', { text, concepts: concepts.map((concept_id) => ({ concept_id })) })
  expect(made.status).toBe(201)
  return made.body.id
}

/** Every row a merge or a split may touch, by what it says. */
async function rows() {
  return {
    concepts: await sql`SELECT id::text, canonical_name, description FROM concepts ORDER BY canonical_name`,
    aliases: await sql`SELECT concept_id::text, alias_text FROM concept_aliases ORDER BY 1, 2`,
    links: await sql`SELECT fact_id::text, concept_id::text FROM fact_concepts ORDER BY 1, 2`,
    summaries: await sql`SELECT id::text, concept_id::text, sequence_num, content FROM concept_summaries ORDER BY 1`,
    syntheses: [
      ...(await sql`SELECT id::text, content, covered_concept_ids::text[] FROM concept_syntheses ORDER BY 1`),
    ],
    reports: [...(await sql`SELECT id::text, body_md FROM reports ORDER BY 1`)],
  }
}

describe(`merging and splitting concepts (${BACKEND})`, () => {
  test('a merge moves names, aliases, links and summaries and rewrites every citation; its refusals write nothing', async () => {
    const tea = await concept('Tea', ['Camellia'])
    const chai = await concept('Chai', ['Masala chai'], 'Spiced tea.')
    const cha = await concept('Cha')
    const brews = await fact('Tea brews in hot water.', [tea, chai])
    const spiced = await fact('Chai is spiced.', [chai])
    const drunk = await fact('Cha is drunk in Asia.', [cha])
    expect((await post(`/concepts/${tea}/summaries`, { sequence_num: 0, content: 'Of tea.' })).status).toBe(201)
    const chaiSummary = await post(`/concepts/${chai}/summaries`, {
      sequence_num: 0,
      content: `[Chai](<concept:${chai}>) is [spiced](<fact:${spiced}>).`,
    })
    expect(chaiSummary.status).toBe(201)
    const synthesis = await post('/syntheses', {
      canonical_name: 'Hot drinks',
      content: `[Tea](<concept:${tea}>) and [chai](<concept:${chai}>).`,
      covered_concept_ids: [tea, chai, cha],
    })
    expect(synthesis.status).toBe(201)
    const report = await post('/reports', {
      title: 'Drinks',
      body_md: `See [chai](<concept:${chai.toUpperCase()}>) and [cha](<concept:${cha}>), [tea](<concept:${tea}>).`,
    })
    expect(report.status).toBe(201)
    const etag = (await read(`/concepts/${tea}`)).headers.get('etag')!
    const before = await rows()

    expectError(await post(`/concepts/${tea}/merge`, { concept_ids: [chai] }, { 'if-match': '"stale"' }), 412)
    expectError(
      await post(`/concepts/${tea}/merge`, { concept_ids: [chai, tea] }),
      400,
      'concept_ids: a concept cannot be merged into itself',
    )
    const unknown = crypto.randomUUID()
    expectError(
      await post(`/concepts/${tea}/merge`, { concept_ids: [chai, unknown] }),
      400,
      `concept_ids: concept ${unknown} does not exist in this repository`,
    )
    expectError(await post(`/concepts/${unknown}/merge`, { concept_ids: [chai] }), 404, 'concept not found')
    expectError(await post(`/concepts/${tea}/merge`, { concept_ids: [] }), 400)
    expect(await rows()).toEqual(before)

    const merged = await post(`/concepts/${tea}/merge`, { concept_ids: [chai, cha] }, { 'if-match': etag })
    expect(merged.status).toBe(200)
    expect(merged.body).toMatchObject({
      concept: { id: tea, canonical_name: 'Tea', description: 'Spiced tea.', fact_count: 3 },
      merged: { concepts: 2, facts: 2, aliases: 3, summaries: 1 },
    })
    expect(merged.body.concept.aliases).toEqual(['Camellia', 'Cha', 'Chai', 'Masala chai'])
    expect(merged.body.concept.summaries.map((s: { sequence_num: number }) => s.sequence_num)).toEqual([0, 1])
    expect(merged.body.rewritten).toEqual(
      expect.arrayContaining([
        { kind: 'summary', id: chaiSummary.body.id },
        { kind: 'synthesis', id: synthesis.body.id },
        { kind: 'report', id: report.body.id },
      ]),
    )
    expect(merged.body.rewritten).toHaveLength(3)
    const now = await read(`/concepts/${tea}`)
    expect(merged.headers.get('etag')).toBe(now.headers.get('etag'))
    expectError(await read(`/concepts/${chai}`), 404, 'concept not found')
    expect((await read(`/facts/${spiced}`)).body.concepts.map((c: { id: string }) => c.id)).toEqual([tea])
    expect((await read(`/facts/${drunk}`)).body.concepts.map((c: { id: string }) => c.id)).toEqual([tea])
    expect((await read(`/facts/${brews}`)).body.concepts.map((c: { id: string }) => c.id)).toEqual([tea])
    const after = await rows()
    expect(after.summaries.find((s) => s.id === chaiSummary.body.id)).toMatchObject({
      concept_id: tea,
      sequence_num: 1,
      content: `[Chai](<concept:${tea}>) is [spiced](<fact:${spiced}>).`,
    })
    expect(after.syntheses).toEqual([
      {
        id: synthesis.body.id,
        content: `[Tea](<concept:${tea}>) and [chai](<concept:${tea}>).`,
        covered_concept_ids: [tea],
      },
    ])
    expect(after.reports).toEqual([
      {
        id: report.body.id,
        body_md: `See [chai](<concept:${tea}>) and [cha](<concept:${tea}>), [tea](<concept:${tea}>).`,
      },
    ])
    // No text cites a concept that is not there.
    const cited = JSON.stringify(after).match(/<concept:[0-9a-f-]{36}>/gi) ?? []
    expect(new Set(cited)).toEqual(new Set([`<concept:${tea}>`]))
  })

  test('a split moves the facts and aliases named to a new concept; its refusals write nothing', async () => {
    const java = await concept('Java', ['Java island', 'Java language', 'Jawa'])
    const island = await fact('Java is an island of Indonesia.', [java])
    const language = await fact('Java runs on a virtual machine.', [java])
    const other = await fact('Jakarta is on an island.', [])
    const etag = (await read(`/concepts/${java}`)).headers.get('etag')!
    const before = await rows()
    const body = { canonical_name: 'Java', context: 'programming', fact_ids: [language], aliases: ['Java language'] }

    expectError(await post(`/concepts/${java}/split`, body, { 'if-match': '"stale"' }), 412)
    expectError(
      await post(`/concepts/${java}/split`, { ...body, fact_ids: [language, other] }),
      400,
      `fact_ids: fact ${other} is not linked to this concept`,
    )
    expectError(
      await post(`/concepts/${java}/split`, { ...body, aliases: ['Sumatra'] }),
      400,
      'aliases: "Sumatra" is not an alias of this concept',
    )
    const taken = await post(`/concepts/${java}/split`, { ...body, context: '' })
    expect(taken.status).toBe(409)
    expect(taken.body.existing_id).toBe(java)
    expect(await rows()).toEqual(before)

    const split = await post(`/concepts/${java}/split`, body, { 'if-match': etag })
    expect(split.status).toBe(201)
    expect(split.body).toMatchObject({
      concept: { id: java, aliases: ['Java island', 'Jawa'], fact_count: 1 },
      created: { canonical_name: 'Java', context: 'programming', aliases: ['Java language'], fact_count: 1 },
    })
    expect(split.headers.get('etag')).toBe((await read(`/concepts/${java}`)).headers.get('etag'))
    expect((await read(`/facts/${language}`)).body.concepts.map((c: { id: string }) => c.id)).toEqual([
      split.body.created.id,
    ])
    expect((await read(`/facts/${island}`)).body.concepts.map((c: { id: string }) => c.id)).toEqual([java])
  })

  test('merge_concepts and split_concept with the MCP client: listed as destructive with output schemas; a refusal is a tool error', async () => {
    const { tools } = await agent.listTools()
    for (const name of ['merge_concepts', 'split_concept']) {
      const tool = tools.find((t) => t.name === name)!
      expect(tool.annotations).toEqual({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      })
      expect(tool.outputSchema).toMatchObject({ type: 'object' })
    }
    const kettle = await concept('Kettle')
    const boiler = await concept('Boiler', ['Water boiler'])
    const boils = await fact('A kettle boils water.', [boiler])
    const before = await rows()
    const refused = await call(agent, 'merge_concepts', {
      repository: repo.slug,
      concept_id: kettle,
      concept_ids: [kettle],
      // The person's confirmation, which this client cannot ask for (tests/mcp/confirmation.test.ts).
      confirm: true,
    })
    expect(refused).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'concept_ids: a concept cannot be merged into itself' }],
    })
    expect(await rows()).toEqual(before)

    const merged = await call(agent, 'merge_concepts', {
      repository: repo.slug,
      concept_id: kettle,
      concept_ids: [boiler],
      confirm: true,
    })
    expect(merged.isError ?? false).toBe(false)
    expect(merged.structuredContent).toMatchObject({
      concept: { id: kettle, aliases: ['Boiler', 'Water boiler'], fact_count: 1 },
      merged: { concepts: 1, facts: 1, aliases: 2, summaries: 0 },
      rewritten: [],
    })
    const split = await call(agent, 'split_concept', {
      repository: repo.slug,
      concept_id: kettle,
      canonical_name: 'Boiler',
      fact_ids: [boils],
      aliases: ['Water boiler'],
      confirm: true,
    })
    expect(split.isError ?? false).toBe(false)
    expect(split.structuredContent).toMatchObject({
      concept: { id: kettle, aliases: ['Boiler'], fact_count: 0 },
      created: { canonical_name: 'Boiler', aliases: ['Water boiler'], fact_count: 1 },
    })
    expect(split.content.filter((c) => c.type === 'resource_link').map((c) => c.uri)).toEqual([
      `kgs://${repo.id}/concepts/${kettle}`,
      `kgs://${repo.id}/concepts/${split.structuredContent!.created.id}`,
    ])
  })
})
