// Configuration comes only from the environment, validated once at start-up.
// A bad value stops the process with one line naming the variable and what it expects. The
// variables themselves are the table of config-variables.ts.
import type { TOptional, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, openSync, readFileSync, writeSync, closeSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { EnvSchema, type Rate } from './config-variables.ts'
import { withoutUserinfo } from './redact.ts'

/**
 * OWASP's argon2id table (Password Storage Cheat Sheet), p = 1: the least memory, in MiB, each
 * time cost may use. Every row is an equal defence; a configured cost may exceed its row, never
 * fall below it (docs/spec/decisions.md §3). Past t = 5 the t = 5 row applies.
 */
const OWASP_ARGON2ID_MIN_MIB: Readonly<Record<number, number>> = { 1: 46, 2: 19, 3: 12, 4: 9, 5: 7 }
const owaspMinimumMiB = (timeCost: number) => OWASP_ARGON2ID_MIN_MIB[Math.min(timeCost, 5)]!

/** argon2id's cost: memory in KiB (as a PHC string's m=) and iterations; parallelism is always 1. */
export interface PasswordCost {
  memoryKiB: number
  timeCost: number
}

type Variables = typeof EnvSchema.properties
/** The variables' values, each parsed; undefined for an unset optional one. */
type Env = {
  [K in keyof Variables]:
    | ReturnType<Variables[K]['parse']>
    | (Variables[K] extends TOptional<TSchema> ? undefined : never)
}

/** Settings that may be undefined are optional: a caller building a Config names only what it sets. */
type OptionalWhereUndefined<T> = { [K in keyof T as undefined extends T[K] ? K : never]?: T[K] } & {
  [K in keyof T as undefined extends T[K] ? never : K]: T[K]
}
export type Config = OptionalWhereUndefined<ReturnType<typeof configFrom>>
export type QuotaLimits = Config['quotas']

/** perAccount: per e-mail signed in to, or per OAuth client_id. */
export interface ThrottleRates {
  perIp?: Rate
  perAccount?: Rate
}

export class ConfigError extends Error {}

/** Parses and validates the environment. Pure: touches no files. */
export function parseEnv(env: Record<string, string | undefined>): Config {
  const values: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(EnvSchema.properties) as [
    keyof Env,
    TSchema & { expects: string; parse: (value: unknown) => unknown; secret?: true },
  ][]) {
    const raw = env[name]
    if (raw === undefined || raw === '') {
      if (schema.default !== undefined) values[name] = schema.parse(schema.default)
      continue
    }
    // Convert would truncate "80.5" to 80; an integer variable must be written as one.
    const value = schema.type === 'integer' && !/^\d+$/.test(raw) ? raw : Value.Convert(schema, raw)
    if (!Value.Check(schema, value)) {
      const shown = schema.secret ? `${raw.length} characters` : JSON.stringify(withoutUserinfo(raw))
      throw new ConfigError(`invalid ${name}: expected ${schema.expects}, got ${shown}`)
    }
    values[name] = schema.parse(value)
  }
  const v = values as Env
  if (v.EMBEDDING_URL && !v.EMBEDDING_MODEL)
    throw new ConfigError('invalid EMBEDDING_MODEL: required when EMBEDDING_URL is set')
  if (!v.EMBEDDING_URL && (v.EMBEDDING_MODEL || v.EMBEDDING_API_KEY))
    throw new ConfigError('invalid EMBEDDING_URL: required when EMBEDDING_MODEL or EMBEDDING_API_KEY is set')
  if (v.LLM_URL && !v.LLM_MODEL) throw new ConfigError('invalid LLM_MODEL: required when LLM_URL is set')
  if (!v.LLM_URL && (v.LLM_MODEL || v.LLM_API_KEY))
    throw new ConfigError('invalid LLM_URL: required when LLM_MODEL or LLM_API_KEY is set')
  const s3Named = (['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_PREFIX'] as const).find(
    (name) => v[name] !== undefined,
  )
  if (!v.S3_BUCKET && s3Named) throw new ConfigError(`invalid S3_BUCKET: required when ${s3Named} is set`)
  // A client refreshes when its access token ends: a shorter idle limit would end every session.
  if (v.SESSION_IDLE_TTL !== undefined && v.SESSION_IDLE_TTL <= v.ACCESS_TOKEN_TTL)
    throw new ConfigError('invalid SESSION_IDLE_TTL: must be longer than ACCESS_TOKEN_TTL')
  const leastMiB = owaspMinimumMiB(v.PASSWORD_HASH_TIME)
  if (v.PASSWORD_HASH_MEMORY < leastMiB) {
    throw new ConfigError(
      `invalid PASSWORD_HASH_MEMORY: ${v.PASSWORD_HASH_MEMORY} MiB with PASSWORD_HASH_TIME ${v.PASSWORD_HASH_TIME} is below OWASP's argon2id table (at least ${leastMiB} MiB at t=${v.PASSWORD_HASH_TIME})`,
    )
  }
  return configFrom(v)
}

/** LanceDB's names (object_store's AmazonS3ConfigKey) for the S3_* settings; undefined leaves LanceDB to its own AWS_* variables. */
function lancedbStorageOptions(v: Env): Record<string, string> | undefined {
  if (!v.LANCEDB_URI?.startsWith('s3://') || !v.S3_BUCKET) return undefined
  const options = {
    aws_endpoint: v.S3_ENDPOINT,
    aws_region: v.S3_REGION,
    aws_access_key_id: v.S3_ACCESS_KEY_ID,
    aws_secret_access_key: v.S3_SECRET_ACCESS_KEY,
    // An http:// endpoint (an S3-compatible store on a private network) must be allowed explicitly.
    allow_http: v.S3_ENDPOINT?.startsWith('http://') ? 'true' : undefined,
  }
  return Object.fromEntries(
    Object.entries(options).filter((entry): entry is [string, string] => entry[1] !== undefined),
  )
}

/** The configuration the rest of kgs reads, from the parsed variables; its type is Config. */
function configFrom(v: Env) {
  return {
    port: v.PORT,
    host: v.HOST,
    /** Unset means: derive from the address actually bound (see server.ts). */
    baseUrl: v.BASE_URL,
    dataDir: v.DATA_DIR,
    databaseUrl: v.DATABASE_URL,
    /** Undefined until resolveJwtSecret has run. */
    jwtSecret: v.JWT_SECRET,
    logLevel: v.LOG_LEVEL,
    bodyLimit: v.BODY_LIMIT,
    bodyTimeoutMs: v.BODY_TIMEOUT,
    /** The slowest a bundle upload may arrive: bytes per second, averaged over each window. */
    uploadPace: { minBytesPerSecond: v.UPLOAD_MIN_RATE, windowMs: v.BODY_TIMEOUT },
    /** Seconds. */
    accessTokenTtl: v.ACCESS_TOKEN_TTL,
    /** Seconds. */
    sessionTtl: v.SESSION_TTL,
    /** Seconds a session or OAuth grant may go without a refresh; undefined: no limit. */
    sessionIdleTtl: v.SESSION_IDLE_TTL,
    registration: v.REGISTRATION,
    embedded: { maxOpen: v.EMBEDDED_MAX_OPEN, idleMs: v.EMBEDDED_IDLE_TIMEOUT },
    workers: v.WORKERS,
    jobLeaseMs: v.JOB_LEASE,
    lancedbUri: v.LANCEDB_URI ?? join(v.DATA_DIR, 'lance'),
    /** How LanceDB reaches an s3:// LANCEDB_URI: the S3_* settings, so one configuration serves blobs and vectors. */
    lancedbStorageOptions: lancedbStorageOptions(v),
    /** Unset: the built-in kgs-hash-v1. */
    embedding: v.EMBEDDING_URL
      ? { url: v.EMBEDDING_URL, model: v.EMBEDDING_MODEL!, apiKey: v.EMBEDDING_API_KEY }
      : undefined,
    /** Unset: the embedder's own threshold (vectors/near-facts.ts). */
    factMergeSimilarity: v.FACT_MERGE_SIMILARITY,
    /** Unset: the built-in extractor (src/extract/builtin.ts); set: the model extractor's settings (src/extract/model.ts). */
    llm: v.LLM_URL
      ? {
          url: v.LLM_URL,
          model: v.LLM_MODEL!,
          apiKey: v.LLM_API_KEY,
          concurrency: v.LLM_CONCURRENCY,
          timeoutMs: v.LLM_TIMEOUT,
          /** 0: unlimited. */
          maxTokensPerSource: v.LLM_MAX_TOKENS_PER_SOURCE,
        }
      : undefined,
    /** Unset: blobs under DATA_DIR/blobs. */
    s3: v.S3_BUCKET
      ? {
          bucket: v.S3_BUCKET,
          endpoint: v.S3_ENDPOINT,
          region: v.S3_REGION,
          accessKeyId: v.S3_ACCESS_KEY_ID,
          secretAccessKey: v.S3_SECRET_ACCESS_KEY,
          prefix: v.S3_PREFIX ?? '',
        }
      : undefined,
    /** Origins besides BASE_URL's whose pages may call the MCP endpoint. */
    mcpAllowedOrigins: v.MCP_ALLOWED_ORIGINS,
    mcpTools: v.MCP_TOOLS,
    /** Unset: this server's own registry (its base URL). */
    registryUrl: v.REGISTRY_URL,
    /** Unset: a service token signed with the JWT secret (see src/http/auth.ts). */
    registryToken: v.REGISTRY_TOKEN,
    registryMaxBytes: v.REGISTRY_MAX_BYTES,
    importMaxBytes: v.IMPORT_MAX_BYTES,
    importMaxExpandedBytes: v.IMPORT_MAX_EXPANDED_BYTES,
    /** The follow-up fetch of media an import did not carry (docs/spec/bundle.md §5). */
    mediaFetch: {
      allowPrivate: v.MEDIA_FETCH_ALLOW_PRIVATE,
      maxBytes: v.MEDIA_FETCH_MAX_BYTES,
      timeoutMs: v.MEDIA_FETCH_TIMEOUT,
    },
    /** The ingest job's fetch of a URL (ingest/ingest-job.ts): the media fetcher's bounds, its own address check. */
    ingestFetch: {
      allowPrivate: v.INGEST_FETCH_ALLOW_PRIVATE,
      maxBytes: v.MEDIA_FETCH_MAX_BYTES,
      timeoutMs: v.MEDIA_FETCH_TIMEOUT,
    },
    /** The bound on the child process that reads an ingested document (ingest/read-child.ts). */
    ingestReadMaxMemoryBytes: v.INGEST_READ_MAX_MEMORY,
    /** The fetch of OAuth clients' metadata documents (oauth/client-metadata.ts). */
    clientMetadataFetch: {
      allowPrivate: v.CLIENT_METADATA_FETCH_ALLOW_PRIVATE,
      timeoutMs: v.CLIENT_METADATA_FETCH_TIMEOUT,
    },
    /** Largest media upload of the write API (media/upload-routes.ts). */
    mediaUploadMaxBytes: v.MEDIA_UPLOAD_MAX_BYTES,
    /** Undefined: 256 per hashing thread. */
    passwordQueueMax: v.PASSWORD_QUEUE_MAX,
    passwordCost: { memoryKiB: v.PASSWORD_HASH_MEMORY * 1024, timeCost: v.PASSWORD_HASH_TIME } satisfies PasswordCost,
    /** Unset rates are unlimited (src/http/throttle.ts). */
    throttle: {
      login: { perIp: v.THROTTLE_LOGIN_PER_IP, perAccount: v.THROTTLE_LOGIN_PER_ACCOUNT },
      token: { perIp: v.THROTTLE_TOKEN_PER_IP, perAccount: v.THROTTLE_TOKEN_PER_CLIENT },
      register: { perIp: v.THROTTLE_REGISTER_PER_IP },
      createRepository: { perIp: v.THROTTLE_REPOSITORY_CREATE_PER_IP },
    } satisfies Record<string, ThrottleRates>,
    trustedProxies: v.TRUSTED_PROXIES,
    /** 0 is unlimited (src/quotas.ts). */
    quotas: {
      repositories: v.QUOTA_REPOSITORIES,
      registryGraphs: v.QUOTA_REGISTRY_GRAPHS,
      registryBytes: v.QUOTA_REGISTRY_BYTES,
      queuedJobs: v.QUOTA_QUEUED_JOBS,
    },
  }
}

/**
 * Returns the configured secret, or the one kept in DATA_DIR/secret, generating it (256 bits,
 * mode 0600) on first use. There is never a built-in default.
 */
export function resolveJwtSecret(config: Config): string {
  if (config.jwtSecret) return config.jwtSecret
  mkdirSync(config.dataDir, { recursive: true })
  const path = join(config.dataDir, 'secret')
  try {
    // 'wx' fails if the file exists, so two processes starting at once cannot both write one.
    const fd = openSync(path, 'wx', 0o600)
    writeSync(fd, randomBytes(32).toString('base64url') + '\n')
    closeSync(fd)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
  const secret = readFileSync(path, 'utf8').trim()
  if (secret.length < 32) throw new ConfigError(`invalid secret file ${path}: expected at least 32 characters`)
  return secret
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config & { jwtSecret: string } {
  const config = parseEnv(env)
  return { ...config, jwtSecret: resolveJwtSecret(config) }
}

/**
 * The address to listen on for HOST: localhost is the IPv4 loopback itself, not whichever of
 * 127.0.0.1 and ::1 a resolver gives first (browsers and curl try both; some clients only the first).
 */
export const listenAddress = (host: string) => (host === 'localhost' ? '127.0.0.1' : host)

/** The default BASE_URL: where a client on this machine reaches HOST:PORT. */
export function deriveBaseUrl(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host
  return `http://${name}:${port}`
}
