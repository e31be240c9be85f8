// Bad input on every write route, on the selected backend: no token, a role without the
// permission, an OAuth token without the write scope, and (for routes with a JSON body) malformed
// JSON, wrong types, unknown fields, an oversized body and another media type. Each is a clear
// {"error"} with its status, and nothing is written. A write-scoped OAuth token and a curator (who
// writes concepts and reports, not facts) succeed or fail as their permissions say.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type api, type Account } from '../helpers/api.ts'
import { obtainTokens, registerClient } from '../helpers/oauth.ts'
import { createApp } from '../../src/app.ts'

const BODY_LIMIT = 4096
let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let viewer: Account
let curator: Account
let repo: { id: string; slug: string }
let readOnly: string
let writer: string
let routes: Route[]

interface Route {
  method: string
  path: string
  permission: string
  /** A valid body, for routes that take one. */
  body?: Record<string, unknown>
}

const TABLES = [
  'sources',
  'facts',
  'fact_sources',
  'fact_concepts',
  'fact_merges',
  'concepts',
  'concept_aliases',
  'concept_summaries',
  'concept_syntheses',
  'investigations',
  'investigation_sources',
  'reports',
  'report_annotations',
]

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner, viewer, curator },
    repositories: { repo },
  } = await fixture({
    server: { env: { BODY_LIMIT: String(BODY_LIMIT) } },
    users: { admin: 'sysadmin', owner: 'member', viewer: 'member', curator: 'member' },
    repositories: { repo: { by: 'owner', name: 'Input', roles: { viewer: 'viewer', curator: 'curator' } } },
  }))
  const account = { email: owner.email, password: 'correct horse battery' }
  readOnly = (await obtainTokens(server.url, await registerClient(server.url), account, 'read')).access_token
  writer = (await obtainTokens(server.url, await registerClient(server.url), account, 'write')).access_token
  const r = `/${repo.slug}`
  const post = async (path: string, body: unknown) =>
    (await http.post(`${r}${path}`, body, owner.token)).body.id as string
  const source = await post('/sources', { url: 'https://example.org/input', kind: 'web', status: 'parsed' })
  const fact = await post('/facts', { text: 'Input is checked.' })
  const concept = await post('/concepts', { canonical_name: 'Input' })
  const summary = await post(`/concepts/${concept}/summaries`, { sequence_num: 0 })
  const synthesis = await post('/syntheses', { canonical_name: 'Inputs' })
  const investigation = await post('/investigations', { title: 'Input' })
  const report = await post('/reports', { title: 'Input' })
  routes = [
    {
      method: 'POST',
      path: `${r}/sources`,
      permission: 'source:write',
      body: { url: 'https://example.org/new', kind: 'web', status: 'parsed' },
    },
    { method: 'PATCH', path: `${r}/sources/${source}`, permission: 'source:write', body: { parsed_title: 'New' } },
    { method: 'DELETE', path: `${r}/sources/${source}`, permission: 'source:write' },
    { method: 'POST', path: `${r}/ingest`, permission: 'source:write', body: { url: 'https://example.org/document' } },
    { method: 'POST', path: `${r}/sources/${source}/process`, permission: 'fact:write' },
    { method: 'POST', path: `${r}/process`, permission: 'fact:write' },
    { method: 'POST', path: `${r}/facts`, permission: 'fact:write', body: { text: 'A new fact.' } },
    { method: 'PATCH', path: `${r}/facts/${fact}`, permission: 'fact:write', body: { status: 'stable' } },
    { method: 'DELETE', path: `${r}/facts/${fact}`, permission: 'fact:write' },
    { method: 'PUT', path: `${r}/facts/${fact}/concepts/${concept}`, permission: 'fact:write' },
    { method: 'DELETE', path: `${r}/facts/${fact}/concepts/${concept}`, permission: 'fact:write' },
    {
      method: 'POST',
      path: `${r}/facts/${fact}/unmerge`,
      permission: 'fact:write',
      body: { merge_id: crypto.randomUUID() },
    },
    { method: 'POST', path: `${r}/concepts`, permission: 'concept:write', body: { canonical_name: 'New' } },
    { method: 'PATCH', path: `${r}/concepts/${concept}`, permission: 'concept:write', body: { description: 'new' } },
    { method: 'DELETE', path: `${r}/concepts/${concept}`, permission: 'concept:write' },
    {
      method: 'POST',
      path: `${r}/concepts/${concept}/merge`,
      permission: 'concept:write',
      body: { concept_ids: [await post('/concepts', { canonical_name: 'Merged input' })] },
    },
    {
      method: 'POST',
      path: `${r}/concepts/${concept}/split`,
      permission: 'concept:write',
      body: { canonical_name: 'Split input' },
    },
    {
      method: 'POST',
      path: `${r}/concepts/${concept}/summaries`,
      permission: 'concept:write',
      body: { sequence_num: 1 },
    },
    {
      method: 'PATCH',
      path: `${r}/concepts/${concept}/summaries/${summary}`,
      permission: 'concept:write',
      body: { content: 'new' },
    },
    { method: 'DELETE', path: `${r}/concepts/${concept}/summaries/${summary}`, permission: 'concept:write' },
    { method: 'POST', path: `${r}/syntheses`, permission: 'concept:write', body: { canonical_name: 'New' } },
    { method: 'PATCH', path: `${r}/syntheses/${synthesis}`, permission: 'concept:write', body: { content: 'new' } },
    { method: 'DELETE', path: `${r}/syntheses/${synthesis}`, permission: 'concept:write' },
    { method: 'POST', path: `${r}/investigations`, permission: 'investigation:write', body: { title: 'New' } },
    {
      method: 'PATCH',
      path: `${r}/investigations/${investigation}`,
      permission: 'investigation:write',
      body: { topic: 'new' },
    },
    { method: 'DELETE', path: `${r}/investigations/${investigation}`, permission: 'investigation:write' },
    {
      method: 'PUT',
      path: `${r}/investigations/${investigation}/sources/${source}`,
      permission: 'investigation:write',
    },
    {
      method: 'DELETE',
      path: `${r}/investigations/${investigation}/sources/${source}`,
      permission: 'investigation:write',
    },
    { method: 'POST', path: `${r}/reports`, permission: 'report:write', body: { title: 'New' } },
    { method: 'PATCH', path: `${r}/reports/${report}`, permission: 'report:write', body: { status: 'failed' } },
    { method: 'POST', path: `${r}/reports/${report}/annotate`, permission: 'report:write' },
    { method: 'DELETE', path: `${r}/reports/${report}`, permission: 'report:write' },
  ]
})
afterAll(() => server.stop())

const snapshot = async () => {
  const sql = await server.context.pools.forRepository(repo.id)
  const counts: Record<string, unknown> = {}
  for (const table of TABLES)
    counts[table] = (
      await sql`SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS digest FROM ${sql(table)} t`
    )[0]!.digest
  return counts
}
const send = (route: Route, init: { token?: string; body?: string; type?: string } = {}) =>
  http.call(route.method, route.path, {
    raw: init.body ?? (route.body ? JSON.stringify(route.body) : undefined),
    token: init.token,
    headers: init.body !== undefined || route.body ? { 'content-type': init.type ?? 'application/json' } : {},
  })

describe(`bad input on the write routes (${BACKEND})`, () => {
  test('every write route of the graph is covered here (the media uploads in tests/media/upload.test.ts)', () => {
    const GRAPH = /^\/:repoID\/(sources|facts|concepts|syntheses|investigations|reports|ingest|process)(\/|$)/
    const UPLOADS = ['PUT /:repoID/sources/ID/body', 'POST /:repoID/sources/ID/images']
    const registered = createApp(server.context)
      .routes.filter((route) => route.method !== 'GET' && GRAPH.test(route.path))
      .map((route) => `${route.method} ${route.path.replace(/:(?!repoID)[A-Za-z]+ID/g, 'ID')}`)
      .filter((at) => !UPLOADS.includes(at))
    const covered = routes.map(
      (route) => `${route.method} ${route.path.replace(`/${repo.slug}`, '/:repoID').replace(/[0-9a-f-]{36}/g, 'ID')}`,
    )
    expect(covered.sort()).toEqual(registered.sort())
  })

  test('no token (401), no permission (403: viewer; curator outside concepts and reports), read scope (403): nothing written', async () => {
    const before = await snapshot()
    const wrong: string[] = []
    for (const route of routes) {
      const expect401 = await send(route)
      if (expect401.status !== 401) wrong.push(`${route.method} ${route.path} without a token: ${expect401.status}`)
      const asViewer = await send(route, { token: viewer.token })
      if (asViewer.status !== 403 || !/permission/.test(asViewer.body.error))
        wrong.push(`${route.method} ${route.path} as viewer: ${asViewer.status} ${JSON.stringify(asViewer.body)}`)
      const asReader = await send(route, { token: readOnly })
      if (asReader.status !== 403 || !/scope/.test(asReader.body.error))
        wrong.push(
          `${route.method} ${route.path} with a read token: ${asReader.status} ${JSON.stringify(asReader.body)}`,
        )
      if (!['concept:write', 'report:write'].includes(route.permission)) {
        const asCurator = await send(route, { token: curator.token })
        if (asCurator.status !== 403) wrong.push(`${route.method} ${route.path} as curator: ${asCurator.status}`)
      }
    }
    expect(wrong).toEqual([])
    expect(await snapshot()).toEqual(before)
  })

  test('malformed JSON, wrong types, unknown fields, too large, another media type: each refused, nothing written', async () => {
    const before = await snapshot()
    const wrong: string[] = []
    const check = async (
      route: Route,
      what: string,
      init: { body?: string; type?: string },
      status: number,
      message: RegExp,
    ) => {
      const res = await send(route, { token: owner.token, ...init })
      if (res.status !== status || Object.keys(res.body ?? {}).join() !== 'error' || !message.test(res.body.error))
        wrong.push(`${route.method} ${route.path} ${what}: ${res.status} ${JSON.stringify(res.body)}`)
    }
    for (const route of routes.filter((r) => r.body)) {
      await check(route, 'malformed', { body: '{"title": ' }, 400, /malformed JSON body/)
      const [field] = Object.keys(route.body!)
      const wrongType = typeof route.body![field!] === 'number' ? 'x' : 42
      await check(
        route,
        'wrong type',
        { body: JSON.stringify({ ...route.body, [field!]: wrongType }) },
        400,
        new RegExp(`invalid body: ${field}`),
      )
      await check(
        route,
        'unknown field',
        { body: JSON.stringify({ ...route.body, colour: 'red' }) },
        400,
        /invalid body/,
      )
      await check(route, 'array', { body: '[]' }, 400, /invalid body/)
      await check(
        route,
        'too large',
        { body: JSON.stringify({ ...route.body, [field!]: 'x'.repeat(BODY_LIMIT) }) },
        413,
        /exceeds the limit/,
      )
      await check(route, 'text', { body: 'title=x', type: 'text/plain' }, 415, /expected application\/json/)
    }
    // Updates need at least one field; creates their required ones.
    for (const route of routes.filter((r) => r.method === 'PATCH'))
      await check(route, 'empty', { body: '{}' }, 400, /invalid body/)
    // (Processing a source takes no body.)
    for (const route of routes.filter((r) => r.method === 'POST' && r.body))
      await check(route, 'empty', { body: '{}' }, 400, /invalid body/)
    const fact = routes.find((r) => r.method === 'POST' && r.path.endsWith('/facts'))!
    await check(fact, 'blank text', { body: JSON.stringify({ text: '' }) }, 400, /invalid body: text/)
    await check(
      fact,
      'bad status',
      { body: JSON.stringify({ text: 'x', status: 'gone' }) },
      400,
      /invalid body: status: expected new, stable, to_delete or stale/,
    )
    await check(
      fact,
      'bad source id',
      { body: JSON.stringify({ text: 'x', sources: [{ source_id: 'nope' }] }) },
      400,
      /invalid body: sources\.0\.source_id: expected a UUID/,
    )
    await check(
      fact,
      'negative chunk',
      { body: JSON.stringify({ text: 'x', sources: [{ source_id: crypto.randomUUID(), chunk_index: -1 }] }) },
      400,
      /chunk_index/,
    )
    const merge = { ...fact, path: `${fact.path}?merge=yes` }
    await check(merge, 'bad merge flag', {}, 400, /invalid query: merge: expected true or false/)
    const badId = {
      ...routes.find((r) => r.method === 'PATCH' && r.path.includes('/facts/'))!,
      path: `/${repo.slug}/facts/not-a-uuid`,
    }
    await check(badId, 'bad path id', {}, 400, /invalid path parameter: factID: expected a UUID/)
    expect(wrong).toEqual([])
    expect(await snapshot()).toEqual(before)
  })

  test('a write-scoped OAuth token writes; a curator writes concepts and reports', async () => {
    const r = `/${repo.slug}`
    expect((await http.post(`${r}/facts`, { text: 'Written by an agent.' }, writer)).status).toBe(201)
    expect((await http.post(`${r}/concepts`, { canonical_name: 'Curated' }, curator.token)).status).toBe(201)
    expect((await http.post(`${r}/reports`, { title: 'Curated report' }, curator.token)).status).toBe(201)
    expectError(await http.post(`${r}/facts`, { text: 'Not by a curator.' }, curator.token), 403)
  })
})
