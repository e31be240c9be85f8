-- The web app's grants are its sessions, one per browser: each keeps a short summary of the
-- browser that signed in ("Chrome 131 on Linux", shown on the Agents page) and the authorization
-- pages' sign-in it came from (oauth_browser_sessions.token_hash), which ends with it.
ALTER TABLE oauth_token_families ADD COLUMN browser text CHECK (length(browser) <= 100);
ALTER TABLE oauth_token_families ADD COLUMN browser_session_hash bytea CHECK (length(browser_session_hash) = 32);
