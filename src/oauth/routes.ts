// The OAuth 2.1 authorization server's HTTP surface: discovery documents, client registration,
// and the authorization request.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import { beginAuthorization } from './authorize.ts'
import { registerClient } from './clients.ts'
import { errorPage, loginPage, pageResponse } from './pages.ts'
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
    .get(
      '/api/v1/oauth/authorize',
      async ({ request }) => {
        const outcome = await beginAuthorization(system, baseUrl, new URL(request.url).searchParams)
        if (outcome.kind === 'error-page') return pageResponse(errorPage(outcome.message), 400)
        if (outcome.kind === 'redirect') return new Response(null, { status: 302, headers: { location: outcome.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } })
        const html = loginPage({
          clientName: outcome.client.client_name,
          redirectHost: new URL(outcome.redirectUri).host || new URL(outcome.redirectUri).protocol,
          authorizationId: outcome.authorizationId,
          csrfToken: outcome.csrfToken,
        })
        return pageResponse(html)
      },
      {
        query: t.Object(
          {
            response_type: t.Optional(t.String()),
            client_id: t.Optional(t.String()),
            redirect_uri: t.Optional(t.String()),
            code_challenge: t.Optional(t.String()),
            code_challenge_method: t.Optional(t.String()),
            state: t.Optional(t.String()),
            scope: t.Optional(t.String()),
            resource: t.Optional(t.String()),
          },
          { additionalProperties: true },
        ),
        detail: { tags: ['oauth'], summary: 'Authorization request (RFC 6749 §4.1.1 with PKCE): the sign-in page' },
      },
    )
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
