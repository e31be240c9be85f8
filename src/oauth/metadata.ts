// Discovery documents: authorization server metadata (RFC 8414) and protected resource metadata
// (RFC 9728). The API at {base}/api/v1 is the protected resource; its metadata also lives at the
// path-suffixed location RFC 9728 derives from that identifier.
export const SCOPES = ['read', 'write', 'admin'] as const
export type Scope = (typeof SCOPES)[number]

export const TOKEN_ENDPOINT_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'] as const

export const resourceIdentifier = (baseUrl: string) => `${baseUrl}/api/v1`
export const resourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource/api/v1`

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
    service_documentation: `${baseUrl}/swagger`,
  }
}

export function protectedResourceMetadata(baseUrl: string) {
  return {
    resource: resourceIdentifier(baseUrl),
    authorization_servers: [baseUrl],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_documentation: `${baseUrl}/swagger`,
  }
}
