-- Repositories: each has a database of its own (see repository_databases) and a role domain
-- named by its id. Slugs follow decisions.md §2; reserved names are checked in the application.
CREATE TABLE repositories (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  slug text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$'),
  description text NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
  owner_id uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX repositories_slug_key ON repositories (slug);
CREATE INDEX repositories_created_at_id ON repositories (created_at, id);
