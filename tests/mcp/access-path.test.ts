// One path decides every action, whoever calls: each MCP tool declares what it needs and is
// dispatched through the functions the API's rules call (http/access.ts: repositoryActions,
// authorizeSystemAction), and every REST route naming a repository decides through a repository
// rule. The tools are listed from the server's own table, so a new tool cannot be left out: each
// is called, over the real services, by principals every step of the decision refuses (a user who
// does not see the repository, a role without the permission, a token without the scope), and
// must be refused in that step's words, naming the permission it declares, before it touched
// anything but the roles and the repositories (its own code never ran).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { CallToolResult } from '@modelcontextprotocol/server'
import { createApp } from '../../src/app.ts'
import { RULE } from '../../src/http/access.ts'
import type { Principal } from '../../src/http/auth.ts'
import { mcpServerFactory } from '../../src/mcp/server.ts'
import type { ToolServices } from '../../src/mcp/services.ts'
import type { Tool } from '../../src/mcp/tool.ts'
import { TOOLS } from '../../src/mcp/tools.ts'
import { RESOURCE_KINDS } from '../../src/mcp/resources.ts'
import {
  REPOSITORY_PERMISSIONS,
  ROLES,
  permissionDenied,
  scopeNeeded,
  scopeRefused,
  type Permission,
} from '../../src/permissions.ts'
import type { Account } from '../helpers/api.ts'
import { BACKEND } from '../helpers/backend.ts'
import { fixture } from '../helpers/fixture.ts'
import type { TestServer } from '../helpers/server.ts'

let server: TestServer
let users: Record<'admin' | 'editor' | 'viewer' | 'stranger', Account>
let repository: { id: string; slug: string }

beforeAll(async () => {
  const made = await fixture({
    users: { admin: 'sysadmin', editor: 'member', viewer: 'member', stranger: 'member' },
    repositories: { graph: { by: 'admin', name: 'Access path', roles: { editor: 'editor', viewer: 'viewer' } } },
  })
  ;({ server, users } = made)
  repository = made.repositories.graph
})
afterAll(() => server?.stop())

/** The kinds update and delete take (their permission depends on it). */
const KINDS = ['source', 'fact', 'concept', 'summary', 'synthesis', 'investigation', 'report']

/** Each call of `tool` whose declared permission differs: one per kind for update and delete, one per search kind. */
function callsOf(tool: Tool): Record<string, unknown>[] {
  if (tool.scope === 'system') return [{}]
  const base = { repository: repository.slug }
  if (tool.name === 'update' || tool.name === 'delete')
    return KINDS.map((kind) => ({ ...base, kind, id: crypto.randomUUID() }))
  if (tool.name === 'search') return [base, { ...base, kind: 'concepts' }].map((args) => ({ ...args, query: 'tea' }))
  return [base]
}

/** What a call of `tool` with `args` declares it needs. */
const declared = (tool: Tool, args: Record<string, unknown>): Permission | 'token' =>
  tool.scope === 'repository' ? tool.permission(args as never) : tool.permission

/**
 * The server's own services behind a record of which of them a call touched: a refused call may
 * touch the roles (rbac), the repositories (to find the one named) and the log, nothing else.
 */
function recorded(): { services: ToolServices; touched: Set<string> } {
  const touched = new Set<string>()
  const ctx = server.context
  const real = {
    rbac: ctx.rbac,
    repositories: ctx.repositories,
    pools: ctx.pools,
    jobs: ctx.jobs,
    log: ctx.log,
  } as unknown as ToolServices
  const services = new Proxy(real, {
    get(target, name) {
      touched.add(String(name))
      return target[name as keyof ToolServices]
    },
  })
  return { services, touched }
}

/** Calls every tool as `principal`: the answer's text (or undefined for an answer that is no error) and what it touched. */
async function callEvery(principal: Principal) {
  const answers: {
    call: string
    scope: Tool['scope']
    needs: Permission | 'token'
    error: string | undefined
    touched: string[]
  }[] = []
  for (const tool of TOOLS) {
    for (const args of callsOf(tool)) {
      const { services, touched } = recorded()
      const { answer } = mcpServerFactory(services, `${server.url}/.well-known/oauth-protected-resource/api/v1/mcp`)
      const result = (await answer(principal, tool, args, 'access-path')) as CallToolResult
      const text = (result.content[0] as { text: string }).text
      answers.push({
        call: `${tool.name} ${JSON.stringify(args.kind ?? '')}`,
        scope: tool.scope,
        needs: declared(tool, args),
        error: result.isError ? text : undefined,
        touched: [...touched].sort(),
      })
    }
  }
  return answers
}

/** What the decision and the shaping of its refusal use (the log: where an unexpected failure would go). */
const BEFORE_RUNNING = ['log', 'rbac', 'repositories']

describe(`one decision for every action (${BACKEND})`, () => {
  test('every tool declares a permission; only list_repositories asks for no more than a token', () => {
    expect(TOOLS.length).toBeGreaterThan(20)
    expect(
      TOOLS.filter((tool) => tool.scope === 'system' && tool.permission === 'token').map((tool) => tool.name),
    ).toEqual(['list_repositories'])
    const repositoryPermissions = new Set<string>(REPOSITORY_PERMISSIONS)
    const undeclared = TOOLS.filter((tool) => tool.scope === 'repository').flatMap((tool) =>
      callsOf(tool)
        .filter((args) => !repositoryPermissions.has(declared(tool, args)))
        .map(() => tool.name),
    )
    expect(undeclared).toEqual([])
    // The resources decide by the same rule, each template by the read permission of its get tool (tests/mcp/roles.test.ts reads them).
    expect(
      RESOURCE_KINDS.filter(
        (kind) => !repositoryPermissions.has(kind.permission) || !kind.permission.endsWith(':read'),
      ),
    ).toEqual([])
  })

  test('a repository the caller does not see: every repository tool is refused as the API refuses it, before it runs', async () => {
    const answers = (await callEvery({ userId: users.stranger.id, sessionId: 'a session' })).filter(
      ({ scope }) => scope === 'repository',
    )
    expect(answers.length).toBeGreaterThan(25)
    for (const { call, error, touched } of answers)
      expect({ call, error, touched }).toEqual({ call, error: 'repository not found', touched: BEFORE_RUNNING })
  })

  test('a role without the permission: refused naming the permission the tool declares and the roles carrying it, before it runs', async () => {
    const viewer = new Set<string>(ROLES.viewer.permissions)
    const answers = (await callEvery({ userId: users.viewer.id, sessionId: 'a session' })).filter(
      ({ scope, needs }) => scope === 'repository' && !viewer.has(needs),
    )
    expect(answers.map(({ needs }) => needs)).toContain('fact:write')
    expect(answers.map(({ call }) => call)).toEqual(
      expect.arrayContaining([
        'add_source ""',
        'process_source ""',
        'merge_concepts ""',
        'split_concept ""',
        'annotate_report ""',
      ]),
    )
    for (const { call, needs, error, touched } of answers)
      expect({ call, error, touched }).toEqual({
        call,
        error: permissionDenied(needs as Permission, `repository ${repository.slug}`),
        touched: BEFORE_RUNNING,
      })
  })

  test("a token without the scope: every tool but list_repositories is refused asking for its permission's scope, before it runs", async () => {
    const answers = (await callEvery({ userId: users.editor.id, clientId: 'a client', scopes: [] })).filter(
      ({ needs }) => needs !== 'token',
    )
    expect(answers.map(({ needs }) => needs)).toContain('registry:pull')
    for (const { call, needs, error, touched } of answers) {
      const permission = needs as Permission
      expect({ call, error, touched }).toEqual({
        call,
        error: scopeRefused(scopeNeeded(permission), [], permission),
        touched: BEFORE_RUNNING,
      })
    }
  })

  test('every REST route that names a repository decides by a repository rule', () => {
    const routes = createApp(server.context).routes.map((route) => ({
      at: `${route.method} ${route.path}`,
      rule: String(((route.hooks.detail ?? {}) as Record<string, unknown>)[RULE]),
    }))
    const naming = routes.filter(({ at }) => at.includes('/:repoID'))
    expect(naming.length).toBeGreaterThan(40)
    expect(
      naming.filter(({ rule }) => !/^repository(-or-system)? /.test(rule)).map(({ at, rule }) => `${at}: ${rule}`),
    ).toEqual([])
  })
})
