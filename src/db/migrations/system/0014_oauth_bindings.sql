-- Pending authorizations are bound to the browser that started them (the SHA-256 of a cookie set
-- by GET /oauth/authorize), so that a sign-in form carrying another browser's authorization is
-- refused (login CSRF); and a PKCE code_challenge serves one authorization only. Requests still
-- pending when this runs have no binding: they are dropped, and their users start again.
DELETE FROM oauth_authorizations;
ALTER TABLE oauth_authorizations ADD COLUMN browser_hash bytea NOT NULL CHECK (length(browser_hash) = 32);
CREATE UNIQUE INDEX oauth_authorizations_code_challenge ON oauth_authorizations (code_challenge);
-- When a client last got tokens: clients never used, or unused for long, are purged.
ALTER TABLE oauth_clients ADD COLUMN last_used_at timestamptz;
CREATE INDEX oauth_clients_last_used_at ON oauth_clients (coalesce(last_used_at, created_at));
