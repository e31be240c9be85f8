// The destructive tools (delete, merge_concepts, split_concept) run only once the person agreed:
// a 2026-07-28 client declaring elicitation is asked (input_required, answered by its handler and
// retried by the SDK), and a decline, a cancel or anything but confirm: true writes nothing; a
// client that cannot ask (no elicitation declared, or the stateless 2025-11-25 endpoint, which
// cannot carry the question) is refused naming confirm: true, and runs with it. Red team: the
// answer is a yes or a no and nothing more, and asking comes after the permission check.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { call, CLIENTS, type Elicit } from '../helpers/mcp-host.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Account } from '../helpers/api.ts'

let server: TestServer
let users: Record<'admin' | 'editor' | 'viewer', Account>
let repository: { id: string; slug: string }
const mcp = () => `${server.url}/api/v1/mcp`

beforeAll(async () => {
  const made = await fixture({
    users: { admin: 'sysadmin', editor: 'member', viewer: 'member' },
    repositories: { graph: { by: 'admin', name: 'Confirmation', roles: { editor: 'editor', viewer: 'viewer' } } },
  })
  ;({ server, users } = made)
  repository = made.repositories.graph
})
afterAll(() => server?.stop())

/** A host whose person answers `answer`, recording each question put to them. */
function person(answer: ReturnType<Elicit>) {
  const asked: Parameters<Elicit>[0][] = []
  const elicit: Elicit = (request) => {
    asked.push(request)
    return answer
  }
  return { asked, elicit }
}

const conceptCount = async () => {
  const sql = await server.context.pools.forRepository(repository.id)
  return (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM concepts`)[0]!.n
}

describe(`destructive tools ask the person first (${BACKEND})`, () => {
  for (const { revision, sdk, connect } of CLIENTS) {
    const asks = revision === '2026-07-28'
    let n = 0
    /** A new concept of the editor's, by a client that does not ask. */
    const newConcept = async () => {
      const client = await connect(mcp(), users.editor.token)
      const made = await call(client, 'create_concept', {
        repository: repository.slug,
        canonical_name: `${revision} concept ${n++}`,
      })
      await client.close()
      return made.structuredContent!.id as string
    }

    test(`${sdk}: without elicitation, refused naming confirm: true, nothing written; with it, done`, async () => {
      const id = await newConcept()
      const client = await connect(mcp(), users.editor.token)
      try {
        const at = { repository: repository.slug }
        const before = await conceptCount()
        for (const [tool, args] of [
          ['delete', { ...at, kind: 'concept', id }],
          ['merge_concepts', { ...at, concept_id: id, concept_ids: [crypto.randomUUID()] }],
          ['split_concept', { ...at, concept_id: id, canonical_name: 'Split off' }],
        ] as const) {
          const refused = await call(client, tool, args)
          expect({ tool, isError: refused.isError }).toEqual({ tool, isError: true })
          expect(refused.content[0]!.text).toStartWith(`${tool} needs the person's confirmation`)
          expect(refused.content[0]!.text).toEndWith('then call again with confirm: true')
        }
        expect(await conceptCount()).toBe(before)
        const done = await call(client, 'delete', { ...at, kind: 'concept', id, confirm: true })
        expect(done.structuredContent).toMatchObject({ kind: 'concept', deleted: { id } })
        expect(await conceptCount()).toBe(before - 1)
      } finally {
        await client.close()
      }
    })

    test(`${sdk}: a host declaring elicitation ${asks ? 'asks the person: declined or cancelled, nothing written; yes, done' : 'cannot be asked over the stateless 2025-11-25 endpoint: confirm: true'}`, async () => {
      const at = { repository: repository.slug }
      for (const action of ['decline', 'cancel'] as const) {
        const id = await newConcept()
        const { asked, elicit } = person({ action })
        const client = await connect(mcp(), users.editor.token, elicit)
        // The model's own confirm: true does not stand in for the person where the host can ask them.
        const result = await call(client, 'delete', { ...at, kind: 'concept', id, confirm: asks })
        await client.close()
        if (asks) {
          expect(result).toMatchObject({
            isError: true,
            content: [
              { text: `not done: the person ${action === 'decline' ? 'declined' : 'cancelled'}; nothing was changed` },
            ],
          })
          expect(asked).toEqual([
            {
              mode: 'form',
              message: `Delete the concept ${id}? This cannot be undone.`,
              requestedSchema: {
                type: 'object',
                properties: { confirm: { type: 'boolean', title: 'Confirm', description: 'yes: do it' } },
                required: ['confirm'],
              },
            },
          ])
        } else {
          expect(result.content[0]!.text).toEndWith('then call again with confirm: true')
          expect(asked).toEqual([])
        }
        const check = await connect(mcp(), users.editor.token)
        expect((await call(check, 'get_concept', { ...at, concept_id: id })).isError ?? false).toBe(false)
        await check.close()
      }
      const [kept, gone] = [await newConcept(), await newConcept()]
      const { asked, elicit } = person({ action: 'accept', content: { confirm: true } })
      const client = await connect(mcp(), users.editor.token, elicit)
      try {
        const merged = await call(client, 'merge_concepts', {
          ...at,
          concept_id: kept,
          concept_ids: [gone],
          ...(asks ? {} : { confirm: true }),
        })
        expect(merged.isError ?? false).toBe(false)
        expect(asked.map((q) => q.message)).toEqual(
          asks ? [`Merge 1 concept(s) into concept ${kept}? They are deleted; this cannot be undone.`] : [],
        )
        expect((await call(client, 'get_concept', { ...at, concept_id: gone })).content[0]!.text).toBe(
          'concept not found',
        )
      } finally {
        await client.close()
      }
    })

    test(`${sdk}: red team: the answer is only a yes or a no, and a role without the permission is never asked`, async () => {
      const at = { repository: repository.slug }
      const writer = await connect(mcp(), users.editor.token)
      const source = await call(writer, 'create_source', {
        ...at,
        url: `https://example.org/${revision}/cited`,
        kind: 'web',
        status: 'parsed',
      })
      const sourceId = source.structuredContent!.id as string
      await call(writer, 'create_fact', { ...at, text: `Cited in ${revision}.`, sources: [{ source_id: sourceId }] })
      await writer.close()
      const other = await newConcept()

      // A yes carrying more fields (a cascade, another row) deletes only what the call named, as the call named it.
      const widening = person({
        action: 'accept',
        content: { confirm: true, cascade: true, kind: 'concept', id: other, repository: 'elsewhere' },
      })
      const client = await connect(mcp(), users.editor.token, widening.elicit)
      const refused = await call(client, 'delete', {
        ...at,
        kind: 'source',
        id: sourceId,
        ...(asks ? {} : { confirm: true }),
      })
      await client.close()
      expect(refused.isError).toBe(true)
      expect(refused.content[0]!.text).toContain('cascade')
      const check = await connect(mcp(), users.editor.token)
      expect((await call(check, 'get_concept', { ...at, concept_id: other })).isError ?? false).toBe(false)
      expect((await call(check, 'list_facts', { ...at, source_id: sourceId })).structuredContent!.items).toHaveLength(1)
      await check.close()

      // Anything but confirm: true is no.
      const noes: Record<string, string | boolean>[] = [{ confirm: 'true' }, { confirm: false }, { yes: true }]
      for (const content of noes) {
        const { elicit } = person({ action: 'accept', content })
        const asking = await connect(mcp(), users.editor.token, elicit)
        const result = await call(asking, 'delete', { ...at, kind: 'concept', id: other })
        await asking.close()
        expect(result.isError).toBe(true)
        expect(result.content[0]!.text).toEqual(
          asks ? 'not done: the person did not confirm; nothing was changed' : expect.stringContaining('confirm: true'),
        )
      }

      // A viewer is refused for the permission before anyone is asked.
      const viewer = person({ action: 'accept', content: { confirm: true } })
      const viewing = await connect(mcp(), users.viewer.token, viewer.elicit)
      const denied = await call(viewing, 'delete', { ...at, kind: 'concept', id: other, confirm: true })
      await viewing.close()
      expect(denied.content[0]!.text).toStartWith('permission denied: concept:write')
      expect(viewer.asked).toEqual([])
      expect(await conceptCount()).toBeGreaterThan(0)
      const still = await connect(mcp(), users.editor.token)
      expect((await call(still, 'get_concept', { ...at, concept_id: other })).isError ?? false).toBe(false)
      await still.close()
    })
  }
})
