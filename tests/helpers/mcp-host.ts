// An MCP host for tests: what it keeps of its OAuth state, in memory, as the SDK clients' auth
// provider (OAuthClientProvider): the registered client, the tokens, the PKCE verifier and the
// authorization URL it was sent to, which the test then opens in Chromium as the person would;
// and a conversation of the official 2.x client with a token in hand.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'

/** A 2026-07-28 conversation with the MCP endpoint at `url` as `token`'s holder (through `fetchVia`, if given). */
export async function conversation(url: string, token: string, fetchVia?: typeof fetch): Promise<Client> {
  const client = new Client(
    { name: 'kgs test host', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  )
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      ...(fetchVia ? { fetch: fetchVia } : {}),
    }),
  )
  return client
}

/** What a host answers when a server asks the person (elicitation/create): the action and the form's content. */
export type Elicit = (request: { mode?: string; message: string; requestedSchema?: unknown }) => {
  action: 'accept' | 'decline' | 'cancel'
  content?: Record<string, string | number | boolean>
}

/** The two official clients, one per protocol revision, each as `token`'s holder; `elicit`: the host can ask the person. */
export const CLIENTS = [
  {
    revision: '2025-11-25',
    sdk: '@modelcontextprotocol/sdk 1.x',
    async connect(url: string, token: string, elicit?: Elicit): Promise<Client> {
      const client = new ClientV1(
        { name: 'kgs test host', version: '1' },
        { capabilities: elicit ? { elicitation: { form: {} } } : {} },
      )
      if (elicit) client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params as never))
      await client.connect(
        new TransportV1(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      )
      // The two clients' methods used in tests take and answer the same shapes.
      return client as unknown as Client
    },
  },
  {
    revision: '2026-07-28',
    sdk: '@modelcontextprotocol/client 2.x',
    async connect(url: string, token: string, elicit?: Elicit): Promise<Client> {
      const client = new Client(
        { name: 'kgs test host', version: '1' },
        {
          versionNegotiation: { mode: { pin: '2026-07-28' } },
          capabilities: elicit ? { elicitation: { form: {} } } : {},
        },
      )
      if (elicit) client.setRequestHandler('elicitation/create', async (request) => elicit(request.params as never))
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      )
      return client
    },
  },
] as const

export type ToolResult = {
  isError?: boolean
  content: { type: string; text?: string; uri?: string }[]
  structuredContent?: Record<string, any>
}

/** A tools/call and its result. */
export const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolResult

export class InMemoryHostProvider {
  client?: OAuthClientInformationMixed
  saved?: OAuthTokens
  verifier = ''
  authorizationUrl?: URL
  constructor(
    readonly redirectUrl: string,
    private readonly clientName: string,
  ) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(client: OAuthClientInformationMixed) {
    this.client = client
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}
