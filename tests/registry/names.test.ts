// The registry's graphs grouped by name (GET /api/v1/graphs/names): each name with its versions,
// newest first, numbered oldest 1; names paged by their newest push; the filters; access; and the
// lists it sits beside answering as before.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { fixture } from '../helpers/fixture.ts'
import type { TestServer } from '../helpers/server.ts'
import { call, push, sha, smallBundle } from './helpers.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let member: Account
let outsider: Account
/** A prefix of this run's names, so that the filters find only them. */
const run = crypto.randomUUID().slice(0, 8)

/** Pushes a new graph of `name` (each push its own sha256) with `facts` facts; its id. */
async function pushed(name: string, facts: number, extra: Record<string, string> = {}): Promise<string> {
  const seed = crypto.randomUUID()
  const res = await push(server, admin.token, smallBundle(seed), {
    'x-graph-name': name,
    'x-graph-sha256': sha(seed),
    'x-graph-fact-count': String(facts),
    'x-graph-concept-count': '2',
    'x-graph-source-count': '1',
    ...extra,
  })
  expect(res.status).toBe(201)
  return res.body.graph_id
}

const names = (query: string, token = member.token) => call(server, 'GET', `/api/v1/graphs/names?${query}`, token)

const first = { name: `${run} Alpha`, ids: [] as string[] }
const second = { name: `${run} Beta`, ids: [] as string[] }

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, member, outsider },
  } = await fixture({ users: { admin: 'sysadmin', member: 'member', outsider: 'member' } }))
  // The outsider holds no system role: no registry:pull.
  expect(
    (
      await http.call('DELETE', '/api/v1/admin/users/roles', {
        body: { user_id: outsider.id, role: 'member', domain: 'system' },
        token: admin.token,
      })
    ).status,
  ).toBe(200)
  // Alpha, Beta, Alpha: Alpha's newest push is the last.
  first.ids.push(await pushed(first.name, 10))
  second.ids.push(await pushed(second.name, 20, { 'x-graph-tags': '["physics"]' }))
  first.ids.push(await pushed(first.name, 30, { 'x-graph-description': 'the second export' }))
})

afterAll(async () => {
  await server.stop()
})

describe(`registry names (${BACKEND})`, () => {
  test('names with their versions: newest name first, versions newest first and numbered, each a whole record', async () => {
    const res = await names(`q=${encodeURIComponent(run)}`)
    expect(res.status).toBe(200)
    expect(res.body.map((n: { name: string }) => n.name)).toEqual([first.name, second.name])
    const [alpha, beta] = res.body
    expect(alpha.version_count).toBe(2)
    expect(
      alpha.versions.map((v: { id: string; version: number; fact_count: number }) => [v.id, v.version, v.fact_count]),
    ).toEqual([
      [first.ids[1], 2, 30],
      [first.ids[0], 1, 10],
    ])
    // The record of GET /api/v1/graphs/{id}, and its version.
    const record = await call(server, 'GET', `/api/v1/graphs/${first.ids[1]}`, member.token)
    expect(alpha.versions[0]).toEqual({ ...record.body, version: 2 })
    expect(beta).toEqual({
      name: second.name,
      version_count: 1,
      versions: [
        expect.objectContaining({ id: second.ids[0], version: 1, fact_count: 20, concept_count: 2, source_count: 1 }),
      ],
    })
  })

  test('paged by name (Link: rel="next"), no name twice and none missed', async () => {
    const page1 = await names(`q=${encodeURIComponent(run)}&limit=1`)
    expect(page1.body.map((n: { name: string }) => n.name)).toEqual([first.name])
    const next = /<([^>]+)>; rel="next"/.exec(page1.headers.get('link') ?? '')?.[1]
    expect(next).toBeString()
    const page2 = await call(server, 'GET', next!, member.token)
    expect(page2.body.map((n: { name: string }) => n.name)).toEqual([second.name])
    expect(page2.headers.get('link')).toBeNull()
  })

  test('the filters: a name is listed when any version matches, with all its versions', async () => {
    // Only Alpha's second version has this description: Alpha is listed with both.
    const described = await names(`q=${encodeURIComponent('the second export')}`)
    expect(
      described.body.map((n: { name: string; version_count: number; versions: unknown[] }) => [
        n.name,
        n.version_count,
        n.versions.length,
      ]),
    ).toEqual([[first.name, 2, 2]])
    const tagged = await names(`tag=physics&q=${encodeURIComponent(run)}`)
    expect(tagged.body.map((n: { name: string }) => n.name)).toEqual([second.name])
    const exact = await names(`name=${encodeURIComponent(second.name)}`)
    expect(exact.body.map((n: { name: string }) => n.name)).toEqual([second.name])
    // Exact: a prefix of a name is not that name.
    expect((await names(`name=${encodeURIComponent(run)}`)).body).toEqual([])
  })

  test(`a name lists its newest versions; the list by ?name= has them all, oldest first`, async () => {
    const name = `${run} Many`
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await pushed(name, i))
    const [group] = (await names(`name=${encodeURIComponent(name)}`)).body
    expect(group.version_count).toBe(12)
    expect(group.versions.map((v: { version: number }) => v.version)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3])
    expect(group.versions.map((v: { id: string }) => v.id)).toEqual(ids.slice(2).reverse())
    const all = await call(server, 'GET', `/api/v1/graphs?name=${encodeURIComponent(name)}&limit=20`, member.token)
    expect(all.body.map((g: { id: string }) => g.id)).toEqual(ids)
    // The list's records are as they were: no version field.
    expect(Object.keys(all.body[0])).not.toContain('version')
    // Deleting the oldest renumbers the others.
    expect((await call(server, 'DELETE', `/api/v1/graphs/${ids[0]}`, admin.token)).status).toBe(200)
    const [after] = (await names(`name=${encodeURIComponent(name)}`)).body
    expect([after.version_count, after.versions[0].id, after.versions[0].version]).toEqual([11, ids[11], 11])
  })

  test("the Go client's form takes ?name= too, and stays {graphs, total}", async () => {
    const res = await call(
      server,
      'GET',
      `/api/v1/graphs?offset=0&name=${encodeURIComponent(first.name)}`,
      member.token,
    )
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(2)
    expect(res.body.graphs.map((g: { id: string }) => g.id)).toEqual([first.ids[1], first.ids[0]])
  })

  test('access and bad input: 401 without a token, 403 without registry:pull, 400 for a bad query', async () => {
    expectError(await names(`q=${run}`, ''), 401)
    expectError(await names(`q=${run}`, outsider.token), 403, /registry:pull/)
    expectError(await names('limit=0'), 400, /limit/)
    expectError(await names('cursor=nonsense'), 400, /cursor/)
    expectError(await names(`name=${'x'.repeat(300)}`), 400, /name/)
  })
})
