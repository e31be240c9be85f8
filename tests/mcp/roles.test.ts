// Every MCP tool across the role matrix (repoadmin, editor, curator, viewer, and a user with no
// role in the repository), over HTTP with the official 2.x client: a role without the
// permission a tool needs gets a tool error naming it; a role with it gets past the check (the
// call runs: an answer, or the tool's own "not found" for the random ids it names); a user with
// no role does not see the repository. The permission each tool needs is written out here, as
// docs/mcp.md lists it, and each role's permissions are the table of docs/spec/decisions.md §4.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Account } from '../helpers/api.ts'
import { ROLES, type Permission } from '../../src/permissions.ts'
import { RESOURCE_KINDS } from '../../src/mcp/resources.ts'
import { rejectionOf } from '../helpers/promises.ts'

let server: TestServer
let users: Record<'admin' | 'repoadmin' | 'editor' | 'curator' | 'viewer' | 'stranger', Account>
let repository: { id: string; slug: string }

beforeAll(async () => {
  const made = await fixture({
    users: {
      admin: 'sysadmin',
      repoadmin: 'member',
      editor: 'member',
      curator: 'member',
      viewer: 'member',
      stranger: 'member',
    },
    repositories: {
      graph: { by: 'repoadmin', name: 'MCP roles', roles: { editor: 'editor', curator: 'curator', viewer: 'viewer' } },
    },
  })
  ;({ server, users } = made)
  repository = made.repositories.graph
})
afterAll(() => server?.stop())

/** Each kind of row update and delete take, the permission they need for it, and a change its update accepts. */
const KINDS = {
  source: ['source:write', { url: 'https://example.org/changed' }],
  fact: ['fact:write', { status: 'stable' }],
  concept: ['concept:write', { description: 'changed' }],
  summary: ['concept:write', { model: 'changed' }],
  synthesis: ['concept:write', { model: 'changed' }],
  investigation: ['investigation:write', { title: 'changed' }],
  report: ['report:write', { title: 'changed' }],
} as const
const random = () => crypto.randomUUID()

/** Each call a model could make, and what it needs ('token': any valid token; else a permission). */
const CALLS: {
  tool: string
  args: (role: string) => Record<string, unknown>
  needs: Permission | 'token'
  system?: boolean
}[] = [
  { tool: 'list_repositories', args: () => ({}), needs: 'token', system: true },
  { tool: 'browse_registry', args: () => ({}), needs: 'registry:pull', system: true },
  { tool: 'search', args: () => ({ query: 'tea', mode: 'keyword' }), needs: 'fact:read' },
  { tool: 'search', args: () => ({ query: 'tea', mode: 'keyword', kind: 'concepts' }), needs: 'concept:read' },
  { tool: 'list_facts', args: () => ({}), needs: 'fact:read' },
  { tool: 'get_fact', args: () => ({ fact_id: random() }), needs: 'fact:read' },
  { tool: 'list_concepts', args: () => ({}), needs: 'concept:read' },
  { tool: 'get_concept', args: () => ({ concept_id: random() }), needs: 'concept:read' },
  { tool: 'related_concepts', args: () => ({ concept_id: random() }), needs: 'concept:read' },
  { tool: 'list_investigations', args: () => ({}), needs: 'investigation:read' },
  { tool: 'get_investigation', args: () => ({ investigation_id: random() }), needs: 'investigation:read' },
  { tool: 'list_reports', args: () => ({}), needs: 'report:read' },
  { tool: 'get_report', args: () => ({ report_id: random() }), needs: 'report:read' },
  { tool: 'export_graph', args: (role) => ({ name: `roles ${role}` }), needs: 'graph:export' },
  { tool: 'import_graph', args: () => ({ graph_id: random() }), needs: 'graph:import' },
  { tool: 'get_job', args: () => ({ job_id: random() }), needs: 'job:read' },
  {
    tool: 'create_source',
    args: (role) => ({ url: `https://example.org/${role}`, kind: 'web', status: 'parsed' }),
    needs: 'source:write',
  },
  { tool: 'create_fact', args: (role) => ({ text: `Written by the ${role}.` }), needs: 'fact:write' },
  { tool: 'add_source', args: (role) => ({ text: `# Added by the ${role}\n` }), needs: 'source:write' },
  { tool: 'create_concept', args: (role) => ({ canonical_name: `Concept of the ${role}` }), needs: 'concept:write' },
  { tool: 'link_concept', args: () => ({ fact_id: random(), concept_id: random() }), needs: 'fact:write' },
  { tool: 'write_summary', args: () => ({ concept_id: random(), sequence_num: 0 }), needs: 'concept:write' },
  { tool: 'write_synthesis', args: (role) => ({ canonical_name: `Synthesis of the ${role}` }), needs: 'concept:write' },
  { tool: 'create_investigation', args: () => ({ title: 'Who may open one?' }), needs: 'investigation:write' },
  { tool: 'write_report', args: () => ({ title: 'Who may write one?' }), needs: 'report:write' },
  {
    tool: 'merge_concepts',
    args: () => ({ concept_id: random(), concept_ids: [random()], confirm: true }),
    needs: 'concept:write',
  },
  {
    tool: 'split_concept',
    args: (role) => ({ concept_id: random(), canonical_name: `Split by the ${role}`, confirm: true }),
    needs: 'concept:write',
  },
  { tool: 'process_source', args: () => ({ source_id: random() }), needs: 'fact:write' },
  { tool: 'annotate_report', args: () => ({ report_id: random() }), needs: 'report:write' },
  ...Object.entries(KINDS).flatMap(([kind, [needs, changes]]) => [
    { tool: 'update', args: () => ({ kind, id: random(), concept_id: random(), changes }), needs },
    { tool: 'delete', args: () => ({ kind, id: random(), concept_id: random(), confirm: true }), needs },
  ]),
]

describe(`every MCP tool across the role matrix (${BACKEND})`, () => {
  test('tools/list is all of them', async () => {
    const client = await conversation(`${server.url}/api/v1/mcp`, users.viewer.token)
    const { tools } = await client.listTools()
    await client.close()
    expect(tools.map((t) => t.name).sort()).toEqual([...new Set(CALLS.map((c) => c.tool))].sort())
  })

  for (const role of ['repoadmin', 'editor', 'curator', 'viewer', 'stranger'] as const) {
    test(`${role}: refused exactly what its role lacks, as tool errors naming the permission`, async () => {
      const held = new Set<string>(role === 'stranger' ? [] : ROLES[role].permissions)
      const client = await conversation(`${server.url}/api/v1/mcp`, users[role].token)
      try {
        for (const { tool, args, needs, system } of CALLS) {
          const made = args(role)
          const result = await call(client, tool, system ? made : { repository: repository.slug, ...made })
          const text = result.isError ? result.content[0]!.text! : ''
          const seen = { tool, kind: made.kind, text }
          // Every member may browse the registry; a repository the caller holds no role in is not found.
          if (system) expect(seen).toEqual({ ...seen, text: '' })
          else if (role === 'stranger') expect(seen).toEqual({ ...seen, text: 'repository not found' })
          else if (held.has(needs)) {
            expect(seen).toEqual({
              ...seen,
              text: expect.not.stringMatching(
                /^(permission denied|insufficient scope|Input validation error|\w+ needs the person's confirmation)/,
              ),
            })
          }
          // The roles named are checked in tests/http/refusals.test.ts.
          else
            expect(seen).toEqual({
              ...seen,
              text: expect.stringMatching(
                new RegExp(
                  `^permission denied: ${needs} needs the [a-z, ]+ role in repository ${repository.slug}; a repoadmin of it can grant it$`,
                ),
              ),
            })
        }
      } finally {
        await client.close()
      }
    })
  }

  for (const role of ['repoadmin', 'editor', 'curator', 'viewer', 'stranger'] as const) {
    test(`${role}: resources/read of each template, resources/list and completion decide as the read tools do`, async () => {
      const held = new Set<string>(role === 'stranger' ? [] : ROLES[role].permissions)
      const client = await conversation(`${server.url}/api/v1/mcp`, users[role].token)
      try {
        for (const kind of RESOURCE_KINDS) {
          const uri = kind.template
            .replace('{repository}', repository.slug)
            .replace('{id}', random())
            .replace('{n}', '0')
          const refusal = String(await rejectionOf(client.readResource({ uri })))
          const seen = { uri: kind.template, refusal }
          if (role === 'stranger')
            expect(seen).toEqual({ ...seen, refusal: expect.stringContaining('repository not found') })
          else if (held.has(kind.permission))
            expect(seen).toEqual({
              ...seen,
              refusal: expect.stringContaining(`${kind.name.replace('_', ' ')} not found`),
            })
          else
            expect(seen).toEqual({ ...seen, refusal: expect.stringContaining(`permission denied: ${kind.permission}`) })
        }
        const listed = (await client.listResources()).resources.map((r) => r.uri.split('/')[3])
        const readable = RESOURCE_KINDS.filter((k) => held.has(k.permission) && !k.template.includes('{n}'))
        expect(new Set(listed)).toEqual(new Set(readable.map((k) => k.template.split('/')[3])))
        const slugs = await client.complete({
          ref: { type: 'ref/resource', uri: 'kgs://{repository}/facts/{id}' },
          argument: { name: 'repository', value: repository.slug },
        })
        expect(slugs.completion.values).toEqual(role === 'stranger' ? [] : [repository.slug])
      } finally {
        await client.close()
      }
    })
  }

  test("the writes the roles were allowed are there, and no other's", async () => {
    const sql = await server.context.pools.forRepository(repository.id)
    const facts = await sql<{ text: string }[]>`SELECT text FROM facts ORDER BY text`
    expect(facts.map((f) => f.text)).toEqual(['Written by the editor.', 'Written by the repoadmin.'])
    const concepts = await sql<
      { canonical_name: string }[]
    >`SELECT canonical_name FROM concepts ORDER BY canonical_name`
    expect(concepts.map((c) => c.canonical_name)).toEqual([
      'Concept of the curator',
      'Concept of the editor',
      'Concept of the repoadmin',
    ])
  })
})
