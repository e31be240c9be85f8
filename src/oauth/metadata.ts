// Discovery documents: authorization server metadata (RFC 8414) and protected resource metadata
// (RFC 9728). Three resources are described, each by the document at the location RFC 9728 §3.3
// derives from its identifier (path inserted after /.well-known/oauth-protected-resource): the
// server itself, the API at {base}/api/v1, and the MCP endpoint {base}/api/v1/mcp. Clients pick
// whichever matches the URL they were given; each is an accepted `resource` and token audience.
import { SCOPES } from '../permissions.ts'

export const TOKEN_ENDPOINT_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const

/** The resources' paths below the base URL. */
export const RESOURCE_PATHS = ['', '/api/v1', '/api/v1/mcp'] as const

/** The API's identifier: the default resource of an authorization that names none. */
export const resourceIdentifier = (baseUrl: string) => `${baseUrl}/api/v1`
/** Every resource identifier a client may ask a token for. */
export const resourceIdentifiers = (baseUrl: string) => RESOURCE_PATHS.map((path) => baseUrl + path)
export const PROTECTED_RESOURCE_DOCUMENT = '/.well-known/oauth-protected-resource'

/**
 * The document a 401 names: that of the API, since every protected route is under /api/v1 (the
 * MCP endpoint's 401 names its own: mcp/routes.ts).
 */
export const resourceMetadataUrl = (baseUrl: string) => `${baseUrl}${PROTECTED_RESOURCE_DOCUMENT}/api/v1`

export function authorizationServerMetadata(baseUrl: string) {
  return {
    issuer: baseUrl,
    authorization_endpoint: `${baseUrl}/api/v1/oauth/authorize`,
    token_endpoint: `${baseUrl}/api/v1/oauth/token`,
    registration_endpoint: `${baseUrl}/api/v1/oauth/register`,
    revocation_endpoint: `${baseUrl}/api/v1/oauth/revoke`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    authorization_response_iss_parameter_supported: true,
    // A client_id may be the https URL of the client's metadata document (client-metadata.ts).
    client_id_metadata_document_supported: true,
    service_documentation: `${baseUrl}/swagger`,
  }
}

/** The document of the resource `baseUrl + path`. */
export function protectedResourceMetadata(baseUrl: string, path: (typeof RESOURCE_PATHS)[number]) {
  return {
    resource: baseUrl + path,
    authorization_servers: [baseUrl],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_documentation: `${baseUrl}/swagger`,
  }
}
