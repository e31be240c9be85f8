-- The knowledge graph of one repository: every entity a bundle carries (bundle.md §2), with the
-- constraints its enum values imply and unique indexes on the natural keys import dedups on.
-- Bundle-local indices become UUID foreign keys here; media bytes live in blob storage, and rows
-- keep their storage keys. Lists are ordered by (created_at, id).

CREATE TABLE sources (
  id uuid PRIMARY KEY,
  url text NOT NULL CHECK (url <> ''),
  doi text NOT NULL DEFAULT '',
  kind text NOT NULL CHECK (kind <> ''),
  status text NOT NULL CHECK (status <> ''),
  parsed_title text NOT NULL DEFAULT '',
  parsed_text text NOT NULL DEFAULT '',
  parsed_markdown text NOT NULL DEFAULT '',
  published_at date,
  has_stored_body boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- Import reuses an existing source with the same URL.
CREATE UNIQUE INDEX sources_url_key ON sources (url);
CREATE INDEX sources_created_at_id ON sources (created_at, id);

CREATE TABLE source_images (
  id uuid PRIMARY KEY,
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('inline', 'page')),
  page_number integer CHECK (page_number >= 0),
  position integer NOT NULL CHECK (position >= 0),
  url text NOT NULL DEFAULT '',
  width integer CHECK (width >= 0),
  height integer CHECK (height >= 0),
  bytes bigint CHECK (bytes >= 0),
  alt_text text NOT NULL DEFAULT '',
  content_type text NOT NULL DEFAULT '',
  -- Key of the image bytes in blob storage; NULL when only the URL is known.
  storage_key text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (source_id, kind, position)
);
CREATE INDEX source_images_created_at_id ON source_images (created_at, id);

CREATE TABLE source_bodies (
  source_id uuid PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
  content_type text NOT NULL DEFAULT '',
  storage_key text NOT NULL,
  bytes bigint CHECK (bytes >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE facts (
  id uuid PRIMARY KEY,
  text text NOT NULL CHECK (text <> ''),
  fact_kind text NOT NULL CHECK (fact_kind IN ('text', 'image')),
  image_url text NOT NULL DEFAULT '',
  -- SHA-256 (hex) of the normalized text: NFC, whitespace runs collapsed, trimmed.
  content_hash text NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  promptset_hash text NOT NULL DEFAULT '',
  status text NOT NULL CHECK (status IN ('new', 'stable', 'to_delete')),
  source_image_id uuid REFERENCES source_images (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- Import merges a fact into an existing one with the same content hash.
CREATE UNIQUE INDEX facts_content_hash_key ON facts (content_hash);
CREATE INDEX facts_created_at_id ON facts (created_at, id);

CREATE TABLE fact_sources (
  fact_id uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  chunk_index integer NOT NULL DEFAULT 0 CHECK (chunk_index >= 0),
  PRIMARY KEY (fact_id, source_id, chunk_index)
);
CREATE INDEX fact_sources_source_id ON fact_sources (source_id);

CREATE TABLE concepts (
  id uuid PRIMARY KEY,
  canonical_name text NOT NULL CHECK (canonical_name <> ''),
  context text NOT NULL DEFAULT '',
  description text NOT NULL DEFAULT '',
  promptset_hash text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);
-- Import reuses a concept with the same name in the same context, case-insensitively.
CREATE UNIQUE INDEX concepts_name_context_key ON concepts (lower(canonical_name), lower(context));
-- Name-prefix filtering of the read API.
CREATE INDEX concepts_lower_name_prefix ON concepts (lower(canonical_name) text_pattern_ops);
CREATE INDEX concepts_created_at_id ON concepts (created_at, id);

CREATE TABLE concept_aliases (
  concept_id uuid NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
  alias_text text NOT NULL CHECK (alias_text <> ''),
  PRIMARY KEY (concept_id, alias_text)
);

CREATE TABLE fact_concepts (
  fact_id uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
  concept_id uuid NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
  promptset_hash text NOT NULL DEFAULT '',
  PRIMARY KEY (fact_id, concept_id)
);
CREATE INDEX fact_concepts_concept_id ON fact_concepts (concept_id);

CREATE TABLE concept_summaries (
  id uuid PRIMARY KEY,
  concept_id uuid NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
  sequence_num integer NOT NULL CHECK (sequence_num >= 0),
  is_complete boolean NOT NULL DEFAULT false,
  fact_count integer NOT NULL DEFAULT 0 CHECK (fact_count >= 0),
  -- Markdown citing facts as [text](<fact:UUID>), with local UUIDs.
  content text NOT NULL DEFAULT '',
  covered_fact_ids uuid[] NOT NULL DEFAULT '{}',
  model text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (concept_id, sequence_num)
);
CREATE INDEX concept_summaries_created_at_id ON concept_summaries (created_at, id);

CREATE TABLE concept_syntheses (
  id uuid PRIMARY KEY,
  canonical_name text NOT NULL CHECK (canonical_name <> ''),
  content text NOT NULL DEFAULT '',
  covered_summary_ids uuid[] NOT NULL DEFAULT '{}',
  covered_concept_ids uuid[] NOT NULL DEFAULT '{}',
  -- Image facts embedded in the synthesis (bundle: embedded_image_idxs, fact positions).
  embedded_image_fact_ids uuid[] NOT NULL DEFAULT '{}',
  model text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);
-- One authoritative synthesis per concept group: import upserts on the name.
CREATE UNIQUE INDEX concept_syntheses_name_key ON concept_syntheses (lower(canonical_name));
CREATE INDEX concept_syntheses_created_at_id ON concept_syntheses (created_at, id);

CREATE TABLE investigations (
  id uuid PRIMARY KEY,
  title text NOT NULL CHECK (title <> ''),
  topic text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX investigations_created_at_id ON investigations (created_at, id);

CREATE TABLE investigation_sources (
  investigation_id uuid NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  PRIMARY KEY (investigation_id, source_id)
);
CREATE INDEX investigation_sources_source_id ON investigation_sources (source_id);

CREATE TABLE reports (
  id uuid PRIMARY KEY,
  title text NOT NULL CHECK (title <> ''),
  topic text NOT NULL DEFAULT '',
  body_md text NOT NULL DEFAULT '',
  status text NOT NULL CHECK (status IN ('pending', 'processing', 'annotated', 'failed')),
  parent_id uuid REFERENCES reports (id) ON DELETE CASCADE CHECK (parent_id <> id),
  similarity_threshold double precision,
  embedded_model text NOT NULL DEFAULT '',
  sentence_count integer CHECK (sentence_count >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reports_parent_id ON reports (parent_id);
CREATE INDEX reports_created_at_id ON reports (created_at, id);

CREATE TABLE report_annotations (
  report_id uuid NOT NULL REFERENCES reports (id) ON DELETE CASCADE,
  sentence_index integer NOT NULL CHECK (sentence_index >= 0),
  sentence_text text NOT NULL DEFAULT '',
  fact_id uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
  score double precision NOT NULL,
  posture text NOT NULL DEFAULT '' CHECK (posture IN ('', 'related', 'supports', 'contradicts')),
  PRIMARY KEY (report_id, sentence_index, fact_id)
);
CREATE INDEX report_annotations_fact_id ON report_annotations (fact_id);
