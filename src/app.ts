// Builds the Elysia application from the feature plugins. Nothing here listens or connects:
// server.ts does that, and tests can build the same app around their own pools.
import { Elysia, t, type AnyElysia } from 'elysia'
import type { Config } from './config.ts'
import type { Pools } from './db/pools.ts'
import type { Logger } from './log.ts'
import { VERSION } from './version.ts'
import { bodyParsing, readsForms } from './http/body.ts'
import { errorHandling } from './http/errors.ts'
import { methodNotAllowedResponder } from './http/method-not-allowed.ts'
import { urlChecks } from './http/url-checks.ts'
import { ErrorBody } from './http/schemas.ts'
import { openApiDocument } from './http/openapi.ts'
import { swaggerClient, swaggerUi } from './http/swagger-ui.ts'
import { WEB_APP_PATH, wantsHtml, webApp, webAppClient } from './http/web-app.ts'
import { authorizationServerMetadata, resourceIdentifier, resourceMetadataUrl } from './oauth/metadata.ts'
import type { Accounts } from './accounts/accounts.ts'
import { accountRoutes } from './accounts/routes.ts'
import { accountAdminRoutes } from './accounts/admin-routes.ts'
import { oauthPageRoutes } from './oauth/page-routes.ts'
import { oauthErrorShape, oauthProtocolRoutes } from './oauth/protocol-routes.ts'
import { ClientMetadataDocuments } from './oauth/client-metadata.ts'
import { registerFirstPartyClient } from './oauth/clients.ts'
import { grantRoutes } from './oauth/grant-routes.ts'
import { appSessionRoutes } from './oauth/app-session.ts'
import { bearerAuthenticator, createServiceTokens, withServiceTokens } from './http/auth.ts'
import { accessControl } from './http/access.ts'
import { createThrottles } from './http/throttle.ts'
import type { OAuthTokens } from './oauth/tokens.ts'
import type { Rbac } from './rbac/rbac.ts'
import { rbacRoutes } from './rbac/routes.ts'
import type { Repositories } from './repositories/repositories.ts'
import { repositoryRoutes } from './repositories/routes.ts'
import { memberRoutes } from './repositories/member-routes.ts'
import { repositoryScope } from './repositories/scope.ts'
import type { Jobs } from './jobs/jobs.ts'
import type { Embedder } from './vectors/embedder.ts'
import type { VectorStore } from './vectors/store.ts'
import type { BlobStore } from './blobs/store.ts'
import { jobRoutes } from './jobs/routes.ts'
import { searchRoutes } from './search/routes.ts'
import { graphRoutes } from './graph/routes.ts'
import { graphWriteRoutes } from './graph/write-routes.ts'
import { embeddingQueue } from './vectors/embed-jobs.ts'
import { graphWrites } from './graph/write/service.ts'
import { annotateRoutes } from './search/annotate-routes.ts'
import { processRoutes } from './extract/process-routes.ts'
import { exportRoutes } from './bundle/export/export-routes.ts'
import { importRoutes } from './bundle/import/import-routes.ts'
import { mediaRoutes } from './media/routes.ts'
import { mediaUploadRoutes } from './media/upload-routes.ts'
import { ingestRoutes } from './ingest/routes.ts'
import { registryRoutes } from './registry/routes.ts'
import { Quotas } from './quotas.ts'
import { mcpRoutes } from './mcp/routes.ts'
import type { RegistryClient } from './registry/client.ts'

export interface AppContext {
  config: Config
  pools: Pools
  log: Logger
  /** The public base URL, without trailing slash. */
  baseUrl: string
  /** The address of the connection a request came on. */
  peerAddress: (request: Request) => string | undefined
  accounts: Accounts
  rbac: Rbac
  repositories: Repositories
  oauth: OAuthTokens
  jobs: Jobs
  vectors: VectorStore
  embedder: Embedder
  blobs: BlobStore
  /** The registry client of this configuration (REGISTRY_URL, else this server). */
  registry: RegistryClient
}

const ServiceIndex = t.Object({
  name: t.Literal('kgs'),
  version: t.String(),
  links: t.Object({
    app: t.String({ description: 'the web app' }),
    swagger: t.String({ description: 'Swagger UI' }),
    openapi: t.String({ description: 'the OpenAPI document' }),
    api: t.String({ description: 'the base of the JSON API (the OAuth protected resource)' }),
    authorization_server: t.String({ description: 'OAuth authorization server metadata (RFC 8414)' }),
    protected_resource: t.String({ description: 'OAuth protected resource metadata (RFC 9728)' }),
  }),
})

/** GET /: what a person or an agent arriving at the bare URL needs to find the rest. */
function serviceIndex(baseUrl: string): typeof ServiceIndex.static {
  return {
    name: 'kgs',
    version: VERSION,
    links: {
      app: `${baseUrl}${WEB_APP_PATH}`,
      swagger: `${baseUrl}/swagger`,
      openapi: `${baseUrl}/swagger/json`,
      api: resourceIdentifier(baseUrl),
      authorization_server: `${baseUrl}/.well-known/oauth-authorization-server`,
      protected_resource: resourceMetadataUrl(baseUrl),
    },
  }
}

/** The graph's write service over the context's stores, with what each write sets off (the embedding, the counts copy). */
export const writeService = (ctx: AppContext) =>
  graphWrites({
    pools: ctx.pools,
    blobs: ctx.blobs,
    log: ctx.log,
    baseUrl: ctx.baseUrl,
    embeddingChanged: embeddingQueue(ctx.jobs),
    graphChanged: (repositoryId) => ctx.repositories.graphChanged(repositoryId),
  })

/** `options.mcpFastCalls: false` sends every MCP call through the SDK (the test comparing the two paths). */
export function createApp(ctx: AppContext, options: { mcpFastCalls?: boolean } = {}) {
  // Filled once the routes are known: the 405s of the error handler, the routes whose bodies
  // may be forms, and the app the OpenAPI document describes.
  let methodNotAllowed: (request: Request) => Response | undefined = () => undefined
  let formRoutes = new Set<string>()
  let routes: AnyElysia | undefined
  const authenticator = bearerAuthenticator(ctx.accounts, ctx.oauth)
  const access = accessControl(authenticator, ctx.rbac)
  const scope = repositoryScope(authenticator, ctx.rbac, ctx.repositories, ctx.pools)
  const throttles = createThrottles(ctx.config, ctx.peerAddress)
  const clients = new ClientMetadataDocuments(ctx.pools.system, ctx.config.clientMetadataFetch, ctx.log)
  const index = serviceIndex(ctx.baseUrl)
  const quotas = new Quotas(ctx.pools.system, ctx.config.quotas, (userId) => ctx.rbac.isSysadmin(userId))
  // One for the write routes and the MCP tools: a burst of writes through either queues one embedding job and one counts copy.
  const writes = writeService(ctx)
  // The registry also accepts this server's own service token (exports and imports push and pull through it).
  const serviceTokens = createServiceTokens({ secret: ctx.config.jwtSecret!, issuer: ctx.baseUrl })
  const registry = registryRoutes({
    system: ctx.pools.system,
    blobs: ctx.blobs,
    authenticator: withServiceTokens(authenticator, serviceTokens),
    authorizer: ctx.rbac,
    maxBytes: ctx.config.registryMaxBytes,
    pace: ctx.config.uploadPace,
    quotas,
    log: ctx.log,
  })
  // normalize: false, so that a field a schema does not know is refused (400) instead of silently
  // dropped: a client sending {"password": ...} to PUT /users must not believe it changed anything.
  // Responses are built field by field, so nothing relies on normalization to hide columns.
  // standardHostname: false, so that the path is found in URLs of short hosts too: Elysia's
  // default skips the first 11 characters, and under Host: kgs every route was a 404 or 405.
  const app = new Elysia({ name: 'kgs', normalize: false, handler: { standardHostname: false } })
    .use(errorHandling(ctx.log, (request) => methodNotAllowed(request), oauthErrorShape))
    .use(urlChecks)
    // Before the JSON body parser, which applies only to routes added after it: a registry push
    // is a raw gzip stream of up to REGISTRY_MAX_BYTES, and an import upload one of up to
    // IMPORT_MAX_BYTES, each read by its route itself.
    .use(registry)
    .use(
      importRoutes({
        scope,
        jobs: ctx.jobs,
        blobs: ctx.blobs,
        registry: ctx.registry,
        bodyLimit: ctx.config.bodyLimit,
        bodyTimeoutMs: ctx.config.bodyTimeoutMs,
        uploadPace: ctx.config.uploadPace,
        maxUploadBytes: ctx.config.importMaxBytes,
        quotas,
        log: ctx.log,
      }),
    )
    .use(
      mediaUploadRoutes({
        scope,
        blobs: ctx.blobs,
        log: ctx.log,
        baseUrl: ctx.baseUrl,
        maxBytes: ctx.config.mediaUploadMaxBytes,
        pace: ctx.config.uploadPace,
      }),
    )
    .use(
      ingestRoutes({
        scope,
        writes,
        jobs: ctx.jobs,
        blobs: ctx.blobs,
        quotas,
        log: ctx.log,
        bodyLimit: ctx.config.bodyLimit,
        bodyTimeoutMs: ctx.config.bodyTimeoutMs,
        maxFileBytes: ctx.config.mediaUploadMaxBytes,
        uploadPace: ctx.config.uploadPace,
      }),
    )
    .use(bodyParsing(ctx.config.bodyLimit, ctx.config.bodyTimeoutMs, (key) => formRoutes.has(key)))
    .use(
      swaggerUi({
        registerClient: () => registerFirstPartyClient(ctx.pools.system, swaggerClient(ctx.baseUrl)),
        baseUrl: ctx.baseUrl,
        document: openApiDocument(() => routes!, ctx.baseUrl, authorizationServerMetadata(ctx.baseUrl)),
      }),
    )
    .use(
      webApp({
        registerClient: () => registerFirstPartyClient(ctx.pools.system, webAppClient(ctx.baseUrl)),
        baseUrl: ctx.baseUrl,
        settings: { registration: ctx.accounts.registration, uploadMaxBytes: ctx.config.mediaUploadMaxBytes },
      }),
    )
    .use(access)
    // A browser (Accept: text/html) is sent to the web app; API clients get the index. Built by
    // hand: Elysia's redirect() is Response.redirect, which Deno refuses a relative URL.
    .get(
      '/',
      ({ request }) =>
        wantsHtml(request) ? new Response(null, { status: 302, headers: { location: WEB_APP_PATH } }) : index,
      {
        public: true,
        detail: {
          tags: ['operations'],
          summary:
            'Service index: name, version and where to go next (a browser asking for HTML is redirected to the web app at /app)',
          responses: { 302: { description: 'to the web app at /app, for a request that accepts text/html' } },
        },
        response: { 200: ServiceIndex },
      },
    )
    .get('/healthz', () => ({ status: 'ok' as const, version: VERSION }), {
      public: true,
      detail: { tags: ['operations'], summary: 'Liveness: the process is up' },
      response: { 200: t.Object({ status: t.Literal('ok'), version: t.String() }) },
    })
    .get(
      '/readyz',
      async ({ status }) => {
        try {
          await ctx.pools.ping()
        } catch {
          return status(503, { error: 'database unreachable' })
        }
        return { status: 'ready' as const, database: ctx.pools.backend }
      },
      {
        public: true,
        detail: { tags: ['operations'], summary: 'Readiness: the database answers' },
        response: { 200: t.Object({ status: t.Literal('ready'), database: t.String() }), 503: ErrorBody },
      },
    )
    .use(oauthProtocolRoutes({ system: ctx.pools.system, baseUrl: ctx.baseUrl, tokens: ctx.oauth, throttles, clients }))
    .use(
      oauthPageRoutes({ system: ctx.pools.system, baseUrl: ctx.baseUrl, accounts: ctx.accounts, throttles, clients }),
    )
    .use(accountRoutes({ accounts: ctx.accounts, access, throttles }))
    .use(accountAdminRoutes({ accounts: ctx.accounts, system: ctx.pools.system, access }))
    .use(grantRoutes({ oauth: ctx.oauth, access, system: ctx.pools.system }))
    .use(appSessionRoutes({ system: ctx.pools.system, baseUrl: ctx.baseUrl, tokens: ctx.oauth }))
    .use(
      rbacRoutes({ rbac: ctx.rbac, accounts: ctx.accounts, oauth: ctx.oauth, access, repositories: ctx.repositories }),
    )
    .use(
      repositoryRoutes({ repositories: ctx.repositories, access, scope, throttle: throttles.createRepository, quotas }),
    )
    .use(memberRoutes({ scope, rbac: ctx.rbac, system: ctx.pools.system }))
    .use(graphRoutes({ scope }))
    .use(graphWriteRoutes({ scope, writes }))
    .use(processRoutes({ scope, jobs: ctx.jobs, quotas }))
    .use(annotateRoutes({ scope, jobs: ctx.jobs, quotas }))
    .use(exportRoutes({ scope, system: ctx.pools.system, jobs: ctx.jobs, blobs: ctx.blobs, quotas }))
    .use(mediaRoutes({ scope, blobs: ctx.blobs }))
    .use(searchRoutes({ scope, services: { vectors: ctx.vectors, embedder: ctx.embedder, log: ctx.log } }))
    .use(jobRoutes({ system: ctx.pools.system, jobs: ctx.jobs, scope, quotas }))
    .use(
      mcpRoutes({
        authenticator,
        authorizer: ctx.rbac,
        baseUrl: ctx.baseUrl,
        allowedOrigins: ctx.config.mcpAllowedOrigins,
        tools: ctx.config.mcpTools,
        bodyLimit: ctx.config.bodyLimit,
        services: {
          pools: ctx.pools,
          rbac: ctx.rbac,
          repositories: ctx.repositories,
          jobs: ctx.jobs,
          quotas,
          vectors: ctx.vectors,
          embedder: ctx.embedder,
          registry: ctx.registry,
          writes,
          blobs: ctx.blobs,
          maxUploadBytes: ctx.config.mediaUploadMaxBytes,
          log: ctx.log,
        },
        log: ctx.log,
        fastCalls: options.mcpFastCalls,
      }),
    )
  methodNotAllowed = methodNotAllowedResponder(app.routes)
  formRoutes = new Set(app.routes.filter(readsForms).map((route) => `${route.method} ${route.path}`))
  routes = app
  return app
}
