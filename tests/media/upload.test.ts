// Media through the write API, on the selected backend: a source's original and its images
// uploaded as raw bytes (streamed, size-limited), served back as stored, an image fact tied to an
// uploaded image pointing at its local copy, and refusals (too large, empty, unknown source,
// taken position, no permission) that leave nothing behind.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import type { TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type api, type Account } from '../helpers/api.ts'

const LIMIT = 4096
let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let curator: Account
let repo: { id: string; slug: string }

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner, curator },
    repositories: { repo },
  } = await fixture({
    server: { env: { MEDIA_UPLOAD_MAX_BYTES: String(LIMIT) } },
    users: { admin: 'sysadmin', owner: 'member', curator: 'member' },
    repositories: { repo: { by: 'owner', name: 'Uploads', roles: { curator: 'curator' } } },
  }))
})
afterAll(() => server.stop())

const upload = (method: string, path: string, bytes: Uint8Array | string, type: string, token = owner.token) =>
  http.call(method, path, { raw: bytes, token, headers: { 'content-type': type } })
const blobs = async () => {
  const keys: string[] = []
  for await (const key of server.context.blobs.list(`repositories/${repo.id}/`)) keys.push(key)
  return keys
}

describe(`media uploads (${BACKEND})`, () => {
  test("a source's original is stored, served as uploaded, and replaced by a second upload", async () => {
    const r = `/${repo.slug}`
    const source = (
      await http.post(
        `${r}/sources`,
        { url: 'https://example.org/paper.pdf', kind: 'pdf', status: 'parsed' },
        owner.token,
      )
    ).body
    const pdf = new TextEncoder().encode('%PDF-1.7 a small paper')
    const stored = await upload('PUT', `${r}/sources/${source.id}/body`, pdf, 'application/pdf')
    expect(stored.status).toBe(200)
    expect(stored.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/)
    expect(stored.body).toMatchObject({
      id: source.id,
      has_stored_body: true,
      body: { content_type: 'application/pdf', bytes: pdf.byteLength },
    })
    const served = await fetch(`${server.url}${r}/sources/${source.id}/body`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect(served.headers.get('content-type')).toBe('application/pdf')
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(pdf)
    const again = await upload('PUT', `/api/v1/sources/${source.id}/body`, 'v2', 'text/plain', owner.token)
    expect(again.status).toBe(400)
    const replaced = await http.call('PUT', `/api/v1/sources/${source.id}/body`, {
      raw: '<p>v2</p>',
      token: owner.token,
      headers: { 'content-type': 'text/html', 'x-repository-id': repo.id },
    })
    expect(replaced.body.body).toEqual({ content_type: 'text/html', bytes: 9 })
    // The first upload's bytes went with the row that named them.
    expect((await blobs()).filter((key) => key.includes(source.id))).toHaveLength(1)
  })

  test('an uploaded image is served from here, and an image fact tied to it points at the local copy', async () => {
    const r = `/${repo.slug}`
    const source = (
      await http.post(
        `${r}/sources`,
        { url: 'https://example.org/figures', kind: 'web', status: 'parsed' },
        owner.token,
      )
    ).body
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3])
    const image = await upload(
      'POST',
      `${r}/sources/${source.id}/images?kind=inline&position=0&alt_text=a%20kettle&width=2&height=1`,
      png,
      'image/png',
    )
    expect(image.status).toBe(201)
    expect(image.body).toEqual({
      id: expect.any(String),
      kind: 'inline',
      page_number: null,
      position: 0,
      url: `${server.url}/${repo.id}/images/${image.body.id}`,
      width: 2,
      height: 1,
      bytes: png.byteLength,
      alt_text: 'a kettle',
      content_type: 'image/png',
    })
    const served = await fetch(`${server.url}${r}/images/${image.body.id}`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(png)
    const taken = await upload('POST', `${r}/sources/${source.id}/images?kind=inline&position=0`, png, 'image/png')
    expect(taken.status).toBe(409)
    expect(taken.body.existing_id).toBe(image.body.id)
    const fact = await http.post(
      `${r}/facts`,
      {
        text: 'A kettle on a stove.',
        fact_kind: 'image',
        source_image_id: image.body.id,
        sources: [{ source_id: source.id }],
      },
      owner.token,
    )
    expect(fact.status).toBe(201)
    expect(fact.body).toMatchObject({
      fact_kind: 'image',
      source_image_id: image.body.id,
      image_url: `${server.url}/${repo.id}/images/${image.body.id}`,
    })
    expectError(
      await http.post(`${r}/facts`, { text: 'Not an image fact.', source_image_id: image.body.id }, owner.token),
      400,
      /only an image fact/,
    )
  })

  test('refusals store nothing: too large, empty, unknown source, missing kind, no permission', async () => {
    const r = `/${repo.slug}`
    const source = (
      await http.post(
        `${r}/sources`,
        { url: 'https://example.org/refusals', kind: 'web', status: 'parsed' },
        owner.token,
      )
    ).body
    const before = await blobs()
    expectError(
      await upload('PUT', `${r}/sources/${source.id}/body`, new Uint8Array(LIMIT + 1), 'application/pdf'),
      413,
      `the upload exceeds the limit of ${LIMIT} bytes (MEDIA_UPLOAD_MAX_BYTES)`,
    )
    // Without a Content-Length the limit holds as the bytes arrive.
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(LIMIT / 2))
        controller.close()
      },
    })
    expect(
      (
        await fetch(`${server.url}${r}/sources/${source.id}/body`, {
          method: 'PUT',
          body: chunked,
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/pdf' },
        })
      ).status,
    ).toBe(413)
    expectError(
      await upload('PUT', `${r}/sources/${source.id}/body`, '', 'application/pdf'),
      400,
      'request body is empty: send the bytes',
    )
    expectError(
      await upload('PUT', `${r}/sources/${crypto.randomUUID()}/body`, 'x', 'application/pdf'),
      404,
      'source not found',
    )
    expectError(await upload('POST', `${r}/sources/${source.id}/images?position=0`, 'x', 'image/png'), 400, /kind/)
    expectError(
      await upload('POST', `${r}/sources/${source.id}/images?kind=page&position=-1`, 'x', 'image/png'),
      400,
      /position/,
    )
    // A curator writes concepts and reports, not sources.
    expectError(await upload('PUT', `${r}/sources/${source.id}/body`, 'x', 'application/pdf', curator.token), 403)
    expectError(await upload('PUT', `${r}/sources/${source.id}/body`, 'x', 'application/pdf', ''), 401)
    expect(await blobs()).toEqual(before)
    expect((await http.get(`${r}/sources/${source.id}`, owner.token)).body).toMatchObject({
      has_stored_body: false,
      body: null,
      images: [],
    })
  })
})
