// Texts within the schemas' bounds in characters but past what PostgreSQL holds in bytes (a btree
// index entry, a full-text document; src/graph/limits.ts): every write that carries one, over
// REST at /{repoID}/… and at /api/v1/… with X-Repository-ID and through the MCP tools, is a 400
// (a tool error) naming the field and its size; nothing is written and no PostgreSQL message or
// index name reaches the caller. The longest values allowed are stored. Behind the checks, a
// value PostgreSQL refuses as past one of its limits (SQLSTATE class 54) is a plain 400, never a 500.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import type { TestServer } from '../helpers/server.ts'
import { errorHandling } from '../../src/http/errors.ts'
import { createLogger } from '../../src/log.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let repo: { id: string; slug: string }
/** Rows the updates change: one of each kind. */
const ids = { source: '', fact: '', concept: '', synthesis: '', investigation: '', report: '' }
const warnings: string[] = []

const TABLES = ['sources', 'facts', 'concepts', 'concept_aliases', 'concept_syntheses', 'investigations', 'reports']
/** What a caller must never read: PostgreSQL's wording of these limits and the names of its indexes. */
const RAW = /btree|tsvector|index row|_key\b|exceeds|maximum 2704/i

/** Random CJK characters (3 bytes each): not compressible, as a real long value is (PostgreSQL compresses index entries that are). */
const cjk = (chars: number) =>
  Array.from({ length: chars }, () => String.fromCodePoint(0x4e00 + Math.floor(Math.random() * 20_000))).join('')
/**
 * Text of about `bytes` bytes made of what makes the largest full-text document for its size:
 * distinct URLs, each indexed whole, as a host and as a path.
 */
const urls = (bytes: number) => {
  let text = ''
  for (let i = 0; text.length < bytes; i++) text += `h${i}.io/${i}-${i * 3} `
  return text.slice(0, bytes)
}

/** Distinct words of five CJK characters, `bytes` bytes in all: the largest text a fact's 100,000 characters hold. */
const words = (bytes: number) => {
  let text = ''
  while (Buffer.byteLength(text) + 16 <= bytes) text += `${cjk(5)} `
  return text.padEnd(text.length + bytes - Buffer.byteLength(text), 'x')
}

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner },
    repositories: { repo },
  } = await fixture({
    server: { log: createLogger('warn', (text) => warnings.push(...text.split('\n').filter(Boolean))) },
    users: { owner: 'member' },
    repositories: { repo: { by: 'owner', name: 'Sizes' } },
  }))
  const post = async (path: string, body: unknown) => {
    const res = await http.post(`/${repo.slug}${path}`, body, owner.token)
    expect(res.status).toBe(201)
    return res.body.id as string
  }
  ids.source = await post('/sources', { url: 'https://example.org/sizes', kind: 'web', status: 'parsed' })
  ids.fact = await post('/facts', { text: 'Sizes are counted in bytes.' })
  // Aliases of 200,000 bytes: a change of the description past the rest of the document's room is refused.
  ids.concept = await post('/concepts', {
    canonical_name: 'Sizes',
    aliases: Array.from({ length: 100 }, (_, i) => `${i} ${cjk(666)}`),
  })
  ids.synthesis = await post('/syntheses', { canonical_name: 'Sizes' })
  ids.investigation = await post('/investigations', { title: 'Sizes' })
  ids.report = await post('/reports', { title: 'Sizes' })
}, 60_000)
afterAll(() => server?.stop())

/** A digest of every table a write here could touch: equal before and after, nothing was written. */
const snapshot = async () => {
  const sql = await server.context.pools.forRepository(repo.id)
  const digests: Record<string, unknown> = {}
  for (const table of TABLES)
    digests[table] = (
      await sql`SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS digest FROM ${sql(table)} t`
    )[0]!.digest
  return digests
}

type Kind = keyof typeof ids
/** Each kind's collection (after the repository) and the MCP tool that creates one. */
const KINDS: Record<Kind, { path: string; tool: string }> = {
  source: { path: '/sources', tool: 'create_source' },
  fact: { path: '/facts', tool: 'create_fact' },
  concept: { path: '/concepts', tool: 'create_concept' },
  synthesis: { path: '/syntheses', tool: 'write_synthesis' },
  investigation: { path: '/investigations', tool: 'create_investigation' },
  report: { path: '/reports', tool: 'write_report' },
}

/** Each oversized write: its REST method and path (after the repository), its body, its MCP call, and the refusal. */
interface Case {
  name: string
  method: 'POST' | 'PATCH'
  path: () => string
  body: Record<string, unknown>
  tool: () => [string, Record<string, unknown>]
  error: string
}

/** A create of `kind` with `body`, over POST and its create tool. */
const create = (kind: Kind, name: string, body: Record<string, unknown>, error: string): Case => ({
  name,
  method: 'POST',
  path: () => KINDS[kind].path,
  body,
  tool: () => [KINDS[kind].tool, body],
  error,
})
/** An update of the row of `kind` made before the tests, over PATCH and the update tool. */
const update = (kind: Kind, name: string, changes: Record<string, unknown>, error: string): Case => ({
  name,
  method: 'PATCH',
  path: () => `${KINDS[kind].path}/${ids[kind]}`,
  body: changes,
  tool: () => ['update', { kind, id: ids[kind], changes }],
  error,
})

/** The same fields refused alike in a create of `kind` and in an update of its row. */
const createAndUpdate = (kind: Kind, name: string, fields: Record<string, unknown>, error: string): Case[] => [
  create(kind, name, fields, error),
  update(kind, `${name}, on update`, fields, error),
]

const CASES: Case[] = [
  create(
    'concept',
    'a concept name of 2,000 CJK characters',
    { canonical_name: cjk(2000) },
    'canonical_name is 6000 bytes, at most 1300',
  ),
  create(
    'concept',
    'a concept context',
    { canonical_name: 'Context', context: cjk(500) },
    'context is 1500 bytes, at most 1300',
  ),
  create(
    'concept',
    'an alias',
    { canonical_name: 'Alias', aliases: ['short', cjk(1000)] },
    'aliases: an alias is 3000 bytes, at most 2600',
  ),
  create(
    'concept',
    'a 950 kB description',
    { canonical_name: 'Described', description: urls(950_000) },
    'canonical_name and description are 950009 bytes together, at most 262144 (its full-text document)',
  ),
  update(
    'concept',
    "a description that with the concept's kept aliases passes its document's room",
    { description: cjk(30_000) },
    'canonical_name, aliases and description are 290194 bytes together, at most 262144 (its full-text document)',
  ),
  update('concept', 'an alias, on update', { aliases: [cjk(1000)] }, 'aliases: an alias is 3000 bytes, at most 2600'),
  create(
    'source',
    'a source URL',
    { url: `https://example.org/${cjk(1000)}`, kind: 'web', status: 'parsed' },
    'url is 3020 bytes, at most 2600',
  ),
  update(
    'source',
    'a source URL, on update',
    { url: `https://example.org/${cjk(1000)}` },
    'url is 3020 bytes, at most 2600',
  ),
  ...createAndUpdate(
    'fact',
    'a fact text',
    { text: cjk(90_000) },
    'text is 270000 bytes, at most 262144 (its full-text document)',
  ),
  create('investigation', 'an investigation title', { title: cjk(2000) }, 'title is 6000 bytes, at most 1300'),
  update(
    'investigation',
    'an investigation topic, on update',
    { topic: cjk(500) },
    'topic is 1500 bytes, at most 1300',
  ),
  ...createAndUpdate('report', 'a report title', { title: cjk(2000) }, 'title is 6000 bytes, at most 2600'),
  ...createAndUpdate(
    'synthesis',
    'a synthesis name',
    { canonical_name: cjk(1000) },
    'canonical_name is 3000 bytes, at most 2600',
  ),
]

describe(`write bodies bounded in bytes (${BACKEND})`, () => {
  test('over REST, at both prefixes: 400 naming the field and its size; nothing written', async () => {
    const before = await snapshot()
    for (const c of CASES) {
      for (const [path, headers] of [
        [`/${repo.slug}${c.path()}`, {}],
        [`/api/v1${c.path()}`, { 'x-repository-id': repo.id }],
      ] as const) {
        const res = await http.call(c.method, path, { body: c.body, token: owner.token, headers })
        expectError(res, 400, c.error)
        expect(JSON.stringify(res.body)).not.toMatch(RAW)
      }
    }
    expect(await snapshot()).toEqual(before)
  }, 60_000)

  test('through MCP: a tool error naming the field and its size; nothing written', async () => {
    const before = await snapshot()
    const client = await conversation(`${server.url}/api/v1/mcp`, owner.token)
    try {
      for (const c of CASES) {
        const [tool, args] = c.tool()
        const result = await call(client, tool, { repository: repo.slug, ...args })
        expect({ case: c.name, isError: result.isError, content: result.content }).toEqual({
          case: c.name,
          isError: true,
          content: [{ type: 'text', text: c.error }],
        })
      }
    } finally {
      await client.close()
    }
    expect(await snapshot()).toEqual(before)
  }, 60_000)

  test('the longest values allowed are stored, the largest full-text documents too', async () => {
    const name = `${cjk(433)}a` // 1300 bytes
    const created = await http.post(
      `/${repo.slug}/concepts`,
      {
        canonical_name: name,
        context: `${cjk(433)}b`,
        description: urls(262_144 - 1300 - 2600),
        aliases: [`${cjk(866)}cd`],
      },
      owner.token,
    )
    expect(created.status).toBe(201)
    const read = await http.get(`/${repo.slug}/concepts/${created.body.id}`, owner.token)
    expect({
      name: read.body.canonical_name,
      aliases: read.body.aliases.map((a: string) => Buffer.byteLength(a)),
      description: Buffer.byteLength(read.body.description),
    }).toEqual({
      name,
      aliases: [2600],
      description: 262_144 - 1300 - 2600,
    })
    const text = words(262_144)
    const fact = await http.post(`/${repo.slug}/facts`, { text }, owner.token)
    expect(fact.status).toBe(201)
    expect((await http.get(`/${repo.slug}/facts/${fact.body.id}`, owner.token)).body.text).toBe(text)
    const stored = [
      await http.post(
        `/${repo.slug}/sources`,
        { url: `https://example.org/${cjk(860)}`, kind: 'web', status: 'parsed' },
        owner.token,
      ),
      await http.post(`/${repo.slug}/investigations`, { title: `${cjk(433)}a`, topic: `${cjk(433)}b` }, owner.token),
      await http.post(`/${repo.slug}/reports`, { title: `${cjk(866)}ab` }, owner.token),
      await http.post(`/${repo.slug}/syntheses`, { canonical_name: `${cjk(866)}ab` }, owner.token),
    ]
    expect(stored.map((res) => res.status)).toEqual([201, 201, 201, 201])
  }, 60_000)
})

describe(`PostgreSQL's limits behind the checks (${BACKEND})`, () => {
  /** The shared error handling in front of a route whose statement PostgreSQL refuses as past one of its limits. */
  async function answerOf(
    statement: (sql: Awaited<ReturnType<TestServer['context']['pools']['forRepository']>>) => Promise<unknown>,
  ) {
    const logged: string[] = []
    const log = createLogger('warn', (text) => logged.push(...text.split('\n').filter(Boolean)))
    const app = new Elysia()
      .use(errorHandling(log, () => undefined))
      .get('/limit', async () => statement(await server.context.pools.forRepository(repo.id)))
    const res = await app.handle(new Request('http://kgs.test/limit'))
    return { status: res.status, body: await res.json(), logged }
  }

  test('an index entry or a full-text document too large is a plain 400, logged; never a 500 or an index name', async () => {
    const entry = await answerOf((sql) =>
      sql.begin(async (tx) => {
        await tx`CREATE TEMPORARY TABLE oversized (value text) ON COMMIT DROP`
        await tx`CREATE INDEX oversized_value_key ON oversized (value)`
        await tx`INSERT INTO oversized VALUES (${cjk(2000)})`
      }),
    )
    const documentTooLarge = await answerOf((sql) => sql`SELECT to_tsvector('english', ${urls(950_000)})`)
    for (const answer of [entry, documentTooLarge]) {
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 400,
        body: { error: 'a value is too large for the database to store or index; shorten the longest text' },
      })
      expect(answer.logged.map((line) => JSON.parse(line).msg)).toEqual(['a value past a database limit'])
    }
    expect(JSON.parse(entry.logged[0]!).error).toMatch(/oversized_value_key/)
    expect(JSON.parse(documentTooLarge.logged[0]!).error).toMatch(/tsvector/)
    // The writes above met no limit of PostgreSQL: the checks refused first.
    expect(warnings.filter((line) => /database limit/.test(line))).toEqual([])
  }, 60_000)
})
