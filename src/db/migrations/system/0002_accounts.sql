-- Accounts and sessions. E-mail addresses are stored normalized (trimmed, lowercased), so the
-- unique index is the case-insensitive uniqueness rule itself.
CREATE TABLE users (
  id uuid PRIMARY KEY,
  email text NOT NULL CHECK (email = lower(btrim(email)) AND length(email) BETWEEN 3 AND 254),
  name text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
  password_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (email);
CREATE INDEX users_created_at_id ON users (created_at, id);

-- A login session. Its access tokens carry its id (sid); revoking it refuses them at once.
CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Absolute end of the session: refreshing never moves it.
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  revoked_reason text CHECK (revoked_reason IN ('logout', 'refresh_reuse'))
);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- Refresh tokens are stored only as SHA-256 digests. A used token stays (used_at set) so that
-- presenting it again is recognised as reuse and revokes the session.
CREATE TABLE refresh_tokens (
  token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
  session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at timestamptz
);
CREATE INDEX refresh_tokens_session_id ON refresh_tokens (session_id);
