-- What the ingest job (src/ingest/ingest-job.ts) keeps of a source beyond what a bundle carries:
-- why it failed, the validators of its last fetch (a re-ingest of an unchanged URL is one
-- conditional request), the hash of the bytes it parsed, and its chunks (what a fact cites as
-- chunk_index). None of it is exported: a bundle's sources carry no chunks (docs/ingest.md).
ALTER TABLE sources
  ADD COLUMN status_reason text NOT NULL DEFAULT '',
  ADD COLUMN etag text NOT NULL DEFAULT '',
  ADD COLUMN last_modified text NOT NULL DEFAULT '',
  -- SHA-256 (hex) of the body last parsed; '' until one is.
  ADD COLUMN content_hash text NOT NULL DEFAULT '' CHECK (content_hash = '' OR content_hash ~ '^[0-9a-f]{64}$');

CREATE TABLE source_chunks (
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  chunk_index integer NOT NULL CHECK (chunk_index >= 0),
  -- The headings the chunk sits under, outermost first.
  heading_path text[] NOT NULL DEFAULT '{}',
  -- A PDF's pages the chunk's text comes from (inclusive); NULL for other kinds.
  page_start integer CHECK (page_start >= 1),
  page_end integer CHECK (page_end >= page_start),
  text text NOT NULL,
  PRIMARY KEY (source_id, chunk_index)
);
