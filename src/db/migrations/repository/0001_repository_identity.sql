-- Each repository database records whose it is, so a pool can never be handed out for the
-- wrong repository (a stale or mistyped DSN is caught on first use, not after writes).
CREATE TABLE repository_identity (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  repository_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
