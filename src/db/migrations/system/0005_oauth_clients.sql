-- OAuth clients registered dynamically (RFC 7591). Secrets of confidential clients are random
-- 256-bit values stored only as SHA-256 digests.
CREATE TABLE oauth_clients (
  id text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{22,64}$'),
  secret_hash bytea CHECK (secret_hash IS NULL OR length(secret_hash) = 32),
  client_name text NOT NULL DEFAULT '' CHECK (length(client_name) <= 200),
  redirect_uris text[] NOT NULL CHECK (cardinality(redirect_uris) BETWEEN 1 AND 10),
  grant_types text[] NOT NULL,
  token_endpoint_auth_method text NOT NULL CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
  scope text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((token_endpoint_auth_method = 'none') = (secret_hash IS NULL))
);
