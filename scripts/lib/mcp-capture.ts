// The very request an official MCP SDK client sends for a tools/call: the 2025-11-25 revision by
// @modelcontextprotocol/sdk 1.x, 2026-07-28 by @modelcontextprotocol/client 2.x. Captured as it
// goes out (the call itself is answered by the server at `url`), to be replayed: by the MCP
// benchmark, and by the test comparing kgs's fast path with the SDK's answers.
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'

export type McpRevision = '2025-11-25' | '2026-07-28'

/** The headers and body of `tools/call name(args)` as an SDK client of `revision` sends it to `url` as `bearer`. */
export async function capturedToolCall(
  url: URL,
  bearer: string,
  revision: McpRevision,
  name: string,
  args: Record<string, unknown>,
): Promise<{ headers: Headers; body: string }> {
  let captured: { headers: Headers; body: string } | undefined
  const capture = (async (input: string | URL | Request, init?: RequestInit) => {
    if (typeof init?.body === 'string' && init.body.includes('"tools/call"'))
      captured = { headers: new Headers(init.headers), body: init.body }
    return fetch(input, init)
  }) as typeof fetch
  const options = { requestInit: { headers: { authorization: `Bearer ${bearer}` } }, fetch: capture }
  const info = { name: 'kgs-capture', version: '1' }
  const client =
    revision === '2025-11-25'
      ? new ClientV1(info)
      : new Client(info, { versionNegotiation: { mode: { pin: revision } } })
  await client.connect(
    revision === '2025-11-25' ? new TransportV1(url, options) : new StreamableHTTPClientTransport(url, options),
  )
  await client.callTool({ name, arguments: args })
  await client.close()
  if (!captured) throw new Error(`the ${revision} client sent no tools/call`)
  return captured
}
