// OAuth clients kgs registers for its own pages (Swagger UI, the web app): public clients
// (PKCE, no secret) written directly rather than through dynamic registration, whose redirect
// URI rules (https, or http on loopback) a deployment's BASE_URL need not meet.
import type { Sql } from 'postgres'

interface BuiltinClient {
  id: string
  name: string
  redirectUris: string[]
  scope: string
}

/** Registers (or, after a change of BASE_URL, updates) the client. */
async function register(system: Sql, client: BuiltinClient): Promise<void> {
  await system`
    INSERT INTO oauth_clients (id, secret_hash, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope)
    VALUES (${client.id}, NULL, ${client.name}, ${client.redirectUris}, ${['authorization_code', 'refresh_token']}, 'none', ${client.scope})
    ON CONFLICT (id) DO UPDATE SET redirect_uris = EXCLUDED.redirect_uris
    WHERE oauth_clients.redirect_uris IS DISTINCT FROM EXCLUDED.redirect_uris`
}

/**
 * Registers the client once, when its page is first served rather than at start-up (most
 * instances never serve it); a failure is retried on the next request.
 */
export function builtinClient(system: Sql, client: BuiltinClient): () => Promise<void> {
  let registered: Promise<void> | undefined
  return () =>
    (registered ??= register(system, client).catch((error) => {
      registered = undefined
      throw error
    }))
}
