-- Sessions a user ends from the list of their sessions, and those an administrator ends for a
-- user, next to logout and refresh-token reuse; and the user's grants, revoked at once by an
-- administrator, found by user.
ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN ('logout', 'refresh_reuse', 'ended', 'admin'));
CREATE INDEX oauth_token_families_user_id ON oauth_token_families (user_id);
