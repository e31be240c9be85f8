// MCP_TOOLS decides which tools the endpoint offers: read lists only the read-only ones and write
// only those that change something, and a tool left out is refused as unknown, by the SDK and by
// the fast path alike; every profile lists its tools sorted by name, with both official clients.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { rejected } from '../helpers/promises.ts'
import { call, CLIENTS } from '../helpers/mcp-host.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Account } from '../helpers/api.ts'

const PROFILES = ['read', 'write', 'all'] as const
const servers: Partial<Record<(typeof PROFILES)[number], { server: TestServer; editor: Account; slug: string }>> = {}

beforeAll(async () => {
  for (const profile of PROFILES) {
    const made = await fixture({
      server: { env: { MCP_TOOLS: profile } },
      users: { editor: 'member' },
      repositories: { graph: { by: 'editor', name: `Profile ${profile}` } },
    })
    servers[profile] = { server: made.server, editor: made.users.editor, slug: made.repositories.graph.slug }
  }
})
afterAll(async () => {
  for (const made of Object.values(servers)) await made?.server.stop()
})

describe(`MCP_TOOLS (${BACKEND})`, () => {
  for (const { sdk, connect } of CLIENTS)
    test(`${sdk}: each profile lists its tools, sorted by name; a tool left out is unknown`, async () => {
      const listed: Record<string, { name: string; readOnly: boolean }[]> = {}
      for (const profile of PROFILES) {
        const { server, editor, slug } = servers[profile]!
        const client = await connect(`${server.url}/api/v1/mcp`, editor.token)
        try {
          const { tools } = await client.listTools()
          listed[profile] = tools.map((t) => ({ name: t.name, readOnly: t.annotations!.readOnlyHint! }))
          const names = tools.map((t) => t.name)
          expect(names).toEqual([...names].sort())
          const refused = profile === 'read' ? 'create_concept' : profile === 'write' ? 'get_fact' : undefined
          if (refused) {
            const args = { repository: slug, canonical_name: 'Left out', fact_id: crypto.randomUUID() }
            expect(await rejected(call(client, refused, args))).toThrow(`Tool ${refused} not found`)
          }
        } finally {
          await client.close()
        }
      }
      expect(listed.read!.every((t) => t.readOnly)).toBe(true)
      expect(listed.write!.every((t) => !t.readOnly)).toBe(true)
      expect(listed.read!.map((t) => t.name)).toContain('list_repositories')
      expect(listed.write!.map((t) => t.name)).toContain('delete')
      expect(listed.all!.length).toBe(listed.read!.length + listed.write!.length)
    })
})
