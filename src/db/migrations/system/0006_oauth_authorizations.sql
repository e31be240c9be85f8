-- Authorization requests between GET /oauth/authorize and the user's decision. The CSRF token
-- of its forms is bound to the row (stored as SHA-256); rows expire after a few minutes.
CREATE TABLE oauth_authorizations (
  id uuid PRIMARY KEY,
  client_id text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  scope text NOT NULL,
  state text,
  code_challenge text NOT NULL CHECK (code_challenge ~ '^[A-Za-z0-9._~-]{43,128}$'),
  resource text NOT NULL,
  csrf_hash bytea NOT NULL CHECK (length(csrf_hash) = 32),
  user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  decided_at timestamptz
);
CREATE INDEX oauth_authorizations_expires_at ON oauth_authorizations (expires_at);
