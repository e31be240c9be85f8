// The OpenAPI document at /swagger/json. @elysiajs/openapi derives it from the routes' schemas;
// what it cannot know from them is added here, in one place: the server's URL, the security
// schemes (a bearer token, or OAuth 2.0 authorization code + PKCE against kgs's own
// authorization server) and the media type of bodies that kgs's own parser reads.
import { t, type AnyElysia } from 'elysia'
import { toOpenAPISchema } from '@elysiajs/openapi'
import { FormatRegistry } from '@sinclair/typebox'
import { SCOPES, SCOPE_MEANINGS, type Scope } from '../permissions.ts'
import { isUuid } from '../uuid.ts'
import { VERSION } from '../version.ts'
import { ErrorBody } from './schemas.ts'

/**
 * TypeBox's check of `format: 'uuid'`. Loading @elysiajs/openapi replaces TypeBox's format checks,
 * for every schema of the process, with ones that build a new Zod schema at each call; a response
 * listing users or clients paid for that once per id. A compiled pattern, the one the routes'
 * UUID parameters use, is set back after it (this module's body runs after its imports).
 */
FormatRegistry.Set('uuid', isUuid)

export const DOCUMENT_PATH = '/swagger/json'

const TAGS = [
  { name: 'operations', description: 'service index, health and readiness' },
  { name: 'accounts', description: 'registration, sessions and profiles' },
  { name: 'admin', description: 'users, roles and permissions' },
  { name: 'repositories', description: 'repositories, and the export and import of their graphs as bundles' },
  { name: 'members', description: 'the members of a repository and their roles' },
  { name: 'graph', description: 'the knowledge graph of a repository: its records, their links, images and search' },
  { name: 'jobs', description: 'background jobs: progress, results, cancellation' },
  { name: 'registry', description: 'the graph registry: push, list, download and delete bundles' },
  { name: 'oauth', description: 'OAuth 2.1 authorization server and discovery' },
  { name: 'mcp', description: 'the MCP server (Streamable HTTP)' },
]

/**
 * The `detail` a route's authentication macro adds: a bearer token (session or OAuth), or an
 * OAuth token holding `scope`. Undefined scope: any valid token.
 */
export function securityDetail(scope?: Scope): { security: Record<string, string[]>[] } {
  return { security: [{ bearer: [] }, { oauth2: scope ? [scope] : [] }] }
}

interface Parameter {
  name: string
  in: string
  schema: Record<string, unknown>
}
interface Operation {
  description?: string
  parameters?: Parameter[]
  requestBody?: { content?: Record<string, unknown> }
  responses?: Record<string, unknown>
  security?: Record<string, string[]>[]
}

const INTEGER = 'x-kgs-integer'
const REPOSITORY_HEADER = 'x-kgs-repository-header'
const ERRORS = 'x-kgs-errors'
const ALSO_WITH_HEADER = 'x-kgs-also-with-repository-header'

/** The `detail` of an access rule's macro: the error answers the rule itself can give. */
export function declaredErrors(statuses: number[]) {
  return { [ERRORS]: statuses }
}

const errorAnswer = { description: 'error', content: { 'application/json': { schema: ErrorBody } } }

/**
 * The `detail` of the repository-scope macros: on a route without {repoID} in its path, the
 * X-Repository-ID header names the repository (required, or optional where the route falls back
 * to the system domain).
 */
export function repositoryHeader(required: boolean) {
  return { [REPOSITORY_HEADER]: required }
}

/**
 * The `detail` of a route at /{repoID}/… that is also served at /api/v1/… with the repository in
 * X-Repository-ID: the document lists it once and says so in its description.
 */
export function servedAlsoWithRepositoryHeader() {
  return { [ALSO_WITH_HEADER]: true }
}

/**
 * A query parameter holding an integer. It stays a string to the validator, so that its route
 * reports a bad value naming the parameter; the document shows the integer it is.
 */
export function integerQuery(options: { minimum: number; maximum: number; default: number; description: string }) {
  return t.String({ description: options.description, [INTEGER]: options })
}
/** The OAuth endpoints the document's security scheme names, from the authorization server's metadata. */
export interface OAuthEndpoints {
  authorization_endpoint: string
  token_endpoint: string
}

/** Builds the document once, on first request: the routes do not change after start-up. */
export function openApiDocument(app: () => AnyElysia, baseUrl: string, oauth: OAuthEndpoints) {
  let document: object | undefined
  return () => (document ??= build(app(), baseUrl, oauth))
}

const openApiPath = (path: string) => path.replace(/:([^/]+)/g, '{$1}')

function build(app: AnyElysia, baseUrl: string, oauth: OAuthEndpoints) {
  // staticFile: false, or the discovery documents under /.well-known would be left out.
  const { paths, components } = toOpenAPISchema(app, { staticFile: false }) as {
    paths: Record<string, Record<string, Operation>>
    components: object
  }
  const hooks = new Map(
    app.routes.map((route) => [
      `${route.method.toLowerCase()} ${openApiPath(route.path)}`,
      route.hooks as { body?: unknown; detail?: { responses?: object; parameters?: Parameter[] } },
    ]),
  )
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const route = hooks.get(`${method} ${path}`)
      const body = operation.requestBody
      // Routes that name no parser of their own are read by src/http/body.ts, as JSON; the
      // generator leaves their content empty because that parser is a function.
      if (body && Object.keys(body.content ?? {}).length === 0)
        body.content = { 'application/json': { schema: JSON.parse(JSON.stringify(route?.body ?? {})) } }
      // What a route documents by hand (a 200 that is not JSON, a header) the generator replaces.
      if (route?.detail?.responses) operation.responses = { ...operation.responses, ...route.detail.responses }
      const documented = (parameter: Parameter) =>
        operation.parameters?.some(
          (p) => p.in === parameter.in && p.name.toLowerCase() === parameter.name.toLowerCase(),
        )
      for (const parameter of route?.detail?.parameters ?? [])
        if (!documented(parameter)) operation.parameters = [...(operation.parameters ?? []), parameter]
      const header = (operation as Record<string, unknown>)[REPOSITORY_HEADER] as boolean | undefined
      delete (operation as Record<string, unknown>)[REPOSITORY_HEADER]
      if (
        header !== undefined &&
        !path.includes('{repoID}') &&
        !documented({ name: 'X-Repository-ID', in: 'header', schema: {} })
      ) {
        const description = header
          ? 'repository UUID or slug'
          : 'repository UUID or slug; without it, every job (system job:read)'
        operation.parameters = [
          ...(operation.parameters ?? []),
          {
            name: 'X-Repository-ID',
            in: 'header',
            required: header,
            schema: { type: 'string' },
            description,
          } as Parameter,
        ]
      }
      if ((operation as Record<string, unknown>)[ALSO_WITH_HEADER]) {
        delete (operation as Record<string, unknown>)[ALSO_WITH_HEADER]
        const note = `Also served at \`${path.replace('/{repoID}', '/api/v1')}\` with the repository UUID or slug in the \`X-Repository-ID\` header instead of the path.`
        operation.description = operation.description ? `${operation.description}\n\n${note}` : note
      }
      for (const parameter of operation.parameters ?? []) {
        const integer = parameter.schema[INTEGER] as
          | { minimum: number; maximum: number; default: number; description: string }
          | undefined
        if (integer) parameter.schema = { type: 'integer', ...integer }
      }
      // Routes that share one detail object (the two job lists) get their rule's requirements merged into it twice.
      if (operation.security)
        operation.security = [
          ...new Map(operation.security.map((requirement) => [JSON.stringify(requirement), requirement])).values(),
        ]
      const ruleErrors = (operation as Record<string, unknown>)[ERRORS] as number[] | undefined
      delete (operation as Record<string, unknown>)[ERRORS]
      for (const status of ruleErrors ?? []) operation.responses = { [status]: errorAnswer, ...operation.responses }
      const accepted = operation.responses?.['202'] as { headers?: object } | undefined
      if (accepted)
        accepted.headers = {
          location: { description: 'the job: /{repository id}/jobs/{job id}', schema: { type: 'string' } },
        }
    }
  }
  return {
    openapi: '3.1.2',
    info: {
      title: 'kgs',
      version: VERSION,
      description:
        'Knowledge-graph service: repositories of sources, facts and concepts, their search, bundles and the graph registry, jobs, accounts, RBAC, OAuth 2.1 and MCP. Errors are `{"error": "..."}`.',
    },
    servers: [{ url: baseUrl }],
    tags: TAGS,
    paths,
    components: {
      ...components,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'an access token: `token` of /api/v1/auth/login or /register, or an OAuth access token',
        },
        oauth2: {
          type: 'oauth2',
          description: "kgs's own authorization server (PKCE, S256)",
          flows: {
            authorizationCode: {
              authorizationUrl: oauth.authorization_endpoint,
              tokenUrl: oauth.token_endpoint,
              refreshUrl: oauth.token_endpoint,
              scopes: Object.fromEntries(SCOPES.map((scope) => [scope, SCOPE_MEANINGS[scope]])),
            },
          },
        },
      },
    },
  }
}
