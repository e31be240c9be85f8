// An MCP host that publishes a Client ID Metadata Document, as the official SDK clients support
// it (their provider's `clientMetadataUrl`): discovering `client_id_metadata_document_supported`,
// each SDK skips registration and uses the document's https URL as its client_id; kgs fetches the
// document (over HTTPS on loopback, the test certificate trusted through NODE_EXTRA_CA_CERTS and
// loopback reached through CLIENT_METADATA_FETCH_ALLOW_PRIVATE, as in tests/oauth/client-metadata),
// the person signs in and consents in headless Chromium, and the conversation goes on.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UnauthorizedError as UnauthorizedV1 } from '@modelcontextprotocol/sdk/client/auth.js'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
  UnauthorizedError as UnauthorizedV2,
  type OAuthDiscoveryState,
} from '@modelcontextprotocol/client'
import type { Browser } from 'playwright-core'
import { BACKEND } from '../helpers/backend.ts'
import { api, uniqueEmail } from '../helpers/api.ts'
import { launchBrowser, listenOnLoopback, signInAndDecide, type LoopbackListener } from '../helpers/browser.ts'
import {
  clientDocument,
  startDocumentServer,
  startServerTrusting,
  testCertificate,
  type DocumentServer,
} from '../helpers/client-metadata.ts'
import type { ServerProcess } from '../helpers/server.ts'
import { InMemoryHostProvider } from '../helpers/mcp-host.ts'
import { rejected } from '../helpers/promises.ts'

const account = { email: uniqueEmail('cimd-host'), password: 'correct horse battery' }
const certificate = testCertificate()
let docs: DocumentServer
let kgs: ServerProcess
let browser: Browser
let listener: LoopbackListener
let mcpUrl: URL
let callback: string

beforeAll(async () => {
  listener = listenOnLoopback('127.0.0.1')
  callback = `http://127.0.0.1:${listener.port}/callback`
  // One document per revision, so that each SDK's flow fetches its own.
  docs = startDocumentServer(certificate, (path, origin) =>
    /^\/hosts\/[\w-]+\.json$/.test(path)
      ? Response.json(clientDocument(origin + path, callback, { client_name: 'SDK host' }))
      : undefined,
  )
  kgs = await startServerTrusting(certificate)
  mcpUrl = new URL(`${kgs.url}/api/v1/mcp`)
  expect((await api(kgs.url).post('/api/v1/auth/register', account)).status).toBe(201)
  browser = await launchBrowser()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  listener?.stop()
  docs?.stop()
  await kgs?.stop()
})

/** An MCP host that names its metadata document instead of registering. */
class DocumentedHost extends InMemoryHostProvider {
  discovery?: OAuthDiscoveryState
  constructor(
    redirectUrl: string,
    readonly clientMetadataUrl: string,
  ) {
    super(redirectUrl, 'SDK host')
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state
  }
  discoveryState() {
    return this.discovery
  }
}

const REVISIONS = [
  {
    revision: '2025-11-25',
    unauthorized: UnauthorizedV1,
    connect: async (provider: DocumentedHost) => {
      const client = new ClientV1({ name: 'cimd host', version: '1' })
      await client.connect(new TransportV1(mcpUrl, { authProvider: provider }))
      return client
    },
    finishAuth: (provider: DocumentedHost, params: URLSearchParams) =>
      new TransportV1(mcpUrl, { authProvider: provider }).finishAuth(params.get('code')!),
  },
  {
    revision: '2026-07-28',
    unauthorized: UnauthorizedV2,
    connect: async (provider: DocumentedHost) => {
      const client = new ClientV2(
        { name: 'cimd host', version: '1' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      )
      await client.connect(new TransportV2(mcpUrl, { authProvider: provider }))
      return client
    },
    finishAuth: (provider: DocumentedHost, params: URLSearchParams) =>
      new TransportV2(mcpUrl, { authProvider: provider }).finishAuth(params),
  },
]

describe(`MCP hosts known by their metadata document (${BACKEND})`, () => {
  for (const { revision, unauthorized, connect, finishAuth } of REVISIONS) {
    test(`${revision}: the SDK's clientMetadataUrl completes the flow without registering`, async () => {
      const documentUrl = `${docs.origin}/hosts/${revision}.json`
      const provider = new DocumentedHost(callback, documentUrl)
      expect(await rejected(connect(provider))).toThrow(unauthorized)
      const asked = provider.authorizationUrl!
      expect(asked.searchParams.get('client_id')).toBe(documentUrl)

      const redirect = listener.nextRedirect()
      const context = await browser.newContext()
      try {
        const page = await context.newPage()
        await page.goto(asked.href)
        // The page names the host that publishes the document, beside the name it chose.
        expect(await page.locator('main p').first().textContent()).toContain(
          `SDK host from ${new URL(docs.origin).host}`,
        )
        await signInAndDecide(page, account, 'Allow')
      } finally {
        await context.close()
      }
      await finishAuth(provider, (await redirect).searchParams)
      const claims = JSON.parse(Buffer.from(provider.saved!.access_token.split('.')[1]!, 'base64url').toString())
      expect(claims.client_id).toBe(documentUrl)
      expect(docs.hits).toContain(`/hosts/${revision}.json`)

      const conversation = await connect(provider)
      const { tools } = await conversation.listTools()
      expect(tools.map((tool) => tool.name)).toContain('list_repositories')
      await conversation.close()
    }, 60_000)
  }
})
