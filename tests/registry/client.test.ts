// The registry client (what export and import jobs use) against the real server, with the
// service token the server signs for itself; and that token's limits: push and pull, nothing else.
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BACKEND, tempDir } from '../helpers/backend.ts'
import { type api, expectError, type Account } from '../helpers/api.ts'
import { runKgs, type TestServer } from '../helpers/server.ts'
import { fixture } from '../helpers/fixture.ts'
import { generateBundle, type GenerateResult } from '../../scripts/gen-bundle.ts'
import { ConfigError, parseEnv } from '../../src/config.ts'
import { REGISTRY_MAX_BYTES_DEFAULT } from '../../src/config-variables.ts'
import { createServiceTokens, SERVICE_SUBJECT } from '../../src/http/auth.ts'
import { createRegistryClient, RegistryClient, RegistryError, type PushMetadata } from '../../src/registry/client.ts'
import { call, expectRecordShape, sha, smallBundle } from './helpers.ts'

let server: TestServer
let http: ReturnType<typeof api>
let admin: Account
let member: Account
let client: RegistryClient
let dir: string
let bundle: GenerateResult
let metadata: PushMetadata

const serviceToken = () =>
  createServiceTokens({ secret: server.env.JWT_SECRET!, issuer: server.context.baseUrl }).token()

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  return Buffer.from(await new Response(stream).arrayBuffer())
}

beforeAll(async () => {
  ;({
    server,
    http,
    users: { admin, member },
  } = await fixture({ users: { admin: 'sysadmin', member: 'member' } }))
  client = server.context.registry
  dir = mkdtempSync(join(tmpdir(), 'kgs-registry-client-'))
  bundle = await generateBundle(join(dir, 'bundle.json.gz'), { facts: 30, dimensions: 4 })
  metadata = {
    name: `Client ${crypto.randomUUID().slice(0, 8)}`,
    description: 'pushed by the client',
    owner: 'whoever@example.com',
    tags: ['client', 'test'],
    sha256: bundle.sha256,
    schema_version: 2,
    source_count: bundle.counts.sources,
    fact_count: bundle.counts.facts,
    concept_count: bundle.counts.concepts,
    summary_count: bundle.counts.concept_summaries,
    synthesis_count: bundle.counts.concept_syntheses,
    report_count: bundle.counts.reports,
    investigation_count: bundle.counts.investigations,
  }
})

afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe(`registry client (${BACKEND})`, () => {
  test('push a file, find, get and download it with the self-minted service token; a re-push stores nothing', async () => {
    const pushed = await client.push(bundle.path, metadata)
    expect(pushed).toEqual({ graph_id: expect.any(String), new: true })

    const record = await client.get(pushed.graph_id)
    expectRecordShape(record as unknown as Record<string, unknown>)
    expect(record).toMatchObject({
      id: pushed.graph_id,
      name: metadata.name,
      description: metadata.description,
      owner: SERVICE_SUBJECT,
      owner_id: null,
      tags: ['client', 'test'],
      sha256: bundle.sha256,
      schema_version: 2,
      bytes: readFileSync(bundle.path).byteLength,
      source_count: metadata.source_count,
      fact_count: 30,
      concept_count: metadata.concept_count,
      summary_count: metadata.summary_count,
      synthesis_count: metadata.synthesis_count,
      report_count: metadata.report_count,
      investigation_count: metadata.investigation_count,
    })
    expect(await client.find(metadata.name, bundle.sha256)).toEqual(record)
    expect(await client.find(metadata.name, sha('another'))).toBeUndefined()
    expect(await client.find(`${metadata.name} and more`, bundle.sha256)).toBeUndefined()
    expect((await bytesOf(await client.download(pushed.graph_id))).equals(readFileSync(bundle.path))).toBe(true)

    expect(await client.push(bundle.path, metadata)).toEqual({ graph_id: pushed.graph_id, new: false })
  })

  test('push a stream: non-ASCII metadata travels as UTF-8; line breaks, which headers cannot carry, become spaces', async () => {
    const name = `Überblick 東京 ${crypto.randomUUID().slice(0, 8)}`
    const bytes = smallBundle(name)
    async function* chunks() {
      yield bytes.subarray(0, 10)
      yield bytes.subarray(10)
    }
    const pushed = await client.push(chunks(), { name, description: 'première ligne\nseconde ligne', tags: ['géo'] })
    expect(pushed.new).toBe(true)
    expect(await client.get(pushed.graph_id)).toMatchObject({
      name,
      description: 'première ligne seconde ligne',
      tags: ['géo'],
      sha256: null,
      fact_count: 0,
    })
    expect((await bytesOf(await client.download(pushed.graph_id))).equals(bytes)).toBe(true)

    const stream = new Response(bytes).body!
    expect((await client.push(stream, { name: `${name} (stream)` })).new).toBe(true)
  })

  test('list pages through Link; unknown graphs: get is undefined, download a 404 RegistryError', async () => {
    const run = crypto.randomUUID().slice(0, 8)
    for (let i = 0; i < 3; i++) await client.push(smallBundle(`${run}${i}`), { name: `List ${run} ${i}` })
    const first = await client.list({ q: run, limit: 2 })
    expect(first.graphs.map((g) => g.name)).toEqual([`List ${run} 0`, `List ${run} 1`])
    expect(first.next).toStartWith(server.url)
    const second = await client.list(first.next!)
    expect(second.graphs.map((g) => g.name)).toEqual([`List ${run} 2`])
    expect(second.next).toBeUndefined()

    const unknown = crypto.randomUUID()
    expect(await client.get(unknown)).toBeUndefined()
    const error = await client.download(unknown).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RegistryError)
    expect(error).toMatchObject({ status: 404, message: 'registry answered 404 not found' })
  })

  test('REGISTRY_TOKEN: the client pushes as that identity; a token without the permission gets the 403 as a RegistryError', async () => {
    const asAdmin = createRegistryClient(
      { registryUrl: server.url, registryToken: admin.token, jwtSecret: 'unused' },
      'http://127.0.0.1:9',
    )
    const pushed = await asAdmin.push(smallBundle('as admin'), { name: `As admin ${crypto.randomUUID()}` })
    expect(await asAdmin.get(pushed.graph_id)).toMatchObject({ owner: admin.email, owner_id: admin.id })

    const asMember = createRegistryClient({ registryUrl: server.url, registryToken: member.token }, server.url)
    const error = await asMember.push(smallBundle('as member'), { name: 'As member' }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 403, message: 'registry answered 403 forbidden' })

    const unreachable = new RegistryClient({ url: 'http://127.0.0.1:9', token: 't' })
    expect(await unreachable.get(crypto.randomUUID()).catch((e: unknown) => e)).toMatchObject({
      status: 0,
      message: expect.stringMatching(/^registry http:\/\/127\.0\.0\.1:9 unreachable/),
    })
  })
})

describe(`the service token (${BACKEND})`, () => {
  test('it pushes and pulls, and may do nothing else: every other route is 401, deleting a graph 403', async () => {
    const token = await serviceToken()
    const repository = (await http.post('/api/v1/repositories', { name: 'Service token' }, member.token)).body
    const graph = (await client.push(smallBundle('service'), { name: `Service ${crypto.randomUUID()}` })).graph_id

    expect((await call(server, 'GET', '/api/v1/graphs', token)).status).toBe(200)
    expect((await call(server, 'GET', `/api/v1/graphs/${graph}`, token)).status).toBe(200)
    for (const [method, path] of [
      ['GET', '/api/v1/users/me'],
      ['GET', `/api/v1/users/${admin.id}`],
      ['GET', '/api/v1/permissions'],
      ['GET', '/api/v1/repositories'],
      ['GET', '/api/v1/admin/users'],
      ['GET', `/${repository.slug}`],
      ['GET', `/${repository.slug}/facts`],
      ['GET', '/api/v1/jobs'],
      ['POST', '/api/v1/auth/logout'],
    ]) {
      const res = await call(server, method!, path!, token)
      expectError(
        res,
        401,
        'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
      )
    }
    expectError(
      await http.post('/api/v1/repositories', { name: 'By the service' }, token),
      401,
      'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
    )
    // Not even the graphs it pushed itself.
    expectError(
      await call(server, 'DELETE', `/api/v1/graphs/${graph}`, token),
      403,
      'permission denied: only the owner of a graph or a sysadmin may delete it',
    )
  })

  test("acting for a user (an export's push): the graph is theirs by e-mail and id, so they may delete it", async () => {
    const pushed = await client.push(
      smallBundle('for member'),
      { name: `For member ${crypto.randomUUID()}` },
      { onBehalfOf: member.id },
    )
    expect(await client.get(pushed.graph_id)).toMatchObject({ owner: member.email, owner_id: member.id })
    expect((await call(server, 'DELETE', `/api/v1/graphs/${pushed.graph_id}`, member.token)).status).toBe(200)

    const tokens = createServiceTokens({ secret: server.env.JWT_SECRET!, issuer: server.context.baseUrl })
    const forMember = await tokens.token(member.id)
    expect(await tokens.token(member.id)).toBe(forMember)
    expect(await tokens.token()).not.toBe(forMember)
    expect(JSON.parse(Buffer.from(forMember.split('.')[1]!, 'base64url').toString())).toMatchObject({
      sub: 'kgs',
      typ: 'service',
      obo: member.id,
    })
    expect(await tokens.authenticate(forMember)).toEqual({
      userId: 'kgs',
      grants: ['registry:push', 'registry:pull'],
      onBehalfOf: member.id,
    })

    const error = await client
      .push(smallBundle('for nobody'), { name: 'For nobody' }, { onBehalfOf: crypto.randomUUID() })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 403, message: 'registry answered 403 forbidden' })
  })

  test('only tokens this server would mint pass: another secret, another issuer or a longer lifetime are 401', async () => {
    const forged = [
      await createServiceTokens({ secret: 'x'.repeat(40), issuer: server.context.baseUrl }).token(),
      await createServiceTokens({ secret: server.env.JWT_SECRET!, issuer: 'https://elsewhere.example.com' }).token(),
      await createServiceTokens({
        secret: server.env.JWT_SECRET!,
        issuer: server.context.baseUrl,
        ttlSeconds: 86_400,
      }).token(),
    ]
    for (const token of forged)
      expectError(
        await call(server, 'GET', '/api/v1/graphs', token),
        401,
        'invalid access token (revoked, signed out, or not issued by this server): sign in again (POST /api/v1/auth/login)',
      )
  })

  test('minted on demand, reused, and replaced a minute before it expires', async () => {
    const tokens = createServiceTokens({ secret: server.env.JWT_SECRET!, issuer: server.context.baseUrl })
    const first = await tokens.token()
    expect(await tokens.token()).toBe(first)
    const claims = JSON.parse(Buffer.from(first.split('.')[1]!, 'base64url').toString())
    expect(claims).toEqual({
      iss: server.context.baseUrl,
      sub: 'kgs',
      typ: 'service',
      jti: expect.any(String),
      iat: expect.any(Number),
      exp: claims.iat + 300,
    })
    try {
      setSystemTime(new Date((claims.iat + 239) * 1000))
      expect(await tokens.token()).toBe(first)
      setSystemTime(new Date((claims.iat + 241) * 1000))
      const second = await tokens.token()
      expect(second).not.toBe(first)
      expect(await tokens.authenticate(second)).toEqual({ userId: 'kgs', grants: ['registry:push', 'registry:pull'] })
    } finally {
      setSystemTime()
    }
  })
})

describe('registry configuration', () => {
  test('REGISTRY_URL, REGISTRY_TOKEN and REGISTRY_MAX_BYTES: defaults, values, errors', () => {
    expect(parseEnv({})).toMatchObject({
      registryUrl: undefined,
      registryToken: undefined,
      registryMaxBytes: REGISTRY_MAX_BYTES_DEFAULT,
    })
    expect(REGISTRY_MAX_BYTES_DEFAULT).toBe(17_179_869_184)
    expect(
      parseEnv({
        REGISTRY_URL: 'https://registry.example.com/kgs/',
        REGISTRY_TOKEN: 'secret-token',
        REGISTRY_MAX_BYTES: '1048576',
      }),
    ).toMatchObject({
      registryUrl: 'https://registry.example.com/kgs',
      registryToken: 'secret-token',
      registryMaxBytes: 1_048_576,
    })
    expect(() => parseEnv({ REGISTRY_URL: 'ftp://x' })).toThrow(
      new ConfigError(
        'invalid REGISTRY_URL: expected an absolute http(s) URL without query or fragment, got "ftp://x"',
      ),
    )
    expect(() => parseEnv({ REGISTRY_MAX_BYTES: '16G' })).toThrow(
      new ConfigError('invalid REGISTRY_MAX_BYTES: expected a positive integer number of bytes, got "16G"'),
    )
    expect(() => parseEnv({ REGISTRY_MAX_BYTES: '0' })).toThrow(ConfigError)
  })

  test('the self-minted service token goes only to this server: another REGISTRY_URL needs REGISTRY_TOKEN', async () => {
    const secret = 'x'.repeat(32)
    expect(() =>
      createRegistryClient(
        { registryUrl: 'https://registry.example.com', jwtSecret: secret },
        'https://kgs.example.com',
      ),
    ).toThrow(
      new ConfigError(
        "REGISTRY_URL https://registry.example.com is another server than BASE_URL https://kgs.example.com: set REGISTRY_TOKEN (this server's own service token is only sent to itself)",
      ),
    )
    // Another port is another server too; the same origin under a path is this one.
    expect(() =>
      createRegistryClient(
        { registryUrl: 'https://kgs.example.com:8443', jwtSecret: secret },
        'https://kgs.example.com',
      ),
    ).toThrow(ConfigError)
    expect(
      createRegistryClient({ registryUrl: 'https://kgs.example.com/', jwtSecret: secret }, 'https://kgs.example.com'),
    ).toBeInstanceOf(RegistryClient)
    expect(
      createRegistryClient(
        { registryUrl: 'https://registry.example.com', registryToken: 'theirs', jwtSecret: secret },
        'https://kgs.example.com',
      ),
    ).toBeInstanceOf(RegistryClient)
    // And kgs serve stops with that one line.
    const result = await runKgs(['serve'], {
      JWT_SECRET: secret,
      REGISTRY_URL: 'https://registry.example.com',
      DATA_DIR: tempDir('kgs-registry-config-'),
      PORT: '0',
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('REGISTRY_URL https://registry.example.com is another server than BASE_URL')
  })
})
