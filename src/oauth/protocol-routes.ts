// The protocol endpoints of the OAuth 2.1 authorization server, which clients call: discovery
// documents, the token endpoint, revocation and dynamic registration. Their errors take the OAuth
// shape (errors.ts): oauthErrorShape tells the shared error handler which endpoints have it.
import { Elysia, t } from 'elysia'
import type { Sql } from 'postgres'
import { publicAccess } from '../http/access.ts'
import type { ErrorShape } from '../http/errors.ts'
import type { Throttles } from '../http/throttle.ts'
import { WEB_APP_CLIENT_ID } from '../http/web-app.ts'
import { appRefreshWithoutToken, appTokenEndpoint } from './app-session.ts'
import { ClientMetadataError, isClientMetadataUrl, type ClientMetadataDocuments } from './client-metadata.ts'
import { authenticateClient, basicCredentials, CLIENT_ID_MAX, registerClient } from './clients.ts'
import { OAuthError, oauthTooManyRequests, protocolErrorShape } from './errors.ts'
import {
  authorizationServerMetadata,
  PROTECTED_RESOURCE_DOCUMENT,
  protectedResourceMetadata,
  type RESOURCE_PATHS,
} from './metadata.ts'
import type { OAuthTokens } from './tokens.ts'

/** The protocol endpoints' error shapes; on each, a malformed request is the code given. */
const ERROR_SHAPES: Record<string, ErrorShape> = {
  '/api/v1/oauth/register': protocolErrorShape('invalid_client_metadata'),
  '/api/v1/oauth/token': protocolErrorShape('invalid_request'),
  '/api/v1/oauth/revoke': protocolErrorShape('invalid_request'),
}

/** The error shape of the protocol endpoint at `path`, if it is one (for the shared error handler). */
export const oauthErrorShape = (path: string): ErrorShape | undefined => ERROR_SHAPES[path]

const OAuthErrorBody = t.Object(
  { error: t.String(), error_description: t.String() },
  { description: 'RFC 6749/7591 error' },
)

const Registration = t.Object(
  {
    redirect_uris: t.Array(t.String({ maxLength: 2000 }), {
      minItems: 1,
      maxItems: 10,
      error: 'expected redirect_uris: an array of 1 to 10 URIs',
    }),
    client_name: t.Optional(t.String({ maxLength: 200 })),
    grant_types: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: 4 })),
    response_types: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: 4 })),
    token_endpoint_auth_method: t.Optional(t.String({ maxLength: 64 })),
    scope: t.Optional(t.String({ maxLength: 200 })),
    // Other RFC 7591 metadata (client_uri, logo_uri, contacts, ...) is accepted and not stored.
  },
  { additionalProperties: true },
)

const TokenRequest = t.Object(
  {
    grant_type: t.Optional(t.String({ maxLength: 64 })),
    code: t.Optional(t.String({ maxLength: 128 })),
    redirect_uri: t.Optional(t.String({ maxLength: 2000 })),
    code_verifier: t.Optional(t.String({ maxLength: 256 })),
    refresh_token: t.Optional(t.String({ maxLength: 128 })),
    scope: t.Optional(t.String({ maxLength: 200 })),
    resource: t.Optional(t.String({ maxLength: 2000 })),
    client_id: t.Optional(t.String({ maxLength: CLIENT_ID_MAX })),
    client_secret: t.Optional(t.String({ maxLength: 128 })),
  },
  { additionalProperties: true },
)
const TokenResponseBody = t.Object({
  access_token: t.String(),
  token_type: t.String(),
  expires_in: t.Integer(),
  refresh_token: t.Optional(t.String()),
  scope: t.String(),
})

/**
 * What the token and revocation endpoints do first: insist on a form-encoded body (RFC 6749
 * §3.2, RFC 7009 §2.1) and authenticate the client.
 */
function formClient(system: Sql, request: Request, body: { client_id?: string; client_secret?: string }) {
  const type = (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded')
    throw new OAuthError(400, 'invalid_request', 'the request body must be application/x-www-form-urlencoded')
  return authenticateClient(system, request.headers.get('authorization'), body)
}

/**
 * The client_id a token or revocation request names, before it is authenticated: the key of the
 * per-client throttle. Read from Basic credentials as authenticateClient reads it, so that other
 * encodings of one id draw on one budget.
 */
function namedClientId(request: Request, body: { client_id?: string }): string | undefined {
  if (body.client_id !== undefined) return body.client_id
  const credentials = basicCredentials(request.headers.get('authorization'))
  return typeof credentials === 'object' ? credentials.id : undefined
}

/** Fetches (or finds fresh in the cache) the client's metadata document; a document that cannot be used is invalid_client. */
async function currentDocument(clients: ClientMetadataDocuments, clientId: string): Promise<void> {
  try {
    await clients.client(clientId)
  } catch (error) {
    if (error instanceof ClientMetadataError)
      throw new OAuthError(401, 'invalid_client', `this client ID cannot be used: ${error.message}`)
    throw error
  }
}

export interface OAuthProtocolRoutesOptions {
  system: Sql
  baseUrl: string
  tokens: OAuthTokens
  throttles: Throttles
  clients: ClientMetadataDocuments
}

export function oauthProtocolRoutes({ system, baseUrl, tokens, throttles, clients }: OAuthProtocolRoutesOptions) {
  const asMetadata = authorizationServerMetadata(baseUrl)
  const discovery = {
    tags: ['oauth'],
    responses: {
      200: {
        description: 'the metadata document',
        content: { 'application/json': { schema: { type: 'object' as const } } },
      },
    },
  }
  const resource = (path: (typeof RESOURCE_PATHS)[number]) =>
    [
      `${PROTECTED_RESOURCE_DOCUMENT}${path}`,
      () => protectedResourceMetadata(baseUrl, path),
      {
        public: true,
        detail: { ...discovery, summary: `Protected resource metadata (RFC 9728) of the resource {base}${path}` },
      },
    ] as const
  const tooManyTokenRequests = oauthTooManyRequests(throttles.token)
  const appTokens = appTokenEndpoint(tokens, baseUrl.startsWith('https:'))
  return new Elysia({ name: 'kgs/oauth-protocol' })
    .use(publicAccess)
    .get('/.well-known/oauth-authorization-server', () => asMetadata, {
      public: true,
      detail: { ...discovery, summary: 'Authorization server metadata (RFC 8414)' },
    })
    .get(...resource(''))
    .get(...resource('/api/v1'))
    .get(...resource('/api/v1/mcp'))
    .post(
      '/api/v1/oauth/token',
      ({ body, request, set }) => {
        if (appRefreshWithoutToken(body, request))
          throw new OAuthError(
            400,
            'invalid_request',
            'refresh_token is required: this browser holds no sign-in of the web app',
          )
        return throttles.token.guard(
          request,
          namedClientId(request, body),
          async () => {
            // A client known by its metadata document is known only while the document is usable.
            if (body.client_id !== undefined && isClientMetadataUrl(body.client_id))
              await currentDocument(clients, body.client_id)
            const client = await formClient(system, request, body)
            set.headers['cache-control'] = 'no-store'
            set.headers.pragma = 'no-cache'
            // The web app's refresh token lives in a cookie (app-session.ts).
            const answer =
              client.client_id === WEB_APP_CLIENT_ID ? await appTokens(client, body, request, set.headers) : undefined
            if (answer) return answer
            if (body.grant_type === 'authorization_code') return tokens.exchangeCode(client, body)
            if (body.grant_type === 'refresh_token') return tokens.refresh(client, body)
            throw new OAuthError(
              400,
              body.grant_type ? 'unsupported_grant_type' : 'invalid_request',
              body.grant_type
                ? `grant_type ${JSON.stringify(body.grant_type)} is not supported`
                : 'grant_type is required',
            )
          },
          tooManyTokenRequests,
        )
      },
      {
        parse: 'urlencoded',
        body: TokenRequest,
        response: { 200: TokenResponseBody, 400: OAuthErrorBody, 401: OAuthErrorBody, 429: OAuthErrorBody },
        public: true,
        detail: {
          tags: ['oauth'],
          summary:
            "Token endpoint: authorization_code with PKCE, refresh_token with rotation; client_id may be the URL of a client metadata document. kgs's web app gets its refresh token in an HttpOnly cookie instead, and refreshes with it",
        },
      },
    )
    .post(
      '/api/v1/oauth/revoke',
      async ({ body, request, set }) => {
        // Client authentication as at the token endpoint, so the same budgets: no side door.
        await throttles.token.guard(
          request,
          namedClientId(request, body),
          async () => {
            const client = await formClient(system, request, body)
            if (!body.token) throw new OAuthError(400, 'invalid_request', 'token is required')
            await tokens.revoke(client, body.token, body.token_type_hint)
          },
          tooManyTokenRequests,
        )
        set.headers['cache-control'] = 'no-store'
        return {}
      },
      {
        body: t.Object(
          {
            token: t.Optional(t.String({ maxLength: 2048 })),
            token_type_hint: t.Optional(t.String({ maxLength: 64 })),
            client_id: t.Optional(t.String({ maxLength: CLIENT_ID_MAX })),
            client_secret: t.Optional(t.String({ maxLength: 128 })),
          },
          { additionalProperties: true },
        ),
        parse: 'urlencoded',
        response: { 200: t.Object({}), 400: OAuthErrorBody, 401: OAuthErrorBody, 429: OAuthErrorBody },
        public: true,
        detail: {
          tags: ['oauth'],
          summary: 'Revoke a refresh token (its whole grant) or an access token (RFC 7009); 200 for unknown tokens too',
        },
      },
    )
    .post(
      '/api/v1/oauth/register',
      async ({ body, request, set }) => {
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return throttles.register.guard(
          request,
          undefined,
          () => registerClient(system, body),
          oauthTooManyRequests(throttles.register),
        )
      },
      {
        body: Registration,
        response: {
          201: t.Object({ client_id: t.String(), client_id_issued_at: t.Integer() }, { additionalProperties: true }),
          400: OAuthErrorBody,
          429: OAuthErrorBody,
        },
        public: true,
        detail: { tags: ['oauth'], summary: 'Register a client (RFC 7591); confidential clients get a client_secret' },
      },
    )
}
