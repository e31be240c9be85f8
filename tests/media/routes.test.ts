// The stored-media routes over HTTP on the selected backend: an image's and a body's bytes with
// their media type at the URLs urls.ts hands out and under /api/v1 with X-Repository-ID, and the
// answers for unknown, unstored, foreign and malformed ids, missing credentials and strangers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { type api, expectError, type Account } from '../helpers/api.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { fetchedBodyKey, fetchedImageKey } from '../../src/media/store.ts'
import { localBodyUrl, localImageUrl } from '../../src/media/urls.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let owner: Account
let viewer: Account
let stranger: Account
let a: { id: string; slug: string }
let b: { id: string; slug: string }

const id = () => crypto.randomUUID()
const PNG = Uint8Array.from({ length: 2000 }, (_, i) => (i * 7) % 256)
const PDF = new TextEncoder().encode('%PDF-1.7 a tiny paper')
const HTML = new TextEncoder().encode('<script>alert(1)</script>')

const source = { id: id(), bare: id(), inB: id() }
const image = { png: id(), untyped: id(), unstored: id(), inB: id(), html: id(), svg: id(), forged: id() }
/** A type stored before import checked types: it must never reach a response header. */
const FORGED_TYPE = 'text/html\r\nSet-Cookie: session=stolen'

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, owner, viewer, stranger },
    repositories: { a, b },
  } = await fixture({
    users: { admin: 'sysadmin', owner: 'member', viewer: 'member', stranger: 'member' },
    repositories: {
      a: { by: 'owner', name: 'Media A', roles: { viewer: 'viewer' } },
      b: { by: 'owner', name: 'Media B' },
    },
  }))

  const { blobs } = server.context
  await blobs.put(fetchedImageKey(a.id, image.png), PNG)
  await blobs.put(fetchedImageKey(a.id, image.untyped), HTML)
  for (const script of [image.html, image.svg, image.forged]) await blobs.put(fetchedImageKey(a.id, script), HTML)
  await blobs.put(fetchedBodyKey(a.id, source.id), PDF)
  await blobs.put(fetchedImageKey(b.id, image.inB), PNG)
  const sqlA = await server.context.pools.forRepository(a.id)
  await sqlA.begin(async (tx) => {
    await tx`INSERT INTO sources ${tx([
      { id: source.id, url: 'https://example.org/paper.pdf', kind: 'pdf', status: 'processed', has_stored_body: true },
      { id: source.bare, url: 'https://example.org/page', kind: 'html', status: 'processed', has_stored_body: false },
    ])}`
    await tx`INSERT INTO source_bodies ${tx({ source_id: source.id, content_type: 'application/pdf', storage_key: fetchedBodyKey(a.id, source.id), bytes: PDF.byteLength })}`
    const row = (imageId: string, position: number, content_type: string, storage_key: string | null) => ({
      id: imageId,
      source_id: source.id,
      kind: 'page',
      page_number: 1,
      position,
      url: 'https://example.org/p.png',
      content_type,
      storage_key,
    })
    await tx`INSERT INTO source_images ${tx([
      row(image.png, 0, 'image/png', fetchedImageKey(a.id, image.png)),
      row(image.untyped, 1, '', fetchedImageKey(a.id, image.untyped)),
      row(image.unstored, 2, 'image/png', null),
      row(image.html, 3, 'text/html; charset=utf-8', fetchedImageKey(a.id, image.html)),
      row(image.svg, 4, 'image/svg+xml', fetchedImageKey(a.id, image.svg)),
      row(image.forged, 5, FORGED_TYPE, fetchedImageKey(a.id, image.forged)),
    ])}`
  })
  const sqlB = await server.context.pools.forRepository(b.id)
  await sqlB`INSERT INTO sources (id, url, kind, status, has_stored_body) VALUES (${source.inB}, 'https://example.org/b', 'pdf', 'processed', true)`
  await sqlB`INSERT INTO source_images (id, source_id, kind, position, content_type, storage_key) VALUES (${image.inB}, ${source.inB}, 'inline', 0, 'image/png', ${fetchedImageKey(b.id, image.inB)})`
})
afterAll(() => server.stop())

async function download(path: string, token: string | undefined, headers: Record<string, string> = {}) {
  const res = await fetch(server.url + path, {
    headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
  })
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
}

/** The two spellings of a repository route: in the path (by slug) and under /api/v1 with X-Repository-ID. */
const both = (path: string): { path: string; headers: Record<string, string> }[] => [
  { path: `/${a.slug}${path}`, headers: {} },
  { path: `/api/v1${path}`, headers: { 'x-repository-id': a.id } },
]

describe(`stored media routes (${BACKEND})`, () => {
  test('an image: its bytes with their media type, at the URL urls.ts hands out and under /api/v1', async () => {
    const local = new URL(localImageUrl(server.url, a.id, image.png)).pathname
    for (const { path, headers } of [
      { path: local, headers: {} as Record<string, string> },
      ...both(`/images/${image.png}`),
    ]) {
      for (const account of [viewer, owner, admin]) {
        const res = await download(path, account.token, headers)
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toBe('image/png')
        expect(res.headers.get('content-length')).toBe(String(PNG.byteLength))
        expect(res.bytes).toEqual(PNG)
      }
    }
  })

  test('bytes of unknown type are served as application/octet-stream, never sniffed or run', async () => {
    const res = await download(`/${a.slug}/images/${image.untyped}`, viewer.token)
    expect(res.status).toBe(200)
    expect(res.bytes).toEqual(HTML)
    expect(res.headers.get('content-type')).toBe('application/octet-stream')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
  })

  test('only raster images are inline; HTML, SVG and the rest are attachments; a forged type is octet-stream', async () => {
    const served = async (imageId: string) => {
      const res = await download(`/${a.slug}/images/${imageId}`, viewer.token)
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        disposition: res.headers.get('content-disposition'),
        cookie: res.headers.get('set-cookie'),
      }
    }
    expect(await served(image.png)).toEqual({ status: 200, type: 'image/png', disposition: 'inline', cookie: null })
    expect(await served(image.html)).toEqual({
      status: 200,
      type: 'text/html; charset=utf-8',
      disposition: 'attachment',
      cookie: null,
    })
    expect(await served(image.svg)).toEqual({
      status: 200,
      type: 'image/svg+xml',
      disposition: 'attachment',
      cookie: null,
    })
    expect(await served(image.untyped)).toEqual({
      status: 200,
      type: 'application/octet-stream',
      disposition: 'attachment',
      cookie: null,
    })
    expect(await served(image.forged)).toEqual({
      status: 200,
      type: 'application/octet-stream',
      disposition: 'attachment',
      cookie: null,
    })
    const body = await download(`/${a.slug}/sources/${source.id}/body`, viewer.token)
    expect(body.headers.get('content-disposition')).toBe('attachment')
  })

  test("a source's body: its bytes with their media type", async () => {
    const local = new URL(localBodyUrl(server.url, a.id, source.id)).pathname
    for (const { path, headers } of [
      { path: local, headers: {} as Record<string, string> },
      ...both(`/sources/${source.id}/body`),
    ]) {
      const res = await download(path, viewer.token, headers)
      expect({ status: res.status, type: res.headers.get('content-type'), bytes: res.bytes }).toEqual({
        status: 200,
        type: 'application/pdf',
        bytes: PDF,
      })
    }
  })

  test('unknown, unstored and foreign ids are 404', async () => {
    for (const { path, headers } of [...both(''), { path: `/${a.id}`, headers: {} }]) {
      const get = (rest: string) => http.call('GET', path + rest, { token: viewer.token, headers })
      expectError(await get(`/images/${id()}`), 404, 'image not found')
      expectError(await get(`/images/${image.unstored}`), 404, 'image not stored')
      // Repository B's image, asked for in A.
      expectError(await get(`/images/${image.inB}`), 404, 'image not found')
      expectError(await get(`/sources/${id()}/body`), 404, 'source not found')
      expectError(await get(`/sources/${source.bare}/body`), 404, 'body not stored')
      expectError(await get(`/sources/${source.inB}/body`), 404, 'source not found')
    }
  })

  test('no or a bad token is 401; a repository the caller holds no role in is 404, like one that does not exist', async () => {
    for (const rest of [`/images/${image.png}`, `/sources/${source.id}/body`]) {
      for (const { path, headers } of both(rest)) {
        expectError(await http.call('GET', path, { headers }), 401, 'authentication required')
        expectError(await http.call('GET', path, { token: 'not-a-token', headers }), 401)
        expectError(await http.call('GET', path, { token: stranger.token, headers }), 404, 'repository not found')
      }
      // The viewer of A holds no role in B.
      expectError(await http.get(`/${b.slug}${rest}`, viewer.token), 404, 'repository not found')
      expectError(await http.get(`/${id()}${rest}`, viewer.token), 404, 'repository not found')
    }
    // Every repository role may read sources (and every OAuth scope covers reading), so these
    // routes have no 403: a sysadmin without a role in A reads like any member.
    expect((await download(`/${a.slug}/images/${image.png}`, admin.token)).status).toBe(200)
  })

  test('malformed ids are 400 naming the parameter; other methods 405', async () => {
    for (const { path, headers } of both('')) {
      expectError(
        await http.call('GET', `${path}/images/not-a-uuid`, { token: viewer.token, headers }),
        400,
        /^invalid path parameter: imageID: expected a UUID \(got "not-a-uuid"\)$/,
      )
      expectError(
        await http.call('GET', `${path}/sources/1234/body`, { token: viewer.token, headers }),
        400,
        /^invalid path parameter: sourceID: expected a UUID \(got "1234"\)$/,
      )
    }
    const post = await http.call('POST', `/${a.slug}/images/${image.png}`, { token: viewer.token, body: {} })
    expectError(post, 405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
  })
})
