-- What one authorization code issued: a family of rotating refresh tokens. Reuse of a rotated
-- refresh token, or of the code itself, revokes the family and every token in it.
CREATE TABLE oauth_token_families (
  id uuid PRIMARY KEY,
  client_id text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  scope text NOT NULL,
  resource text NOT NULL,
  code_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX oauth_token_families_revoked_at ON oauth_token_families (revoked_at) WHERE revoked_at IS NOT NULL;

CREATE TABLE oauth_refresh_tokens (
  token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  family_id uuid NOT NULL REFERENCES oauth_token_families (id) ON DELETE CASCADE,
  scope text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at timestamptz
);
CREATE INDEX oauth_refresh_tokens_family_id ON oauth_refresh_tokens (family_id);

-- Access tokens revoked before their expiry (RFC 7009), by jti, kept until they would expire.
CREATE TABLE oauth_revoked_access_tokens (
  jti uuid PRIMARY KEY,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz NOT NULL DEFAULT now()
);
