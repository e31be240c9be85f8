// The environment variables kgs reads, each with its schema (type, default, description), the
// phrase a refusal uses and what its value becomes: the table parseEnv (config.ts) validates and
// docs/configuration.md is generated from (config-reference.ts).
import { Type, type TSchema, type Static } from '@sinclair/typebox'
import { resolve } from 'node:path'

const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

const REGISTRATION_MODES = ['open', 'closed', 'invite'] as const
/** Who may create an account with POST /api/v1/auth/register and the sign-up page (REGISTRATION). */
export type RegistrationMode = (typeof REGISTRATION_MODES)[number]

const MCP_TOOL_PROFILES = ['read', 'write', 'all'] as const
/** Which tools the MCP endpoint offers (MCP_TOOLS): the read-only ones, the ones that change something, or both. */
export type McpToolProfile = (typeof MCP_TOOL_PROFILES)[number]

/** 16 GiB: the reader's default limit on a bundle's expanded size, so any bundle it accepts fits. */
export const REGISTRY_MAX_BYTES_DEFAULT = 16 * 1024 ** 3

const DURATION = '^[1-9][0-9]{0,9}[smhd]?$'
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const
/** A count, a slash, a duration: "20/1m" is 20 per minute. */
const RATE = '^[1-9][0-9]{0,5}/[1-9][0-9]{0,9}[smhd]?$'
const RATE_EXPECTS = 'a rate such as 20/1m or 5/15m (a count, a slash, a duration)'

/** "90" and "90s" are seconds; "15m", "12h", "30d" what they say. */
function parseDuration(text: string): number {
  const unit = text.at(-1)!
  return unit in UNIT_SECONDS
    ? Number(text.slice(0, -1)) * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS]
    : Number(text)
}

/** At most `limit` in any `periodMs`. */
export interface Rate {
  limit: number
  periodMs: number
}

const milliseconds = (text: string) => parseDuration(text) * 1000

function parseRate(text: string): Rate {
  const [limit, period] = text.split('/') as [string, string]
  return { limit: Number(limit), periodMs: milliseconds(period) }
}

const withoutTrailingSlashes = (url: string) => url.replace(/\/+$/, '')

/**
 * One environment variable: its schema (type, default, description: the reference is generated
 * from it), the phrase used when a value does not fit it, and what its valid value becomes.
 */
function variable<T extends TSchema, V = Static<T>>(
  schema: T,
  expects: string,
  parse: (value: Static<T>) => V = (value) => value as V,
) {
  return Object.assign(schema, { expects, parse })
}

/** A variable whose value is never echoed in an error message. */
const secret = <T extends object>(variable: T) => Object.assign(variable, { secret: true })

/** The table of every variable; parseEnv reads exactly these, and configFrom shapes them. */
export const EnvSchema = Type.Object({
  PORT: variable(
    Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'TCP port; 0 picks a free one' }),
    'an integer from 0 to 65535',
  ),
  HOST: variable(
    Type.String({
      minLength: 1,
      default: 'localhost',
      description: 'interface to listen on: localhost is 127.0.0.1, this machine only; 0.0.0.0 is every interface',
    }),
    'a host name or IP address',
  ),
  BASE_URL: variable(
    Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
        description: 'public URL of this service (issuer, links); derived from HOST and PORT when unset',
      }),
    ),
    'an absolute http(s) URL without query or fragment',
    withoutTrailingSlashes,
  ),
  DATA_DIR: variable(
    Type.String({ minLength: 1, default: './data', description: 'embedded database, generated secret, blobs' }),
    'a directory path',
    (dir) => resolve(dir),
  ),
  DATABASE_URL: variable(
    Type.Optional(
      Type.String({ pattern: '^postgres(ql)?://', description: 'PostgreSQL server; unset runs the embedded database' }),
    ),
    'a postgres:// or postgresql:// URL',
  ),
  JWT_SECRET: secret(
    variable(
      Type.Optional(
        Type.String({ minLength: 32, description: 'HS256 signing secret; unset generates one into DATA_DIR/secret' }),
      ),
      'at least 32 characters',
    ),
  ),
  LOG_LEVEL: variable(
    Type.Union(
      LOG_LEVELS.map((l) => Type.Literal(l)),
      { default: 'info', description: 'debug | info | warn | error | silent' },
    ),
    `one of ${LOG_LEVELS.join(', ')}`,
  ),
  ACCESS_TOKEN_TTL: variable(
    Type.String({ pattern: DURATION, default: '15m', description: 'lifetime of access tokens, e.g. 900, 900s, 15m' }),
    'a duration such as 900, 90s, 15m, 12h or 30d',
    parseDuration,
  ),
  SESSION_TTL: variable(
    Type.String({
      pattern: DURATION,
      default: '30d',
      description: 'absolute lifetime of a session; refreshing does not extend it',
    }),
    'a duration such as 3600, 12h or 30d',
    parseDuration,
  ),
  SESSION_IDLE_TTL: variable(
    Type.Optional(
      Type.String({
        pattern: DURATION,
        description: 'longest a session or OAuth grant may go without a refresh before it ends; unset, no limit',
      }),
    ),
    'a duration such as 3600, 12h or 30d',
    parseDuration,
  ),
  REGISTRATION: variable(
    Type.Union(
      REGISTRATION_MODES.map((mode) => Type.Literal(mode)),
      {
        default: 'open',
        description:
          'who creates accounts: open (anyone signs up: POST /api/v1/auth/register, the sign-up page), invite (only with an invitation a sysadmin made for that e-mail address), closed (only `kgs user create` and sysadmins); OAuth client registration is unaffected',
      },
    ),
    `one of ${REGISTRATION_MODES.join(', ')}`,
  ),
  BODY_LIMIT: variable(
    Type.Integer({ minimum: 1024, default: 1_048_576, description: 'largest JSON request body in bytes' }),
    'an integer number of bytes, at least 1024',
  ),
  BODY_TIMEOUT: variable(
    Type.String({
      pattern: DURATION,
      default: '30s',
      description:
        'longest a JSON or form request body may take to arrive, and the window UPLOAD_MIN_RATE is measured over (408 past it)',
    }),
    'a duration such as 30, 30s or 2m',
    milliseconds,
  ),
  UPLOAD_MIN_RATE: variable(
    Type.Integer({
      minimum: 1,
      default: 10_240,
      description:
        'slowest a bundle upload (registry push, import upload) may arrive, in bytes per second averaged over each BODY_TIMEOUT (408 below it)',
    }),
    'a positive integer number of bytes per second',
  ),
  EMBEDDED_MAX_OPEN: variable(
    Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: 8,
      description:
        'embedded databases of repositories open at once (each holds 65-170 MB); a request for a closed one waits for room and reopens it',
    }),
    'an integer from 1 to 10000',
  ),
  EMBEDDED_IDLE_TIMEOUT: variable(
    Type.String({
      pattern: DURATION,
      default: '60s',
      description: 'how long an embedded repository database stays open after its last query',
    }),
    'a duration such as 60, 60s or 5m',
    milliseconds,
  ),
  WORKERS: variable(
    Type.Integer({
      minimum: 0,
      maximum: 64,
      default: 2,
      description: 'job worker threads in this process; 0 runs no jobs here',
    }),
    'an integer from 0 to 64',
  ),
  JOB_LEASE: variable(
    Type.String({
      pattern: DURATION,
      default: '30s',
      description:
        'how long a running job stays claimed without a heartbeat before another worker takes it over (a dead process)',
    }),
    'a duration such as 30, 30s or 2m',
    milliseconds,
  ),
  LANCEDB_URI: variable(
    Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'LanceDB location (directory or object-storage URI); unset uses DATA_DIR/lance; an s3:// URI is reached with the S3_* settings',
      }),
    ),
    'a directory path or URI',
  ),
  EMBEDDING_URL: variable(
    Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s]+$',
        description: 'OpenAI-compatible API base (POST {url}/embeddings); unset uses the built-in kgs-hash-v1',
      }),
    ),
    'an absolute http(s) URL',
  ),
  EMBEDDING_MODEL: variable(
    Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'model name sent to EMBEDDING_URL; required with it' }),
    ),
    'a model name',
  ),
  EMBEDDING_API_KEY: secret(
    variable(Type.Optional(Type.String({ minLength: 1, description: 'bearer key for EMBEDDING_URL' })), 'an API key'),
  ),
  FACT_MERGE_SIMILARITY: variable(
    Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          "cosine similarity of the embedder at or above which process_source merges a new fact into an existing one of the same meaning; unset: the embedder's own (0.93 for kgs-hash-v1, 0.92 for an EMBEDDING_URL model; docs/extract.md); 1: only texts the embedder cannot tell apart",
      }),
    ),
    'a number from 0 to 1',
  ),
  LLM_URL: variable(
    Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
        description:
          'OpenAI-compatible API base the model extractor calls (POST {url}/chat/completions), e.g. http://localhost:11434/v1 for Ollama; unset: the built-in extractor',
      }),
    ),
    'an absolute http(s) URL without query or fragment',
    withoutTrailingSlashes,
  ),
  LLM_MODEL: variable(
    Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'model name sent to LLM_URL; required with it' }),
    ),
    'a model name',
  ),
  LLM_API_KEY: secret(
    variable(
      Type.Optional(Type.String({ minLength: 1, description: 'bearer key for LLM_URL; unset sends none' })),
      'an API key',
    ),
  ),
  LLM_CONCURRENCY: variable(
    Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 4,
      description: 'chat completions the model extractor has in flight at once, per source',
    }),
    'an integer from 1 to 64',
  ),
  LLM_TIMEOUT: variable(
    Type.String({
      pattern: DURATION,
      default: '120s',
      description: 'time limit of one call to LLM_URL, e.g. 120s; a call past it is retried like a 5xx',
    }),
    'a duration such as 120, 120s or 5m',
    milliseconds,
  ),
  LLM_MAX_TOKENS_PER_SOURCE: variable(
    Type.Integer({
      minimum: 0,
      default: 1_000_000,
      description:
        "tokens (prompt and completion, as the endpoint reports them) the model extractor may spend on one source; past it the source's remaining chunks fail; 0: unlimited",
    }),
    'a non-negative integer number of tokens (0: unlimited)',
  ),
  S3_BUCKET: variable(
    Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 63,
        description: 'store blobs in this S3-compatible bucket instead of DATA_DIR/blobs',
      }),
    ),
    'a bucket name',
  ),
  S3_ENDPOINT: variable(
    Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$', description: 'S3-compatible endpoint URL' })),
    'an absolute http(s) URL',
  ),
  S3_REGION: variable(Type.Optional(Type.String({ minLength: 1, description: 'S3 region' })), 'a region name'),
  S3_ACCESS_KEY_ID: variable(
    Type.Optional(Type.String({ minLength: 1, description: 'S3 access key id' })),
    'an access key id',
  ),
  S3_SECRET_ACCESS_KEY: secret(
    variable(Type.Optional(Type.String({ minLength: 1, description: 'S3 secret access key' })), 'a secret access key'),
  ),
  S3_PREFIX: variable(
    Type.Optional(Type.String({ pattern: '^[A-Za-z0-9!_.*()/-]*$', description: 'key prefix inside the bucket' })),
    'a key prefix of letters, digits and !_.*()/-',
  ),
  MCP_ALLOWED_ORIGINS: variable(
    Type.String({
      default: '',
      pattern: '^(https?://[^\\s/?#,]+(,https?://[^\\s/?#,]+)*)?$',
      description:
        "browser origins (comma-separated, e.g. http://localhost:6274) that may call the MCP endpoint besides BASE_URL's own; a request with any other Origin is a 403",
    }),
    'comma-separated origins such as https://app.example.com,http://localhost:6274',
    (text) => text.split(',').filter(Boolean),
  ),
  MCP_TOOLS: variable(
    Type.Union(
      MCP_TOOL_PROFILES.map((profile) => Type.Literal(profile)),
      {
        default: 'all',
        description:
          'the tools the MCP endpoint offers: read (only the read-only ones), write (only those that change something: writes, imports, exports, ingestion), all (both); a tool left out is unknown to tools/call',
      },
    ),
    `one of ${MCP_TOOL_PROFILES.join(', ')}`,
  ),
  REGISTRY_URL: variable(
    Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$',
        description: 'the graph registry exports push to and imports pull from; unset uses this server (BASE_URL)',
      }),
    ),
    'an absolute http(s) URL without query or fragment',
    withoutTrailingSlashes,
  ),
  REGISTRY_TOKEN: secret(
    variable(
      Type.Optional(
        Type.String({
          minLength: 1,
          description: 'bearer token for REGISTRY_URL; unset: a short-lived service token this server signs for itself',
        }),
      ),
      'a bearer token',
    ),
  ),
  REGISTRY_MAX_BYTES: variable(
    Type.Integer({
      minimum: 1,
      default: REGISTRY_MAX_BYTES_DEFAULT,
      description: 'largest bundle the registry accepts, in bytes (413 past it)',
    }),
    'a positive integer number of bytes',
  ),
  IMPORT_MAX_BYTES: variable(
    Type.Integer({
      minimum: 1,
      default: REGISTRY_MAX_BYTES_DEFAULT,
      description: 'largest bundle POST /{repoID}/import-graph accepts as an upload, in bytes (413 past it)',
    }),
    'a positive integer number of bytes',
  ),
  IMPORT_MAX_EXPANDED_BYTES: variable(
    Type.Integer({
      minimum: 1,
      default: REGISTRY_MAX_BYTES_DEFAULT,
      description:
        'largest decompressed size of a bundle an import reads, in bytes (the job fails past it: gzip bombs)',
    }),
    'a positive integer number of bytes',
  ),
  CLIENT_METADATA_FETCH_ALLOW_PRIVATE: variable(
    Type.Boolean({
      default: false,
      description:
        "let the fetch of OAuth clients' metadata documents reach loopback, private and link-local addresses (off: refused, against SSRF)",
    }),
    'true or false',
  ),
  CLIENT_METADATA_FETCH_TIMEOUT: variable(
    Type.String({
      pattern: DURATION,
      default: '5s',
      description: "time limit of one fetch of an OAuth client's metadata document, e.g. 5s",
    }),
    'a duration such as 5, 5s or 1m',
    milliseconds,
  ),
  INGEST_FETCH_ALLOW_PRIVATE: variable(
    Type.Boolean({
      default: false,
      description:
        'let the ingest job fetch URLs of loopback, private and link-local addresses (off: refused, against SSRF)',
    }),
    'true or false',
  ),
  INGEST_READ_MAX_MEMORY: variable(
    Type.Integer({
      minimum: 1,
      default: 1024 ** 3,
      description:
        'most memory (resident, in bytes) the process that reads one ingested document may take: past it, it is killed and the document refused',
    }),
    'a positive integer number of bytes',
  ),
  MEDIA_FETCH_ALLOW_PRIVATE: variable(
    Type.Boolean({
      default: false,
      description:
        'let the media fetcher reach loopback, private and link-local addresses (off: refused, against SSRF)',
    }),
    'true or false',
  ),
  MEDIA_FETCH_MAX_BYTES: variable(
    Type.Integer({
      minimum: 1,
      default: 50 * 1024 ** 2,
      description: 'largest image or body the media fetcher downloads, in bytes',
    }),
    'a positive integer number of bytes',
  ),
  MEDIA_UPLOAD_MAX_BYTES: variable(
    Type.Integer({
      minimum: 1,
      default: 50 * 1024 ** 2,
      description:
        'largest source body or image uploaded through the write API (PUT /{repoID}/sources/{id}/body, POST …/images), in bytes (413 past it)',
    }),
    'a positive integer number of bytes',
  ),
  MEDIA_FETCH_TIMEOUT: variable(
    Type.String({ pattern: DURATION, default: '30s', description: 'time limit of one media download, e.g. 30s' }),
    'a duration such as 30, 30s or 2m',
    milliseconds,
  ),
  PASSWORD_QUEUE_MAX: variable(
    Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'password hashes (sign-ins, registrations) that may wait for a hashing thread; past it they are refused with 503 and Retry-After; unset: 256 per hashing thread (a quarter of the cores, at least one)',
      }),
    ),
    'a positive integer',
  ),
  PASSWORD_HASH_MEMORY: variable(
    Type.Integer({
      minimum: 7,
      maximum: 1024,
      default: 19,
      description:
        "argon2id's memory cost in MiB (p = 1); with PASSWORD_HASH_TIME at or above a row of OWASP's table (46 MiB t=1, 19 t=2, 12 t=3, 9 t=4, 7 t=5); a stored hash of another cost is re-hashed at that user's next sign-in",
    }),
    'an integer number of MiB from 7 to 1024',
  ),
  PASSWORD_HASH_TIME: variable(
    Type.Integer({
      minimum: 1,
      maximum: 20,
      default: 2,
      description: "argon2id's time cost (iterations); see PASSWORD_HASH_MEMORY",
    }),
    'an integer from 1 to 20',
  ),
  THROTTLE_LOGIN_PER_IP: variable(
    Type.Optional(
      Type.String({
        pattern: RATE,
        description:
          'failed sign-ins (POST /api/v1/auth/login, the OAuth sign-in form) per client address, e.g. 20/1m; unset: unlimited',
      }),
    ),
    RATE_EXPECTS,
    parseRate,
  ),
  THROTTLE_LOGIN_PER_ACCOUNT: variable(
    Type.Optional(
      Type.String({ pattern: RATE, description: 'failed sign-ins per e-mail address, e.g. 5/15m; unset: unlimited' }),
    ),
    RATE_EXPECTS,
    parseRate,
  ),
  THROTTLE_TOKEN_PER_IP: variable(
    Type.Optional(
      Type.String({
        pattern: RATE,
        description:
          'failed token requests (POST /api/v1/auth/refresh, /api/v1/oauth/token, /api/v1/oauth/revoke) per client address; unset: unlimited',
      }),
    ),
    RATE_EXPECTS,
    parseRate,
  ),
  THROTTLE_TOKEN_PER_CLIENT: variable(
    Type.Optional(
      Type.String({
        pattern: RATE,
        description: 'failed OAuth token and revocation requests per client_id; unset: unlimited',
      }),
    ),
    RATE_EXPECTS,
    parseRate,
  ),
  THROTTLE_REGISTER_PER_IP: variable(
    Type.Optional(
      Type.String({
        pattern: RATE,
        description:
          'registrations, failed or not (POST /api/v1/auth/register, the sign-up form of the authorization pages, /api/v1/oauth/register), per client address; GET /api/v1/oauth/authorize has a budget of the same size; unset: unlimited',
      }),
    ),
    RATE_EXPECTS,
    parseRate,
  ),
  THROTTLE_REPOSITORY_CREATE_PER_IP: variable(
    Type.Optional(
      Type.String({
        pattern: RATE,
        description:
          'repositories created (POST /api/v1/repositories, failed or not) per client address, e.g. 10/1h; unset: unlimited',
      }),
    ),
    RATE_EXPECTS,
    parseRate,
  ),
  QUOTA_REPOSITORIES: variable(
    Type.Integer({
      minimum: 0,
      default: 100,
      description: 'repositories a user may own (403 past it; sysadmins exempt); 0: unlimited',
    }),
    'a non-negative integer (0: unlimited)',
  ),
  QUOTA_REGISTRY_GRAPHS: variable(
    Type.Integer({
      minimum: 0,
      default: 200,
      description:
        'registry graphs a user may own: pushed, or stored by the exports they asked for (403 past it; sysadmins exempt); 0: unlimited',
    }),
    'a non-negative integer (0: unlimited)',
  ),
  QUOTA_REGISTRY_BYTES: variable(
    Type.Integer({
      minimum: 0,
      default: 20 * 1024 ** 3,
      description:
        'bytes of the registry graphs a user owns, counted as for QUOTA_REGISTRY_GRAPHS (403 past it); 0: unlimited',
    }),
    'a non-negative integer number of bytes (0: unlimited)',
  ),
  QUOTA_QUEUED_JOBS: variable(
    Type.Integer({
      minimum: 0,
      default: 100,
      description:
        'jobs a repository may have queued by its users (import, export, POST /{repoID}/jobs; 429 past it); 0: unlimited',
    }),
    'a non-negative integer (0: unlimited)',
  ),
  TRUSTED_PROXIES: variable(
    Type.Integer({
      minimum: 0,
      maximum: 8,
      default: 0,
      description:
        "reverse proxies in front that append to X-Forwarded-For; the client address the throttles key on is the entry the outermost wrote (0: the connection's address)",
    }),
    'an integer from 0 to 8',
  ),
})
