// The kgs:// resources and completion, with both official clients: resources/list pages (by its
// cursor) through the facts, concepts, reports and sources of the repositories the caller may
// read, and only those; each reads as its get tool answers it, a source's Markdown chunk by chunk;
// the lists carry the 2026-07-28 revision's cache hints. completion/complete answers repository
// slugs and concept names, at most 100, of what the caller sees. Red team: a forged cursor or a
// completion naming a repository the caller holds no role in yields nothing of it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { call, CLIENTS } from '../helpers/mcp-host.ts'
import { rejected } from '../helpers/promises.ts'
import { waitForJob } from '../helpers/jobs.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Account } from '../helpers/api.ts'

let server: TestServer
let users: Record<'admin' | 'editor' | 'viewer' | 'stranger', Account>
let shared: { id: string; slug: string }
let secret: { id: string; slug: string }
const ids: { fact: string; report: string; source: string; concepts: string[] } = {
  fact: '',
  report: '',
  source: '',
  concepts: [],
}
/** More concepts than a page of resources/list or a completion holds. */
const BULK = 110
const MARKDOWN = '# Tea\n\nTea is brewed from leaves.\n'
const mcp = () => `${server.url}/api/v1/mcp`

beforeAll(async () => {
  const made = await fixture({
    server: { env: { WORKERS: '1' } },
    users: { admin: 'sysadmin', editor: 'member', viewer: 'member', stranger: 'member' },
    repositories: {
      shared: { by: 'editor', name: 'Resources shared', roles: { viewer: 'viewer' } },
      secret: { by: 'stranger', name: 'Resources secret' },
    },
  })
  ;({ server, users } = made)
  ;[shared, secret] = [made.repositories.shared, made.repositories.secret]
  const [v2] = [CLIENTS[1]]
  const editor = await v2.connect(mcp(), users.editor.token)
  const at = { repository: shared.slug }
  for (const name of ['Tea', 'Teapot', 'Coffee'])
    ids.concepts.push((await call(editor, 'create_concept', { ...at, canonical_name: name })).structuredContent!.id)
  for (let i = 0; i < BULK; i++)
    ids.concepts.push(
      (await call(editor, 'create_concept', { ...at, canonical_name: `Bulk ${String(i).padStart(3, '0')}` }))
        .structuredContent!.id,
    )
  ids.fact = (await call(editor, 'create_fact', { ...at, text: 'Tea is brewed.' })).structuredContent!.id
  ids.report = (await call(editor, 'write_report', { ...at, title: 'On tea' })).structuredContent!.id
  const added = (await call(editor, 'add_source', { ...at, text: MARKDOWN, process: false })).structuredContent!
  ids.source = added.source_id
  await waitForJob(made.http, `/${shared.slug}/jobs/${added.job.id}`, users.editor.token)
  await editor.close()
  const stranger = await v2.connect(mcp(), users.stranger.token)
  await call(stranger, 'create_concept', { repository: secret.slug, canonical_name: 'Tea secret' })
  await call(stranger, 'create_fact', { repository: secret.slug, text: 'A secret about tea.' })
  await stranger.close()
})
afterAll(() => server?.stop())

describe(`kgs:// resources and completion (${BACKEND})`, () => {
  for (const { revision, sdk, connect } of CLIENTS) {
    test(`${sdk}: resources/list pages through what the caller may read, and only that`, async () => {
      const client = await connect(mcp(), users.editor.token)
      try {
        expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
          'kgs://{repository}/concepts/{id}',
          'kgs://{repository}/facts/{id}',
          'kgs://{repository}/reports/{id}',
          'kgs://{repository}/sources/{id}',
          'kgs://{repository}/sources/{id}/chunks/{n}',
        ])
        // The 1.x client answers the first page, the 2.x client every page it walked by the cursors.
        const first = await client.listResources()
        const uris = first.resources.map((r) => r.uri)
        for (let cursor = first.nextCursor; cursor; ) {
          const page = await client.listResources({ cursor })
          uris.push(...page.resources.map((r) => r.uri))
          cursor = page.nextCursor
        }
        // A page holds at most 100, and says where the next starts.
        const start = Buffer.from(JSON.stringify([shared.id, 0, null])).toString('base64url')
        const page = await client.listResources({ cursor: start })
        expect(page.resources).toHaveLength(100)
        expect(page.nextCursor).toBeString()
        // The cache hints the 2026-07-28 revision defines on its lists; 2025-11-25 has none.
        const templates = await client.listResourceTemplates()
        if (revision === '2026-07-28') {
          expect(page as object).toMatchObject({ ttlMs: 10_000, cacheScope: 'private' })
          expect(templates as object).toMatchObject({ ttlMs: 300_000, cacheScope: 'private' })
        } else expect(Object.keys(page)).not.toContain('ttlMs')
        expect(uris.sort()).toEqual(
          [
            ...ids.concepts.map((id) => `kgs://${shared.id}/concepts/${id}`),
            `kgs://${shared.id}/facts/${ids.fact}`,
            `kgs://${shared.id}/reports/${ids.report}`,
            `kgs://${shared.id}/sources/${ids.source}`,
          ].sort(),
        )

        // Red team: a cursor naming the repository the caller holds no role in lists nothing of it.
        const forged = Buffer.from(JSON.stringify([secret.id, 0, null])).toString('base64url')
        const after = await client.listResources({ cursor: forged })
        expect(after.resources.filter((r) => r.uri.includes(secret.id))).toEqual([])
        expect(await rejected(client.listResources({ cursor: 'not a cursor' }))).toThrow('invalid cursor')
      } finally {
        await client.close()
      }
    })

    test(`${sdk}: each resource reads as its get tool answers it; a source by chunk; what the caller cannot read is an error`, async () => {
      const client = await connect(mcp(), users.viewer.token)
      try {
        const read = async (uri: string) =>
          (await client.readResource({ uri })).contents[0] as { text: string; mimeType: string }
        expect(JSON.parse((await read(`kgs://${shared.slug}/facts/${ids.fact}`)).text)).toMatchObject({
          id: ids.fact,
          text: 'Tea is brewed.',
        })
        expect(JSON.parse((await read(`kgs://${shared.id}/reports/${ids.report}`)).text)).toMatchObject({
          title: 'On tea',
        })
        const source = JSON.parse((await read(`kgs://${shared.id}/sources/${ids.source}`)).text)
        expect(source).toMatchObject({ id: ids.source, chunk_count: 1 })
        expect(source.parsed_markdown).toBeUndefined()
        const chunk = await read(`kgs://${shared.id}/sources/${ids.source}/chunks/0`)
        expect(chunk.mimeType).toBe('text/markdown')
        expect(chunk.text).toContain('Tea is brewed from leaves.')
        expect(await rejected(read(`kgs://${shared.id}/sources/${ids.source}/chunks/1`))).toThrow(
          'source chunk not found',
        )
      } finally {
        await client.close()
      }
      const stranger = await connect(mcp(), users.stranger.token)
      try {
        expect(await rejected(stranger.readResource({ uri: `kgs://${shared.id}/facts/${ids.fact}` }))).toThrow(
          'repository not found',
        )
        expect(
          await rejected(stranger.readResource({ uri: `kgs://${shared.id}/sources/${ids.source}/chunks/0` })),
        ).toThrow('repository not found')
      } finally {
        await stranger.close()
      }
    })

    test(`${sdk}: completion: repository slugs and concept names the caller sees, at most 100`, async () => {
      const client = await connect(mcp(), users.editor.token)
      try {
        const repositories = await client.complete({
          ref: { type: 'ref/resource', uri: 'kgs://{repository}/facts/{id}' },
          argument: { name: 'repository', value: 'resources' },
        })
        expect(repositories.completion).toEqual({ values: [shared.slug], total: 1, hasMore: false })
        const prompt = { type: 'ref/prompt' as const, name: 'about_concept' }
        const concepts = await client.complete({
          ref: prompt,
          argument: { name: 'concept', value: 'te' },
          context: { arguments: { repository: shared.slug } },
        })
        expect(concepts.completion.values.sort()).toEqual(['Tea', 'Teapot'])
        const bulk = await client.complete({
          ref: prompt,
          argument: { name: 'concept', value: 'Bulk' },
          context: { arguments: { repository: shared.slug } },
        })
        expect(bulk.completion.values).toHaveLength(100)
        expect(bulk.completion.hasMore).toBe(true)
        // Red team: the other repository's concepts, and its slug, are never offered.
        const elsewhere = await client.complete({
          ref: prompt,
          argument: { name: 'concept', value: 'Tea' },
          context: { arguments: { repository: secret.slug } },
        })
        expect(elsewhere.completion.values).toEqual([])
        const all = await client.complete({ ref: prompt, argument: { name: 'repository', value: '' } })
        expect(all.completion.values).toEqual([shared.slug])
        const { messages } = await client.getPrompt({
          name: 'about_concept',
          arguments: { repository: shared.slug, concept: 'Tea' },
        })
        expect(JSON.stringify(messages)).toContain('get_concept')
      } finally {
        await client.close()
      }
    })
  }
})
