// Discovery as a strict OAuth client performs it (oauth4webapi): from a 401 of the API, through
// the protected resource metadata, to the authorization server metadata and its endpoints.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { BACKEND } from '../helpers/backend.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'

let server: TestServer
const insecure = { [oauth.allowInsecureRequests]: true } // the test server speaks http on loopback

beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

describe(`discovery (${BACKEND})`, () => {
  test('a 401 of the API leads through both documents to a working registration endpoint', async () => {
    const unauthorized = await server.request('/api/v1/users/me')
    expect(unauthorized.status).toBe(401)
    const challenge = unauthorized.headers.get('www-authenticate')!
    const resourceMetadata = /resource_metadata="([^"]+)"/.exec(challenge)![1]!
    expect(resourceMetadata).toBe(`${server.url}/.well-known/oauth-protected-resource/api/v1`)

    // RFC 9728: oauth4webapi derives the metadata URL from the resource identifier and checks `resource`.
    const resourceId = new URL(`${server.url}/api/v1`)
    const rs = await oauth.processResourceDiscoveryResponse(
      resourceId,
      await oauth.resourceDiscoveryRequest(resourceId, insecure),
    )
    expect(rs.resource).toBe(resourceId.href)
    expect(rs.bearer_methods_supported).toEqual(['header'])
    expect(rs.scopes_supported).toEqual(['read', 'write', 'admin'])
    expect(((await (await fetch(resourceMetadata)).json()) as { resource: string }).resource).toBe(resourceId.href)

    // RFC 8414: oauth4webapi checks that the issuer matches.
    const issuer = new URL(rs.authorization_servers![0]!)
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }),
    )
    expect(as).toMatchObject({
      issuer: server.url,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      authorization_response_iss_parameter_supported: true,
      revocation_endpoint: `${server.url}/api/v1/oauth/revoke`,
    })

    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: ['http://127.0.0.1:9/callback'], client_name: 'discovery test' },
        insecure,
      ),
    )
    expect(registered.client_id).toMatch(/^[A-Za-z0-9_-]{24}$/)
  })

  test('RFC 9728 §3.3: each document describes exactly the resource whose path was inserted', async () => {
    for (const path of ['', '/api/v1', '/api/v1/mcp']) {
      const resourceId = new URL(server.url + path)
      // oauth4webapi derives the location from the identifier and compares `resource` with it.
      const rs = await oauth.processResourceDiscoveryResponse(
        resourceId,
        await oauth.resourceDiscoveryRequest(resourceId, insecure),
      )
      expect(rs).toMatchObject({
        resource: server.url + path,
        authorization_servers: [server.url],
        resource_documentation: `${server.url}/swagger`,
      })
    }
  })
})
