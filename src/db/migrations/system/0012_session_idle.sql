-- Sessions ended because they went longer than SESSION_IDLE_TTL without a refresh.
ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN ('logout', 'refresh_reuse', 'ended', 'admin', 'idle'));
