// An unexpected failure of an MCP tool or resource read answers the request's id and nothing
// else: `internal error; logged as <id>`, the id of the response's X-Request-Id, under which the
// log holds the error with its stack. The failure is a real one, caused from outside: the
// repository's concepts table is renamed under the running service, so PostgreSQL refuses every
// statement on it with a message naming the relation. Expected refusals keep their messages.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import { expectError, type Account, type api } from '../helpers/api.ts'
import { call, conversation } from '../helpers/mcp-host.ts'
import { rejectionOf } from '../helpers/promises.ts'
import type { TestServer } from '../helpers/server.ts'
import { createLogger } from '../../src/log.ts'

let server: TestServer
let http: ReturnType<typeof api>
let owner: Account
let repo: { id: string; slug: string }
let concept: string
const logged: Record<string, any>[] = []
/** The X-Request-Id of each MCP response, in order. */
const requestIds: string[] = []
const recording = (async (input: Request | string | URL, init?: RequestInit) => {
  const response = await fetch(input, init)
  requestIds.push(response.headers.get('x-request-id')!)
  return response
}) as typeof fetch

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const INTERNAL = new RegExp(`^internal error; logged as (${UUID})$`)

const rename = async (from: string, to: string) => {
  const sql = await server.context.pools.forRepository(repo.id)
  await sql`ALTER TABLE ${sql(from)} RENAME TO ${sql(to)}`
}

beforeAll(async () => {
  ;({
    server,
    http,
    users: { owner },
    repositories: { repo },
  } = await fixture({
    server: {
      log: createLogger('warn', (text) =>
        logged.push(
          ...text
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line)),
        ),
      ),
    },
    users: { owner: 'member' },
    repositories: { repo: { by: 'owner', name: 'Faults' } },
  }))
  const created = await http.post(`/${repo.slug}/concepts`, { canonical_name: 'Renamed away' }, owner.token)
  expect(created.status).toBe(201)
  concept = created.body.id
  await rename('concepts', 'concepts_elsewhere')
})
afterAll(async () => {
  await rename('concepts_elsewhere', 'concepts')
  await server?.stop()
})

/** The id an answer names, checked against the response's X-Request-Id and the log's line, with its stack and PostgreSQL's message. */
function loggedAs(message: string, what: Record<string, string>): string {
  const id = INTERNAL.exec(message)?.[1]
  expect({ message, matches: id !== undefined }).toEqual({ message, matches: true })
  expect(requestIds.at(-1)).toBe(id!)
  const lines = logged.filter((line) => line.request_id === id)
  expect(lines.length).toBeGreaterThan(0)
  for (const line of lines) {
    expect({
      level: line.level,
      msg: line.msg,
      ...Object.fromEntries(Object.keys(what).map((key) => [key, line[key]])),
    }).toEqual({ level: 'error', msg: 'mcp: unhandled error', ...what })
    expect(line.error).toMatch(/concepts/)
    expect(line.stack).toMatch(/\n\s+at /)
  }
  return id!
}

describe(`an unexpected failure in MCP answers only its request id (${BACKEND})`, () => {
  test('a read tool, a write tool and a resource read: the id of the response and of the log, no PostgreSQL message', async () => {
    const client = await conversation(`${server.url}/api/v1/mcp`, owner.token, recording)
    try {
      const listed = await call(client, 'list_concepts', { repository: repo.slug })
      expect(listed.isError).toBe(true)
      expect(listed.content.length).toBe(1)
      loggedAs(listed.content[0]!.text!, { tool: 'list_concepts' })

      const written = await call(client, 'create_concept', { repository: repo.slug, canonical_name: 'Written nowhere' })
      expect(written.isError).toBe(true)
      const writeId = loggedAs(written.content[0]!.text!, { tool: 'create_concept' })
      expect(logged.filter((line) => line.request_id === writeId).length).toBe(1)

      const uri = `kgs://${repo.id}/concepts/${concept}`
      const read = (await rejectionOf(client.readResource({ uri }))) as Error
      loggedAs(read.message.replace(/^MCP error -?\d+: /, ''), { resource: uri })
    } finally {
      await client.close()
    }
  })

  test('expected refusals keep their messages; REST answers the same failure 500 without it', async () => {
    const client = await conversation(`${server.url}/api/v1/mcp`, owner.token, recording)
    try {
      const unknown = await call(client, 'list_concepts', { repository: 'no-such-repository' })
      expect({ isError: unknown.isError, content: unknown.content }).toEqual({
        isError: true,
        content: [{ type: 'text', text: 'repository not found' }],
      })
      const source = crypto.randomUUID()
      const missing = await call(client, 'create_investigation', {
        repository: repo.slug,
        title: 'Of nothing',
        source_ids: [source],
      })
      expect({ isError: missing.isError, content: missing.content }).toEqual({
        isError: true,
        content: [{ type: 'text', text: `source_ids: source ${source} does not exist in this repository` }],
      })
    } finally {
      await client.close()
    }
    const rest = await http.get(`/${repo.slug}/concepts`, owner.token)
    expectError(rest, 500, 'internal server error')
    expect(
      logged.filter((line) => line.request_id === rest.headers.get('x-request-id')).map((line) => line.msg),
    ).toEqual(['unhandled error'])
  })
})
