// The OAuth 2.1 authorization server's HTTP surface: discovery documents and client registration.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import { registerClient } from './clients.ts'
import { authorizationServerMetadata, protectedResourceMetadata } from './metadata.ts'

const OAuthErrorBody = t.Object({ error: t.String(), error_description: t.String() }, { description: 'RFC 6749/7591 error' })

const Registration = t.Object({
  redirect_uris: t.Array(t.String({ maxLength: 2000 }), { minItems: 1, maxItems: 10, error: 'expected redirect_uris: an array of 1 to 10 URIs' }),
  client_name: t.Optional(t.String({ maxLength: 200 })),
  grant_types: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: 4 })),
  response_types: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: 4 })),
  token_endpoint_auth_method: t.Optional(t.String({ maxLength: 64 })),
  scope: t.Optional(t.String({ maxLength: 200 })),
  // Other RFC 7591 metadata (client_uri, logo_uri, contacts, ...) is accepted and not stored.
}, { additionalProperties: true })

export function oauthRoutes(system: Sql, baseUrl: string) {
  const asMetadata = authorizationServerMetadata(baseUrl)
  const resourceMetadata = protectedResourceMetadata(baseUrl)
  const discovery = { tags: ['oauth'] }
  return new Elysia({ name: 'kgs/oauth' })
    .get('/.well-known/oauth-authorization-server', () => asMetadata, { detail: { ...discovery, summary: 'Authorization server metadata (RFC 8414)' } })
    .get('/.well-known/oauth-protected-resource', () => resourceMetadata, { detail: { ...discovery, summary: 'Protected resource metadata (RFC 9728)' } })
    .get('/.well-known/oauth-protected-resource/api/v1', () => resourceMetadata, {
      detail: { ...discovery, summary: 'Protected resource metadata at the location derived from the resource identifier {base}/api/v1' },
    })
    .post(
      '/api/v1/oauth/register',
      async ({ body, set }) => {
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return registerClient(system, body)
      },
      {
        body: Registration,
        response: { 201: t.Object({ client_id: t.String(), client_id_issued_at: t.Integer() }, { additionalProperties: true }), 400: OAuthErrorBody },
        detail: { tags: ['oauth'], summary: 'Register a client (RFC 7591); confidential clients get a client_secret' },
      },
    )
}
