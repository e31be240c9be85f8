import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig, parseEnv, resolveJwtSecret } from '../src/config.ts'
import { tempDir } from './helpers/backend.ts'
import { CONFIG_DOC_PATH, configMarkdown } from '../src/config-reference.ts'

describe('parseEnv', () => {
  test('defaults', () => {
    const config = parseEnv({})
    expect(config.port).toBe(8080)
    expect(config.host).toBe('localhost')
    expect(config.dataDir).toBe(join(process.cwd(), 'data'))
    expect(config.databaseUrl).toBeUndefined()
    expect(config.jwtSecret).toBeUndefined()
    expect(config.baseUrl).toBeUndefined()
    expect(config.logLevel).toBe('info')
    expect(config.bodyLimit).toBe(1_048_576)
    expect(config.accessTokenTtl).toBe(900)
    expect(config.sessionTtl).toBe(30 * 86400)
    expect(config.workers).toBe(2)
    expect(config.lancedbUri).toBe(join(process.cwd(), 'data', 'lance'))
    expect(config.embedding).toBeUndefined()
    expect(config.s3).toBeUndefined()
    // Unset: 256 waiting hashes per hashing thread (src/accounts/passwords.ts).
    expect(config.passwordQueueMax).toBeUndefined()
    expect(parseEnv({ PASSWORD_QUEUE_MAX: '64' }).passwordQueueMax).toBe(64)
  })

  test('the model extractor is configured as a whole, with bounds that default', () => {
    expect(parseEnv({}).llm).toBeUndefined()
    expect(parseEnv({ LLM_URL: 'http://localhost:11434/v1/', LLM_MODEL: 'llama3.2' }).llm).toEqual({
      url: 'http://localhost:11434/v1',
      model: 'llama3.2',
      apiKey: undefined,
      concurrency: 4,
      timeoutMs: 120_000,
      maxTokensPerSource: 1_000_000,
    })
    expect(
      parseEnv({
        LLM_URL: 'https://api.example.com/v1',
        LLM_MODEL: 'm',
        LLM_API_KEY: 'sk-k',
        LLM_CONCURRENCY: '8',
        LLM_TIMEOUT: '2m',
        LLM_MAX_TOKENS_PER_SOURCE: '0',
      }).llm,
    ).toEqual({
      url: 'https://api.example.com/v1',
      model: 'm',
      apiKey: 'sk-k',
      concurrency: 8,
      timeoutMs: 120_000,
      maxTokensPerSource: 0,
    })
    expect(() => parseEnv({ LLM_URL: 'http://localhost:11434/v1' })).toThrow(
      'invalid LLM_MODEL: required when LLM_URL is set',
    )
    expect(() => parseEnv({ LLM_API_KEY: 'sk-secret-key' })).toThrow(
      'invalid LLM_URL: required when LLM_MODEL or LLM_API_KEY is set',
    )
    expect(() => parseEnv({ LLM_URL: 'https://key:sk-secret@api.example.com/v1?x=1', LLM_MODEL: 'm' })).toThrow(
      'invalid LLM_URL: expected an absolute http(s) URL without query or fragment, got "https://api.example.com/v1?x=1"',
    )
    expect(() => parseEnv({ LLM_URL: 'http://localhost:11434/v1', LLM_MODEL: 'm', LLM_CONCURRENCY: '0' })).toThrow(
      'invalid LLM_CONCURRENCY: expected an integer from 1 to 64, got "0"',
    )
  })

  test('embedding provider and S3 storage are configured as a whole', () => {
    expect(
      parseEnv({ EMBEDDING_URL: 'http://127.0.0.1:9/v1', EMBEDDING_MODEL: 'm', EMBEDDING_API_KEY: 'k' }).embedding,
    ).toEqual({ url: 'http://127.0.0.1:9/v1', model: 'm', apiKey: 'k' })
    expect(() => parseEnv({ EMBEDDING_URL: 'http://127.0.0.1:9/v1' })).toThrow(
      'invalid EMBEDDING_MODEL: required when EMBEDDING_URL is set',
    )
    expect(() => parseEnv({ EMBEDDING_MODEL: 'm' })).toThrow(
      'invalid EMBEDDING_URL: required when EMBEDDING_MODEL or EMBEDDING_API_KEY is set',
    )
    expect(parseEnv({ S3_BUCKET: 'kgs-blobs', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_PREFIX: 'prod/' }).s3).toEqual({
      bucket: 'kgs-blobs',
      endpoint: 'http://127.0.0.1:9000',
      region: undefined,
      accessKeyId: undefined,
      secretAccessKey: undefined,
      prefix: 'prod/',
    })
    expect(() => parseEnv({ S3_ENDPOINT: 'http://127.0.0.1:9000' })).toThrow(
      'invalid S3_BUCKET: required when S3_ENDPOINT is set',
    )
    expect(parseEnv({ LANCEDB_URI: 's3://bucket/lance', WORKERS: '0' })).toMatchObject({
      lancedbUri: 's3://bucket/lance',
      workers: 0,
    })
  })

  test("the near-duplicate merge's similarity: unset (the embedder's own), or a number from 0 to 1", () => {
    expect(parseEnv({}).factMergeSimilarity).toBeUndefined()
    expect(parseEnv({ FACT_MERGE_SIMILARITY: '0.95' }).factMergeSimilarity).toBe(0.95)
    expect(parseEnv({ FACT_MERGE_SIMILARITY: '1' }).factMergeSimilarity).toBe(1)
    for (const value of ['1.5', '-0.1', 'high'])
      expect(() => parseEnv({ FACT_MERGE_SIMILARITY: value })).toThrow(
        `invalid FACT_MERGE_SIMILARITY: expected a number from 0 to 1, got "${value}"`,
      )
  })

  test('one configuration for object storage: an s3:// LANCEDB_URI is reached with the S3_* settings', () => {
    const s3 = {
      S3_BUCKET: 'kgs-blobs',
      S3_ENDPOINT: 'http://127.0.0.1:7480',
      S3_REGION: 'eu-west-3',
      S3_ACCESS_KEY_ID: 'AKIAKGS',
      S3_SECRET_ACCESS_KEY: 'secret-key',
    }
    expect(parseEnv({ ...s3, LANCEDB_URI: 's3://kgs-vectors/lance' }).lancedbStorageOptions).toEqual({
      aws_endpoint: 'http://127.0.0.1:7480',
      aws_region: 'eu-west-3',
      aws_access_key_id: 'AKIAKGS',
      aws_secret_access_key: 'secret-key',
      allow_http: 'true',
    })
    // An https endpoint needs no permission; settings not given are left to LanceDB's own defaults.
    expect(
      parseEnv({ S3_BUCKET: 'kgs-blobs', S3_ENDPOINT: 'https://s3.example.com', LANCEDB_URI: 's3://kgs-vectors/lance' })
        .lancedbStorageOptions,
    ).toEqual({ aws_endpoint: 'https://s3.example.com' })
    // A local directory, or no S3_* settings: nothing to hand over.
    expect(parseEnv({ ...s3, LANCEDB_URI: '/var/lib/kgs/lance' }).lancedbStorageOptions).toBeUndefined()
    expect(parseEnv({ LANCEDB_URI: 's3://kgs-vectors/lance' }).lancedbStorageOptions).toBeUndefined()
  })

  test('durations take seconds or a unit', () => {
    expect(parseEnv({ ACCESS_TOKEN_TTL: '90' }).accessTokenTtl).toBe(90)
    expect(parseEnv({ ACCESS_TOKEN_TTL: '90s' }).accessTokenTtl).toBe(90)
    expect(parseEnv({ ACCESS_TOKEN_TTL: '2m' }).accessTokenTtl).toBe(120)
    expect(parseEnv({ SESSION_TTL: '12h' }).sessionTtl).toBe(43200)
    expect(() => parseEnv({ SESSION_TTL: '0' })).toThrow(
      'invalid SESSION_TTL: expected a duration such as 3600, 12h or 30d, got "0"',
    )
    expect(() => parseEnv({ ACCESS_TOKEN_TTL: '15 minutes' })).toThrow(/^invalid ACCESS_TOKEN_TTL/)
    expect(parseEnv({}).sessionIdleTtl).toBeUndefined()
    expect(parseEnv({ SESSION_IDLE_TTL: '8h' }).sessionIdleTtl).toBe(28800)
    // Clients refresh when their access token ends, so a shorter idle limit would end every session.
    expect(() => parseEnv({ SESSION_IDLE_TTL: '15m' })).toThrow(
      'invalid SESSION_IDLE_TTL: must be longer than ACCESS_TOKEN_TTL',
    )
    expect(parseEnv({ SESSION_IDLE_TTL: '15m', ACCESS_TOKEN_TTL: '5m' }).sessionIdleTtl).toBe(900)
    expect(() => parseEnv({ SESSION_IDLE_TTL: 'soon' })).toThrow(
      'invalid SESSION_IDLE_TTL: expected a duration such as 3600, 12h or 30d, got "soon"',
    )
    expect(parseEnv({}).jobLeaseMs).toBe(30_000)
    expect(parseEnv({ JOB_LEASE: '2s' }).jobLeaseMs).toBe(2_000)
  })

  test('slow bodies: a time limit for JSON and form bodies, a minimum rate for uploads over the same window', () => {
    expect(parseEnv({})).toMatchObject({
      bodyTimeoutMs: 30_000,
      uploadPace: { minBytesPerSecond: 10_240, windowMs: 30_000 },
    })
    expect(parseEnv({ BODY_TIMEOUT: '2m', UPLOAD_MIN_RATE: '1' })).toMatchObject({
      bodyTimeoutMs: 120_000,
      uploadPace: { minBytesPerSecond: 1, windowMs: 120_000 },
    })
    expect(() => parseEnv({ BODY_TIMEOUT: '0' })).toThrow(
      'invalid BODY_TIMEOUT: expected a duration such as 30, 30s or 2m, got "0"',
    )
    expect(() => parseEnv({ UPLOAD_MIN_RATE: '0' })).toThrow(
      'invalid UPLOAD_MIN_RATE: expected a positive integer number of bytes per second, got "0"',
    )
    expect(() => parseEnv({ UPLOAD_MIN_RATE: '1.5' })).toThrow(/^invalid UPLOAD_MIN_RATE/)
  })

  test('imports and the media fetcher: limits, and private addresses refused unless allowed', () => {
    expect(parseEnv({})).toMatchObject({
      importMaxBytes: 16 * 1024 ** 3,
      importMaxExpandedBytes: 16 * 1024 ** 3,
      mediaFetch: { allowPrivate: false, maxBytes: 50 * 1024 ** 2, timeoutMs: 30_000 },
    })
    expect(
      parseEnv({ IMPORT_MAX_BYTES: '1048576', MEDIA_FETCH_ALLOW_PRIVATE: 'true', MEDIA_FETCH_TIMEOUT: '2m' }),
    ).toMatchObject({
      importMaxBytes: 1_048_576,
      mediaFetch: { allowPrivate: true, timeoutMs: 120_000 },
    })
    expect(() => parseEnv({ MEDIA_FETCH_ALLOW_PRIVATE: 'sometimes' })).toThrow(
      'invalid MEDIA_FETCH_ALLOW_PRIVATE: expected true or false, got "sometimes"',
    )
  })

  test("argon2id's cost: OWASP's first row by default, any row or above, never below the table", () => {
    expect(parseEnv({}).passwordCost).toEqual({ memoryKiB: 19 * 1024, timeCost: 2 })
    // Every row of OWASP's table, and more memory than a row asks.
    for (const [memory, time] of [
      ['46', '1'],
      ['19', '2'],
      ['12', '3'],
      ['9', '4'],
      ['7', '5'],
      ['7', '9'],
      ['64', '2'],
    ] as const) {
      expect(parseEnv({ PASSWORD_HASH_MEMORY: memory, PASSWORD_HASH_TIME: time }).passwordCost).toEqual({
        memoryKiB: Number(memory) * 1024,
        timeCost: Number(time),
      })
    }
    expect(() => parseEnv({ PASSWORD_HASH_MEMORY: '45', PASSWORD_HASH_TIME: '1' })).toThrow(
      "invalid PASSWORD_HASH_MEMORY: 45 MiB with PASSWORD_HASH_TIME 1 is below OWASP's argon2id table (at least 46 MiB at t=1)",
    )
    expect(() => parseEnv({ PASSWORD_HASH_MEMORY: '12' })).toThrow(
      /^invalid PASSWORD_HASH_MEMORY: 12 MiB with PASSWORD_HASH_TIME 2 is below/,
    )
    expect(() => parseEnv({ PASSWORD_HASH_MEMORY: '8', PASSWORD_HASH_TIME: '4' })).toThrow(/at least 9 MiB at t=4/)
    expect(() => parseEnv({ PASSWORD_HASH_MEMORY: '6', PASSWORD_HASH_TIME: '10' })).toThrow(
      'invalid PASSWORD_HASH_MEMORY: expected an integer number of MiB from 7 to 1024, got "6"',
    )
    expect(() => parseEnv({ PASSWORD_HASH_TIME: '0' })).toThrow(
      'invalid PASSWORD_HASH_TIME: expected an integer from 1 to 20, got "0"',
    )
  })

  test('reads and converts values; empty counts as unset; trailing slash of BASE_URL dropped', () => {
    const config = parseEnv({
      PORT: '9000',
      HOST: '127.0.0.1',
      BASE_URL: 'https://kgs.example.com/',
      LOG_LEVEL: 'debug',
      DATABASE_URL: 'postgres://u@h/db',
      BODY_LIMIT: '2048',
      JWT_SECRET: '',
    })
    expect(config).toMatchObject({
      port: 9000,
      host: '127.0.0.1',
      baseUrl: 'https://kgs.example.com',
      logLevel: 'debug',
      databaseUrl: 'postgres://u@h/db',
      bodyLimit: 2048,
    })
    expect(config.jwtSecret).toBeUndefined()
  })

  const bad: [string, string, RegExp][] = [
    ['PORT', 'abc', /^invalid PORT: expected an integer from 0 to 65535, got "abc"$/],
    ['PORT', '70000', /^invalid PORT: expected an integer from 0 to 65535/],
    ['PORT', '80.5', /^invalid PORT/],
    ['BASE_URL', 'kgs.example.com', /^invalid BASE_URL: expected an absolute http\(s\) URL/],
    ['BASE_URL', 'https://x.example/?a=1', /^invalid BASE_URL/],
    ['DATABASE_URL', 'mysql://x', /^invalid DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL/],
    ['LOG_LEVEL', 'loud', /^invalid LOG_LEVEL: expected one of debug, info, warn, error, silent, got "loud"$/],
    ['BODY_LIMIT', '10', /^invalid BODY_LIMIT: expected an integer number of bytes, at least 1024/],
    ['WORKERS', '-1', /^invalid WORKERS: expected an integer from 0 to 64, got "-1"$/],
    ['EMBEDDING_URL', 'ftp://x', /^invalid EMBEDDING_URL: expected an absolute http\(s\) URL/],
    ['S3_PREFIX', 'a b', /^invalid S3_PREFIX/],
    ['PASSWORD_QUEUE_MAX', '0', /^invalid PASSWORD_QUEUE_MAX: expected a positive integer, got "0"$/],
    ['PASSWORD_QUEUE_MAX', '2.5', /^invalid PASSWORD_QUEUE_MAX/],
  ]
  for (const [name, value, message] of bad) {
    test(`rejects ${name}=${value} with one line naming it`, () => {
      expect(() => parseEnv({ [name]: value })).toThrow(ConfigError)
      expect(() => parseEnv({ [name]: value })).toThrow(message)
    })
  }

  test('a short JWT_SECRET is refused without echoing it', () => {
    let message = ''
    try {
      parseEnv({ JWT_SECRET: 'hunter2' })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toBe('invalid JWT_SECRET: expected at least 32 characters, got 7 characters')
  })
})

describe('JWT secret', () => {
  test('generated once into DATA_DIR/secret with mode 0600, then reused', () => {
    const dataDir = tempDir()
    const first = loadConfig({ DATA_DIR: dataDir }).jwtSecret
    const path = join(dataDir, 'secret')
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(first.length).toBeGreaterThanOrEqual(43) // 256 bits, base64url
    expect(loadConfig({ DATA_DIR: dataDir }).jwtSecret).toBe(first)
    expect(readFileSync(path, 'utf8').trim()).toBe(first)
  })

  test('JWT_SECRET wins and no file is written', () => {
    const dataDir = tempDir()
    const secret = 'x'.repeat(40)
    expect(resolveJwtSecret(parseEnv({ DATA_DIR: dataDir, JWT_SECRET: secret }))).toBe(secret)
    expect(existsSync(join(dataDir, 'secret'))).toBe(false)
  })

  test('a secret file that is too short is refused', () => {
    const dataDir = tempDir()
    writeFileSync(join(dataDir, 'secret'), 'short\n', { mode: 0o600 })
    expect(() => loadConfig({ DATA_DIR: dataDir })).toThrow(/expected at least 32 characters/)
  })
})

describe('configuration reference', () => {
  test('docs/configuration.md is the one generated from EnvSchema (bun scripts/docs-config.ts)', () => {
    expect(readFileSync(join(import.meta.dir, '..', CONFIG_DOC_PATH), 'utf8')).toBe(configMarkdown())
  })
})
