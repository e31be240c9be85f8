-- Where each repository's own database lives. The DSN is recorded (not derived on every use)
-- so that repositories can later be spread over several PostgreSQL servers.
CREATE TABLE repository_databases (
  repository_id uuid PRIMARY KEY,
  dsn text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
