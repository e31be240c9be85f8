-- Imports that committed (bundle.md §5, job import_graph). The import's transaction inserts its
-- row last, so the row exists exactly when the import's rows do: a retried job that finds it
-- only finishes what was left after the commit (promoting staged vectors, queueing follow-up
-- jobs) and returns the stored result; one that does not clears its earlier attempt's leftovers
-- and imports from scratch.
CREATE TABLE graph_imports (
  job_id uuid PRIMARY KEY,
  result jsonb NOT NULL,
  -- Vectors wait in the job's staging tables until promoted into the repository's.
  vectors_pending boolean NOT NULL,
  -- Jobs still to queue: fetch_media, embed_facts and embed_concepts.
  followups_pending boolean NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Investigations and reports have no natural key in the bundle; import reuses one with the same
-- title and topic (a report also the same parent and body), so importing a bundle twice adds
-- nothing. These make that lookup an index probe.
CREATE INDEX investigations_title_topic ON investigations (title, topic);
CREATE INDEX reports_title ON reports (title);
