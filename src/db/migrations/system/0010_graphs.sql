-- The graph registry's index (bundle.md §7). The bundle itself is a blob (storage_key); a row
-- is inserted only once its blob is complete and in place, so every listed graph can be read.
-- owner is the pusher's identity: a user id, or 'kgs' for the server's own service token.
-- sha256 is the bundle's canonical hash as pushed (X-Graph-SHA256), NULL when not given; a
-- (name, sha256) pair is stored once (NULLs never collide, so pushes without a hash are all new).
CREATE TABLE graphs (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  description text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
  owner text NOT NULL CHECK (length(owner) BETWEEN 1 AND 255),
  tags text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 64),
  sha256 text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  schema_version integer CHECK (schema_version >= 1),
  bytes bigint NOT NULL CHECK (bytes >= 0),
  source_count bigint NOT NULL DEFAULT 0 CHECK (source_count >= 0),
  fact_count bigint NOT NULL DEFAULT 0 CHECK (fact_count >= 0),
  concept_count bigint NOT NULL DEFAULT 0 CHECK (concept_count >= 0),
  summary_count bigint NOT NULL DEFAULT 0 CHECK (summary_count >= 0),
  synthesis_count bigint NOT NULL DEFAULT 0 CHECK (synthesis_count >= 0),
  report_count bigint NOT NULL DEFAULT 0 CHECK (report_count >= 0),
  investigation_count bigint NOT NULL DEFAULT 0 CHECK (investigation_count >= 0),
  storage_key text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT graphs_name_sha256_key UNIQUE (name, sha256)
);
-- Lists are ordered by (created_at, id).
CREATE INDEX graphs_created_at_id ON graphs (created_at, id);
-- ?tag= is `tags @> ARRAY[tag]`.
CREATE INDEX graphs_tags ON graphs USING gin (tags);
-- ?q= is a case-insensitive substring of name or description (ILIKE '%q%'). Only trigram
-- indexes serve that; pg_trgm ships with PostgreSQL and is a trusted extension (any role that
-- may create in the database may install it). Where it is missing (the embedded database has
-- none) or may not be installed, the filter is checked row by row along the page order: fine at
-- the size of a registry index (one row per pushed graph version).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
    BEGIN
      CREATE EXTENSION IF NOT EXISTS pg_trgm;
      CREATE INDEX graphs_name_trgm ON graphs USING gin (name gin_trgm_ops);
      CREATE INDEX graphs_description_trgm ON graphs USING gin (description gin_trgm_ops);
    EXCEPTION WHEN insufficient_privilege OR undefined_object THEN
      RAISE NOTICE 'pg_trgm unusable here: ?q= on graphs runs without an index';
    END;
  END IF;
END
$$;
