// Deleting a repository cannot be undone: the request names the repository a second time, by its
// slug in the body or its ETag in If-Match, and without either (or with another) nothing goes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { type Account, type api, expectError } from '../helpers/api.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner },
  } = await fixture({ users: { owner: 'member' } }))
})
afterAll(() => server.stop())

async function createRepository(name: string): Promise<{ id: string; slug: string }> {
  const res = await http.post('/api/v1/repositories', { name }, owner.token)
  expect(res.status).toBe(201)
  return res.body
}

const remove = (repository: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
  http.call('DELETE', `/api/v1/repositories/${repository}`, { token: owner.token, ...options })
const stillThere = async (id: string) =>
  expect((await http.get(`/api/v1/repositories/${id}`, owner.token)).status).toBe(200)

describe(`deleting a repository asks for a confirmation (${BACKEND})`, () => {
  test('every read and write of a repository answers its ETag; the same row, the same ETag; a rename changes it', async () => {
    const repo = await createRepository('Versioned')
    const read = await http.get(`/api/v1/repositories/${repo.id}`, owner.token)
    const etag = read.headers.get('etag')
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/)
    expect((await http.get(`/${repo.slug}`, owner.token)).headers.get('etag')).toBe(etag)
    const renamed = await http.put(`/api/v1/repositories/${repo.id}`, { name: 'Versioned, renamed' }, owner.token)
    expect(renamed.status).toBe(200)
    expect(renamed.headers.get('etag')).not.toBe(etag)
    expect((await http.get(`/api/v1/repositories/${repo.id}`, owner.token)).headers.get('etag')).toBe(
      renamed.headers.get('etag'),
    )
  })

  test('no confirmation (428), another slug (400), a stale or wildcard ETag (412): each says what to send, and nothing is deleted', async () => {
    const repo = await createRepository('Kept safe')
    const other = await createRepository('Other')
    const etag = (await http.get(`/api/v1/repositories/${repo.id}`, owner.token)).headers.get('etag')!
    expectError(
      await remove(repo.id),
      428,
      /confirm it with the body \{"confirm": "<its slug>"\} or with If-Match: <its ETag>/,
    )
    expectError(await remove(repo.id, { body: {} }), 428)
    expectError(
      await remove(repo.id, { body: { confirm: other.slug } }),
      400,
      "invalid body: confirm: expected the repository's slug; nothing was deleted",
    )
    expectError(await remove(repo.id, { body: { confirm: repo.slug.toUpperCase() } }), 400)
    // A right ETag does not make up for a wrong slug: each one sent must hold.
    expectError(await remove(repo.id, { body: { confirm: other.slug }, headers: { 'if-match': etag } }), 400)
    const otherEtag = (await http.get(`/api/v1/repositories/${other.id}`, owner.token)).headers.get('etag')!
    expectError(await remove(repo.id, { headers: { 'if-match': otherEtag } }), 412, /If-Match failed/)
    expectError(await remove(repo.id, { headers: { 'if-match': '*' } }), 412)
    expectError(await remove(repo.id, { body: { confirm: repo.slug, extra: true } }), 400, /^invalid body/)
    await stillThere(repo.id)
    await stillThere(other.id)
    // An ETag read before a rename is stale after it.
    expect((await http.put(`/api/v1/repositories/${repo.id}`, { description: 'changed' }, owner.token)).status).toBe(
      200,
    )
    expectError(await remove(repo.id, { headers: { 'if-match': etag } }), 412)
    await stillThere(repo.id)
  })

  test('its slug in the body deletes it, addressed by UUID or slug', async () => {
    for (const address of ['id', 'slug'] as const) {
      const repo = await createRepository(`Doomed by ${address}`)
      const res = await remove(repo[address], { body: { confirm: repo.slug } })
      expect(res.status).toBe(200)
      expect(res.body.id).toBe(repo.id)
      expectError(await http.get(`/api/v1/repositories/${repo.id}`, owner.token), 404)
    }
  })

  test('If-Match with its current ETag deletes it', async () => {
    const repo = await createRepository('Doomed by ETag')
    const etag = (await http.get(`/api/v1/repositories/${repo.slug}`, owner.token)).headers.get('etag')!
    const res = await remove(repo.slug, { headers: { 'if-match': `"0000", ${etag}` } })
    expect(res.status).toBe(200)
    expect(res.body.slug).toBe(repo.slug)
    expectError(await http.get(`/api/v1/repositories/${repo.id}`, owner.token), 404)
  })
})
