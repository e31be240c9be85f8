-- The sign-in of the authorization pages: a browser session (HttpOnly cookie on the OAuth path)
-- so that the next consent within its lifetime needs no second sign-in. Stored as SHA-256.
CREATE TABLE oauth_browser_sessions (
  token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);

-- Authorization codes: 256-bit, stored as SHA-256, 60 s, single use (used_at is set atomically).
CREATE TABLE oauth_codes (
  code_hash bytea PRIMARY KEY CHECK (length(code_hash) = 32),
  client_id text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  scope text NOT NULL,
  code_challenge text NOT NULL,
  resource text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX oauth_codes_expires_at ON oauth_codes (expires_at);
