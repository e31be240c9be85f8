// The running service: listens at once (so /healthz answers while a fresh embedded database is
// still being initialised), opens the pools, then hands requests to the app. Every response
// gets X-Request-Id and one JSON log line; stop() drains in-flight requests before closing.
import { runtime } from './runtime/index.ts'
import type { Sql } from 'postgres'
import { deriveBaseUrl, listenAddress, type Config } from './config.ts'
import { Pools } from './db/pools.ts'
import { describeError, type Logger } from './log.ts'
import { createApp, type AppContext } from './app.ts'
import { loadJobKinds } from './job-kinds.ts'
import { Jobs } from './jobs/jobs.ts'
import { JobRunner } from './jobs/runner.ts'
import type { JobTiming } from './jobs/worker.ts'
import { Accounts } from './accounts/accounts.ts'
import { limitWaitingHashes } from './accounts/passwords.ts'
import { Rbac } from './rbac/rbac.ts'
import { SYSTEM_DOMAIN } from './permissions.ts'
import { resourceMetadataUrl } from './oauth/metadata.ts'
import { serveControlSocket } from './admin.ts'
import { Repositories } from './repositories/repositories.ts'
import { OAuthTokens } from './oauth/tokens.ts'
import { createEmbedder } from './vectors/embedder.ts'
import { queueMarkedEmbeddings } from './vectors/embed-jobs.ts'
import { databaseCreationLock } from './vectors/creation-lock.ts'
import { VectorStore } from './vectors/store.ts'
import { openBlobStore } from './blobs/open.ts'
import type { BlobStore } from './blobs/store.ts'
import { sweepUploads } from './bundle/import/import-job.ts'
import { sweepScratch } from './bundle/scratch.ts'
import { sweepRegistryLeftovers } from './registry/leftovers.ts'
import { purgeEndedSessions } from './accounts/sessions.ts'
import { purgeEndedOAuthRows } from './oauth/consent.ts'
import { createRegistryClient } from './registry/client.ts'
import { LocalEventBus, PostgresEventBus, type EventBus } from './db/events.ts'
import { JSON_CONTENT_TYPE, errorResponse } from './http/errors.ts'
import { assignRequestId } from './http/request-id.ts'
import { requestPath } from './http/path.ts'
import { allowOtherOrigins, preflightResponse } from './http/cors.ts'
import { VERSION } from './version.ts'

/** How long stop() lets in-flight requests finish before closing their connections. */
export const DRAIN_TIMEOUT_MS = 10_000
/** Logged at debug only. */
const PROBES = new Set(['/healthz', '/readyz'])

/** How often each process sweeps what dead processes and cancelled jobs left behind (and once at start). */
const LEFTOVER_SWEEP_INTERVAL_MS = 60 * 60 * 1000

export interface RunningServer {
  /** Where this process listens (http://host:port). */
  url: string
  baseUrl: string
  /** Resolves, with the services the app runs on, when the database is open and migrated; rejects if start-up failed. */
  ready: Promise<AppContext>
  stop(): Promise<void>
}

type Handler = (request: Request) => Response | Promise<Response>

/** Served until the database is ready: liveness yes, everything else "try again shortly". */
const startingHandler: Handler = (request) => {
  if (requestPath(request) === '/healthz') return Response.json({ status: 'ok', version: VERSION })
  return errorResponse(503, 'service is starting', { 'retry-after': '1' })
}

export interface ServerOptions {
  /** Job timing and extra job kinds (tests). */
  jobs?: { timing?: Partial<JobTiming>; extraKindModules?: string[] }
}

export async function startServer(
  config: Config & { jwtSecret: string },
  log: Logger,
  options: ServerOptions = {},
): Promise<RunningServer> {
  let handler: Handler = startingHandler
  let inFlight = 0
  let stopping = false
  let drained: (() => void) | undefined

  /** Headers, log line and in-flight accounting for one finished request. */
  const finish = (request: Request, requestId: string, started: number, response: Response): Response => {
    inFlight--
    if (stopping && inFlight === 0) drained?.()
    response = withHeaders(request, response, requestId, stopping)
    if (logRequests) {
      const path = requestPath(request)
      // Health probes come every few seconds from every orchestrator: at info they would bury the log.
      const probe = PROBES.has(path)
      if (!probe || debugging) {
        log[probe ? 'debug' : 'info']('request', {
          request_id: requestId,
          method: request.method,
          path,
          status: response.status,
          ms: Math.round((performance.now() - started) * 100) / 100,
        })
      }
    }
    return response
  }
  const failed = (request: Request, requestId: string, started: number, error: unknown): Response => {
    log.error('unhandled error', { request_id: requestId, ...describeError(error) })
    return finish(request, requestId, started, errorResponse(500, 'internal server error'))
  }
  const logRequests = log.enabled('info')
  const debugging = log.enabled('debug')

  const server = runtime.serve({
    port: config.port,
    hostname: listenAddress(config.host),
    // Each route limits its own body as it reads (BODY_LIMIT for JSON and forms, REGISTRY_MAX_BYTES
    // for pushes, IMPORT_MAX_BYTES for uploads); Bun's default cap of 128 MB would refuse larger
    // bundles before any route saw them.
    maxRequestBodySize: Math.max(config.registryMaxBytes, config.importMaxBytes, config.bodyLimit),
    // Not async: a handler that answers synchronously (most of Elysia's) skips a promise.
    fetch(request) {
      const started = performance.now()
      const requestId = assignRequestId(request)
      inFlight++
      if (debugging)
        log.debug('request started', { request_id: requestId, method: request.method, path: requestPath(request) })
      let result: Response | Promise<Response>
      try {
        result = preflightResponse(request) ?? handler(request)
      } catch (error) {
        return failed(request, requestId, started, error)
      }
      if (result instanceof Response) return finish(request, requestId, started, result)
      return result.then(
        (response) => finish(request, requestId, started, response),
        (error: unknown) => failed(request, requestId, started, error),
      )
    },
    error(error) {
      log.error('server error', describeError(error))
      return errorResponse(500, 'internal server error')
    },
  })

  const url = deriveBaseUrl(config.host, server.port!)
  const baseUrl = config.baseUrl ?? url
  let pools: Pools | undefined
  let bus: EventBus | undefined
  let accounts: Accounts | undefined
  let rbac: Rbac | undefined
  let control: { stop(): Promise<void> } | undefined
  let oauth: OAuthTokens | undefined
  let runner: JobRunner | undefined
  let vectors: VectorStore | undefined
  let copyPendingCounts: (() => Promise<void>) | undefined
  let leftoverSweeps: Timer | undefined
  let sweeping: Promise<void> | undefined

  const ready = (async () => {
    // First: a configuration it refuses should stop the start before any database is opened.
    const registry = createRegistryClient(config, baseUrl)
    pools = await Pools.open({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, embedded: config.embedded })
    const blobs = openBlobStore(config)
    vectors = await VectorStore.open(config.lancedbUri, {
      storageOptions: config.lancedbStorageOptions,
      creationLock: databaseCreationLock(pools.system),
    })
    const applied = await pools.migrate()
    if (applied.length > 0) log.info('migrations applied', { set: 'system', applied })
    const fleet = pools.backend === 'postgres'
    bus = fleet ? new PostgresEventBus(pools, log) : new LocalEventBus()
    rbac = await Rbac.start({ system: pools.system, bus, log, catchUp: fleet })
    const roles = rbac
    limitWaitingHashes(config.passwordQueueMax)
    accounts = await Accounts.start({
      system: pools.system,
      bus,
      log,
      jwtSecret: config.jwtSecret,
      issuer: baseUrl,
      resourceMetadataUrl: resourceMetadataUrl(baseUrl),
      accessTokenTtl: config.accessTokenTtl,
      sessionTtl: config.sessionTtl,
      passwordCost: config.passwordCost,
      sessionIdleTtl: config.sessionIdleTtl,
      registration: config.registration,
      catchUp: fleet,
      onUserCreated: (userId) => roles.assign({ user_id: userId, role: 'member', domain: SYSTEM_DOMAIN }),
    })
    if (!fleet)
      control = serveControlSocket(config.dataDir, {
        pools,
        bus,
        passwordCost: config.passwordCost,
        rolesChanged: () => roles.reload(),
      })
    const jobs = new Jobs(pools.system, bus, await loadJobKinds(options.jobs?.extraKindModules))
    // Past two leases even a job whose worker died has been ended by the reaper.
    const stopJobs = (repositoryId: string) =>
      jobs.stopRepository(repositoryId, 'cancelled: its repository was deleted', 2 * config.jobLeaseMs)
    const repositories = await Repositories.start({
      system: pools.system,
      pools,
      rbac: roles,
      bus,
      log,
      vectors,
      blobs,
      stopJobs,
    })
    copyPendingCounts = () => repositories.allCountsCopied()
    // What a crash of an earlier process can leave undone after a write committed, done at the
    // repository's first use here rather than at start-up (a fleet of many repositories starts
    // at once): the copy of its counts, and a job for rows marked for embedding.
    pools.onRepositoryOpened((repositoryId, sql) => {
      void repositories.graphChanged(repositoryId)
      queueMarkedEmbeddings(jobs, sql, repositoryId).catch((error: unknown) =>
        log.warn('marked rows not queued for embedding', { repository: repositoryId, ...describeError(error) }),
      )
    })
    oauth = await OAuthTokens.start({
      system: pools.system,
      bus,
      log,
      secret: config.jwtSecret,
      issuer: baseUrl,
      accessTokenTtl: config.accessTokenTtl,
      grantIdleTtl: config.sessionIdleTtl,
      catchUp: fleet,
    })
    const peerAddress = (request: Request) => server.peerAddress(request)
    const context: AppContext = {
      config,
      pools,
      log,
      baseUrl,
      peerAddress,
      accounts,
      rbac: roles,
      repositories,
      oauth,
      jobs,
      vectors,
      embedder: createEmbedder(config),
      blobs,
      registry,
    }
    handler = createApp(context).fetch
    // Workers get the base URL actually in use (the issuer of tokens, the default registry).
    runner = await JobRunner.start({ config: { ...config, baseUrl }, pools, bus, log, ...options.jobs })
    // Kept, so that a stop right after the start waits for the sweep instead of closing its pool under it.
    const sweep = () => {
      sweeping = sweepLeftovers(pools!.system, blobs, config, log)
    }
    leftoverSweeps = setInterval(sweep, LEFTOVER_SWEEP_INTERVAL_MS)
    sweep()
    log.info('ready', { url, base_url: baseUrl, database: pools.backend, version: VERSION })
    return context
  })()
  // A failed start is reported through `ready`; this keeps it from also surfacing as unhandled.
  ready.catch(() => {})

  let stopped: Promise<void> | undefined
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true
      void server.stop(false)
      if (inFlight > 0) {
        const allDone = new Promise<void>((resolve) => (drained = resolve))
        let timer: Timer | undefined
        const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_TIMEOUT_MS)))
        await Promise.race([allDone, timeout])
        clearTimeout(timer)
      }
      await server.stop(true)
      await ready.catch(() => {})
      clearInterval(leftoverSweeps)
      await sweeping
      await runner?.stop()
      await copyPendingCounts?.()
      await control?.stop()
      accounts?.stop()
      rbac?.stop()
      oauth?.stop()
      await bus?.close()
      await vectors?.close()
      await pools?.close()
      log.info('stopped')
      log.flush()
    })())

  log.info('listening', { url })
  return { url, baseUrl, ready, stop }
}

/**
 * How long ended sessions, grants, codes and the like are kept: a day, or longer if access tokens
 * live longer, so that no token still valid ever loses the row that refuses or explains it.
 */
const endedRowsKeptSeconds = (config: Config) => Math.max(86_400, config.accessTokenTtl)

/**
 * Scratch files of jobs no longer running, uploads no job will read, abandoned registry pushes,
 * and the rows of sessions and OAuth exchanges that ended long ago.
 */
async function sweepLeftovers(system: Sql, blobs: BlobStore, config: Config, log: Logger): Promise<void> {
  try {
    const keep = endedRowsKeptSeconds(config)
    const removed = {
      scratch_files: await sweepScratch(system, config.dataDir),
      uploads: await sweepUploads(system, blobs),
      registry_blobs: await sweepRegistryLeftovers(system, blobs),
      ended_rows: (await purgeEndedSessions(system, keep)) + (await purgeEndedOAuthRows(system, keep)),
    }
    if (Object.values(removed).some((count) => count > 0)) log.info('leftovers removed', removed)
  } catch (error) {
    log.warn('leftover sweep failed', describeError(error))
  }
}

/**
 * What every response carries: its request id, nosniff (a JSON body or a stored medium is never
 * sniffed into HTML), and no-store on answers to requests with credentials (what a user may
 * read must not stay in a shared or browser cache), unless the route chose its own caching; and
 * the CORS headers where other origins may read it (http/cors.ts).
 */
function withHeaders(request: Request, response: Response, requestId: string, closing: boolean): Response {
  // Responses built by fetch() or Response.redirect() have immutable headers: copy those.
  let headers = response.headers
  try {
    headers.set('x-request-id', requestId)
  } catch {
    response = new Response(response.body, response)
    headers = response.headers
    headers.set('x-request-id', requestId)
  }
  if (headers.get('content-type')?.startsWith('application/json')) headers.set('content-type', JSON_CONTENT_TYPE)
  headers.set('x-content-type-options', 'nosniff')
  if (request.headers.has('authorization') && !headers.has('cache-control')) headers.set('cache-control', 'no-store')
  if (closing) headers.set('connection', 'close')
  allowOtherOrigins(request, headers)
  return response
}
