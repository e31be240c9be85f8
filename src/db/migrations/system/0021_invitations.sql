-- Invitations to register where REGISTRATION=invite (accounts/invitations.ts): one open
-- invitation per e-mail address, its code stored only as a SHA-256 digest, single use (the row
-- goes when the account is made) and expiring.
CREATE TABLE invitations (
  id uuid PRIMARY KEY,
  email text NOT NULL CHECK (email = lower(btrim(email)) AND length(email) BETWEEN 3 AND 254),
  code_hash bytea NOT NULL CHECK (length(code_hash) = 32),
  created_by uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX invitations_email_key ON invitations (email);
CREATE INDEX invitations_created_at_id ON invitations (created_at, id);
