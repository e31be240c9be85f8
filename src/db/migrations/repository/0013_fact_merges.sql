-- A fact a changed source no longer says, and no other source cites, is `stale` (docs/extract.md):
-- kept, listed and found, never deleted by the pipeline.
ALTER TABLE facts DROP CONSTRAINT facts_status_check;
ALTER TABLE facts ADD CONSTRAINT facts_status_check CHECK (status IN ('new', 'stable', 'to_delete', 'stale'));

-- A text process_source merged into an existing fact of the same meaning (the embedder's cosine
-- similarity at or above its threshold) instead of writing it as a fact of its own: what an unmerge
-- needs to make it its own fact again. Not exported: a bundle carries the facts as they are.
CREATE TABLE fact_merges (
  id uuid PRIMARY KEY,
  fact_id uuid NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
  text text NOT NULL CHECK (text <> ''),
  -- The merged text's content hash: the same text drawn again resolves to fact_id through it.
  content_hash text NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  promptset_hash text NOT NULL DEFAULT '',
  source_id uuid NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
  chunk_index integer NOT NULL CHECK (chunk_index >= 0),
  similarity double precision NOT NULL CHECK (similarity BETWEEN -1 AND 1),
  embedder text NOT NULL,
  -- Whether the merge gave fact_id its citation of (source_id, chunk_index), and the concept links
  -- it gave it: what an unmerge takes off again. concept_ids are every concept the text mentions.
  added_citation boolean NOT NULL,
  concept_ids uuid[] NOT NULL DEFAULT '{}',
  added_concept_ids uuid[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (content_hash, source_id, chunk_index)
);
CREATE INDEX fact_merges_fact_id ON fact_merges (fact_id, created_at, id);
CREATE INDEX fact_merges_created_at_id ON fact_merges (created_at, id);
CREATE INDEX fact_merges_source_id ON fact_merges (source_id);
