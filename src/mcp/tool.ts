// What an MCP tool is: a name and a one-line description a model can act on, its input and output
// schemas (TypeBox), its annotations, what it needs (a permission in the repository its
// `repository` argument names, a system permission, or only a token) and the feature function it
// calls, the same one the REST route calls. server.ts checks the need, runs the tool and shapes
// the answer; a tool does nothing but call.
import type { Static, TObject } from '@sinclair/typebox'
import type { Sql } from 'postgres'
import type { Principal } from '../http/auth.ts'
import type { RepositoryPermission, SystemPermission } from '../permissions.ts'
import type { Repository } from '../repositories/repositories.ts'
import type { ToolServices } from './services.ts'

/** The MCP tool annotations, all four said explicitly. */
export interface Annotations {
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

/** Reads only kgs's own graph: no change, same answer twice, nothing outside. */
export const READS: Annotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
}

/** A resource a tool's answer points at (a fact, a concept, a report), for the host to attach. */
export interface Link {
  uri: string
  name: string
  description?: string
}

interface ToolBase<I extends TObject, O extends TObject> {
  name: string
  title: string
  description: string
  input: I
  output: O
  annotations: Annotations
  /** The resources the answer names (resource_link content blocks). */
  links?(output: Static<O>, repository: Repository | undefined): Link[]
}

/** A tool working in one repository, named by its `repository` argument (UUID or slug). */
export interface RepositoryTool<I extends TObject, O extends TObject> extends ToolBase<I, O> {
  scope: 'repository'
  /** The permission it needs there (with the scope that permission needs). */
  permission(input: Static<I>): RepositoryPermission
  /**
   * A tool that destroys what cannot be had back: the question the person is asked before it runs
   * (server.ts: an elicitation, or the call's `confirm: true` where the client cannot ask).
   */
  confirmation?(input: Static<I>): string
  run(call: {
    principal: Principal
    repository: Repository
    db: () => Promise<Sql>
    input: Static<I>
    services: ToolServices
  }): Promise<Static<O>>
}

/** A tool outside any repository: any valid token, or a system permission. */
export interface SystemTool<I extends TObject, O extends TObject> extends ToolBase<I, O> {
  scope: 'system'
  permission: SystemPermission | 'token'
  run(call: { principal: Principal; input: Static<I>; services: ToolServices }): Promise<Static<O>>
}

export type Tool<I extends TObject = TObject, O extends TObject = TObject> = RepositoryTool<I, O> | SystemTool<I, O>

/** Declares a repository tool, inferring its types from its schemas. */
export const repositoryTool = <I extends TObject, O extends TObject>(
  tool: Omit<RepositoryTool<I, O>, 'scope'>,
): Tool => ({ scope: 'repository', ...tool })

/** Declares a system tool, inferring its types from its schemas. */
export const systemTool = <I extends TObject, O extends TObject>(tool: Omit<SystemTool<I, O>, 'scope'>): Tool => ({
  scope: 'system',
  ...tool,
})
